// Byte-array helpers shared by the framing code and its tests. Pure.

/** `parts` joined into one array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * `bytes` cut at the given positions (each taken modulo `bytes.length + 1`; repeated positions give empty chunks):
 * how a stream may arrive, for tests that must give the same result for any chunking.
 */
export function chunkBytes(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const p of points) {
    out.push(bytes.subarray(start, p));
    start = p;
  }
  out.push(bytes.subarray(start));
  return out;
}
