#!/usr/bin/env node
// A stand-in for a vendor CLI (Claude Code, Codex, Gemini CLI), driven entirely by environment variables.
// Plain Node ESM without dependencies, so it runs anywhere `node` does (also under the test node agent).
//
//   MOCK_MODE          emit (default) | signal | crash | orphan | linger | wedge
//   MOCK_LINES         number of payload lines (default 1): `{"i":1}` … or, with MOCK_STYLE, assistant messages
//   MOCK_STYLE claude | codex | gemini: print that CLI's stream-JSON shapes (docs/reference/vendor-cli-events.md),
//   ending
//                      with its terminal event. The final answer is MOCK_TEXT (or the MOCK_ECHO_PROMPT echo): Claude's
//                      `result`, Codex's last `agent_message`, Gemini's assistant `delta` chunks joined. With
//                      MOCK_LINES=n>1, Claude and Codex print n messages `<text> 1` … `<text> n` (the answer is the
//                      last one) and Gemini streams the text as n delta chunks (the answer stays the text)
//   MOCK_TEXT          assistant text for styled output (default "hello from the mock agent")
//   MOCK_USAGE         JSON object {input, output, cacheRead, cacheWrite} of token counts in the styled usage fields
//                      (default {"input":12,"output":7,"cacheRead":3,"cacheWrite":2}; given keys replace defaults,
//                      values are printed as they are, so hostile ones like -5 or "12" reach the line): Claude
//                      `usage` {input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens}
//                      (and `modelUsage`); Codex `turn.completed` `usage` {input_tokens, cached_input_tokens ←
//                      cacheRead, output_tokens}; Gemini `result` `stats` {input_tokens, output_tokens, cached ←
//                      cacheRead, input = input − cacheRead, total_tokens = input + output}. Codex and Gemini have no
//                      cache-write count
//   MOCK_COST          Claude `total_cost_usd` (and the `modelUsage` costUSD), JSON (default 0.0123)
//   MOCK_TOOL          with MOCK_STYLE: also emit one tool call (and its result) for this tool name
//   MOCK_RESULT_ERROR  =1: the styled terminal event reports an error
//   MOCK_EXIT          exit code (default 0)
//   MOCK_STDERR        one line of text on stderr
//   MOCK_STDERR_LINES  number of numbered stderr lines
//   MOCK_WRITE_FILE    write this file first (parent directories created); body MOCK_WRITE_BODY (default {"ok":true})
//   MOCK_IGNORE_TERM   =1: ignore SIGTERM
//   MOCK_DELAY_MS      pause between payload lines (default 0)
//   MOCK_ORPHAN_SECONDS  how long the orphan of MOCK_MODE=orphan lives (default 30)
//   MOCK_EXPECT_ENV    JSON object {NAME: value}: any mismatch → message on stderr, exit 7
//   AGENT_EXPECT_API_KEY  like the reference mock: must equal ANTHROPIC_API_KEY, else exit 7
//   MOCK_ECHO_ARGV     =1: print {"argv":[…]} (the arguments after the script, e.g. the prompt) first
//   MOCK_PRINT         one raw line printed as it is before the payload (e.g. an already-wrapped envelope)
//   MOCK_LIST_DIR      print {"dir":…,"entries":[…]} for this directory (sorted names), before the payload
//   MOCK_ECHO_PROMPT   =1: the styled assistant text is `echo: <prompt>` (the prompt as read below)
//   MOCK_PROMPT_DIGEST =1: print {"prompt":{"bytes":N,"sha256":hex,"via":"argv"|"stdin"}} before the payload
//                      The prompt is read as the CLIs take it: from stdin when stdin is a pipe with content
//                      (Claude `-p` without a prompt argument, Codex `-`, Gemini without `--prompt`, an exec
//                      command without one), else from the last argument (`--prompt=` stripped)
//   MOCK_SESSION       session id of a fresh styled run (default a fixed UUID); a resumed run (`--resume <id>`,
//                      Codex `exec resume <id>`) reports the id it resumes
//   MOCK_CAN_I         `;`-separated checks like `kubectl auth can-i`: `<verb> <resource>[.<group>][/<subresource>]
//                      [-n <namespace>]` (default namespace: the token folder's `namespace` file, else "default").
//                      Before the payload, each is asked of the API server as an in-cluster client would (a
//                      SelfSubjectAccessReview POSTed to https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with
//                      the folder's token as Bearer, TLS verified with its ca.crt), printing one line per check:
//                      {"canI":"get pods","namespace":"ns","allowed":true|false}, or {"canI":…,"error":"no token"}
//                      (or another error: no ca.crt, HTTP status, connection) instead of failing
//   MOCK_TOKEN_DIR     the token folder of MOCK_CAN_I (default /var/run/secrets/kubernetes.io/serviceaccount)
//
// Modes: emit = print and exit; signal = print {"started":1}, wait for SIGTERM/SIGINT/SIGHUP, print {"signal":N},
// exit MOCK_EXIT; crash = SIGKILL itself; orphan = leave a detached `sleep` holding stdout/stderr, print
// {"orphan":pid}, emit, exit; linger = print the terminal event, then hang; wedge = ignore SIGTERM and hang, never
// printing a terminal event.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { dirname, join } from 'node:path';

