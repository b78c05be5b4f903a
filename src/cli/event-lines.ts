// `run --follow` and `logs --pretty`: the agent container's log turned into text a person reads. The log holds the
// vendor CLI's stream-JSON lines (Claude Code, Codex, Gemini CLI, OpenCode: docs/reference/vendor-cli-events.md,
// shapes as
// src/vendors/cli reads them), the supervisor's lifecycle events and logs, `[agent]`-tagged stderr lines, and plain
// text from exec recipes. Each line becomes assistant text, a tool call (`▸`), a tool result (`↳`), a note (`·`), a
// warning (`!`), an error (`✗`) or the end of the turn (`✓`); lines that say nothing to a person (usage ticks,
// the echoed prompt) become nothing. Pure: state in, text and state out.
import * as v from 'valibot';
import { parseLine } from '../vendors/cli/terminal.ts';
import { type Paint, sanitize } from './style.ts';

/** What the renderer remembers between lines. */
export interface RenderState {
  /** Streamed text (Gemini deltas) left the cursor mid-line. */
  readonly midLine: boolean;
  /** Tool names by call id, to name a result (most recent calls only). */
  readonly tools: readonly (readonly [string, string])[];
}

export const INITIAL_RENDER_STATE: RenderState = { midLine: false, tools: [] };

/** What one line rendered to. */
export interface Rendered {
  readonly text: string;
  readonly state: RenderState;
  /** The line ends the turn: `true` for a success, `false` for a failure. */
  readonly ended?: boolean;
}

/** Longest tool-call detail shown. */
export const MAX_DETAIL = 160;
/** Tool-result lines shown, and the longest of each. */
export const RESULT_LINES = 4;
export const RESULT_WIDTH = 200;
const MAX_TOOLS = 64;

const Obj = v.record(v.string(), v.unknown());
type O = Readonly<Record<string, unknown>>;
const isObj = (u: unknown): u is O => v.is(Obj, u);
const str = (u: unknown): string | undefined => (typeof u === 'string' ? u : undefined);
const num = (u: unknown): number | undefined =>
  typeof u === 'number' && Number.isFinite(u) && u >= 0 ? u : undefined;
const arr = (u: unknown): readonly unknown[] => (Array.isArray(u) ? u : []);

/** Cuts one line of text to `max` characters, marking the cut. */
export function clipLine(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  const chars = Array.from(one);
  return chars.length <= max ? one : `${chars.slice(0, max - 1).join('')}…`;
}

/** The first lines of a tool's output, each cut, with how many more there were. */
export function resultPreview(text: string): string[] {
  const lines = text.replace(/\s+$/, '').split('\n');
  const shown = lines.slice(0, RESULT_LINES).map((l) => clipLine(l, RESULT_WIDTH));
  if (lines.length > RESULT_LINES) shown.push(`… (+${lines.length - RESULT_LINES} lines)`);
  return shown.length === 1 && shown[0] === '' ? ['(no output)'] : shown;
}

/** The gist of a tool call's input: the command, path, pattern, URL or query it names, else its JSON. */
export function toolDetail(input: unknown): string {
  if (typeof input === 'string') return clipLine(input, MAX_DETAIL);
  if (!isObj(input)) return '';
  for (const key of ['command', 'cmd', 'file_path', 'path', 'pattern', 'url', 'query', 'description']) {
    const value = input[key];
    if (typeof value === 'string' && value.trim() !== '') return clipLine(value, MAX_DETAIL);
    if (key === 'command' && Array.isArray(value)) return clipLine(value.map(String).join(' '), MAX_DETAIL);
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : clipLine(json, MAX_DETAIL);
}

/** Text of a tool result's content: a string, or the text blocks of an array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return arr(content)
    .flatMap((b) => (isObj(b) && typeof b.text === 'string' ? [b.text] : []))
    .join('\n');
}

/** A piece of output before it is painted. */
type Piece =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'delta'; readonly text: string }
  | { readonly kind: 'tool'; readonly name: string; readonly detail: string }
  | {
      readonly kind: 'result';
      readonly text: string;
      readonly failed: boolean;
      readonly tool?: string | undefined;
    }
  | { readonly kind: 'note' | 'warn' | 'error' | 'done'; readonly text: string };

interface Parsed {
  readonly pieces: readonly Piece[];
  readonly ended?: boolean;
  readonly calls?: readonly (readonly [string, string])[];
}

