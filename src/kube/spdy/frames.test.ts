import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  controlFrame,
  dataFrame,
  decodeHeaders,
  encodeHeaders,
  FLAG_FIN,
  FrameReader,
  FrameType,
  leadingId,
  synStreamBody,
} from './frames.ts';

describe('SPDY frames', () => {
  it('encodes control frames with version 3, type, flags and 24-bit length', () => {
    const bytes = controlFrame(FrameType.ping, 0, Uint8Array.of(0, 0, 0, 7));
    assert.deepEqual([...bytes], [0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 7]);
  });

  it('encodes data frames with the stream id and FIN', () => {
    const bytes = dataFrame(5, true, Uint8Array.of(9, 8));
    assert.deepEqual([...bytes], [0, 0, 0, 5, FLAG_FIN, 0, 0, 2, 9, 8]);
  });

  it('reassembles frames split at any byte and keeps the remainder', () => {
    const stream = [
      ...controlFrame(FrameType.synStream, FLAG_FIN, synStreamBody(3, Uint8Array.of(1, 2))),
      ...dataFrame(3, false, new Uint8Array(300).fill(7)),
      ...dataFrame(3, true, new Uint8Array(0)),
    ];
    for (const cut of [1, 7, 8, 9, 20, stream.length - 1]) {
      const reader = new FrameReader();
      const frames = [
        ...reader.push(Uint8Array.from(stream.slice(0, cut))),
        ...reader.push(Uint8Array.from(stream.slice(cut))),
      ];
      assert.equal(frames.length, 3, `cut at ${cut}`);
      const [syn, data, fin] = frames;
      assert.ok(syn?.kind === 'control' && syn.type === FrameType.synStream && syn.flags === FLAG_FIN);
      assert.equal(leadingId(syn.body), 3);
      assert.ok(data?.kind === 'data' && data.streamId === 3 && !data.fin && data.data.length === 300);
      assert.ok(fin?.kind === 'data' && fin.fin && fin.data.length === 0);
    }
  });

  it('refuses another SPDY version', () => {
    const frame = controlFrame(FrameType.ping, 0, Uint8Array.of(0, 0, 0, 1));
    frame[1] = 2;
    assert.throws(() => new FrameReader().push(frame), /unsupported SPDY version 2/);
  });

  it('round-trips name/value blocks, lowercasing names', () => {
    const block = encodeHeaders({ streamType: 'data', port: '8443', requestID: '12' });
    assert.deepEqual(
      [...decodeHeaders(block)],
      [
        ['streamtype', 'data'],
        ['port', '8443'],
        ['requestid', '12'],
      ],
    );
    assert.deepEqual([...decodeHeaders(encodeHeaders({}))], []);
    assert.throws(() => decodeHeaders(block.subarray(0, block.length - 1)), /truncated/);
  });
});
