// Per-vendor classification of agent stdout lines for `output.select`
// (docs/design/reference-behaviour.md#event-selection), extended with
// OpenCode and Gemini CLI rules instead of the reference's Claude rules for every non-Codex CLI.

import * as v from 'valibot';
import type { SelectEvent } from '../../api/agent-definition.ts';
import type { Vendor } from './route.ts';

/** Event classes an `output.select` entry can name (defined once in the API layer). */
export { SELECT_EVENTS, type SelectEvent } from '../../api/agent-definition.ts';

/** The class of one agent line, with the tool name and text a selector can match on. */
export interface ClassifiedEvent {
  readonly event: SelectEvent;
  readonly tool?: string;
  readonly text?: string;
}

const Typed = v.looseObject({ type: v.string() });
const Block = v.looseObject({
  type: v.optional(v.unknown()),
  name: v.optional(v.unknown()),
  text: v.optional(v.unknown()),
  content: v.optional(v.unknown()),
});
const ClaudeLine = v.looseObject({
  type: v.string(),
  subtype: v.optional(v.unknown()),
  result: v.optional(v.unknown()),
  message: v.optional(v.looseObject({ content: v.optional(v.array(v.unknown())) })),
});
const CodexLine = v.looseObject({
  type: v.string(),
  item: v.optional(
    v.looseObject({
      type: v.optional(v.unknown()),
      text: v.optional(v.unknown()),
      command: v.optional(v.unknown()),
      tool: v.optional(v.unknown()),
    }),
  ),
});
const GeminiLine = v.looseObject({
  type: v.string(),
  content: v.optional(v.unknown()),
  tool_name: v.optional(v.unknown()),
  output: v.optional(v.unknown()),
});
const OpencodeLine = v.looseObject({
  type: v.string(),
  part: v.optional(v.looseObject({ text: v.optional(v.unknown()), tool: v.optional(v.unknown()) })),
});

const str = (u: unknown): string | undefined => (typeof u === 'string' ? u : undefined);

function make(event: SelectEvent, fields: { tool?: unknown; text?: unknown } = {}): ClassifiedEvent {
  const tool = str(fields.tool);
  const text = str(fields.text);
  return { event, ...(tool === undefined ? {} : { tool }), ...(text === undefined ? {} : { text }) };
}

function classifyClaude(event: unknown): ClassifiedEvent | undefined {
  const parsed = v.safeParse(ClaudeLine, event);
  if (!parsed.success) return undefined;
  const e = parsed.output;
  if (e.type === 'result') return make('result', { text: e.result });
  if (e.type === 'assistant' || e.type === 'user') {
    const blocks = (e.message?.content ?? []).flatMap((b) => {
      const r = v.safeParse(Block, b);
      return r.success ? [r.output] : [];
    });
    const toolUse = blocks.find((b) => b.type === 'tool_use');
    if (toolUse) return make('tool_call', { tool: toolUse.name });
    const toolResult = blocks.find((b) => b.type === 'tool_result');
    if (toolResult) return make('tool_result', { text: toolResult.content });
    const text = blocks
      .flatMap((b) => (b.type === 'text' && typeof b.text === 'string' ? [b.text] : []))
      .join('');
    return make('message', { text });
  }
  if (e.type === 'system' && typeof e.subtype === 'string' && e.subtype.includes('token'))
    return make('usage');
  return undefined;
}

function classifyCodex(event: unknown): ClassifiedEvent | undefined {
  const parsed = v.safeParse(CodexLine, event);
  if (!parsed.success) return undefined;
  const e = parsed.output;
  if (e.type === 'turn.completed') return make('usage');
  if (e.type !== 'item.completed' || e.item === undefined) return undefined;
  switch (e.item.type) {
    case 'agent_message':
      return make('message', { text: e.item.text });
    case 'command_execution':
      return make('tool_call', { text: e.item.command });
    case 'mcp_tool_call':
      return make('tool_call', { tool: e.item.tool });
    case 'file_change':
    case 'web_search':
      return make('tool_call');
    default:
      return undefined;
  }
}

function classifyGemini(event: unknown): ClassifiedEvent | undefined {
  const parsed = v.safeParse(GeminiLine, event);
  if (!parsed.success) return undefined;
  const e = parsed.output;
  switch (e.type) {
    case 'message':
      return make('message', { text: e.content });
    case 'tool_use':
      return make('tool_call', { tool: e.tool_name });
    case 'tool_result':
      return make('tool_result', { text: e.output });
    case 'result':
      return make('result');
    default:
      return undefined;
  }
}

function classifyOpencode(event: unknown): ClassifiedEvent | undefined {
  const parsed = v.safeParse(OpencodeLine, event);
  if (!parsed.success) return undefined;
  const e = parsed.output;
  switch (e.type) {
    case 'text':
      return make('message', { text: e.part?.text });
    case 'tool_use':
      return make('tool_call', { tool: e.part?.tool });
    case 'step_finish':
      return make('usage');
    case 'done':
      return make('result');
    default:
      return undefined;
  }
}

/**
 * The `output.select` class of an already-parsed agent line, or undefined when the line is unclassified (a
 * selector never matches it). Claude rules for claude and exec, Codex rules for codex
 * (docs/design/reference-behaviour.md#event-selection), and:
 * Gemini `message` → message (text = content), `tool_use` → tool_call (tool = tool_name), `tool_result` →
 * tool_result (text = output), `result` → result; OpenCode `text` → message (text = part.text), `tool_use` →
 * tool_call (tool = part.tool), `step_finish` → usage, `done` → result.
 */
export function classifySelectEvent(vendor: Vendor, event: unknown): ClassifiedEvent | undefined {
  if (!v.is(Typed, event)) return undefined;
  switch (vendor) {
    case 'claude':
    case 'exec':
      return classifyClaude(event);
    case 'codex':
      return classifyCodex(event);
    case 'gemini':
      return classifyGemini(event);
    case 'opencode':
      return classifyOpencode(event);
  }
}
