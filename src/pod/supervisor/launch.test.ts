// The supervisor's `launch`, which every execution mode (Job, realtime turn, server turn) starts its CLI with: what
// the vendor CLI gets from the pod's environment (src/vendors/cli/launch.ts), and a closed stdin.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CODEX_PROVIDER_ID } from '../../vendors/cli/index.ts';
import { type Launch, launch, prepare } from './supervise.ts';

const sink = { write: () => true, once: () => undefined, on: () => undefined };

function context(env: Record<string, string>) {
  return prepare({
    argv: ['x'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', AGENT_SINKS: '[]', ...env },
    stdout: sink,
    stderr: sink,
    now: () => Date.now(),
    onSignal: () => () => undefined,
  });
}

/** The child's stdout, once it has exited. */
async function output(started: Launch): Promise<string> {
  assert.ok(started.ok);
  const child: ChildProcess = started.child;
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  const ended = new Promise<void>((resolve) => child.stdout?.once('close', () => resolve()));
  await started.exited;
  await ended;
  return out;
}

/** A stand-in CLI: reads its stdin to EOF (as Codex and OpenCode do), then prints its arguments and two variables. */
const SCRIPT =
  'cat >/dev/null; printf "%s\\n" "$@"; printf "key=%s\\n" "$CODEX_API_KEY"; printf "oc=%s\\n" "$OPENCODE_DISABLE_SHARE"';

describe('supervisor launch', () => {
  it('starts Codex with the model provider from OPENAI_BASE_URL, the key only in the environment', async () => {
    const ctx = context({
      AGENT_MODEL: 'gpt-6-sol',
      OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      OPENAI_API_KEY: 'sk-test-1234',
    });
    const out = await output(
      await launch(ctx, '/bin/sh', ['-c', SCRIPT, 'sh', 'exec', '--json', '--', 'hi']),
    );
    const lines = out.trim().split('\n');
    assert.ok(lines.includes(`model_provider="${CODEX_PROVIDER_ID}"`), out);
    assert.ok(lines.includes(`model_providers.${CODEX_PROVIDER_ID}.supports_websockets=false`), out);
    assert.deepEqual(lines.slice(-4, -2), ['--', 'hi']);
    assert.ok(!lines.slice(0, -2).some((l) => l.includes('sk-test-1234')), 'the key is not an argument');
  });

  it('gives OpenCode its quiet switches', async () => {
    const ctx = context({ AGENT_MODEL: 'opencode/anthropic/claude-opus-5-5' });
    const out = await output(await launch(ctx, '/bin/sh', ['-c', SCRIPT, 'sh', 'run', '--', 'hi']));
    assert.match(out, /^oc=1$/m);
  });

  it('closes stdin when there is no prompt to write: a CLI reading it to EOF does not hang', async () => {
    const ctx = context({ AGENT_MODEL: 'claude-opus-5-5' });
    const out = await output(await launch(ctx, '/bin/sh', ['-c', SCRIPT, 'sh', 'a']));
    assert.match(out, /^a$/m);
  });

  it('writes the prompt to stdin and closes it', async () => {
    const ctx = context({ AGENT_MODEL: 'opencode' });
    const out = await output(await launch(ctx, '/bin/sh', ['-c', 'cat'], 'the prompt'));
    assert.equal(out, 'the prompt');
  });

  it('gives Gemini CLI its settings file before it starts, merged into one already there', async () => {
    const home = await mkdtemp(join(tmpdir(), 'gemini-home-'));
    try {
      const ctx = context({ AGENT_MODEL: 'gemini-3.8-flash', HOME: home });
      const file = join(home, '.gemini', 'settings.json');
      // The CLI sees the file when it starts.
      const out = await output(await launch(ctx, '/bin/sh', ['-c', `cat '${file}'`]));
      assert.equal(JSON.parse(out).security.auth.selectedType, 'gemini-api-key');
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      await writeFile(file, '{"mcpServers":{"x":{"httpUrl":"http://x"}},"telemetry":{"enabled":true}}');
      await output(await launch(ctx, '/bin/sh', ['-c', 'true']));
      assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), {
        mcpServers: { x: { httpUrl: 'http://x' } },
        telemetry: { enabled: true },
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
      });
      // A file that is not JSON is left as it is.
      await writeFile(file, '{oops');
      await output(await launch(ctx, '/bin/sh', ['-c', 'true']));
      assert.equal(await readFile(file, 'utf8'), '{oops');
      // Another vendor's run writes none.
      await rm(join(home, '.gemini'), { recursive: true });
      await output(
        await launch(context({ AGENT_MODEL: 'claude-opus-5-5', HOME: home }), '/bin/sh', ['-c', 'true']),
      );
      await assert.rejects(stat(join(home, '.gemini')));
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
