// The run report on the host (issue 10 §2): the real `supervisor` subcommand around the mock agent CLI in each
// vendor's style writes what the CLI's output said (answer, usage, cost, model) to its termination message file
// (AGENT_TERMINATION_MESSAGE_PATH here, /dev/termination-log in a pod), within the 4096 bytes Kubernetes keeps, on
// every exit path. The Node pass runs from source; the Deno pass runs the bundle (built first when stale).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  parseRunReport,
  type RunResult,
  TERMINATION_MESSAGE_MAX_BYTES,
} from '../../src/vendors/cli/run-report.ts';
import { ensureFreshBundle } from '../support/bundle.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

type Runtime = 'node' | 'deno';

const STYLES = {
  claude: 'claude-opus-5-5',
  codex: 'gpt-5-codex',
  gemini: 'gemini-3.8-flash',
} as const;
type Style = keyof typeof STYLES;

/** The mock's default usage knobs (MOCK_USAGE unset). */
const MOCK_DEFAULT = { input: 12, output: 7, cacheRead: 3, cacheWrite: 2 };

interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The termination message file as the run left it (undefined: there is none). */
  readonly report: string | undefined;
}

let scratch = '';
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'run-report-host-'));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function supervisorArgv(runtime: Runtime): [string, string[]] {
  if (runtime === 'deno') return [DENO, ['run', '-A', BUNDLE, 'supervisor', '--']];
  return [process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'supervisor', '--']];
}

/**
 * Runs the supervisor around the mock (or `agent`) with a fresh termination message file (as the kubelet provides
 * one: it exists, empty, unless `initial` says otherwise); `onStart` sees the process once spawned.
 */