const tokens = (input: number | undefined, output: number | undefined): string =>
  input === undefined && output === undefined ? '' : ` · ${input ?? 0} in / ${output ?? 0} out tokens`;

function claude(e: O): Parsed | undefined {
  const message = isObj(e.message) ? e.message : {};
  switch (e.type) {
    case 'system':
      if (e.subtype !== 'init') return { pieces: [] };
      return {
        pieces: [
          {
            kind: 'note',
            text: `session ${str(e.session_id) ?? '?'}${str(e.model) ? ` · model ${str(e.model)}` : ''}`,
          },
        ],
      };
    case 'assistant': {
      const pieces: Piece[] = [];
      const calls: [string, string][] = [];
      for (const b of arr(message.content)) {
        if (!isObj(b)) continue;
        if (b.type === 'text' && typeof b.text === 'string' && b.text.trim() !== '')
          pieces.push({ kind: 'text', text: b.text });
        if (b.type === 'tool_use') {
          const name = str(b.name) ?? 'tool';
          pieces.push({ kind: 'tool', name, detail: toolDetail(b.input) });
          if (typeof b.id === 'string') calls.push([b.id, name]);
        }
      }
      const error = str(e.error);
      if (error !== undefined) pieces.push({ kind: 'error', text: `assistant error: ${error}` });
      return { pieces, calls };
    }
    case 'user': {
      const pieces: Piece[] = [];
      for (const b of arr(message.content)) {
        if (!isObj(b) || b.type !== 'tool_result') continue;
        pieces.push({
          kind: 'result',
          text: contentText(b.content),
          failed: b.is_error === true,
          tool: str(b.tool_use_id),
        });
      }
      return { pieces };
    }
    case 'result': {
      const usage = isObj(e.usage) ? e.usage : {};
      if (e.is_error === true) {
        const why = [...arr(e.errors).map(String), str(e.result)].filter((x) => x !== undefined && x !== '');
        return {
          pieces: [
            {
              kind: 'error',
              text: `${str(e.subtype) ?? 'error'}${why.length > 0 ? `: ${why.join('; ')}` : ''}`,
            },
          ],
          ended: false,
        };
      }
      const turns = num(e.num_turns);
      const cost = num(e.total_cost_usd);
      return {
        pieces: [
          {
            kind: 'done',
            text: `done${turns !== undefined ? ` · ${turns} turn${turns === 1 ? '' : 's'}` : ''}${tokens(
              num(usage.input_tokens),
              num(usage.output_tokens),
            )}${cost !== undefined ? ` · $${cost}` : ''}`,
          },
        ],
        ended: true,
      };
    }
    default:
      return undefined;
  }
}

function codexItem(type: string, item: O): Piece[] {
  const done = type === 'item.completed';
  switch (item.type) {
    case 'agent_message':
      return done && typeof item.text === 'string' ? [{ kind: 'text', text: item.text }] : [];
    case 'reasoning':
      return done && typeof item.text === 'string'
        ? [{ kind: 'note', text: `thinking: ${clipLine(item.text, MAX_DETAIL)}` }]
        : [];
    case 'command_execution': {
      if (!done) return [{ kind: 'tool', name: 'command', detail: toolDetail(item.command) }];
      const code = typeof item.exit_code === 'number' ? item.exit_code : undefined;
      const failed = item.status === 'failed' || (code !== undefined && code !== 0);
      return [
        {
          kind: 'result',
          text: `${code !== undefined ? `exit ${code}` : (str(item.status) ?? 'done')}${
            str(item.aggregated_output) ? `\n${str(item.aggregated_output)}` : ''
          }`,
          failed,
        },
      ];
    }
    case 'mcp_tool_call':
      return done
        ? [{ kind: 'result', text: str(item.status) ?? 'done', failed: item.status === 'failed' }]
        : [
            {
              kind: 'tool',
              name: `${str(item.server) ? `${str(item.server)}.` : ''}${str(item.tool) ?? 'mcp'}`,
              detail: toolDetail(item.arguments),
            },
          ];
    case 'file_change': {
      if (done) return [];
      const paths = arr(item.changes).flatMap((c) =>
        isObj(c) && typeof c.path === 'string' ? [c.path] : [],
      );
      return [{ kind: 'tool', name: 'edit', detail: clipLine(paths.join(', '), MAX_DETAIL) }];
    }
    case 'web_search':
      return done ? [] : [{ kind: 'tool', name: 'web search', detail: toolDetail(item.query) }];
    case 'error':
      return [{ kind: 'error', text: str(item.message) ?? 'error' }];
    default:
      return [];
  }
}

