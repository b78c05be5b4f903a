/**
 * Hands out pod IPs 127.0.0.N (N in [first, last]) round-robin, so a freed address is reused as late as
 * possible. Pure bookkeeping: binding happens in the pod's own processes.
 */
export class IpPool {
  readonly #first: number;
  readonly #last: number;
  readonly #used = new Map<number, string>();
  #next: number;

  /** `start` is where round-robin allocation begins (default `first`); it must lie in the range. */
  constructor(first = 2, last = 254, start = first) {
    if (first < 1 || last > 254 || first > last) throw new Error(`bad pod IP range 127.0.0.${first}-${last}`);
    if (start < first || start > last) throw new Error(`pod IP start ${start} outside ${first}-${last}`);
    this.#first = first;
    this.#last = last;
    this.#next = start;
  }

  /** Allocates an address for `owner` (the same owner gets the same address back); undefined when full. */
  allocate(owner: string): string | undefined {
    for (const [n, o] of this.#used) if (o === owner) return `127.0.0.${n}`;
    const size = this.#last - this.#first + 1;
    for (let i = 0; i < size; i++) {
      const n = this.#first + ((this.#next - this.#first + i) % size);
      if (!this.#used.has(n)) {
        this.#used.set(n, owner);
        this.#next = n + 1 > this.#last ? this.#first : n + 1;
        return `127.0.0.${n}`;
      }
    }
    return undefined;
  }

  /** Frees whatever `owner` holds (no-op when it holds nothing). */
  release(owner: string): void {
    for (const [n, o] of this.#used) if (o === owner) this.#used.delete(n);
  }

  /** How many addresses are in use. */
  get inUse(): number {
    return this.#used.size;
  }
}
