import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  GATEWAY_CREDENTIAL_PREFIX,
  mintGatewayCredential,
  verifyGatewayCredential,
} from './gateway-credential.ts';

const key = new Uint8Array(32).fill(7);
const other = new Uint8Array(32).fill(8);
const run = { namespace: 'team-a', name: 'fix.bug-1', uid: '0b6c7f8e-1111-2222-3333-444455556666' };

describe('gateway credential', () => {
  it('names the run it was minted for', () => {
    const credential = mintGatewayCredential(key, run);
    assert.ok(credential.startsWith(`${GATEWAY_CREDENTIAL_PREFIX}.`));
    assert.deepEqual(verifyGatewayCredential(key, credential), run);
  });

  it('differs per run and per key', () => {
    const a = mintGatewayCredential(key, run);
    assert.notEqual(a, mintGatewayCredential(key, { ...run, uid: 'another-uid' }));
    assert.notEqual(a, mintGatewayCredential(key, { ...run, namespace: 'team-b' }));
    assert.notEqual(a, mintGatewayCredential(other, run));
  });

  it('refuses a credential under another key', () => {
    assert.equal(verifyGatewayCredential(other, mintGatewayCredential(key, run)), undefined);
  });

  it('refuses a changed payload (another run named with the first run’s MAC)', () => {
    const [prefix, , mac] = mintGatewayCredential(key, run).split('.');
    const forged = Buffer.from(JSON.stringify({ ns: 'team-b', name: run.name, uid: run.uid })).toString(
      'base64url',
    );
    assert.equal(verifyGatewayCredential(key, `${prefix}.${forged}.${mac}`), undefined);
  });

  it('refuses other shapes', () => {
    const good = mintGatewayCredential(key, run);
    for (const bad of [
      '',
      'sk-ant-api03-xyz',
      good.replace(GATEWAY_CREDENTIAL_PREFIX, 'acgw2'),
      `${good}.x`,
      good.slice(0, -1),
      `${GATEWAY_CREDENTIAL_PREFIX}..`,
    ]) {
      assert.equal(verifyGatewayCredential(key, bad), undefined, bad);
    }
  });

  it('refuses a correctly signed payload that is not an identity', () => {
    for (const claims of [
      '[]',
      'null',
      '{"ns":"a","name":"b"}',
      '{"ns":"","name":"b","uid":"c"}',
      'not json',
    ]) {
      const payload = Buffer.from(claims).toString('base64url');
      const mac = createHmac('sha256', key).update(`gateway:${payload}`).digest('base64url');
      assert.equal(
        verifyGatewayCredential(key, `${GATEWAY_CREDENTIAL_PREFIX}.${payload}.${mac}`),
        undefined,
        claims,
      );
    }
  });
});
