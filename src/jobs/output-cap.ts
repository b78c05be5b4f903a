// Capping of the agent log tail stored in status.output (docs/design/reference-behaviour.md#output-capping).

/** Default cap, in bytes, of the log tail kept in `status.output` (256 KiB). */
export const MAX_OUTPUT_BYTES = 262144;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8');

/** The marker put before a capped tail: `...[truncated <n> bytes]...\n`. */
export function truncationMarker(droppedBytes: number): string {
  return `...[truncated ${droppedBytes} bytes]...\n`;
}

/**
 * Keeps the last `max` bytes of a UTF-8 log. Within the cap the log is returned unchanged; otherwise the cut point
 * `len - max` moves forward past UTF-8 continuation bytes (so no character is split) and the result is the
 * truncation marker plus the tail. The marker is extra, so the result may exceed `max` by the marker's length.
 * Invalid UTF-8 in a byte input decodes to U+FFFD.
 */
export function capOutput(log: string | Uint8Array, max: number = MAX_OUTPUT_BYTES): string {
  const bytes = typeof log === 'string' ? encoder.encode(log) : log;
  const limit = Math.max(0, Math.floor(max));
  if (bytes.length <= limit) return typeof log === 'string' ? log : decoder.decode(bytes);
  let cut = bytes.length - limit;
  while (cut < bytes.length && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut++;
  return truncationMarker(cut) + decoder.decode(bytes.subarray(cut));
}
