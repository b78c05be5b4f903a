// SPDY/3.1 framing, the part of the protocol Kubernetes port-forwarding uses (kubelet, API server, kubectl all speak
// it for `pods/portforward`): pure encoders and an incremental decoder. No I/O here.
import { concatBytes } from '../../shared/bytes.ts';

/**
 * The header compression dictionary of SPDY/3 (draft-mbelshe-httpbis-spdy-00, section 2.6.10.1): 65 HTTP words,
 * each preceded by its length as a 32-bit big-endian number, then a run of common values.
 */
const DICTIONARY_WORDS = [
  'options',
  'head',
  'post',
  'put',
  'delete',
  'trace',
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'age',
  'allow',
  'authorization',
  'cache-control',
  'connection',
  'content-base',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-md5',
  'content-range',
  'content-type',
  'date',
  'etag',
  'expect',
  'expires',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'pragma',
  'proxy-authenticate',
  'proxy-authorization',
  'range',
  'referer',
  'retry-after',
  'server',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'vary',
  'via',
  'warning',
  'www-authenticate',
  'method',
  'get',
  'status',
  '200 OK',
  'version',
  'HTTP/1.1',
  'url',
  'public',
  'set-cookie',
  'keep-alive',
  'origin',
];
const DICTIONARY_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
  '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized' +
  '403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
  'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
  'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,' +
  'text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

function buildDictionary(): Uint8Array {
  const enc = new TextEncoder();
  const parts: number[] = [];
  for (const word of DICTIONARY_WORDS) {
    const bytes = enc.encode(word);
    parts.push(0, 0, 0, bytes.length, ...bytes);
  }
  parts.push(...enc.encode(DICTIONARY_TAIL));
  return Uint8Array.from(parts);
}

export const HEADER_DICTIONARY: Uint8Array = buildDictionary();

export const SPDY_VERSION = 3;

export const FrameType = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

export const FLAG_FIN = 0x01;

/** RST_STREAM status codes. */
export const RstStatus = {
  protocolError: 1,
  invalidStream: 2,
  refusedStream: 3,
  cancel: 5,
  internalError: 6,
  streamInUse: 8,
  streamAlreadyClosed: 9,
} as const;

/** Largest frame body accepted (the length field allows 16 MiB; nothing in port-forwarding comes near it). */
export const MAX_FRAME_LENGTH = 1 << 24;

export type Frame =
  | { readonly kind: 'data'; readonly streamId: number; readonly fin: boolean; readonly data: Uint8Array }
  | {
      readonly kind: 'control';
      readonly type: number;
      readonly flags: number;
      readonly body: Uint8Array;
    };

/** Splits a byte stream into frames; keeps the unfinished remainder for the next `push`. */
export class FrameReader {
  #buffer: Uint8Array = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const joined = new Uint8Array(this.#buffer.length + chunk.length);
    joined.set(this.#buffer);
    joined.set(chunk, this.#buffer.length);
    const frames: Frame[] = [];
    let at = 0;
    while (joined.length - at >= 8) {
      const view = new DataView(joined.buffer, joined.byteOffset + at, 8);
      const length = view.getUint32(4) & 0xffffff;
      if (joined.length - at < 8 + length) break;
      const flags = view.getUint8(4);
      const body = joined.slice(at + 8, at + 8 + length);
      const first = view.getUint32(0);
      if ((first & 0x80000000) !== 0) {
        const version = (first >>> 16) & 0x7fff;
        if (version !== SPDY_VERSION) throw new Error(`unsupported SPDY version ${version}`);
        frames.push({ kind: 'control', type: first & 0xffff, flags, body });
      } else {
        frames.push({
          kind: 'data',
          streamId: first & 0x7fffffff,
          fin: (flags & FLAG_FIN) !== 0,
          data: body,
        });
      }
      at += 8 + length;
    }
    this.#buffer = joined.slice(at);
    return frames;
  }
}

function frame(first: number, flags: number, body: Uint8Array): Uint8Array {
  if (body.length >= MAX_FRAME_LENGTH) throw new Error('SPDY frame too large');
  const out = new Uint8Array(8 + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, first >>> 0);
  view.setUint32(4, ((flags & 0xff) << 24) | body.length);
  out.set(body, 8);
  return out;
}

export function controlFrame(type: number, flags: number, body: Uint8Array): Uint8Array {
  return frame((0x8000 | SPDY_VERSION) * 0x10000 + type, flags, body);
}

export function dataFrame(streamId: number, fin: boolean, data: Uint8Array): Uint8Array {
  return frame(streamId & 0x7fffffff, fin ? FLAG_FIN : 0, data);
}

function u32s(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  for (const [i, value] of values.entries()) view.setUint32(i * 4, value >>> 0);
  return out;
}

/** SYN_STREAM body: stream id, no associated stream, priority 0, then the compressed header block. */
export function synStreamBody(streamId: number, headerBlock: Uint8Array): Uint8Array {
  return concatBytes([u32s(streamId & 0x7fffffff, 0), new Uint8Array(2), headerBlock]);
}

export function synReplyBody(streamId: number, headerBlock: Uint8Array): Uint8Array {
  return concatBytes([u32s(streamId & 0x7fffffff), headerBlock]);
}

export function rstStreamBody(streamId: number, status: number): Uint8Array {
  return u32s(streamId & 0x7fffffff, status);
}

export function pingBody(id: number): Uint8Array {
  return u32s(id);
}

export function goAwayBody(lastGoodStreamId: number, status: number): Uint8Array {
  return u32s(lastGoodStreamId & 0x7fffffff, status);
}

/** The first 31-bit number of a control frame body (the stream id of stream frames, the id of a PING). */
export function leadingId(body: Uint8Array): number {
  if (body.length < 4) throw new Error('control frame body too short');
  return new DataView(body.buffer, body.byteOffset, 4).getUint32(0) & 0x7fffffff;
}

/** Where the header block starts in a control frame body of `type`. */
export function headerBlockOffset(type: number): number {
  return type === FrameType.synStream ? 10 : 4;
}

/** An uncompressed name/value block: names lowercased, several values joined by NUL. */
export function encodeHeaders(headers: Readonly<Record<string, string>>): Uint8Array {
  const enc = new TextEncoder();
  const entries = Object.entries(headers);
  const parts: Uint8Array[] = [u32s(entries.length)];
  for (const [name, value] of entries) {
    const n = enc.encode(name.toLowerCase());
    const v = enc.encode(value);
    parts.push(u32s(n.length), n, u32s(v.length), v);
  }
  return concatBytes(parts);
}

/** Parses an uncompressed name/value block; a name with several values keeps them NUL-joined. */
export function decodeHeaders(block: Uint8Array): Map<string, string> {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const dec = new TextDecoder();
  const headers = new Map<string, string>();
  const read = (at: number): [string, number] => {
    if (at + 4 > block.length) throw new Error('truncated header block');
    const len = view.getUint32(at);
    if (at + 4 + len > block.length) throw new Error('truncated header block');
    return [dec.decode(block.subarray(at + 4, at + 4 + len)), at + 4 + len];
  };
  if (block.length < 4) throw new Error('truncated header block');
  const count = view.getUint32(0);
  let at = 4;
  for (let i = 0; i < count; i++) {
    const [name, afterName] = read(at);
    const [value, afterValue] = read(afterName);
    headers.set(name.toLowerCase(), value);
    at = afterValue;
  }
  return headers;
}
