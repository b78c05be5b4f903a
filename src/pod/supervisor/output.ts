/** The part of a writable stream the supervisor's stdout needs (process.stdout on Node and Deno). */
export interface WritableLike {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  readonly writableLength?: number;
}

/**
 * One of the supervisor's output streams (bare payload lines on stdout; tagged agent lines and logs on stderr). It reports congestion so the reader can stop
 * pulling from the agent (backpressure), and a broken stdout (EPIPE) turns every later write into a no-op instead
 * of crashing the run.
 */
export class BareOutput {
  private congestedNow = false;
  private broken = false;
  private drainWaiters: Array<() => void> = [];

  constructor(
    private readonly stream: WritableLike,
    onBroken: (error: unknown) => void,
  ) {
    stream.on('error', (error) => {
      if (!this.broken) onBroken(error);
      this.broken = true;
      this.release();
    });
  }

  /** Writes `text` followed by a newline. */
  line(text: string): void {
    this.write(`${text}\n`);
  }

  /** Writes `text` as it is. */
  write(text: string): void {
    if (this.broken) return;
    try {
      if (!this.stream.write(text) && !this.congestedNow) {
        this.congestedNow = true;
        this.stream.once('drain', () => this.release());
      }
    } catch {
      this.broken = true;
      this.release();
    }
  }

  /** True while the stream's buffer is over its high-water mark. */
  get congested(): boolean {
    return this.congestedNow && !this.broken;
  }

  /** Resolves when the stream is no longer congested (at once if it is not). */
  drained(): Promise<void> {
    if (!this.congested) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private release(): void {
    this.congestedNow = false;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}

/**
 * Waits until every stream has handed its buffered bytes to the OS (`writableLength` 0) or `timeoutMs` passes.
 * Needed before a hard exit: Node writes to pipes asynchronously.
 */
export async function waitForFlush(
  streams: ReadonlyArray<{ readonly writableLength?: number }>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (streams.some((s) => (s.writableLength ?? 0) > 0) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
