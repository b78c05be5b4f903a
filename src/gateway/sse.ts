// An incremental server-sent-events decoder (the WHATWG HTML "event stream" format), pure: fed the bytes of a stream
// chunk by chunk as they pass through the gateway, it hands over each event as soon as its blank line arrives and
// keeps nothing but the line in progress and the event in progress. Lines end in CRLF, LF or CR (a CR at the end of
// one chunk and an LF at the start of the next are one line end); a UTF-8 character split across chunks is joined.

/** One dispatched event: its `event:` name (undefined: none given) and its `data:` lines joined with LF. */
export interface SseEvent {
  readonly event: string | undefined;
  readonly data: string;
}

/** The most characters one event (its line in progress plus its data) may hold; past it the event is dropped. */
export const MAX_SSE_EVENT_CHARS = 16 * 1024 * 1024;

export class SseDecoder {
  readonly #onEvent: (event: SseEvent) => void;
  readonly #max: number;
  readonly #utf8 = new TextDecoder('utf-8');
  #line = '';
  #afterCr = false;
  #event: string | undefined;
  #data: string[] = [];
  #dataChars = 0;
  #hasData = false;
  #overflow = false;
  /** Events dropped because they were larger than the limit. */
  dropped = 0;

  constructor(onEvent: (event: SseEvent) => void, maxEventChars = MAX_SSE_EVENT_CHARS) {
    this.#onEvent = onEvent;
    this.#max = maxEventChars;
  }

  /** Feeds the next bytes (or text) of the stream. */
  feed(chunk: Uint8Array | string): void {
    const text = typeof chunk === 'string' ? chunk : this.#utf8.decode(chunk, { stream: true });
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      if (c === 10 && this.#afterCr && i === start && this.#line === '') {
        // The LF of a CRLF whose CR ended the previous piece.
        this.#afterCr = false;
        start = i + 1;
        continue;
      }
      this.#append(text.slice(start, i));
      this.#endLine();
      this.#afterCr = c === 13;
      if (c === 13 && text.charCodeAt(i + 1) === 10) {
        i++;
        this.#afterCr = false;
      }
      start = i + 1;
    }
    if (start < text.length) {
      this.#afterCr = false;
      this.#append(text.slice(start));
    }
  }

  /** The stream ended: an event without its final blank line is not dispatched (as the format says). */
  end(): void {
    const rest = this.#utf8.decode();
    if (rest !== '') this.feed(rest);
    this.#line = '';
    this.#reset();
  }

  #append(piece: string): void {
    if (this.#overflow) return;
    this.#line += piece;
    if (this.#line.length + this.#dataChars > this.#max) this.#overflowed();
  }

  #overflowed(): void {
    this.#overflow = true;
    this.#line = '';
    this.#data = [];
    this.#dataChars = 0;
  }

  #endLine(): void {
    const line = this.#line;
    this.#line = '';
    if (line === '' && !this.#overflow) {
      this.#dispatch();
      return;
    }
    if (line === '' && this.#overflow) {
      this.dropped++;
      this.#reset();
      return;
    }
    if (this.#overflow || line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') {
      this.#data.push(value);
      this.#dataChars += value.length + 1;
      this.#hasData = true;
    }
  }

  #dispatch(): void {
    if (this.#hasData) this.#onEvent({ event: this.#event, data: this.#data.join('\n') });
    this.#reset();
  }

  #reset(): void {
    this.#event = undefined;
    this.#data = [];
    this.#dataChars = 0;
    this.#hasData = false;
    this.#overflow = false;
  }
}
