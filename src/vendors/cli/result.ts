// What a run produced, read from its vendor CLI's stdout JSON lines (issue 10 §2): the final answer text, token
// usage, the CLI's own cost and the model (line shapes, and batch runs mapped onto them:
// docs/reference/vendor-cli-events.md;
// OpenCode as our classifiers in terminal.ts/events.ts read it). The supervisor feeds every line as it arrives and
// writes the result into the run report; the controller runs the same extraction over a capped log tail when no
// report is there.
//
// Agent output is untrusted: every number goes through `usageOf`/`tokenCount`/`costAmount` (never negative, never
// absurd, never a throw), and the kept answer text is bounded while accumulating, so memory does not grow with the
// output. Pure.

import type { Vendor } from './route.ts';
import {
  costAmount,
  MAX_COST_USD,
  MAX_TOKENS,
  type RunResult,
  type TokenUsage,
  tokenCount,
  usageOf,
} from './run-report.ts';
import { parseLine } from './terminal.ts';

/** The most bytes (UTF-8) of the final answer kept; a longer answer is kept cut, with `resultTruncated`. */
export const MAX_RESULT_TEXT_BYTES = 256 * 1024;
/** The most characters of a model name kept (a DNS-label-sized bound; model names are short). */
const MAX_MODEL_CHARS = 253;

/** Accumulates one run's stdout lines into its {@link RunResult}. */
export interface ResultAccumulator {
  /** Takes one parsed stdout JSON value; anything that is not an object is ignored. Never throws. */
  add(line: unknown): void;
  /** What the lines so far say; can be asked any time, and again. */
  result(): RunResult;
}

type Obj = Record<string, unknown>;
const isObject = (u: unknown): u is Obj => typeof u === 'object' && u !== null && !Array.isArray(u);

/** A model name we keep: a non-blank string, bounded. */
function modelName(u: unknown): string | undefined {
  if (typeof u !== 'string') return undefined;
  const m = u.trim();
  return m === '' ? undefined : m.slice(0, MAX_MODEL_CHARS);
}

/**
 * The longest prefix of `s` (as a UTF-16 index) that fits `maxBytes` UTF-8 bytes without splitting a character, and
 * its size. Stops as soon as the budget is spent: O(min(length, maxBytes)), no allocation.
 */
function utf8Prefix(s: string, maxBytes: number): { end: number; bytes: number } {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    let width = 1;
    let units = 1;
    if (c >= 0x800) {
      const pair =
        c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      // A lone surrogate is encoded as U+FFFD (3 bytes), as TextEncoder does.
      width = pair ? 4 : 3;
      units = pair ? 2 : 1;
    } else if (c >= 0x80) width = 2;
    if (bytes + width > maxBytes) break;
    bytes += width;
    i += units;
  }
  return { end: i, bytes };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The answer text being accumulated: replaced or appended to, never more than {@link MAX_RESULT_TEXT_BYTES}. */
class BoundedText {
  #text: string | undefined;
  #bytes = 0;
  #truncated = false;

  clear(): void {
    this.#text = undefined;
    this.#bytes = 0;
    this.#truncated = false;
  }

  set(text: string): void {
    this.clear();
    this.append(text);
  }

