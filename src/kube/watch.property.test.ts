// Property tests of the watch stream framing (issue 13 §2): `createLineDecoder` splits any byte stream into the
// same lines whatever the chunk boundaries (inside multi-byte characters too), drops over-long lines as documented;
// `parseWatchLine` classifies any text without throwing, with bounded garbage messages; and `watchOnce` delivers the
// same events for any chunking of the same response body.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chunkBytes, concatBytes } from '../shared/bytes.ts';
import { createFakeTransport } from './fake-transport.ts';
import { CONFIG_MAPS } from './resources.ts';
import { createLineDecoder, parseWatchLine, type WatchEvent, type WatchLine, watchOnce } from './watch.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** What the decoder documents, computed on the whole stream at once. */
function expectedLines(
  bytes: Uint8Array,
  max: number,
): { lines: string[]; tail: string | undefined; overflow: boolean } {
  const segments: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) {
      segments.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  const last = bytes.subarray(start);
  const text = (seg: Uint8Array): string => {
    const t = dec.decode(seg);
    return t.endsWith('\r') ? t.slice(0, -1) : t;
  };
  const lines = segments.filter((s) => s.length <= max && text(s).trim() !== '').map(text);
  const overflow = segments.some((s) => s.length > max) || last.length > max;
  const tail = last.length === 0 || last.length > max || text(last).trim() === '' ? undefined : text(last);
  return { lines, tail, overflow };
}

/** Byte pieces a stream is made of: text, newlines, CRs, blanks, stray and truncated UTF-8. */
const piece: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map((s) => enc.encode(s)) },
  { weight: 3, arbitrary: fc.constantFrom('\n', '\r\n', '\n\n', ' \n', '\r').map((s) => enc.encode(s)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Uint8Array.of(0xff),
      Uint8Array.of(0xe2, 0x82),
      Uint8Array.of(0xf0, 0x9f, 0x98),
      Uint8Array.of(0xc3),
      enc.encode('ä€😀'),
    ),
  },
);
const stream = fc.array(piece, { maxLength: 40 }).map((parts) => concatBytes(parts));
const cuts = fc.array(fc.nat(), { maxLength: 12 });

function decodeAll(
  chunks: readonly Uint8Array[],
  max: number,
): { lines: string[]; tail: string | undefined; overflow: boolean } {
  const d = createLineDecoder(max);
  const lines: string[] = [];
  let overflow = false;
  for (const c of chunks) {
    const r = d.push(c);
    lines.push(...r.lines);
    overflow ||= r.overflow;
  }
  const tail = d.flush();
  assert.equal(d.flush(), undefined, 'flush resets the decoder');
  return { lines, tail, overflow };
}

describe('createLineDecoder (properties)', () => {
  it('any chunking of any byte stream gives the documented lines, tail and overflow', () => {
    fc.assert(
      fc.property(stream, cuts, fc.constantFrom(1, 4, 16, 64, 4 * 1024 * 1024), (bytes, at, max) => {
        const want = expectedLines(bytes, max);
        const got = decodeAll(chunkBytes(bytes, at), max);
        assert.deepEqual(got, want);
        for (const line of got.lines) {
          assert.ok(!line.includes('\n'), 'a line never holds a newline');
          assert.ok(enc.encode(line).length <= max * 3, 'a line is bounded by the limit');
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('byte-at-a-time delivery equals one-chunk delivery', () => {
    fc.assert(
      fc.property(stream, fc.constantFrom(8, 1024), (bytes, max) => {
        const whole = decodeAll([bytes], max);
        const single = decodeAll(
          Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)),
          max,
        );
        assert.deepEqual(single, whole);
      }),
      { numRuns: 300 },
    );
  });
});

// ------------------------------------------------------------------------------------------------ watch lines

const name = fc.string({ unit: 'binary', minLength: 1, maxLength: 10 });
const rv = fc.oneof(fc.integer({ min: 1, max: 1e9 }).map(String), fc.constant(''));

/** A well-formed watch event line, with what it must parse to. */
const eventLine: fc.Arbitrary<{
  line: string;
  want: WatchLine['kind'];
  type?: string;
  rv?: string | undefined;
}> = fc.oneof(
  fc
    .record({ type: fc.constantFrom('ADDED', 'MODIFIED', 'DELETED'), name, rv, data: fc.jsonValue() })
    .map((r) => ({
      line: JSON.stringify({
        type: r.type,
        object: { kind: 'ConfigMap', metadata: { name: r.name, resourceVersion: r.rv }, data: r.data },
      }),
      want: 'object' as const,
      type: r.type,
      rv: r.rv === '' ? undefined : r.rv,
    })),
  rv.map((v) => ({
    line: JSON.stringify({
      type: 'BOOKMARK',
      object: { kind: 'ConfigMap', metadata: { resourceVersion: v } },
    }),
    want: v === '' ? ('garbage' as const) : ('bookmark' as const),
    rv: v,
  })),
  fc
    .record({
      code: fc.constantFrom(410, 500, 403),
      reason: fc.constantFrom('Expired', 'Gone', 'InternalError'),
    })
    .map((r) => ({
      line: JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: r.code, reason: r.reason } }),
      want: 'error' as const,
    })),
);

/** Lines a broken or hostile server might send. */
const hostileLine: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.json(),
  fc.jsonValue().map((v) => JSON.stringify({ type: 'ADDED', object: v })),
  fc.jsonValue().map((v) => JSON.stringify({ type: 'ERROR', object: v })),
  // An unknown event type of any length (up to the line limit).
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.nat(20_000))
    .map(([t, n]) => JSON.stringify({ type: t.padEnd(n, 'X'), object: { metadata: {} } })),
  fc.jsonValue().map((v) => JSON.stringify({ type: v, object: { metadata: { resourceVersion: v } } })),
  // A valid event cut short.
  fc.tuple(eventLine, fc.nat()).map(([e, n]) => e.line.slice(0, n % (e.line.length + 1))),
);