const env = process.env;
const int = (name, fallback) => {
  const n = Number.parseInt(env[name] ?? '', 10);
  return Number.isFinite(n) ? n : fallback;
};
const mode = env.MOCK_MODE || 'emit';
const style = env.MOCK_STYLE || '';
const lines = int('MOCK_LINES', 1);
const exitCode = int('MOCK_EXIT', 0);
const delayMs = int('MOCK_DELAY_MS', 0);
/** The prompt and how it came: stdin when it is a pipe holding something, else the last argument. */
const prompt = (() => {
  if (env.MOCK_ECHO_PROMPT !== '1' && env.MOCK_PROMPT_DIGEST !== '1') return { text: '', via: 'none' };
  let piped = '';
  try {
    const st = fstatSync(0);
    // Node hands a child's stdin over as a socket pair, a shell as a FIFO.
    if (st.isFIFO() || st.isSocket()) piped = readFileSync(0, 'utf8');
  } catch {
    piped = '';
  }
  if (piped !== '') return { text: piped, via: 'stdin' };
  return { text: (process.argv.slice(2).at(-1) ?? '').replace(/^--prompt=/, ''), via: 'argv' };
})();
const text =
  env.MOCK_ECHO_PROMPT === '1' ? `echo: ${prompt.text}` : env.MOCK_TEXT || 'hello from the mock agent';
const tool = env.MOCK_TOOL || '';
/** A JSON env knob, or `fallback` (with a note on stderr) when it is set but not JSON. */
const jsonKnob = (name, fallback) => {
  if (env[name] === undefined || env[name] === '') return fallback;
  try {
    return JSON.parse(env[name]);
  } catch {
    process.stderr.write(`mock-agent: ${name} is not JSON; using the default\n`);
    return fallback;
  }
};
const usageKnob = jsonKnob('MOCK_USAGE', {});
const usage = {
  input: 12,
  output: 7,
  cacheRead: 3,
  cacheWrite: 2,
  ...(typeof usageKnob === 'object' && usageKnob !== null && !Array.isArray(usageKnob) ? usageKnob : {}),
};
const cost = jsonKnob('MOCK_COST', 0.0123);
/** A knob value for arithmetic: itself when it is a finite number, else 0. */
const num = (u) => (typeof u === 'number' && Number.isFinite(u) ? u : 0);
const resultError = env.MOCK_RESULT_ERROR === '1';
const args = process.argv.slice(2);
/** The session a CLI argv resumes: `--resume <id>` (Claude, Gemini) or `exec resume <id>` (Codex). */
const resumed = (() => {
  const i = args.indexOf('--resume');
  if (i >= 0) return args[i + 1];
  // Codex: `exec resume [options] [--] <id> <prompt>`.
  if (args[0] === 'exec' && args[1] === 'resume') {
    const dd = args.indexOf('--');
    return dd >= 0 ? args[dd + 1] : args.slice(2).find((a) => !a.startsWith('-'));
  }
  return undefined;
})();
const session = resumed || env.MOCK_SESSION || '3f1e8a52-6c0d-4b7e-9a41-2d5c7e9b0a11';

const out = (value) => process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Keeps the process alive until `release()`; exiting naturally lets Node flush piped stdout. */
let keepAlive;
const hold = () => {
  keepAlive ??= setInterval(() => undefined, 1 << 30);
};
const finish = (code) => {
  clearInterval(keepAlive);
  process.exitCode = code;
};

