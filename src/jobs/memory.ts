// Agent memory (issue 10 §3), the pure half: where a run finds its memory (the ConfigMap key, the mount), how it is
// added to the prompt, how the memory block of a run's answer is found, and what the run's Job records about the
// memory it started with. The shell reads and writes the ConfigMap (src/effects/memory.ts).

import { BUNDLE_ROOT } from './bundle.ts';

/** The ConfigMap key that holds the memory. */
export const MEMORY_KEY = 'MEMORY.md';
/** Name of the run pod volume of the memory ConfigMap (reserved: a Station volume of that name is replaced). */
export const MEMORY_VOLUME_NAME = 'agent-memory';
/** Where the agent container (only it) finds the memory: `/agent/memory/MEMORY.md`, read-only. */
export const MEMORY_DIR = `${BUNDLE_ROOT}/memory`;
/** Label of the memory ConfigMaps the controller creates (they are owned by nothing: they outlive the runs). */
export const LABEL_MEMORY = 'agents.re-cinq.com/memory';

/** The marker that opens a memory block. */
export const MEMORY_OPEN = '<memory>';
/** The marker that closes a memory block. */
export const MEMORY_CLOSE = '</memory>';

/**
 * The one line every run of a definition with memory gets after its prompt (after its memory, when it has one).
 * The markers are in backticks: Markdown code, which the block search skips, so an echoed prompt is no block.
 */
export const MEMORY_INSTRUCTION = `You have a memory that persists across runs: shown above between the memory markers when it is not empty, and readable at ${MEMORY_DIR}/${MEMORY_KEY}. To replace it for later runs, end your answer with the complete new memory between a line \`${MEMORY_OPEN}\` and a line \`${MEMORY_CLOSE}\`; without such a block it stays as it is.`;

/** Job annotation: the memory ConfigMap the run started with. */
export const ANNOTATION_MEMORY_CONFIGMAP = 'agents.re-cinq.com/memory-configmap';
/** Job annotation: the run's `memory.maxSizeKB`. */
export const ANNOTATION_MEMORY_MAX_KB = 'agents.re-cinq.com/memory-max-size-kb';
/** Job annotation: the resourceVersion of the memory ConfigMap the run read (`""`: it did not exist). */
export const ANNOTATION_MEMORY_VERSION = 'agents.re-cinq.com/memory-version';

/** What a run's Job says about its memory (see {@link memoryOfJob}). */
export interface RunMemoryRecord {
  readonly configMap: string;
  readonly maxSizeKB: number;
  /** The ConfigMap's resourceVersion when the run read it: `""` when it did not exist, undefined when unknown. */
  readonly readVersion?: string | undefined;
}

/** The memory a run reads at its start: MEMORY.md as it was, and the ConfigMap's resourceVersion then. */
export interface MemoryRead {
  readonly content: string;
  /** Undefined when the ConfigMap did not exist. */
  readonly resourceVersion?: string | undefined;
}

const encoder = new TextEncoder();

/** Size of `s` in UTF-8 bytes. */
export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes that does not split a character. */
export function utf8Prefix(s: string, maxBytes: number): string {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const width = pair ? 4 : c >= 0x800 ? 3 : c >= 0x80 ? 2 : 1;
    if (bytes + width > maxBytes) break;
    bytes += width;
    i += pair ? 2 : 1;
  }
  return s.slice(0, i);
}

/**
 * The prompt a run of a definition with memory gets: the rendered prompt, then the memory (cut to `maxSizeKB`
 * KiB on a character boundary) between the markers when it is not blank, then {@link MEMORY_INSTRUCTION}.
 */
export function promptWithMemory(prompt: string, memory: string, maxSizeKB: number): string {
  const content = utf8Prefix(memory.trim(), maxSizeKB * 1024).trimEnd();
  const block = content === '' ? '\n\n' : `\n\n${MEMORY_OPEN}\n${content}\n${MEMORY_CLOSE}\n`;
  return `${prompt}${block}${MEMORY_INSTRUCTION}\n`;
}

/** A fence line (up to three spaces, then three or more backticks or tildes): its character and length. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

interface Marker {
  readonly open: boolean;
  readonly at: number;
  readonly end: number;
}

/** The markers in `text[from, to)`, which holds no code. */
function plainMarkers(text: string, from: number, to: number, out: Marker[]): void {
  for (let i = from; i < to; i++) {
    if (text.charCodeAt(i) !== 0x3c) continue;
    const marker = text.startsWith(MEMORY_OPEN, i)
      ? MEMORY_OPEN
      : text.startsWith(MEMORY_CLOSE, i)
        ? MEMORY_CLOSE
        : undefined;
    if (marker === undefined || i + marker.length > to) continue;
    out.push({ open: marker === MEMORY_OPEN, at: i, end: i + marker.length });
    i += marker.length - 1;
  }
}

