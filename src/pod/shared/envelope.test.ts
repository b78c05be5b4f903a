import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEnvelope, parseLine, sourceFromEnv, wrapLine } from './envelope.ts';

const source = sourceFromEnv({
  AGENT_NAME: 'test-agent',
  STATION_NAME: 'test-station',
  TASK_ID: '',
  POD_NAME: 'test-pod',
  POD_NAMESPACE: 'ai-agents',
});

describe('the {source, event} envelope', () => {
  it('reads identity from env and omits empty ids', () => {
    assert.deepEqual(source, {
      agent: 'test-agent',
      station: 'test-station',
      pod: 'test-pod',
      namespace: 'ai-agents',
    });
    assert.deepEqual(sourceFromEnv({}), {});
  });

  it('embeds a JSON line verbatim as event', () => {
    const r = wrapLine(source, '{"i":1,"big":12345678901234567890}');
    assert.ok(r.ok);
    assert.equal(
      r.value,
      '{"source":{"agent":"test-agent","station":"test-station","pod":"test-pod","namespace":"ai-agents"},' +
        '"event":{"i":1,"big":12345678901234567890}}',
    );
    assert.deepEqual(Object.keys(JSON.parse(r.value)), ['source', 'event']);
  });

  it('wraps a non-JSON line as a JSON string', () => {
    const r = wrapLine({ agent: 'a' }, 'plain text "quoted"');
    assert.ok(r.ok);
    assert.deepEqual(JSON.parse(r.value), { source: { agent: 'a' }, event: 'plain text "quoted"' });
  });

  it('wraps JSON scalars and arrays as they are', () => {
    for (const line of ['5', 'null', '"s"', '[1,2]']) {
      const r = wrapLine({}, line);
      assert.ok(r.ok);
      assert.deepEqual(JSON.parse(r.value).event, JSON.parse(line));
    }
  });

  it('refuses to wrap an envelope twice', () => {
    const once = wrapLine(source, '{"i":1}');
    assert.ok(once.ok);
    const twice = wrapLine(source, once.value);
    assert.deepEqual(twice, { ok: false, error: 'already-wrapped' });
    assert.ok(isEnvelope({ source: null, event: 1 }));
    assert.ok(!isEnvelope({ source: {} }));
    assert.ok(!isEnvelope([1]));
    assert.ok(!isEnvelope('x'));
  });

  it('uses a provided parse instead of parsing again', () => {
    const r = wrapLine({}, 'not json', { json: false });
    assert.ok(r.ok);
    assert.equal(JSON.parse(r.value).event, 'not json');
    assert.deepEqual(parseLine('{'), { json: false });
    assert.deepEqual(parseLine('{"a":1}'), { json: true, value: { a: 1 } });
  });
});