function checkExpectations() {
  const problems = [];
  if (env.AGENT_EXPECT_API_KEY !== undefined && env.ANTHROPIC_API_KEY !== env.AGENT_EXPECT_API_KEY) {
    problems.push('ANTHROPIC_API_KEY does not match AGENT_EXPECT_API_KEY');
  }
  if (env.MOCK_EXPECT_ENV) {
    let expected = {};
    try {
      expected = JSON.parse(env.MOCK_EXPECT_ENV);
    } catch {
      problems.push('MOCK_EXPECT_ENV is not JSON');
    }
    for (const [name, value] of Object.entries(expected)) {
      if (env[name] !== value) problems.push(`env ${name} does not have the expected value`);
    }
  }
  if (problems.length > 0) {
    for (const p of problems) process.stderr.write(`mock-agent: ${p}\n`);
    return false;
  }
  return true;
}

/** A file's content, or undefined when it cannot be read. */
function readOptional(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** One MOCK_CAN_I check: verb, resource (group, subresource) and the namespace when given with -n. */
function parseCheck(text) {
  const words = text.trim().split(/\s+/);
  const rest = [];
  let namespace;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === '-n' || w === '--namespace') namespace = words[++i];
    else if (w.startsWith('--namespace=')) namespace = w.slice('--namespace='.length);
    else rest.push(w);
  }
  const [verb = '', target = ''] = rest;
  const [resourceAndGroup, subresource] = target.split('/', 2);
  const dot = resourceAndGroup.indexOf('.');
  return {
    label: `${verb} ${target}`,
    verb,
    resource: dot >= 0 ? resourceAndGroup.slice(0, dot) : resourceAndGroup,
    group: dot >= 0 ? resourceAndGroup.slice(dot + 1) : '',
    subresource: subresource ?? '',
    namespace,
  };
}