  append(chunk: string): void {
    if (this.#text === undefined) this.#text = '';
    if (this.#truncated || chunk === '') return;
    const room = MAX_RESULT_TEXT_BYTES - this.#bytes;
    const fit = utf8Prefix(chunk, room);
    if (fit.end === chunk.length) {
      this.#text += chunk;
      this.#bytes += fit.bytes;
      return;
    }
    // Cut, as a fresh copy: a slice could keep the whole (up to a line's worth of) text alive.
    const bytes = new Uint8Array(room);
    const { written } = encoder.encodeInto(chunk, bytes);
    this.#text += decoder.decode(bytes.subarray(0, written));
    this.#bytes += written;
    this.#truncated = true;
  }

  get fields(): Pick<RunResult, 'result' | 'resultTruncated'> {
    if (this.#text === undefined) return {};
    return { result: this.#text, ...(this.#truncated ? { resultTruncated: true } : {}) };
  }
}

const capped = (n: number): number => Math.min(MAX_TOKENS, n);

/** Two usages added field by field (each sum capped at MAX_TOKENS). */
function addUsage(a: TokenUsage | undefined, b: TokenUsage | undefined): TokenUsage | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return {
    input: capped(a.input + b.input),
    output: capped(a.output + b.output),
    cacheRead: capped(a.cacheRead + b.cacheRead),
    cacheWrite: capped(a.cacheWrite + b.cacheWrite),
    total: capped(a.total + b.total),
  };
}

/**
 * Usage whose input count already includes the cached part (OpenAI's `cached_input_tokens` and Gemini's `cached`
 * are parts of `input_tokens`, docs/reference/vendor-cli-events.md#batch-results-as-cli-lines), and for Codex the
 * cache writes too (`cache_write_input_tokens`, from the Responses API's `input_tokens_details`, a breakdown of
 * `input_tokens`; docs/reference/vendor-clis.md#stdout-lines-exec---json). `TokenUsage.input` is the uncached input
 * for every vendor (as Claude reports it), so the cached parts are taken out of it: input + output + cacheRead +
 * cacheWrite is what was billed, and a price table never charges cached tokens twice. The total, when the CLI gives
 * none, is the vendor's input + output.
 */
function usageCachedWithinInput(
  input: unknown,
  output: unknown,
  cacheRead: unknown,
  total: unknown,
  cacheWrite?: unknown,
): TokenUsage {
  const u = usageOf({ input, output, cacheRead, cacheWrite });
  // Cached counts above the input are nonsense: they are believed only up to the input.
  const cached = Math.min(u.cacheRead, u.input);
  const written = Math.min(u.cacheWrite, u.input - cached);
  return {
    ...u,
    input: u.input - cached - written,
    cacheRead: cached,
    cacheWrite: written,
    total: tokenCount(total) ?? capped(u.input + u.output),
  };
}

/**
 * Claude Code (docs/reference/vendor-cli-events.md#claude-code-stream-json): the last `result` line gives the answer
 * (`result`, a string only; error results have
 * none), `usage` (input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens) and
 * `total_cost_usd`; the model comes from `system`/`init`, else the first `modelUsage` key of that result.
 */
function claudeAccumulator(): ResultAccumulator {
  const text = new BoundedText();
  let initModel: string | undefined;
  let usageModel: string | undefined;
  let usage: TokenUsage | undefined;
  let costUsd: number | undefined;
  return {
    add(line) {
      if (!isObject(line)) return;
      if (line.type === 'system' && line.subtype === 'init') {
        initModel = modelName(line.model) ?? initModel;
        return;
      }
      if (line.type !== 'result') return;
      if (typeof line.result === 'string') text.set(line.result);
      else text.clear();
      const u = line.usage;
      usage = isObject(u)
        ? usageOf({
            input: u.input_tokens,
            output: u.output_tokens,
            cacheRead: u.cache_read_input_tokens,
            cacheWrite: u.cache_creation_input_tokens,
          })
        : undefined;
      costUsd = costAmount(line.total_cost_usd);
      usageModel = undefined;
      if (isObject(line.modelUsage)) {
        for (const key of Object.keys(line.modelUsage)) {
          usageModel = modelName(key);
          break;
        }
      }
    },
    result: () => compose(text, usage, costUsd, initModel ?? usageModel),
  };
}

/**
 * Codex (docs/reference/vendor-cli-events.md#codex-exec-json): the answer is the last `item.completed`
 * `agent_message` text; usage is the sum over every
 * `turn.completed` (cached_input_tokens → cacheRead, cache_write_input_tokens → cacheWrite, both out of
 * input_tokens). Codex reports no cost and no model. `{"type":"error"}` lines are retry notices ("Reconnecting…
 * n/5"), not the end; `turn.failed` is (terminal.ts).
 */
function codexAccumulator(): ResultAccumulator {
  const text = new BoundedText();
  let usage: TokenUsage | undefined;
  return {
    add(line) {
      if (!isObject(line)) return;
      if (line.type === 'item.completed') {
        const item = line.item;
        if (isObject(item) && item.type === 'agent_message' && typeof item.text === 'string')
          text.set(item.text);
        return;
      }
      if (line.type === 'turn.completed' && isObject(line.usage)) {
        const u = line.usage;
        usage = addUsage(
          usage,
          usageCachedWithinInput(
            u.input_tokens,
            u.output_tokens,
            u.cached_input_tokens,
            undefined,
            u.cache_write_input_tokens,
          ),
        );
      }
    },
    result: () => compose(text, usage, undefined, undefined),
  };
}

/**
 * Gemini CLI (docs/reference/vendor-cli-events.md#gemini-cli-stream-json): the answer is the assistant `message`
 * content after the last user message (`delta`
 * chunks joined, a message without `delta: true` replaces what came before); usage from the last `result` line's
 * `stats` (input_tokens, output_tokens, cached → cacheRead, total_tokens → total). The model is the one the API
 * answered as: the key of `stats.models` (keyed by the responses' `modelVersion`) with the most tokens, else `init`'s.
 * Gemini CLI 0.61 resolves some names itself (`--model gemini-3.5-flash` went to the API as `gemini-3.8-flash`
 * while its `init` line still said 3.5: docs/reference/vendor-clis.md#server-mode), so `init` names what was asked
 * for, not what was priced. No cost.
 */
function geminiAccumulator(): ResultAccumulator {
  const text = new BoundedText();
  let model: string | undefined;
  let usage: TokenUsage | undefined;
  return {
    add(line) {
      if (!isObject(line)) return;
      switch (line.type) {
        case 'init':
          model = modelName(line.model) ?? model;
          return;
        case 'message':
          if (line.role === 'user') text.clear();
          else if (line.role === 'assistant' && typeof line.content === 'string') {
            if (line.delta === true) text.append(line.content);
            else text.set(line.content);
          }
          return;
        case 'result': {
          const s = line.stats;
          usage = isObject(s)
            ? usageCachedWithinInput(s.input_tokens, s.output_tokens, s.cached, s.total_tokens)
            : undefined;
          if (isObject(s)) model = busiestModel(s.models) ?? model;
          return;
        }
        default:
          return;
      }
    },
    result: () => compose(text, usage, undefined, model),
  };
}

/** The key of a Gemini `stats.models` object with the most `total_tokens` (the first of equals), if any. */
function busiestModel(models: unknown): string | undefined {
  if (!isObject(models)) return undefined;
  let best: { name: string; tokens: number } | undefined;
  for (const [key, stats] of Object.entries(models)) {
    const name = modelName(key);
    if (name === undefined) continue;
    const tokens = isObject(stats) && typeof stats.total_tokens === 'number' ? stats.total_tokens : 0;
    if (best === undefined || tokens > best.tokens) best = { name, tokens };
  }
  return best?.name;
}

/**
 * OpenCode (`run --format json`, docs/reference/vendor-clis.md#stdout-lines---format-json): the answer is the last
 * `text` line's `part.text` (each is a whole text part). There is no result line: usage and cost are summed over the
 * `step_finish` lines, whose `part.tokens` counts one step (`input` without the cache, `output`, `cache.read`,
 * `cache.write`, `total`) and `part.cost` its USD. No model is printed.
 */
function opencodeAccumulator(): ResultAccumulator {
  const text = new BoundedText();
  let usage: TokenUsage | undefined;
  let costUsd: number | undefined;
  return {
    add(line) {
      if (!isObject(line) || !isObject(line.part)) return;
      const part = line.part;
      if (line.type === 'text') {
        if (typeof part.text === 'string') text.set(part.text);
        return;
      }
      if (line.type !== 'step_finish') return;
      if (isObject(part.tokens)) {
        const t = part.tokens;
        const cache = isObject(t.cache) ? t.cache : {};
        usage = addUsage(
          usage,
          usageOf({
            input: t.input,
            output: t.output,
            cacheRead: cache.read,
            cacheWrite: cache.write,
            total: t.total,
          }),
        );
      }
      const cost = costAmount(part.cost);
      if (cost !== undefined) costUsd = Math.min(MAX_COST_USD, (costUsd ?? 0) + cost);
    },
    result: () => compose(text, usage, costUsd, undefined),
  };
}

/** An `exec` run's command has no result format: nothing is extracted. */
function execAccumulator(): ResultAccumulator {
  return { add: () => undefined, result: () => ({}) };
}

function compose(
  text: BoundedText,
  usage: TokenUsage | undefined,
  costUsd: number | undefined,
  model: string | undefined,
): RunResult {
  return {
    ...text.fields,
    ...(usage !== undefined ? { usage } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(model !== undefined ? { model } : {}),
  };
}

/** A fresh accumulator for one run (one CLI invocation) of `vendor`'s CLI. */
export function resultAccumulator(vendor: Vendor): ResultAccumulator {
  switch (vendor) {
    case 'claude':
      return claudeAccumulator();
    case 'codex':
      return codexAccumulator();
    case 'gemini':
      return geminiAccumulator();
    case 'opencode':
      return opencodeAccumulator();
    case 'exec':
      return execAccumulator();
  }
}

/** The result of a run from its parsed stdout lines, in order. */
export function extractRunResult(vendor: Vendor, lines: Iterable<unknown>): RunResult {
  const acc = resultAccumulator(vendor);
  for (const line of lines) acc.add(line);
  return acc.result();
}

/**
 * The result of a run from its stdout text (e.g. a capped log tail, whose first line may be cut): every line that
 * parses as a JSON object counts, the rest is skipped.
 */
export function extractRunResultFromText(vendor: Vendor, text: string): RunResult {
  const acc = resultAccumulator(vendor);
  for (const line of text.split('\n')) {
    const value = parseLine(line);
    if (value !== undefined) acc.add(value);
  }
  return acc.result();
}

/**
 * A session's result after one more turn (a realtime run: one CLI invocation per turn): the latest turn's answer and
 * model (the earlier model when it names none), usage and cost summed over the turns.
 */
export function addTurnResult(session: RunResult | undefined, turn: RunResult): RunResult {
  const usage = addUsage(session?.usage, turn.usage);
  const cost =
    session?.costUsd === undefined
      ? turn.costUsd
      : turn.costUsd === undefined
        ? session.costUsd
        : Math.min(MAX_COST_USD, session.costUsd + turn.costUsd);
  const model = turn.model ?? session?.model;
  return {
    ...(turn.result !== undefined ? { result: turn.result } : {}),
    ...(turn.resultTruncated === true ? { resultTruncated: true } : {}),
    ...(usage !== undefined ? { usage } : {}),
    ...(cost !== undefined ? { costUsd: cost } : {}),
    ...(model !== undefined ? { model } : {}),
  };
}
