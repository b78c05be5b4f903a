import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatTraceParent,
  parseTraceParent,
  rootSpanIdFromUid,
  runPodTraceParent,
  runTrace,
  traceIdFromUid,
} from './trace-context.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceParent', () => {
  it('reads a version 00 header, sampled or not', () => {
    assert.deepEqual(parseTraceParent(`00-${TRACE}-${SPAN}-01`), {
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
    assert.deepEqual(parseTraceParent(`00-${TRACE}-${SPAN}-00`), {
      traceId: TRACE,
      spanId: SPAN,
      sampled: false,
    });
    assert.deepEqual(parseTraceParent(` 00-${TRACE}-${SPAN}-03 `), {
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
  });

  it('reads a later version by its first four fields', () => {
    assert.deepEqual(parseTraceParent(`01-${TRACE}-${SPAN}-01-extra`), {
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
  });

  it('refuses what the specification calls invalid', () => {
    for (const bad of [
      '',
      'garbage',
      `ff-${TRACE}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE.slice(1)}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${TRACE}-${SPAN}`,
      `0-${TRACE}-${SPAN}-01`,
    ]) {
      assert.equal(parseTraceParent(bad), undefined, bad);
    }
  });

  it('round-trips with formatTraceParent', () => {
    assert.equal(formatTraceParent(TRACE, SPAN, true), `00-${TRACE}-${SPAN}-01`);
    assert.equal(formatTraceParent(TRACE, SPAN, false), `00-${TRACE}-${SPAN}-00`);
    assert.deepEqual(parseTraceParent(formatTraceParent(TRACE, SPAN, false)), {
      traceId: TRACE,
      spanId: SPAN,
      sampled: false,
    });
  });
});

describe('run trace ids', () => {
  const uid = '3F1E8A52-6c0d-4b7e-9a41-2d5c7e9b0a11';

  it('a UUID uid is the trace id; anything else is hashed to 32 hex digits, deterministically', () => {
    assert.equal(traceIdFromUid(uid), '3f1e8a526c0d4b7e9a412d5c7e9b0a11');
    for (const other of ['uid-agent-1', '', '00000000-0000-0000-0000-000000000000']) {
      const id = traceIdFromUid(other);
      assert.match(id, /^[0-9a-f]{32}$/);
      assert.notEqual(id, '0'.repeat(32));
      assert.equal(traceIdFromUid(other), id);
    }
    assert.notEqual(traceIdFromUid('a'), traceIdFromUid('b'));
  });

  it('the root span id is 16 hex digits, stable per uid, distinct across uids', () => {
    const a = rootSpanIdFromUid(uid);
    assert.match(a, /^[0-9a-f]{16}$/);
    assert.equal(rootSpanIdFromUid(uid), a);
    assert.notEqual(rootSpanIdFromUid(`${uid}x`), a);
  });

  it('an Agent without the annotation starts its own sampled trace', () => {
    const t = runTrace(uid, { other: 'x' });
    assert.deepEqual(t, {
      traceId: '3f1e8a526c0d4b7e9a412d5c7e9b0a11',
      rootSpanId: rootSpanIdFromUid(uid),
      sampled: true,
    });
    assert.equal(runPodTraceParent(t), `00-3f1e8a526c0d4b7e9a412d5c7e9b0a11-${rootSpanIdFromUid(uid)}-01`);
    assert.deepEqual(runTrace(uid, undefined), t);
  });

  it('an Agent annotated traceparent joins that trace under the span it names, keeping its sampled flag', () => {
    const t = runTrace(uid, { traceparent: `00-${TRACE}-${SPAN}-00` });
    assert.deepEqual(t, {
      traceId: TRACE,
      rootSpanId: rootSpanIdFromUid(uid),
      parentSpanId: SPAN,
      sampled: false,
    });
    assert.equal(runPodTraceParent(t), `00-${TRACE}-${rootSpanIdFromUid(uid)}-00`);
    // An invalid annotation is ignored: the Agent's own trace.
    assert.equal(runTrace(uid, { traceparent: 'nonsense' }).traceId, '3f1e8a526c0d4b7e9a412d5c7e9b0a11');
  });
});