/** POSTs a SelfSubjectAccessReview to the API server; resolves with its `status.allowed`. */
function accessReview({ host, port, token, ca, attributes }) {
  const body = JSON.stringify({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: attributes },
  });
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host,
        port,
        method: 'POST',
        path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        ca,
        timeout: 10_000,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 300) {
            let detail = res.statusMessage ?? '';
            try {
              detail = JSON.parse(text).message || detail;
            } catch {}
            reject(new Error(`HTTP ${res.statusCode}: ${detail}`));
            return;
          }
          try {
            resolve(JSON.parse(text).status?.allowed === true);
          } catch {
            reject(new Error('the answer is not JSON'));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** MOCK_CAN_I: asks the API server each check with the pod's ServiceAccount token; one line per check. */
async function canI(spec) {
  const folder = env.MOCK_TOKEN_DIR || '/var/run/secrets/kubernetes.io/serviceaccount';
  const ownNamespace = readOptional(join(folder, 'namespace'))?.trim() || 'default';
  for (const text of spec.split(';')) {
    if (text.trim() === '') continue;
    const check = parseCheck(text);
    // Read each time: a refreshed token is picked up, as client libraries do.
    const token = readOptional(join(folder, 'token'))?.trim();
    if (!token) {
      out({ canI: check.label, error: 'no token' });
      continue;
    }
    const namespace = check.namespace ?? ownNamespace;
    const ca = readOptional(join(folder, 'ca.crt'));
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT;
    let error;
    if (!ca) error = 'no ca.crt';
    else if (!host || !port) error = 'not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset';
    if (error) {
      out({ canI: check.label, namespace, error });
      continue;
    }
    const attributes = { namespace, verb: check.verb, resource: check.resource };
    if (check.group) attributes.group = check.group;
    if (check.subresource) attributes.subresource = check.subresource;
    try {
      const allowed = await accessReview({ host, port, token, ca, attributes });
      out({ canI: check.label, namespace, allowed });
    } catch (e) {
      out({ canI: check.label, namespace, error: e.message });
    }
  }
}

/** `s` in `n` pieces (by code point) that join to `s`; fewer characters than pieces leaves some empty. */
function chunks(s, n) {
  const chars = Array.from(s);
  const size = Math.ceil(chars.length / Math.max(1, n));
  return Array.from({ length: n }, (_, k) => chars.slice(k * size, (k + 1) * size).join(''));
}

/** The stream-JSON lines of one styled run: everything before the terminal event, then the terminal event. */
function styled() {
  const body = [];
  let terminal;
  const messages = Array.from({ length: Math.max(0, lines) }, (_, k) =>
    lines > 1 ? `${text} ${k + 1}` : text,
  );
  const model = env.AGENT_MODEL || (style === 'gemini' ? 'gemini-3.8-flash' : 'claude-opus-5-5');
  if (style === 'claude') {
    const claudeUsage = {
      input_tokens: usage.input,
      cache_creation_input_tokens: usage.cacheWrite,
      cache_read_input_tokens: usage.cacheRead,
      output_tokens: usage.output,
      server_tool_use: { web_search_requests: 0 },
      service_tier: 'standard',
    };
    const envelope = {
      duration_ms: 12,
      duration_api_ms: 10,
      num_turns: 1,
      session_id: session,
      total_cost_usd: cost,
      usage: claudeUsage,
      modelUsage: {
        [model]: {
          inputTokens: usage.input,
          outputTokens: usage.output,
          cacheReadInputTokens: usage.cacheRead,
          cacheCreationInputTokens: usage.cacheWrite,
          costUSD: cost,
        },
      },
      permission_denials: [],
      uuid: 'b7d2c0e4-1f3a-4c5e-8d9b-0a1b2c3d4e5f',
    };
    body.push({
      type: 'system',
      subtype: 'init',
      session_id: session,
      cwd: process.cwd(),
      model,
      tools: tool ? [tool] : [],
      mcp_servers: [],
      permissionMode: 'default',
    });
    if (tool) {
      body.push({
        type: 'assistant',
        message: {
          id: 'msg_mock_tool',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_mock_1', name: tool, input: { command: 'ls' } }],
        },
        parent_tool_use_id: null,
        session_id: session,
      });
      body.push({
        type: 'user',
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_mock_1', content: 'ok' }],
        },
        parent_tool_use_id: null,
        session_id: session,
      });
    }
    messages.forEach((m, k) => {
      body.push({
        type: 'assistant',
        message: {
          id: `msg_mock_${k}`,
          type: 'message',
          role: 'assistant',
          model,
          content: [{ type: 'text', text: m }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: usage.input, output_tokens: usage.output },
        },
        parent_tool_use_id: null,
        session_id: session,
      });
    });
    // Error results are the same envelope without `result`
    // (docs/reference/vendor-cli-events.md#claude-code-stream-json).
    terminal = resultError
      ? {
          type: 'result',
          subtype: 'error_during_execution',
          is_error: true,
          ...envelope,
          errors: ['mock failure'],
        }
      : {
          type: 'result',
          subtype: 'success',
          is_error: false,
          ...envelope,
          result: messages.at(-1) ?? text,
          stop_reason: 'end_turn',
        };
  } else if (style === 'codex') {
    body.push({ type: 'thread.started', thread_id: session }, { type: 'turn.started' });
    let n = 0;
    if (tool) {
      const item = { id: `item_${n++}`, type: 'command_execution', command: tool, aggregated_output: '' };
      body.push({ type: 'item.started', item: { ...item, exit_code: null, status: 'in_progress' } });
      body.push({
        type: 'item.completed',
        item: { ...item, aggregated_output: 'ok', exit_code: 0, status: 'completed' },
      });
    }
    for (const m of messages)
      body.push({ type: 'item.completed', item: { id: `item_${n++}`, type: 'agent_message', text: m } });
    terminal = resultError
      ? { type: 'turn.failed', error: { message: 'mock failure' } }
      : {
          type: 'turn.completed',
          usage: {
            input_tokens: usage.input,
            cached_input_tokens: usage.cacheRead,
            output_tokens: usage.output,
          },
        };
  } else if (style === 'gemini') {
    const ts = '2026-11-30T12:00:00.000Z';
    body.push({
      type: 'init',
      timestamp: ts,
      session_id: session,
      model,
    });
    body.push({ type: 'message', timestamp: ts, role: 'user', content: 'the prompt' });
    if (tool) {
      body.push({ type: 'tool_use', timestamp: ts, tool_name: tool, tool_id: 'tool_1', parameters: {} });
      body.push({ type: 'tool_result', timestamp: ts, tool_id: 'tool_1', status: 'success', output: 'ok' });
    }
    for (const chunk of chunks(text, Math.max(0, lines)))
      body.push({ type: 'message', timestamp: ts, role: 'assistant', content: chunk, delta: true });
    const counts = {
      total_tokens: num(usage.input) + num(usage.output),
      input_tokens: usage.input,
      output_tokens: usage.output,
      cached: usage.cacheRead,
      input: Math.max(0, num(usage.input) - num(usage.cacheRead)),
    };
    const stats = { ...counts, duration_ms: 12, tool_calls: tool ? 1 : 0, models: { [model]: counts } };
    terminal = resultError
      ? {
          type: 'result',
          timestamp: ts,
          status: 'error',
          error: { type: 'mock', message: 'mock failure' },
          stats,
        }
      : { type: 'result', timestamp: ts, status: 'success', stats };
  } else {
    for (let i = 1; i <= lines; i++) body.push({ i });
    terminal = undefined;
  }
  return { body, terminal };
}

