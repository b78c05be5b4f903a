// Tool calls as the vendor CLIs report them on their stream (docs/reference/vendor-cli-events.md), for the
// supervisor's tool spans
// (issue 10 §5): where a call starts and where it ends, matched by the id the CLI gives it. Pure.
// - Claude: an `assistant` message's `tool_use` block {id, name} starts a call; a `user` message's `tool_result`
//   block {tool_use_id, is_error} ends it.
// - Codex: `item.started` of a tool item (command_execution, mcp_tool_call, file_change, web_search,
//   collab_tool_call) starts a call (the program a command runs, never its arguments; or the MCP tool's name); `item.completed` of it ends it (failed
//   when its status is `failed` or its exit code is not 0).
// - Gemini: `tool_use` {tool_id, tool_name} starts one; `tool_result` {tool_id, status} ends it.
// OpenCode and exec recipes report nothing this reads.

import * as v from 'valibot';
import type { Vendor } from './route.ts';

/** One observation about a tool call. */
export type ToolCallEvent =
  | { readonly kind: 'start'; readonly id: string; readonly name: string }
  | { readonly kind: 'end'; readonly id: string; readonly failed: boolean };

const Block = v.looseObject({
  type: v.optional(v.unknown()),
  id: v.optional(v.unknown()),
  name: v.optional(v.unknown()),
  tool_use_id: v.optional(v.unknown()),
  is_error: v.optional(v.unknown()),
});
const ClaudeLine = v.looseObject({
  type: v.string(),
  message: v.optional(v.looseObject({ content: v.optional(v.array(v.unknown())) })),
});
const CodexLine = v.looseObject({
  type: v.string(),
  item: v.optional(
    v.looseObject({
      id: v.optional(v.unknown()),
      type: v.optional(v.unknown()),
      command: v.optional(v.unknown()),
      tool: v.optional(v.unknown()),
      server: v.optional(v.unknown()),
      status: v.optional(v.unknown()),
      exit_code: v.optional(v.unknown()),
    }),
  ),
});
const GeminiLine = v.looseObject({
  type: v.string(),
  tool_id: v.optional(v.unknown()),
  tool_name: v.optional(v.unknown()),
  status: v.optional(v.unknown()),
});

const CODEX_TOOL_ITEMS = new Set([
  'command_execution',
  'mcp_tool_call',
  'file_change',
  'web_search',
  'collab_tool_call',
]);

/** The longest tool name kept (span names and attributes stay bounded whatever the agent prints). */
export const MAX_TOOL_NAME = 128;

const id = (u: unknown): string | undefined =>
  typeof u === 'string' && u !== '' && u.length <= 256 ? u : undefined;
const name = (u: unknown, fallback: string): string =>
  typeof u === 'string' && u.trim() !== '' ? u.trim().slice(0, MAX_TOOL_NAME) : fallback;

/**
 * The program a command line runs (its first word, without its folder): never the arguments, which can hold
 * credentials (`curl -H 'Authorization: …'`, `git clone https://user:token@…`).
 */
function programName(command: unknown): string {
  if (typeof command !== 'string') return 'command';
  const first = command.trim().split(/\s+/)[0] ?? '';
  const base =
    first
      .replace(/^['"]+|['"]+$/g, '')
      .split('/')
      .pop() ?? '';
  return name(base, 'command');
}

function claude(line: unknown): ToolCallEvent[] {
  const parsed = v.safeParse(ClaudeLine, line);
  if (!parsed.success) return [];
  const e = parsed.output;
  if (e.type !== 'assistant' && e.type !== 'user') return [];
  const out: ToolCallEvent[] = [];
  for (const raw of e.message?.content ?? []) {
    const b = v.safeParse(Block, raw);
    if (!b.success) continue;
    if (e.type === 'assistant' && b.output.type === 'tool_use') {
      const callId = id(b.output.id);
      if (callId !== undefined) out.push({ kind: 'start', id: callId, name: name(b.output.name, 'tool') });
    }
    if (e.type === 'user' && b.output.type === 'tool_result') {
      const callId = id(b.output.tool_use_id);
      if (callId !== undefined) out.push({ kind: 'end', id: callId, failed: b.output.is_error === true });
    }
  }
  return out;
}

function codex(line: unknown): ToolCallEvent[] {
  const parsed = v.safeParse(CodexLine, line);
  if (!parsed.success) return [];
  const { type, item } = parsed.output;
  if (item === undefined || typeof item.type !== 'string' || !CODEX_TOOL_ITEMS.has(item.type)) return [];
  const callId = id(item.id);
  if (callId === undefined) return [];
  if (type === 'item.started') {
    const what =
      item.type === 'command_execution'
        ? programName(item.command)
        : item.type === 'mcp_tool_call'
          ? name(item.tool, 'mcp_tool_call')
          : item.type;
    return [{ kind: 'start', id: callId, name: what }];
  }
  if (type === 'item.completed') {
    const failed = item.status === 'failed' || (typeof item.exit_code === 'number' && item.exit_code !== 0);
    return [{ kind: 'end', id: callId, failed }];
  }
  return [];
}

function gemini(line: unknown): ToolCallEvent[] {
  const parsed = v.safeParse(GeminiLine, line);
  if (!parsed.success) return [];
  const e = parsed.output;
  const callId = id(e.tool_id);
  if (callId === undefined) return [];
  if (e.type === 'tool_use') return [{ kind: 'start', id: callId, name: name(e.tool_name, 'tool') }];
  if (e.type === 'tool_result') return [{ kind: 'end', id: callId, failed: e.status === 'error' }];
  return [];
}

/** The tool-call observations in one parsed stdout line of `vendor`'s CLI (none for anything else). */
export function toolCallEvents(vendor: Vendor, line: unknown): ToolCallEvent[] {
  switch (vendor) {
    case 'claude':
      return claude(line);
    case 'codex':
      return codex(line);
    case 'gemini':
      return gemini(line);
    case 'opencode':
    case 'exec':
      return [];
  }
}
