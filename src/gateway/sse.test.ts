import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseDecoder, type SseEvent } from './sse.ts';

const encode = (s: string) => new TextEncoder().encode(s);

/** Feeds `bytes` in pieces cut at `cuts` and returns the events dispatched. */
function decode(
  bytes: Uint8Array,
  cuts: readonly number[] = [],
  max?: number,
): { events: SseEvent[]; dropped: number } {
  const events: SseEvent[] = [];
  const d = new SseDecoder((e) => events.push(e), max);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    d.feed(bytes.subarray(at, cut));
    at = cut;
  }
  d.end();
  return { events, dropped: d.dropped };
}

const STREAM =
  'event: message_start\ndata: {"type":"message_start"}\n\n' +
  ': a comment\n' +
  'event: content_block_delta\r\ndata: {"text":"h\u00e9\u20ac\ud83d\ude00"}\r\n\r\n' +
  'data: line one\rdata:line two\r\r' +
  'data: [DONE]\n\n';

const EXPECTED: SseEvent[] = [
  { event: 'message_start', data: '{"type":"message_start"}' },
  { event: 'content_block_delta', data: '{"text":"h\u00e9\u20ac\ud83d\ude00"}' },
  { event: undefined, data: 'line one\nline two' },
  { event: undefined, data: '[DONE]' },
];

describe('SseDecoder', () => {
  it('decodes events with LF, CRLF and CR line ends, names, comments and multi-line data', () => {
    assert.deepEqual(decode(encode(STREAM)).events, EXPECTED);
  });

  it('gives the same events however the bytes are cut in two (UTF-8 characters and CRLF split included)', () => {
    const bytes = encode(STREAM);
    for (let i = 0; i <= bytes.length; i++)
      assert.deepEqual(decode(bytes, [i]).events, EXPECTED, `cut at ${i}`);
  });

  it('gives the same events fed one byte at a time', () => {
    const bytes = encode(STREAM);
    const cuts = Array.from({ length: bytes.length }, (_, i) => i);
    assert.deepEqual(decode(bytes, cuts).events, EXPECTED);
  });

  it('dispatches nothing for an event without data, and not an event cut off by the end of the stream', () => {
    assert.deepEqual(decode(encode('event: ping\n\ndata: {"a":1}\n\ndata: {"unfinished"')).events, [
      { event: undefined, data: '{"a":1}' },
    ]);
  });

  it('a field without a colon is a field with an empty value; only one leading space is taken off', () => {
    assert.deepEqual(decode(encode('data\ndata:  two spaces\n\n')).events, [
      { event: undefined, data: '\n two spaces' },
    ]);
  });

  it('drops an event larger than the limit and goes on with the next', () => {
    const big = `data: ${'x'.repeat(100)}\n\n`;
    const r = decode(encode(`${big}data: small\n\n`), [10, 50], 64);
    assert.deepEqual(r.events, [{ event: undefined, data: 'small' }]);
    assert.equal(r.dropped, 1);
  });
});
