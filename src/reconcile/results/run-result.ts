// What a finished run produced, for its status (issue 10 §2): the final answer (`status.result`, a parsed and
// validated JSON value when the definition asks for JSON with a schema), the tokens it used and an estimate of its
// cost. Read from the run report in the agent container's termination message, else from the CLI lines of its log
// tail (or a batch run's lines). Pure.
import type { AgentDefinition, CostSource } from '../../api/index.ts';
import { capOutput } from '../../jobs/index.ts';
import { validateJson } from '../../shared/json-schema.ts';
import { extractRunResultFromText } from '../../vendors/cli/result.ts';
import type { Vendor } from '../../vendors/cli/route.ts';
import type { RunResult, TokenUsage } from '../../vendors/cli/run-report.ts';
import { costOf, formatUsd, metricModel, type PriceTable, priceFor } from './prices.ts';

export interface RunResultInput {
  readonly definition: AgentDefinition | null;
  /** The model the run resolved to (the CLI's own word, when it reported one, wins). */
  readonly model: string | undefined;
  readonly vendor: Vendor;
  /** The agent container's termination message, parsed (undefined: none, or not a run report). */
  readonly report: RunResult | undefined;
  /** The run's CLI lines: the capped log tail, or a batch run's lines. */
  readonly output: string;
  /** A batch run: billed at the batch rate. */
  readonly batch: boolean;
  readonly prices: PriceTable;
  readonly maxResultBytes: number;
}

export interface CostEstimate {
  readonly usd: string;
  readonly source: CostSource;
  readonly model?: string;
}

export interface RunResultFields {
  /** `status.result`: text, or the parsed JSON value under output.format json with a schema. */
  readonly result?: unknown;
  readonly tokenUsage?: TokenUsage;
  readonly costEstimate?: CostEstimate;
  /** USD as a number, for the cost metric. */
  readonly costUsd?: number | undefined;
  /** Set when the definition asks for a JSON result with a schema and the result does not match it. */
  readonly schemaProblem?: string;
  /** The bounded `model` label of the token and cost metrics. */
  readonly metricModel: string;
  /** The final answer as read, uncapped (what `result` is made of); undefined when the run gave none. */
  readonly answer?: string;
  /** The answer is known to be cut (the report's or the log's bound): its end is missing. */
  readonly answerTruncated?: true;
}

/** How deep a JSON result may nest (the API server, and our own parsers, have limits far above it). */
export const MAX_RESULT_DEPTH = 64;

/** The nesting depth of a JSON value, counted without recursion (stops counting past `limit`). */
export function jsonDepth(value: unknown, limit = MAX_RESULT_DEPTH + 1): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest >= limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** Strips one surrounding Markdown code fence (```json … ```), as models often wrap JSON answers. */
function unfence(text: string): string {
  const m = /^\s*```[A-Za-z0-9_-]*\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return m === null ? text.trim() : (m[1] ?? '').trim();
}

/** The fields of a finished run's status that say what it produced. */
export function runResultFields(i: RunResultInput): RunResultFields {
  const fromLog = extractRunResultFromText(i.vendor, i.output);
  const report = i.report;
  // The report's text is complete unless it says it was cut; then the log's may be longer.
  const fromReport =
    report?.result !== undefined &&
    !(report.resultTruncated === true && (fromLog.result?.length ?? 0) > report.result.length);
  const text = fromReport ? report?.result : (fromLog.result ?? report?.result);
  const truncated =
    fromReport || fromLog.result === undefined
      ? report?.resultTruncated === true
      : fromLog.resultTruncated === true;
  const usage = report?.usage ?? fromLog.usage;
  // A batch run's lines are ours (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines), not a CLI's: their
  // cost field is no measurement.
  const cliCost = i.batch ? undefined : (report?.costUsd ?? fromLog.costUsd);
  const model = report?.model ?? fromLog.model ?? i.model;
  const label = metricModel(i.prices, model);

  let result: unknown = text === undefined ? undefined : capOutput(text, i.maxResultBytes);
  let schemaProblem: string | undefined;
  const format = i.definition?.spec.output.format;
  const schema = i.definition?.spec.output.schema;
  if (format === 'json' && schema !== undefined) {
    if (text === undefined) {
      schemaProblem = 'result does not match output.schema: the run produced no result';
    } else {
      try {
        const value: unknown = JSON.parse(unfence(text));
        // The parsed value goes into the status as it is: bounded in depth and in size, as the text would be.
        const depth = jsonDepth(value);
        const size = utf8Bytes(JSON.stringify(value));
        if (depth > MAX_RESULT_DEPTH) {
          schemaProblem = `result does not match output.schema: the JSON value nests deeper than ${MAX_RESULT_DEPTH} levels`;
        } else if (size > i.maxResultBytes) {
          schemaProblem = `result does not match output.schema: the JSON value takes ${size} bytes, over the ${i.maxResultBytes}-byte cap`;
        } else {
          const problem = validateJson(schema, value);
          if (problem === undefined) result = value;
          else schemaProblem = `result does not match output.schema: ${problem}`;
        }
      } catch (error) {
        schemaProblem = `result does not match output.schema: not JSON (${error instanceof Error ? error.message : String(error)})`;
      }
    }
  }

  let costEstimate: CostEstimate | undefined;
  let costUsd: number | undefined;
  if (cliCost !== undefined) {
    costUsd = cliCost;
    costEstimate = { usd: formatUsd(cliCost), source: 'cli', ...(model !== undefined ? { model } : {}) };
  } else if (usage !== undefined && model !== undefined) {
    const priced = priceFor(i.prices, model);
    if (priced !== undefined) {
      costUsd = costOf(priced.price, usage, i.batch);
      costEstimate = { usd: formatUsd(costUsd), source: 'priceTable', model };
    }
  }
  return {
    ...(result !== undefined ? { result } : {}),
    ...(usage !== undefined ? { tokenUsage: usage } : {}),
    ...(costEstimate !== undefined ? { costEstimate, costUsd } : {}),
    ...(schemaProblem !== undefined ? { schemaProblem } : {}),
    metricModel: label,
    ...(text !== undefined ? { answer: text } : {}),
    ...(text !== undefined && truncated ? { answerTruncated: true as const } : {}),
  };
}
