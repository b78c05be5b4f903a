import * as v from 'valibot';
import type { ParsedLine } from '../shared/index.ts';
import type { CliVendor } from './vendor.ts';

/** The event classes an `output.select` entry may name. */
export const SELECT_EVENTS = ['tool_call', 'message', 'tool_result', 'result', 'usage'] as const;
export type SelectEvent = (typeof SELECT_EVENTS)[number];

/** One usable `output.select` entry (`role` is ignored at runtime, as in the reference). */
export interface Selector {
  readonly event: SelectEvent;
  readonly tool?: string;
  readonly contains?: string;
}

/** What an agent line is, for selection: its class, and the tool name / text a selector can test. */
export interface Classified {
  readonly event: SelectEvent;
  readonly tool?: string;
  readonly text?: string;
}

const Entry = v.looseObject({
  event: v.string(),
  tool: v.optional(v.nullable(v.string())),
  contains: v.optional(v.nullable(v.string())),
});

/**
 * Parses `AGENT_SELECT` (reference §7.6): entries without a string `event`, or whose `tool`/`contains` is not a
 * string, are skipped; an unknown event value is skipped with the reference warning in `warnings`; malformed JSON
 * or a non-array gives an empty list (which lets everything through). Pure.
 */
export function parseSelectors(text: string | undefined): { selectors: Selector[]; warnings: string[] } {
  const selectors: Selector[] = [];
  const warnings: string[] = [];
  const raw = (text ?? '').trim();
  if (raw === '') return { selectors, warnings };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    warnings.push('[selectmatcher] AGENT_SELECT is not valid JSON; every line is delivered');
    return { selectors, warnings };
  }
  if (!Array.isArray(json)) {
    warnings.push('[selectmatcher] AGENT_SELECT is not a JSON array; every line is delivered');
    return { selectors, warnings };
  }
  for (const item of json) {
    const parsed = v.safeParse(Entry, item);
    if (!parsed.success) continue;
    const { event, tool, contains } = parsed.output;
    const known = SELECT_EVENTS.find((e) => e === event);
    if (!known) {
      warnings.push(`[selectmatcher] dropping output.select entry with unknown event '${event}'`);
      continue;
    }
    selectors.push({
      event: known,
      ...(typeof tool === 'string' && tool !== '' ? { tool } : {}),
      ...(typeof contains === 'string' && contains !== '' ? { contains } : {}),
    });
  }
  return { selectors, warnings };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function make(event: SelectEvent, tool?: string, text?: string): Classified {
  return { event, ...(tool !== undefined ? { tool } : {}), ...(text !== undefined ? { text } : {}) };
}

/** Codex rules (reference §7.6). */
function classifyCodex(line: Record<string, unknown>): Classified | undefined {
  if (line.type === 'turn.completed') return make('usage');
  if (line.type !== 'item.completed' || !isObject(line.item)) return undefined;
  const item = line.item;
  switch (item.type) {
    case 'agent_message':
      return make('message', undefined, str(item.text));
    case 'command_execution':
      return make('tool_call', undefined, str(item.command));
    case 'mcp_tool_call':
      return make('tool_call', str(item.tool));
    case 'file_change':
    case 'web_search':
      return make('tool_call');
    default:
      return undefined;
  }
}

/** Claude rules (reference §7.6); also used for opencode and exec. */
function classifyClaude(line: Record<string, unknown>): Classified | undefined {
  if (line.type === 'result') return make('result', undefined, str(line.result));
  if (line.type === 'assistant' || line.type === 'user') {
    const message = isObject(line.message) ? line.message : {};
    const content = message.content;
    if (typeof content === 'string') return make('message', undefined, content);
    const blocks = Array.isArray(content) ? content.filter(isObject) : [];
    const toolUse = blocks.find((b) => b.type === 'tool_use');
    if (toolUse) return make('tool_call', str(toolUse.name));
    const toolResult = blocks.find((b) => b.type === 'tool_result');
    if (toolResult) return make('tool_result', undefined, str(toolResult.content));
    const text = blocks
      .filter((b) => b.type === 'text')
      .map((b) => str(b.text) ?? '')
      .join('');
    return make('message', undefined, text);
  }
  if (line.type === 'system' && typeof line.subtype === 'string' && line.subtype.includes('token')) {
    return make('usage');
  }
  return undefined;
}

/** Gemini CLI `stream-json` rules (ours; vendors.md §6.3). */
function classifyGemini(line: Record<string, unknown>): Classified | undefined {
  switch (line.type) {
    case 'message':
      return make('message', undefined, str(line.content));
    case 'tool_use':
      return make('tool_call', str(line.tool_name));
    case 'tool_result':
      return make('tool_result', undefined, str(line.output));
    case 'result':
      return make('result');
    default:
      return undefined;
  }
}

/** Classifies one parsed agent line for `vendor`; undefined = unclassified. Pure. */
export function classify(vendor: CliVendor, value: unknown): Classified | undefined {
  if (!isObject(value)) return undefined;
  switch (vendor) {
    case 'codex':
      return classifyCodex(value);
    case 'gemini':
      return classifyGemini(value);
    case 'claude':
    case 'opencode':
    case 'exec':
      return classifyClaude(value);
  }
}

/** True iff `selector` accepts the classified line: same class, exact tool when set, substring when set. */
export function matches(selector: Selector, c: Classified): boolean {
  if (selector.event !== c.event) return false;
  if (selector.tool !== undefined && selector.tool !== c.tool) return false;
  if (selector.contains !== undefined && !(c.text ?? '').includes(selector.contains)) return false;
  return true;
}

/**
 * `selected(selectors, vendor, line)` (reference §7.6): an empty list passes everything; an unparseable line and an
 * unclassified event never pass; otherwise true iff some selector matches. Pure.
 */
export function selected(selectors: readonly Selector[], vendor: CliVendor, parsed: ParsedLine): boolean {
  if (selectors.length === 0) return true;
  if (!parsed.json) return false;
  const c = classify(vendor, parsed.value);
  if (!c) return false;
  return selectors.some((s) => matches(s, c));
}