const MAX_GARBAGE_MESSAGE = 200;

function checkWellFormed(w: WatchLine): void {
  switch (w.kind) {
    case 'object':
      assert.ok(['ADDED', 'MODIFIED', 'DELETED'].includes(w.type));
      assert.ok(typeof w.object.metadata === 'object' && w.object.metadata !== null);
      assert.ok(
        w.resourceVersion === undefined ||
          (typeof w.resourceVersion === 'string' && w.resourceVersion !== ''),
      );
      return;
    case 'bookmark':
      assert.ok(typeof w.resourceVersion === 'string' && w.resourceVersion !== '');
      return;
    case 'error':
      assert.equal(typeof w.gone, 'boolean');
      assert.ok(typeof w.status === 'object' && w.status !== null);
      return;
    case 'garbage':
      assert.equal(typeof w.message, 'string');
      assert.ok(w.message.length <= MAX_GARBAGE_MESSAGE, `garbage message of ${w.message.length} characters`);
      return;
    default:
      assert.fail(`unknown kind ${(w as { kind: string }).kind}`);
  }
}

describe('parseWatchLine (properties)', () => {
  it('parses every well-formed event line to its kind, type and resourceVersion', () => {
    fc.assert(
      fc.property(eventLine, (e) => {
        const w = parseWatchLine(e.line);
        checkWellFormed(w);
        assert.equal(w.kind, e.want);
        if (w.kind === 'object') {
          assert.equal(w.type, e.type);
          assert.equal(w.resourceVersion, e.rv);
        }
        if (w.kind === 'bookmark') assert.equal(w.resourceVersion, e.rv);
        if (w.kind === 'error') assert.equal(w.gone, e.line.includes('410') || /Expired|Gone/.test(e.line));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on hostile lines, and reports garbage with a bounded message', () => {
    fc.assert(
      fc.property(hostileLine, (line) => {
        checkWellFormed(parseWatchLine(line));
      }),
      { numRuns: 1500 },
    );
  });

  it('regression: an unknown event type of any length gives a bounded garbage message', () => {
    const w = parseWatchLine(JSON.stringify({ type: 'X'.repeat(100_000), object: { metadata: {} } }));
    assert.equal(w.kind, 'garbage');
    checkWellFormed(w);
  });
});

// ------------------------------------------------------------------------------------------------ watchOnce

interface Observed {
  readonly events: string[];
  readonly garbage: string[];
  readonly end: unknown;
}

async function watchBody(chunks: readonly Uint8Array[]): Promise<Observed> {
  const t = createFakeTransport({
    stream: async (_req, ctl) => {
      for (const c of chunks) ctl.push(c);
      return 'end';
    },
  });
  const events: string[] = [];
  const garbage: string[] = [];
  const end = await watchOnce(
    t,
    CONFIG_MAPS,
    { namespace: 'n', resourceVersion: '1', timeoutSeconds: 300 },
    (e: WatchEvent) => events.push(JSON.stringify(e)),
    (m) => garbage.push(m),
  );
  return { events, garbage, end };
}

describe('watchOnce (properties)', () => {
  it('delivers the same events, garbage reports and end for any chunking of the same body', async () => {
    const body = fc
      .record({
        lines: fc.array(fc.oneof({ weight: 4, arbitrary: eventLine.map((e) => e.line) }, hostileLine), {
          maxLength: 12,
        }),
        eol: fc.constantFrom('\n', '\r\n'),
        unterminated: fc.boolean(),
      })
      .map((r) => {
        const text = r.lines.join(r.eol);
        return enc.encode(r.unterminated || text === '' ? text : text + r.eol);
      });
    await fc.assert(
      fc.asyncProperty(body, cuts, async (bytes, at) => {
        const whole = await watchBody([bytes]);
        const cut = await watchBody(chunkBytes(bytes, at));
        assert.deepEqual(cut, whole);
        // Every event and garbage line of the body is accounted for, in order, until an in-stream ERROR ends it.
        const lines = dec
          .decode(bytes)
          .split('\n')
          .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
          .filter((l) => l.trim() !== '');
        let delivered = 0;
        let garbage = 0;
        for (const line of lines) {
          const w = parseWatchLine(line);
          if (w.kind === 'error') break;
          if (w.kind === 'garbage') garbage++;
          else delivered++;
        }
        assert.equal(whole.events.length, delivered);
        assert.equal(whole.garbage.length, garbage);
        assert.equal((whole.end as { events: number }).events, delivered);
      }),
      { numRuns: 300 },
    );
  });
});
