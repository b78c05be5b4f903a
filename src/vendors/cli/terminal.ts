// Per-vendor classification of one stdout line of an agent CLI: did the run start, progress, or end (and how)?
// docs/design/reference-behaviour.md#terminal-events for claude/codex, docs/reference/vendor-cli-events.md for the
// event shapes, plus our OpenCode and Gemini rules.

import * as v from 'valibot';
import type { Vendor } from './route.ts';

/** What one stdout line says about the run. */
export type LineKind = 'started' | 'progress' | 'terminal-success' | 'terminal-failure';

/** The class of one line, with the CLI session id when a `started` line carries one. */
export interface LineClass {
  readonly kind: LineKind;
  readonly sessionId?: string;
}

const PROGRESS: LineClass = { kind: 'progress' };
const SUCCESS: LineClass = { kind: 'terminal-success' };
const FAILURE: LineClass = { kind: 'terminal-failure' };

const started = (id: string | undefined): LineClass =>
  id === undefined || id === '' ? { kind: 'started' } : { kind: 'started', sessionId: id };

const Typed = v.looseObject({ type: v.string() });
const ClaudeLine = v.looseObject({
  type: v.string(),
  subtype: v.optional(v.unknown()),
  is_error: v.optional(v.unknown()),
  session_id: v.optional(v.unknown()),
});
const CodexLine = v.looseObject({ type: v.string(), thread_id: v.optional(v.unknown()) });
const GeminiLine = v.looseObject({
  type: v.string(),
  status: v.optional(v.unknown()),
  session_id: v.optional(v.unknown()),
});
const OpencodeLine = v.looseObject({
  type: v.string(),
  sessionID: v.optional(v.unknown()),
  part: v.optional(v.looseObject({ reason: v.optional(v.unknown()) })),
});

const str = (u: unknown): string | undefined => (typeof u === 'string' ? u : undefined);

/** OpenCode step finish reasons that end the agent loop without success. */
const OPENCODE_FAILED_FINISH: ReadonlySet<string> = new Set(['error', 'length', 'content-filter']);
/** OpenCode step finish reasons after which the loop continues. */
const OPENCODE_CONTINUE_FINISH: ReadonlySet<string> = new Set(['tool-calls', 'unknown']);

/**
 * Classifies an already-parsed stdout line of `vendor`'s CLI. Anything that is not an object with a string `type`
 * is `progress` (never terminal).
 *
 * | vendor | started | terminal-success | terminal-failure |
 * |---|---|---|---|
 * | claude, exec | `system`/`init` | `result` without `is_error: true` | `result` with `is_error: true` |
 * | codex | `thread.started` | `turn.completed` | `turn.failed` (`error` lines are retry notices: progress) |
 * | gemini | `init` | `result` with `status: "success"` | any other `result` |
 * | opencode | `step_start` | `done`; `step_finish` with a final reason other than below | `error`; `step_finish` with reason `error`, `length`, `content-filter` |
 *
 * OpenCode `step_finish` with reason `tool-calls`, `unknown` or none is progress (the loop goes on).
 */
export function classifyEvent(vendor: Vendor, event: unknown): LineClass {
  if (!v.is(Typed, event)) return PROGRESS;
  switch (vendor) {
    case 'claude':
    case 'exec': {
      const e = v.parse(ClaudeLine, event);
      if (e.type === 'result') return e.is_error === true ? FAILURE : SUCCESS;
      if (e.type === 'system' && e.subtype === 'init') return started(str(e.session_id));
      return PROGRESS;
    }
    case 'codex': {
      const e = v.parse(CodexLine, event);
      if (e.type === 'thread.started') return started(str(e.thread_id));
      if (e.type === 'turn.completed') return SUCCESS;
      if (e.type === 'turn.failed') return FAILURE;
      return PROGRESS;
    }
    case 'gemini': {
      const e = v.parse(GeminiLine, event);
      if (e.type === 'init') return started(str(e.session_id));
      if (e.type === 'result') return e.status === 'success' ? SUCCESS : FAILURE;
      return PROGRESS;
    }
    case 'opencode': {
      const parsed = v.safeParse(OpencodeLine, event);
      if (!parsed.success) return PROGRESS;
      const e = parsed.output;
      if (e.type === 'step_start') return started(str(e.sessionID));
      if (e.type === 'done') return SUCCESS;
      if (e.type === 'error') return FAILURE;
      if (e.type === 'step_finish') {
        const reason = str(e.part?.reason);
        if (reason === undefined || OPENCODE_CONTINUE_FINISH.has(reason)) return PROGRESS;
        return OPENCODE_FAILED_FINISH.has(reason) ? FAILURE : SUCCESS;
      }
      return PROGRESS;
    }
  }
}

/** Parses one stdout line as JSON (malformed → `undefined`). */
export function parseLine(line: string): unknown {
  const text = line.trim();
  if (!text.startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Classifies one raw stdout line of `vendor`'s CLI; malformed or non-object lines are `progress`. */
export function classifyLine(vendor: Vendor, line: string): LineClass {
  return classifyEvent(vendor, parseLine(line));
}

/** True for the two terminal kinds. */
export function isTerminal(kind: LineKind): boolean {
  return kind === 'terminal-success' || kind === 'terminal-failure';
}
