import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import { authorize, type GatewayAgent, GatewayAgentSchema, needsFreshRead } from './authorize.ts';

const run = { namespace: 'team-a', name: 'fix-1', uid: 'uid-1' };

function agent(status: Record<string, unknown> | undefined, uid = 'uid-1'): GatewayAgent {
  return v.parse(GatewayAgentSchema, {
    metadata: {
      name: 'fix-1',
      namespace: 'team-a',
      uid,
      resourceVersion: '7',
      annotations: { 'agents.re-cinq.com/gateway-usage': '{"models":{}}', other: 'x' },
    },
    spec: { stationRef: 'station-a', prompt: 'ignored' },
    ...(status === undefined ? {} : { status }),
  });
}

const granted = (extra: Record<string, unknown> = {}) =>
  agent({
    phase: 'Running',
    gateway: { keys: { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_KEY' }, ...extra },
  });

const call = (over: Partial<Parameters<typeof authorize>[0]> = {}) =>
  authorize({
    run,
    agent: granted(),
    vendor: 'anthropic',
    modelNamed: true,
    model: 'claude-sonnet-4-5',
    ...over,
  });

describe('the gateway’s view of an Agent', () => {
  it('keeps identity, Station, phase, grant and the usage annotation only', () => {
    const a = granted({ models: ['claude-*'] });
    assert.deepEqual(a, {
      metadata: {
        name: 'fix-1',
        namespace: 'team-a',
        uid: 'uid-1',
        resourceVersion: '7',
        usage: '{"models":{}}',
      },
      spec: { stationRef: 'station-a' },
      status: {
        phase: 'Running',
        gateway: { keys: { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_KEY' }, models: ['claude-*'] },
      },
    });
  });
  it('reads a grant that does not parse as none', () => {
    assert.equal(agent({ phase: 'Running', gateway: { keys: 'nope' } }).status?.gateway, undefined);
  });
});

describe('authorize', () => {
  it('allows a granted run, naming its key and Station', () => {
    assert.deepEqual(call(), { ok: true, keyName: 'ANTHROPIC_API_KEY', station: 'station-a' });
    assert.deepEqual(call({ vendor: 'openai', model: 'gpt-5' }), {
      ok: true,
      keyName: 'OPENAI_KEY',
      station: 'station-a',
    });
  });

  const refusals: [string, Partial<Parameters<typeof authorize>[0]>, string][] = [
    ['a credential that did not verify', { run: undefined }, 'credential'],
    ['no Agent of that name', { agent: undefined }, 'unknown_run'],
    [
      'an Agent of that name with another uid (another run)',
      { agent: agent({ phase: 'Running' }, 'uid-2') },
      'unknown_run',
    ],
    [
      'a Succeeded run',
      { agent: agent({ phase: 'Succeeded', gateway: { keys: { anthropic: 'K' } } }) },
      'run_ended',
    ],
    [
      'a Failed run',
      { agent: agent({ phase: 'Failed', gateway: { keys: { anthropic: 'K' } } }) },
      'run_ended',
    ],
    ['a run without status.gateway', { agent: agent({ phase: 'Running' }) }, 'not_granted'],
    ['an Agent without status', { agent: agent(undefined) }, 'not_granted'],
    ['a vendor the grant has no key of', { vendor: 'gemini', model: 'gemini-2.5-pro' }, 'vendor'],
    ['a model outside the globs', { agent: granted({ models: ['claude-haiku-*'] }) }, 'model'],
    [
      'no model while the grant limits models',
      { agent: granted({ models: ['claude-*'] }), model: undefined },
      'model',
    ],
  ];
  for (const [what, over, reason] of refusals) {
    it(`refuses ${what} (${reason})`, () => {
      const d = call(over);
      assert.equal(d.ok, false);
      assert.equal(!d.ok && d.reason, reason);
    });
  }

  it('allows a model matching a glob, any model when the grant names none, and a model list with no model', () => {
    assert.equal(call({ agent: granted({ models: ['gpt-*', 'claude-sonnet-*'] }) }).ok, true);
    assert.equal(call({ agent: granted({ models: ['claude-sonnet-4-5'] }) }).ok, true);
    assert.equal(call({ model: 'anything' }).ok, true);
    assert.equal(
      call({ agent: granted({ models: ['claude-*'] }), modelNamed: false, model: undefined }).ok,
      true,
    );
  });

  it('a Pending or Serving run with a grant may call', () => {
    for (const phase of ['Pending', 'Serving', undefined]) {
      const a = agent({ ...(phase === undefined ? {} : { phase }), gateway: { keys: { anthropic: 'K' } } });
      assert.equal(call({ agent: a }).ok, true, String(phase));
    }
  });

  it('names the run and the allowed models in the message, never a key', () => {
    const d = call({ agent: granted({ models: ['claude-haiku-*'] }) });
    assert.equal(
      !d.ok && d.message,
      'the model claude-sonnet-4-5 is not allowed for this run (allowed: claude-haiku-*)',
    );
  });
});

describe('needsFreshRead', () => {
  it('reads again when the cache has no Agent, another uid, or no grant yet', () => {
    assert.equal(needsFreshRead(run, undefined), true);
    assert.equal(needsFreshRead(run, agent({ phase: 'Running', gateway: { keys: {} } }, 'uid-2')), true);
    assert.equal(needsFreshRead(run, agent({ phase: 'Pending' })), true);
    assert.equal(needsFreshRead(run, granted()), false);
    assert.equal(needsFreshRead(run, agent({ phase: 'Succeeded', gateway: { keys: {} } })), false);
  });
});