async function run(
  runtime: Runtime,
  env: Record<string, string>,
  options: {
    agent?: string[];
    initial?: string | null;
    onStart?: (proc: ChildProcess, stdout: () => string) => Promise<void>;
  } = {},
): Promise<Finished> {
  const path = join(scratch, `termination-log-${Math.random().toString(36).slice(2, 10)}`);
  if (options.initial !== null) await writeFile(path, options.initial ?? '');
  const [cmd, args] = supervisorArgv(runtime);
  const proc = spawn(cmd, [...args, ...(options.agent ?? [process.execPath, MOCK])], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      AGENT_NAME: 'report-agent',
      POD_NAME: 'report-pod',
      DENO_NO_UPDATE_CHECK: '1',
      AGENT_TERMINATION_MESSAGE_PATH: path,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  proc.stderr?.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const closed = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  try {
    await options.onStart?.(proc, () => stdout);
    const code = await closed;
    const report = existsSync(path) ? await readFile(path, 'utf8') : undefined;
    return { code, stdout, stderr, report };
  } finally {
    clearTimeout(timer);
  }
}

/** The report of a finished run: present, within the limit, and a parseable run report. */
function reportOf(r: Finished): RunResult {
  assert.ok(r.report !== undefined, 'the termination message file is there');
  const size = new TextEncoder().encode(r.report).length;
  assert.ok(size > 0 && size <= TERMINATION_MESSAGE_MAX_BYTES, `${size} bytes`);
  const parsed = parseRunReport(r.report);
  assert.ok(parsed !== undefined, `a run report: ${r.report}`);
  return parsed;
}

const styled = (style: Style, env: Record<string, string> = {}) => ({
  MOCK_STYLE: style,
  AGENT_MODEL: STYLES[style],
  ...env,
});

function scenarios(runtime: Runtime, only?: ReadonlySet<string>) {
  const test = (id: string, name: string, fn: () => Promise<void>) => {
    if (only && !only.has(id)) return;
    it(`${id}: ${name}`, { timeout: 60_000 }, fn);
  };

  test('R1', 'claude: the result text, usage by kind, total_cost_usd and the model', async () => {
    const r = await run(
      runtime,
      styled('claude', {
        MOCK_TEXT: 'Fixed the flaky test.',
        MOCK_USAGE: JSON.stringify({ input: 120, output: 45, cacheRead: 1000, cacheWrite: 300 }),
        MOCK_COST: '0.0421',
        MOCK_TOOL: 'Bash',
      }),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(reportOf(r), {
      result: 'Fixed the flaky test.',
      usage: { input: 120, output: 45, cacheRead: 1000, cacheWrite: 300, total: 1465 },
      costUsd: 0.0421,
      model: 'claude-opus-5-5',
    });
  });

  test(
    'R2',
    'codex: the last agent_message, turn usage with cached input as cacheRead, no cost',
    async () => {
      const r = await run(runtime, styled('codex', { MOCK_LINES: '3', MOCK_TEXT: 'step' }));
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(reportOf(r), {
        result: 'step 3',
        usage: {
          // The uncached input: the vendor's input_tokens count the cached ones too.
          input: MOCK_DEFAULT.input - MOCK_DEFAULT.cacheRead,
          output: MOCK_DEFAULT.output,
          cacheRead: MOCK_DEFAULT.cacheRead,
          cacheWrite: 0,
          total: MOCK_DEFAULT.input + MOCK_DEFAULT.output,
        },
      });
    },
  );

  test('R3', 'gemini: delta chunks joined into the answer, stats usage, the init model', async () => {
    const r = await run(runtime, styled('gemini', { MOCK_LINES: '4', MOCK_TEXT: 'All 12 tests pass now.' }));
    assert.equal(r.code, 0, r.stderr);
    assert.ok((r.stdout.match(/"delta":true/g) ?? []).length === 4, 'streamed in four chunks');
    assert.deepEqual(reportOf(r), {
      result: 'All 12 tests pass now.',
      usage: {
        input: MOCK_DEFAULT.input - MOCK_DEFAULT.cacheRead,
        output: MOCK_DEFAULT.output,
        cacheRead: MOCK_DEFAULT.cacheRead,
        cacheWrite: 0,
        total: MOCK_DEFAULT.input + MOCK_DEFAULT.output,
      },
      model: 'gemini-3.8-flash',
    });
  });

  for (const style of Object.keys(STYLES) as Style[]) {
    test(`R4-${style}`, `${style}: a 20 KiB multi-byte answer is cut to fit, resultTruncated`, async () => {
      const answer = `Summary: ${'é中'.repeat(4096)}`; // 9 + 4096 × 5 bytes > 20 KiB
      const r = await run(runtime, styled(style, { MOCK_TEXT: answer, MOCK_LINES: '3' }));
      assert.equal(r.code, 0, r.stderr);
      const report = reportOf(r);
      assert.equal(report.resultTruncated, true);
      assert.ok(report.result !== undefined && report.result.length > 1000, 'most of the room is the answer');
      const full = style === 'gemini' ? answer : `${answer} 3`;
      assert.ok(full.startsWith(report.result), 'a prefix of the answer');
      assert.ok(report.usage !== undefined, 'the numbers are kept whole');
    });
  }

  test('R5', 'deadline: a wedged codex run killed at its deadline still reports what it said', async () => {
    const r = await run(
      runtime,
      styled('codex', { MOCK_MODE: 'wedge', MOCK_TEXT: 'half done', AGENT_DEADLINE_MS: '700' }),
    );
    assert.equal(r.code, 124, r.stderr);
    assert.match(r.stderr, /run deadline expired/);
    assert.deepEqual(reportOf(r), { result: 'half done' });
  });

  test('R6', 'deadline: a wedged claude run (no result line) reports its model', async () => {
    const r = await run(runtime, styled('claude', { MOCK_MODE: 'wedge', AGENT_DEADLINE_MS: '700' }));
    assert.equal(r.code, 124, r.stderr);
    assert.deepEqual(reportOf(r), { model: 'claude-opus-5-5' });
  });

  test('R7', 'SIGTERM: forwarded, the agent exits 42, the (empty) report is still written', async () => {
    const r = await run(
      runtime,
      { MOCK_MODE: 'signal', MOCK_EXIT: '42' },
      {
        onStart: async (proc, stdout) => {
          const until = Date.now() + 20_000;
          while (!stdout().includes('{"started":1}')) {
            if (Date.now() > until) assert.fail('the mock did not start');
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          proc.kill('SIGTERM');
        },
      },
    );
    assert.equal(r.code, 42, r.stderr);
    assert.deepEqual(reportOf(r), {});
  });

  test(
    'R8',
    'claude error result: no text, its usage and cost; an old longer message is replaced',
    async () => {
      const r = await run(
        runtime,
        styled('claude', { MOCK_RESULT_ERROR: '1', MOCK_EXIT: '1', MOCK_COST: '0.5' }),
        { initial: 'x'.repeat(8000) },
      );
      assert.equal(r.code, 1, r.stderr);
      assert.deepEqual(reportOf(r), {
        usage: { ...MOCK_DEFAULT, total: 24 },
        costUsd: 0.5,
        model: 'claude-opus-5-5',
      });
    },
  );

  test('R9', 'hostile numbers from the agent are clamped, never a failure', async () => {
    const r = await run(
      runtime,
      styled('claude', {
        MOCK_USAGE: JSON.stringify({ input: -5, output: '12', cacheRead: 1e300, cacheWrite: 2.5 }),
        MOCK_COST: '"0.5"',
      }),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(reportOf(r), {
      result: 'hello from the mock agent',
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 2, total: 2 },
      model: 'claude-opus-5-5',
    });
  });

  test('R10', 'no termination message file: nothing is created, the run is unaffected', async () => {
    const r = await run(runtime, styled('claude'), { initial: null });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.report, undefined);
    assert.doesNotMatch(r.stderr, /run report/);
  });

  test('R11', 'an agent that is not found: exit 1, an empty report', async () => {
    const r = await run(runtime, {}, { agent: ['/no-such-agent-binary-xyz'] });
    assert.equal(r.code, 1);
    assert.deepEqual(reportOf(r), {});
  });

  test('R12', 'an exec run extracts nothing, even from Claude-shaped output', async () => {
    const r = await run(runtime, { MOCK_STYLE: 'claude', AGENT_MODEL: 'exec' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(reportOf(r), {});
  });
}

describe('run report host scenarios (Node, from source)', { concurrency: 4 }, () => {
  scenarios('node');
});

describe('run report host scenarios (Deno, bundle)', {
  concurrency: 2,
  skip: existsSync(DENO) ? false : 'deno is missing',
}, () => {
  before(() => ensureFreshBundle());
  scenarios('deno', new Set(['R1', 'R4-gemini', 'R5', 'R8', 'R10']));
});