/**
 * The markers of `text[from, to)` (one line, not in a fenced block) outside backtick code spans: a run of n
 * backticks opens a span when a later run of exactly n backticks on the line closes it, else it is literal.
 * Linear: each length's runs are walked once.
 */
function markersInLine(text: string, from: number, to: number, out: Marker[]): void {
  const runs: { readonly at: number; readonly end: number }[] = [];
  for (let i = from; i < to; i++) {
    if (text.charCodeAt(i) !== 0x60) continue;
    let end = i;
    while (end < to && text.charCodeAt(end) === 0x60) end++;
    runs.push({ at: i, end });
    i = end - 1;
  }
  const byLength = new Map<number, number[]>();
  runs.forEach((r, k) => {
    const list = byLength.get(r.end - r.at) ?? [];
    list.push(k);
    byLength.set(r.end - r.at, list);
  });
  const cursor = new Map<number, number>();
  let pos = from;
  let k = 0;
  for (;;) {
    const run = runs[k];
    plainMarkers(text, pos, run?.at ?? to, out);
    if (run === undefined) return;
    const n = run.end - run.at;
    const list = byLength.get(n) ?? [];
    let c = cursor.get(n) ?? 0;
    while (c < list.length && (list[c] ?? k) <= k) c++;
    cursor.set(n, c);
    const closing = list[c];
    const closed = closing === undefined ? undefined : runs[closing];
    if (closing === undefined || closed === undefined) {
      pos = run.end;
      k++;
    } else {
      pos = closed.end;
      k = closing + 1;
    }
  }
}

/**
 * The content of the last complete memory block of `text` (trimmed), or undefined when it has none. A block is the
 * text between an opening marker `<memory>` and the next closing marker `</memory>`; markers inside Markdown code
 * (a fenced block, or a backtick span on one line) do not count, so an agent can quote them. An opening marker
 * followed by another opening one starts afresh at the later one; an unclosed opening marker and a stray closing
 * one are ignored. Total and linear in the text.
 */
export function lastMemoryBlock(text: string): string | undefined {
  const markers: Marker[] = [];
  let fence: { char: string; length: number } | undefined;
  let start = 0;
  while (start <= text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl === -1 ? text.length : nl;
    const line = text.slice(start, end);
    const f = FENCE.exec(line);
    if (fence !== undefined) {
      // Inside a fenced block: only its closing fence (same character, at least as long, nothing after) ends it.
      const closing = f?.[1];
      if (
        closing !== undefined &&
        closing[0] === fence.char &&
        closing.length >= fence.length &&
        line.trim() === closing
      ) {
        fence = undefined;
      }
    } else if (f?.[1] !== undefined) {
      fence = { char: f[1][0] ?? '`', length: f[1].length };
    } else {
      markersInLine(text, start, end, markers);
    }
    if (nl === -1) break;
    start = nl + 1;
  }
  let open: { end: number } | undefined;
  let last: string | undefined;
  for (const m of markers) {
    if (m.open) open = m;
    else if (open !== undefined) {
      last = text.slice(open.end, m.at);
      open = undefined;
    }
  }
  return last?.trim();
}

/** The Job annotations of a run whose definition has memory (what {@link memoryOfJob} reads back). */
export function memoryAnnotations(
  configMap: string,
  maxSizeKB: number,
  read: MemoryRead | undefined,
): Record<string, string> {
  return {
    [ANNOTATION_MEMORY_CONFIGMAP]: configMap,
    [ANNOTATION_MEMORY_MAX_KB]: String(maxSizeKB),
    ...(read !== undefined ? { [ANNOTATION_MEMORY_VERSION]: read.resourceVersion ?? '' } : {}),
  };
}

/**
 * The memory a run started with, from its Job's annotations; undefined when it had none. A missing or unusable
 * size reads as `defaultMaxSizeKB`.
 */
export function memoryOfJob(
  annotations: Readonly<Record<string, string>>,
  defaultMaxSizeKB: number,
): RunMemoryRecord | undefined {
  const configMap = annotations[ANNOTATION_MEMORY_CONFIGMAP];
  if (configMap === undefined || configMap === '') return undefined;
  const size = Number(annotations[ANNOTATION_MEMORY_MAX_KB]);
  return {
    configMap,
    maxSizeKB: Number.isInteger(size) && size > 0 ? size : defaultMaxSizeKB,
    readVersion: annotations[ANNOTATION_MEMORY_VERSION],
  };
}