function codex(e: O): Parsed | undefined {
  const type = str(e.type) ?? '';
  if (type === 'thread.started')
    return { pieces: [{ kind: 'note', text: `thread ${str(e.thread_id) ?? '?'}` }] };
  if (type === 'turn.started' || type === 'item.updated' || type === 'item.plan.delta') return { pieces: [] };
  if (type === 'turn.completed') {
    const usage = isObj(e.usage) ? e.usage : {};
    return {
      pieces: [{ kind: 'done', text: `done${tokens(num(usage.input_tokens), num(usage.output_tokens))}` }],
      ended: true,
    };
  }
  if (type === 'turn.failed') {
    const error = isObj(e.error) ? e.error : {};
    return { pieces: [{ kind: 'error', text: str(error.message) ?? 'the turn failed' }], ended: false };
  }
  if ((type === 'item.started' || type === 'item.completed') && isObj(e.item))
    return { pieces: codexItem(type, e.item) };
  return undefined;
}

function gemini(e: O): Parsed | undefined {
  switch (e.type) {
    case 'init':
      return {
        pieces: [
          {
            kind: 'note',
            text: `session ${str(e.session_id) ?? '?'}${str(e.model) ? ` · model ${str(e.model)}` : ''}`,
          },
        ],
      };
    case 'message': {
      if (e.role !== 'assistant' || typeof e.content !== 'string') return { pieces: [] };
      return { pieces: [{ kind: e.delta === true ? 'delta' : 'text', text: e.content }] };
    }
    case 'tool_use': {
      const name = str(e.tool_name) ?? 'tool';
      return {
        pieces: [{ kind: 'tool', name, detail: toolDetail(e.parameters) }],
        calls: typeof e.tool_id === 'string' ? [[e.tool_id, name]] : [],
      };
    }
    case 'tool_result': {
      const error = isObj(e.error) ? str(e.error.message) : undefined;
      return {
        pieces: [
          {
            kind: 'result',
            text: str(e.output) ?? error ?? str(e.status) ?? '',
            failed: e.status === 'error',
            tool: str(e.tool_id),
          },
        ],
      };
    }
    case 'result': {
      const stats = isObj(e.stats) ? e.stats : {};
      if (e.status === 'success')
        return {
          pieces: [
            { kind: 'done', text: `done${tokens(num(stats.input_tokens), num(stats.output_tokens))}` },
          ],
          ended: true,
        };
      const error = isObj(e.error) ? str(e.error.message) : undefined;
      return {
        pieces: [{ kind: 'error', text: error ?? `the turn ended: ${str(e.status) ?? 'error'}` }],
        ended: false,
      };
    }
    default:
      return undefined;
  }
}

function opencode(e: O): Parsed | undefined {
  const part = isObj(e.part) ? e.part : {};
  switch (e.type) {
    case 'step_start':
    case 'step_finish':
      return { pieces: [] };
    case 'text':
      return typeof part.text === 'string' ? { pieces: [{ kind: 'text', text: part.text }] } : { pieces: [] };
    case 'tool_use': {
      const state = isObj(part.state) ? part.state : {};
      return { pieces: [{ kind: 'tool', name: str(part.tool) ?? 'tool', detail: toolDetail(state.input) }] };
    }
    case 'done':
      return { pieces: [{ kind: 'done', text: 'done' }], ended: true };
    default:
      return undefined;
  }
}

/** The supervisor's own lines: lifecycle events, file events, its JSON logs (warnings and errors only). */
function supervisor(e: O): Parsed | undefined {
  if (e.kind === 'lifecycle') {
    const exit = typeof e.exitCode === 'number' ? ` (exit ${e.exitCode})` : '';
    const reason = str(e.reason) ? `: ${str(e.reason)}` : '';
    const text = `${str(e.phase) ?? '?'} ${str(e.status) ?? '?'}${exit}${reason}`;
    return { pieces: [{ kind: e.status === 'failed' ? 'error' : 'note', text }] };
  }
  if (e.kind === 'file')
    return { pieces: [{ kind: 'note', text: `file ${str(e.event) ?? ''} ${str(e.path) ?? ''}`.trim() }] };
  if (typeof e.level === 'string' && typeof e.msg === 'string' && typeof e.ts === 'string') {
    if (e.level === 'warn') return { pieces: [{ kind: 'warn', text: e.msg }] };
    if (e.level === 'error') return { pieces: [{ kind: 'error', text: e.msg }] };
    return { pieces: [] };
  }
  return undefined;
}

