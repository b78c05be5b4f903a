// A SPDY/3.1 session over one connection, each stream a node Duplex. Enough of the protocol for port-forwarding:
// streams opened by either side, replies, data with half-close, resets, pings answered, GOAWAY. Like the Go
// implementation Kubernetes uses, it does no per-stream flow control (WINDOW_UPDATE and SETTINGS are read and
// ignored); backpressure is the socket's.
import { Buffer } from 'node:buffer';
import { Duplex } from 'node:stream';
import {
  controlFrame,
  dataFrame,
  decodeHeaders,
  encodeHeaders,
  FLAG_FIN,
  FrameReader,
  FrameType,
  goAwayBody,
  HEADER_DICTIONARY,
  headerBlockOffset,
  leadingId,
  RstStatus,
  rstStreamBody,
  synReplyBody,
  synStreamBody,
} from './frames.ts';
import { Inflater, StoredDeflater } from './zlib.ts';

const MAX_DATA_FRAME = 64 * 1024;

export interface SpdySessionOptions {
  readonly role: 'client' | 'server';
  /** A stream the peer opened, with its (lowercased) headers. Answer with `reply()` or `reset()`. */
  readonly onStream?: (stream: SpdyStream, headers: ReadonlyMap<string, string>) => void;
}

/** One SPDY stream: write to send DATA, `end()` to half-close, read what the peer sends until its FIN. */
export class SpdyStream extends Duplex {
  readonly id: number;
  readonly #session: SpdySession;
  #remoteEnded = false;
  #localEnded = false;
  #resetByPeer = false;

  constructor(id: number, session: SpdySession) {
    super({ allowHalfOpen: true });
    this.id = id;
    this.#session = session;
  }

