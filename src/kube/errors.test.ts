import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiErrorFromResponse,
  describeKubeError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isResourceVersionTooLarge,
  type KubeError,
} from './errors.ts';

const status = (code: number, reason: string, extra: object = {}): string =>
  JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: `m${code}`,
    reason,
    code,
    ...extra,
  });

describe('apiErrorFromResponse', () => {
  it('parses a Status body', () => {
    const e = apiErrorFromResponse(409, status(409, 'Conflict'));
    assert.equal(e.kind, 'api');
    if (e.kind !== 'api') return;
    assert.equal(e.code, 409);
    assert.equal(e.reason, 'Conflict');
    assert.equal(e.message, 'm409');
    assert.equal(e.status?.kind, 'Status');
  });
  it('derives the reason from the code for a non-Status body', () => {
    const e = apiErrorFromResponse(404, '404 page not found');
    assert.ok(
      e.kind === 'api' &&
        e.reason === 'NotFound' &&
        e.message === '404 page not found' &&
        e.status === undefined,
    );
  });
});

describe('predicates', () => {
  const conflict = apiErrorFromResponse(409, status(409, 'Conflict'));
  const exists = apiErrorFromResponse(409, status(409, 'AlreadyExists'));
  const notFound = apiErrorFromResponse(404, status(404, 'NotFound'));
  const expired = apiErrorFromResponse(410, status(410, 'Expired'));
  const invalid = apiErrorFromResponse(422, status(422, 'Invalid'));
  const forbidden = apiErrorFromResponse(403, status(403, 'Forbidden'));
  const network: KubeError = { kind: 'network', message: 'ECONNRESET' };
  it('branches on reason for 409: Conflict vs AlreadyExists', () => {
    assert.equal(isConflict(conflict), true);
    assert.equal(isConflict(exists), false);
    assert.equal(isAlreadyExists(exists), true);
    assert.equal(isAlreadyExists(conflict), false);
  });
  it('recognises 404, 410, 422, 403', () => {
    assert.equal(isNotFound(notFound), true);
    assert.equal(isGone(expired), true);
    assert.equal(isGone(apiErrorFromResponse(410, status(410, 'Gone'))), true);
    assert.equal(isInvalid(invalid), true);
    assert.equal(isForbidden(forbidden), true);
  });
  it('is false for non-api errors', () => {
    for (const p of [isNotFound, isConflict, isGone, isInvalid, isForbidden, isAlreadyExists])
      assert.equal(p(network), false);
  });
  it('recognises a 504 ResourceVersionTooLarge', () => {
    const e = apiErrorFromResponse(
      504,
      status(504, 'Timeout', { details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } }),
    );
    assert.equal(isResourceVersionTooLarge(e), true);
    assert.equal(isResourceVersionTooLarge(apiErrorFromResponse(504, status(504, 'Timeout'))), false);
  });
  it('describes errors in one line', () => {
    assert.equal(describeKubeError(conflict), 'api 409 Conflict: m409');
    assert.equal(describeKubeError({ kind: 'timeout', idle: true, message: 'x' }), 'idle timeout: x');
    assert.equal(describeKubeError(network), 'network: ECONNRESET');
  });
});
