import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Action } from '../../reconcile/index.ts';
import { createLogger } from '../../shared/log.ts';
import { ok } from '../../shared/result.ts';
import type { SecretReader } from './secrets.ts';
import { createSinkDispatcher, sinkPayload } from './sinks.ts';

const quiet = createLogger('error', () => {});
const secrets: SecretReader = {
  read: async () => ok(new Map([['sink-headers', 'Authorization: Bearer t0k\nX-Run: yes']])),
  forget: () => {},
};

function action(url: string, events: Extract<Action, { kind: 'notifySinks' }>['events']) {
  return {
    kind: 'notifySinks' as const,
    ref: { namespace: 'ns', name: 'a', uid: 'u' },
    sinks: [{ url, headersSecret: 'sink-headers' }],
    source: { agent: 'a', station: 's', namespace: 'ns' },
    events,
  };
}

describe('sink dispatcher', () => {
  it('wraps each event once, keeps order per sink, sends the header lines of the Secret', async () => {
    const seen: { url: string; body: string; headers: Headers }[] = [];
    const sinks = createSinkDispatcher({
      secrets,
      logger: quiet,
      fetch: async (url, init) => {
        seen.push({ url, body: String(init.body), headers: new Headers(init.headers) });
        return new Response('', { status: 200 });
      },
    });
    sinks.deliver(action('http://sink/e', [{ kind: 'lifecycle', phase: 'agent', status: 'started' }]));
    sinks.deliver(
      action('http://sink/e', [
        { kind: 'line', line: '{"type":"result","is_error":false}' },
        { kind: 'lifecycle', phase: 'agent', status: 'succeeded', exitCode: 0 },
      ]),
    );
    await sinks.idle();
    assert.deepEqual(
      seen.map((r) => JSON.parse(r.body)),
      [
        {
          source: { agent: 'a', station: 's', namespace: 'ns' },
          event: { kind: 'lifecycle', phase: 'agent', status: 'started' },
        },
        { source: { agent: 'a', station: 's', namespace: 'ns' }, event: { type: 'result', is_error: false } },
        {
          source: { agent: 'a', station: 's', namespace: 'ns' },
          event: { kind: 'lifecycle', phase: 'agent', status: 'succeeded', exitCode: 0 },
        },
      ],
    );
    assert.equal(seen[0]?.headers.get('authorization'), 'Bearer t0k');
    assert.equal(seen[0]?.headers.get('x-run'), 'yes');
  });

  it('never makes the caller wait: a hanging sink holds only its own queue', async () => {
    let release: (() => void) | undefined;
    const hung = new Promise<void>((resolve) => {
      release = resolve;
    });
    const delivered: string[] = [];
    const sinks = createSinkDispatcher({
      secrets,
      logger: quiet,
      timeoutMs: 60_000,
      fetch: async (url) => {
        if (url.includes('slow')) await hung;
        delivered.push(url);
        return new Response('', { status: 200 });
      },
    });
    const started = Date.now();
    sinks.deliver(action('http://slow/e', [{ kind: 'lifecycle', phase: 'agent', status: 'started' }]));
    sinks.deliver(action('http://fast/e', [{ kind: 'lifecycle', phase: 'agent', status: 'started' }]));
    assert.ok(Date.now() - started < 50, 'deliver returns at once');
    const deadline = Date.now() + 5000;
    while (!delivered.includes('http://fast/e') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(delivered, ['http://fast/e'], 'the fast sink is not held up by the slow one');
    release?.();
    await sinks.idle();
    assert.deepEqual(delivered, ['http://fast/e', 'http://slow/e']);
  });

  it('renders lifecycle events as the supervisor does (reason and exit code only when set)', () => {
    assert.equal(
      sinkPayload({ kind: 'lifecycle', phase: 'batch', status: 'failed', reason: 'batch_timeout' }),
      '{"kind":"lifecycle","phase":"batch","status":"failed","reason":"batch_timeout"}',
    );
    assert.equal(sinkPayload({ kind: 'line', line: '{"a":1}' }), '{"a":1}');
  });
});