/** Classifies one parsed line by its shape (each vendor has its own `type` words; the rest are told apart by fields). */
function classify(e: O): Parsed {
  const type = str(e.type);
  if (type === undefined) return supervisor(e) ?? { pieces: [{ kind: 'note', text: JSON.stringify(e) }] };
  const gem = e.type === 'result' && e.status !== undefined && e.is_error === undefined;
  const open =
    isObj(e.part) || type === 'step_start' || type === 'step_finish' || type === 'done' || type === 'text';
  const parsed =
    (type.includes('.') ? codex(e) : undefined) ??
    (open ? opencode(e) : undefined) ??
    (gem || ['init', 'message', 'tool_use', 'tool_result'].includes(type) ? gemini(e) : undefined) ??
    claude(e) ??
    (type === 'error' ? errorLine(e) : undefined);
  return parsed ?? { pieces: [] };
}

/**
 * A bare `error` line: Codex's are retry notices, Gemini's carry a severity, OpenCode's an error object (and end
 * the run).
 */
function errorLine(e: O): Parsed {
  const error = isObj(e.error) ? e.error : undefined;
  const data = error !== undefined && isObj(error.data) ? error.data : {};
  const text = str(e.message) ?? str(data.message) ?? str(error?.message) ?? 'error';
  if (error !== undefined) return { pieces: [{ kind: 'error', text }], ended: false };
  return { pieces: [{ kind: e.severity === 'error' ? 'error' : 'warn', text }] };
}

function paintPiece(p: Piece, paint: Paint, tools: ReadonlyMap<string, string>): string {
  switch (p.kind) {
    case 'text':
      return `${sanitize(p.text).replace(/\n+$/, '')}\n`;
    case 'delta':
      return sanitize(p.text);
    case 'tool':
      return `${paint('cyan', `▸ ${sanitize(p.name)}`)}${p.detail ? ` ${sanitize(p.detail)}` : ''}\n`;
    case 'result': {
      const name = p.tool !== undefined ? tools.get(p.tool) : undefined;
      const lines = resultPreview(sanitize(p.text));
      const head = `  ↳ ${name !== undefined ? `${sanitize(name)}: ` : ''}`;
      return `${lines
        .map((l, i) => paint(p.failed ? 'red' : 'dim', `${i === 0 ? head : '    '}${l}`))
        .join('\n')}\n`;
    }
    case 'note':
      return `${paint('dim', `· ${sanitize(p.text)}`)}\n`;
    case 'warn':
      return `${paint('yellow', `! ${sanitize(p.text)}`)}\n`;
    case 'error':
      return `${paint('red', `✗ ${sanitize(p.text)}`)}\n`;
    case 'done':
      return `${paint('green', `✓ ${sanitize(p.text)}`)}\n`;
  }
}

/** Renders one log line. */
export function renderLine(line: string, state: RenderState, paint: Paint): Rendered {
  if (line.trim() === '') return { text: '', state };
  const value = parseLine(line);
  let parsed: Parsed;
  if (isObj(value)) parsed = classify(value);
  else if (line.startsWith('[agent] ')) parsed = { pieces: [{ kind: 'warn', text: line.slice(8) }] };
  else parsed = { pieces: [{ kind: 'text', text: line }] };
  const tools = [...state.tools, ...(parsed.calls ?? [])].slice(-MAX_TOOLS);
  const names = new Map(tools);
  let text = '';
  let midLine = state.midLine;
  for (const p of parsed.pieces) {
    const out = paintPiece(p, paint, names);
    if (out === '') continue;
    if (midLine && p.kind !== 'delta') text += '\n';
    text += out;
    midLine = p.kind === 'delta' ? !out.endsWith('\n') : false;
  }
  return { text, state: { midLine, tools }, ...(parsed.ended !== undefined ? { ended: parsed.ended } : {}) };
}

/** What to print when the log ends: a line break after streamed text. */
export function finishRender(state: RenderState): string {
  return state.midLine ? '\n' : '';
}

/** Renders a whole log text (status.output of a finished or batch run). */
export function renderText(text: string, paint: Paint): string {
  let state = INITIAL_RENDER_STATE;
  let out = '';
  for (const line of text.split('\n')) {
    const r = renderLine(line, state, paint);
    out += r.text;
    state = r.state;
  }
  return out + finishRender(state);
}
