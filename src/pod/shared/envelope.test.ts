import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEnvelope, parseLine, sourceFromEnv, withRequestId, wrapLine } from './envelope.ts';

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

  it('adds the request id of a server turn after the event, and nothing without one', () => {
    const r = wrapLine({ agent: 'a' }, '{"i":1}', undefined, 'chatcmpl-01');
    assert.ok(r.ok);
    assert.equal(r.value, '{"source":{"agent":"a"},"event":{"i":1},"requestId":"chatcmpl-01"}');
    const plain = wrapLine({ agent: 'a' }, 'text', undefined, 'chatcmpl-"q"');
    assert.ok(plain.ok);
    assert.deepEqual(JSON.parse(plain.value), {
      source: { agent: 'a' },
      event: 'text',
      requestId: 'chatcmpl-"q"',
    });
    const without = wrapLine({ agent: 'a' }, '{"i":1}');
    assert.ok(without.ok);
    assert.deepEqual(Object.keys(JSON.parse(without.value)), ['source', 'event']);
  });
});

describe('a bare line tagged with its request', () => {
  const tag = (line: string) => withRequestId(line, parseLine(line), 'chatcmpl-01');

  it('puts requestId first in a JSON object line, keeping the rest of its text verbatim', () => {
    assert.equal(
      tag('{"type":"x","big":12345678901234567890}'),
      '{"requestId":"chatcmpl-01","type":"x","big":12345678901234567890}',
    );
    assert.equal(tag('  { "a" : [1, {}] }  '), '{"requestId":"chatcmpl-01", "a" : [1, {}] }');
    assert.deepEqual(JSON.parse(tag('  { "a" : [1, {}] }  ')), { requestId: 'chatcmpl-01', a: [1, {}] });
    assert.equal(tag('{}'), '{"requestId":"chatcmpl-01"}');
    assert.equal(tag('{ \n }'), '{"requestId":"chatcmpl-01"}');
  });

  it('leaves other lines, and objects that have a requestId, as they are', () => {
    for (const line of ['plain text', '{broken', '[1,2]', '5', '"s"', 'null', '{"requestId":"theirs"}']) {
      assert.equal(tag(line), line);
    }
  });
});