  /** Accepts a stream the peer opened (SYN_REPLY). */
  reply(headers: Readonly<Record<string, string>> = {}): void {
    this.#session.send(
      controlFrame(FrameType.synReply, 0, synReplyBody(this.id, this.#session.compress(headers))),
    );
  }

  /** Abandons the stream (RST_STREAM CANCEL). */
  reset(): void {
    this.destroy();
  }

  /** @internal */
  receive(data: Uint8Array, fin: boolean): void {
    if (this.#remoteEnded) return;
    if (data.length > 0) this.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    if (fin) this.receiveFin();
  }

  /** @internal */
  receiveFin(): void {
    if (this.#remoteEnded) return;
    this.#remoteEnded = true;
    this.push(null);
  }

  /** @internal */
  receiveReset(status: number): void {
    this.#resetByPeer = true;
    this.destroy(new Error(`SPDY stream ${this.id} reset by the peer (status ${status})`));
  }

  override _read(): void {}

  override _write(
    chunk: Uint8Array,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    let flushed = true;
    for (let at = 0; at < chunk.length; at += MAX_DATA_FRAME) {
      flushed = this.#session.send(dataFrame(this.id, false, chunk.subarray(at, at + MAX_DATA_FRAME)));
    }
    if (flushed) callback();
    else this.#session.onDrain(() => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#localEnded = true;
    this.#session.send(dataFrame(this.id, true, new Uint8Array(0)));
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#resetByPeer && !(this.#localEnded && this.#remoteEnded)) {
      this.#session.send(controlFrame(FrameType.rstStream, 0, rstStreamBody(this.id, RstStatus.cancel)));
    }
    this.#session.forget(this.id);
    callback(error);
  }
}

/** A SPDY session on `socket` (already upgraded). Closing the socket ends every stream. */
export class SpdySession {
  readonly #socket: Duplex;
  readonly #opts: SpdySessionOptions;
  readonly #reader = new FrameReader();
  readonly #deflater = new StoredDeflater(HEADER_DICTIONARY);
  readonly #inflater = new Inflater(HEADER_DICTIONARY);
  readonly #streams = new Map<number, SpdyStream>();
  #nextId: number;
  #lastRemoteId = 0;
  #closed = false;
  readonly #closeListeners: ((error?: Error) => void)[] = [];

  constructor(socket: Duplex, opts: SpdySessionOptions) {
    this.#socket = socket;
    this.#opts = opts;
    this.#nextId = opts.role === 'client' ? 1 : 2;
    socket.on('data', (chunk: Uint8Array) => {
      try {
        for (const frame of this.#reader.push(chunk)) {
          if (frame.kind === 'data') this.#streams.get(frame.streamId)?.receive(frame.data, frame.fin);
          else this.#control(frame.type, frame.flags, frame.body);
        }
      } catch (error) {
        this.#fail(error instanceof Error ? error : new Error(String(error)), true);
      }
    });
    socket.on('error', (error: Error) => this.#fail(error, false));
    socket.on('close', () => this.#fail(new Error('the SPDY connection closed'), false));
    socket.on('end', () => this.#fail(new Error('the SPDY connection closed'), false));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Opens a stream with `headers`; `fin` half-closes it at once (nothing to send). */
  open(headers: Readonly<Record<string, string>>, fin = false): SpdyStream {
    if (this.#closed) throw new Error('the SPDY connection is closed');
    const id = this.#nextId;
    this.#nextId += 2;
    const stream = new SpdyStream(id, this);
    this.#streams.set(id, stream);
    this.send(
      controlFrame(FrameType.synStream, fin ? FLAG_FIN : 0, synStreamBody(id, this.compress(headers))),
    );
    if (fin) stream.end();
    return stream;
  }

  /** Called once when the session ends, with the cause unless it was `close()`. */
  onClose(listener: (error?: Error) => void): void {
    if (this.#closed) listener();
    else this.#closeListeners.push(listener);
  }

  /** Says GOAWAY and closes the connection; open streams end. */
  close(): void {
    if (this.#closed) return;
    this.send(controlFrame(FrameType.goAway, 0, goAwayBody(this.#lastRemoteId, 0)));
    this.#fail(undefined, false);
  }

  /** @internal */
  compress(headers: Readonly<Record<string, string>>): Uint8Array {
    return this.#deflater.deflate(encodeHeaders(headers));
  }

  /** @internal Writes bytes; false when the socket's buffer is full. */
  send(bytes: Uint8Array): boolean {
    if (this.#closed || this.#socket.destroyed || this.#socket.writableEnded) return true;
    return this.#socket.write(bytes);
  }

  /** @internal */
  onDrain(listener: () => void): void {
    if (this.#closed) listener();
    else this.#socket.once('drain', listener);
  }

  /** @internal */
  forget(id: number): void {
    this.#streams.delete(id);
  }

  #headers(type: number, body: Uint8Array): Map<string, string> {
    return decodeHeaders(this.#inflater.inflate(body.subarray(headerBlockOffset(type))));
  }

  #control(type: number, flags: number, body: Uint8Array): void {
    const fin = (flags & FLAG_FIN) !== 0;
    switch (type) {
      case FrameType.synStream: {
        const id = leadingId(body);
        const headers = this.#headers(type, body);
        this.#lastRemoteId = Math.max(this.#lastRemoteId, id);
        const stream = new SpdyStream(id, this);
        this.#streams.set(id, stream);
        if (this.#opts.onStream === undefined) {
          stream.reset();
          return;
        }
        if (fin) stream.receiveFin();
        this.#opts.onStream(stream, headers);
        return;
      }
      case FrameType.synReply:
      case FrameType.headers: {
        const id = leadingId(body);
        this.#headers(type, body); // read to keep the shared compression context in step
        if (fin) this.#streams.get(id)?.receiveFin();
        return;
      }
      case FrameType.rstStream: {
        const id = leadingId(body);
        const status = body.length >= 8 ? new DataView(body.buffer, body.byteOffset + 4, 4).getUint32(0) : 0;
        this.#streams.get(id)?.receiveReset(status);
        return;
      }
      case FrameType.ping: {
        // A ping the peer started (its id's parity is the peer's) is echoed; an answer to ours needs nothing.
        const id = leadingId(body);
        const peerStarted = (id % 2 === 1) === (this.#opts.role === 'server');
        if (peerStarted) this.send(controlFrame(FrameType.ping, 0, body));
        return;
      }
      case FrameType.goAway:
        this.#fail(undefined, false);
        return;
      default:
        return; // SETTINGS, WINDOW_UPDATE, unknown types: nothing to do
    }
  }

  #fail(error: Error | undefined, protocolError: boolean): void {
    if (this.#closed) return;
    if (protocolError) {
      this.send(controlFrame(FrameType.goAway, 0, goAwayBody(this.#lastRemoteId, 1)));
    }
    this.#closed = true;
    for (const stream of [...this.#streams.values()]) {
      stream.destroy(error ?? new Error('the SPDY connection closed'));
    }
    this.#streams.clear();
    this.#socket.end();
    if (protocolError) this.#socket.destroy();
    for (const listener of this.#closeListeners.splice(0)) listener(error);
  }
}