async function emitPayload({ withTerminal }) {
  const { body, terminal } = styled();
  for (const line of body) {
    out(line);
    if (delayMs > 0) await sleep(delayMs);
  }
  if (withTerminal && terminal) out(terminal);
}

function claudeResultLine() {
  return {
    type: 'result',
    subtype: 'success',
    is_error: false,
    result: text,
    session_id: session,
    num_turns: 1,
  };
}

async function main() {
  if (env.MOCK_IGNORE_TERM === '1' || mode === 'wedge') process.on('SIGTERM', () => undefined);
  if (!checkExpectations()) {
    finish(7);
    return;
  }
  if (env.MOCK_WRITE_FILE) {
    mkdirSync(dirname(env.MOCK_WRITE_FILE), { recursive: true });
    writeFileSync(env.MOCK_WRITE_FILE, env.MOCK_WRITE_BODY ?? '{"ok":true}');
  }
  if (env.MOCK_STDERR) process.stderr.write(`${env.MOCK_STDERR}\n`);
  const stderrLines = int('MOCK_STDERR_LINES', 0);
  for (let i = 1; i <= stderrLines; i++) process.stderr.write(`mock stderr line ${i} of ${stderrLines}\n`);
  if (env.MOCK_LIST_DIR) {
    let entries = [];
    try {
      entries = readdirSync(env.MOCK_LIST_DIR).sort();
    } catch (error) {
      process.stderr.write(`mock-agent: cannot list ${env.MOCK_LIST_DIR}: ${error.message}\n`);
    }
    out({ dir: env.MOCK_LIST_DIR, entries });
  }

  if (env.MOCK_CAN_I) await canI(env.MOCK_CAN_I);
  if (env.MOCK_ECHO_ARGV === '1') out({ argv: process.argv.slice(2) });
  if (env.MOCK_PROMPT_DIGEST === '1') {
    const bytes = Buffer.byteLength(prompt.text, 'utf8');
    out({
      prompt: {
        bytes,
        sha256: createHash('sha256').update(prompt.text, 'utf8').digest('hex'),
        via: prompt.via,
      },
    });
  }
  if (env.MOCK_PRINT) out(env.MOCK_PRINT);

  switch (mode) {
    case 'emit':
      await emitPayload({ withTerminal: true });
      finish(exitCode);
      return;
    case 'signal': {
      hold();
      const numbers = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
      for (const [name, number] of Object.entries(numbers)) {
        process.on(name, () => {
          out({ signal: number });
          finish(exitCode);
          for (const n of Object.keys(numbers)) process.removeAllListeners(n);
        });
      }
      out({ started: 1 });
      return;
    }
    case 'crash':
      out({ crashing: true });
      await sleep(20);
      process.kill(process.pid, 'SIGKILL');
      return;
    case 'orphan': {
      const seconds = String(int('MOCK_ORPHAN_SECONDS', 30));
      const orphan = spawn('sleep', [seconds], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
      orphan.unref();
      out({ orphan: orphan.pid });
      await emitPayload({ withTerminal: true });
      finish(exitCode);
      return;
    }
    case 'linger':
      hold();
      await emitPayload({ withTerminal: false });
      out(style ? styled().terminal : claudeResultLine());
      return;
    case 'wedge':
      hold();
      await emitPayload({ withTerminal: false });
      return;
    default:
      process.stderr.write(`mock-agent: unknown MOCK_MODE ${mode}\n`);
      finish(2);
  }
}

await main();
