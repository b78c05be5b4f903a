// Property tests of the W3C trace context helpers (issue 13 §2): `parseTraceParent` never throws, accepts only
// what the spec allows, and whatever it accepts round-trips through `formatTraceParent`; the ids derived from an
// Agent are always valid.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  formatTraceParent,
  parseTraceParent,
  rootSpanIdFromUid,
  runPodTraceParent,
  runTrace,
  traceIdFromUid,
} from './trace-context.ts';

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const isZero = (s: string) => /^0+$/.test(s);

/** Header values: well-formed ones of any version, near misses, and random text. */
const header: fc.Arbitrary<string> = fc.oneof(
  fc
    .record({
      version: fc.oneof(fc.constant('00'), hex(2)),
      trace: fc.oneof(hex(32), fc.constant('0'.repeat(32))),
      span: fc.oneof(hex(16), fc.constant('0'.repeat(16))),
      flags: hex(2),
      rest: fc.option(
        fc.string({ maxLength: 10 }).map((s) => `-${s}`),
        { nil: '' },
      ),
      pad: fc.constantFrom('', ' ', '\t', '\n'),
    })
    .map((r) => `${r.pad}${r.version}-${r.trace}-${r.span}-${r.flags}${r.rest}${r.pad}`),
  fc.tuple(hex(2), hex(32), hex(16), hex(2)).map((p) => p.join('-').toUpperCase()),
  fc.tuple(hex(2), hex(31), hex(16), hex(2)).map((p) => p.join('-')),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ maxLength: 60 }),
);

describe('parseTraceParent (properties)', () => {
  it('never throws; accepts only valid values, which round-trip through formatTraceParent', () => {
    fc.assert(
      fc.property(header, (value) => {
        const p = parseTraceParent(value);
        if (p === undefined) return;
        assert.match(p.traceId, HEX32);
        assert.match(p.spanId, HEX16);
        assert.ok(!isZero(p.traceId) && !isZero(p.spanId), 'all-zero ids are invalid');
        assert.equal(typeof p.sampled, 'boolean');
        const trimmed = value.trim();
        assert.ok(!trimmed.startsWith('ff-'), 'version ff is invalid');
        if (trimmed.startsWith('00-')) assert.equal(trimmed.length, 55, 'version 00 has no extra fields');
        const formatted = formatTraceParent(p.traceId, p.spanId, p.sampled);
        assert.deepEqual(parseTraceParent(formatted), p);
        assert.equal(formatTraceParent(p.traceId, p.spanId, p.sampled), formatted);
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts every version-00 value with non-zero ids, reading the sampled flag from bit 0', () => {
    fc.assert(
      fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 255 }), (trace, span, flags) => {
        fc.pre(!isZero(trace) && !isZero(span));
        const value = `00-${trace}-${span}-${flags.toString(16).padStart(2, '0')}`;
        assert.deepEqual(parseTraceParent(value), {
          traceId: trace,
          spanId: span,
          sampled: (flags & 1) === 1,
        });
        assert.equal(
          formatTraceParent(trace, span, (flags & 1) === 1),
          value.slice(0, 53) + ((flags & 1) === 1 ? '01' : '00'),
        );
      }),
      { numRuns: 500 },
    );
  });
});

describe('run trace ids (properties)', () => {
  it('derives valid, non-zero, stable ids from any uid and annotation', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.uuid(), fc.string({ unit: 'binary', maxLength: 40 })),
        fc.option(fc.dictionary(fc.constantFrom('traceparent', 'other'), header), { nil: undefined }),
        (uid, annotations) => {
          const t = runTrace(uid, annotations);
          assert.match(t.traceId, HEX32);
          assert.match(t.rootSpanId, HEX16);
          assert.ok(!isZero(t.traceId) && !isZero(t.rootSpanId));
          assert.equal(t.rootSpanId, rootSpanIdFromUid(uid));
          const joined = parseTraceParent(annotations?.traceparent ?? '');
          if (joined === undefined) {
            assert.equal(t.traceId, traceIdFromUid(uid));
            assert.equal(t.sampled, true);
          } else
            assert.deepEqual(
              [t.traceId, t.parentSpanId, t.sampled],
              [joined.traceId, joined.spanId, joined.sampled],
            );
          assert.deepEqual(runTrace(uid, annotations), t, 'deterministic');
          const pod = parseTraceParent(runPodTraceParent(t));
          assert.deepEqual(pod, { traceId: t.traceId, spanId: t.rootSpanId, sampled: t.sampled });
        },
      ),
      { numRuns: 1000 },
    );
  });
});
