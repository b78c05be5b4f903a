import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { main } from '../cli.ts';
import { CLI_COMMANDS, pluginHelp, pluginMain } from './index.ts';

/** Runs `main` with process.stdout/stderr captured. */
async function capture(fn: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const w1 = process.stdout.write.bind(process.stdout);
  const w2 = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((t: string) => out.push(String(t)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((t: string) => err.push(String(t)) > 0) as typeof process.stderr.write;
  try {
    const code = await fn();
    return { code, out: out.join(''), err: err.join('') };
  } finally {
    process.stdout.write = w1;
    process.stderr.write = w2;
  }
}

const io = () => {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { env: {}, stdout: (t: string) => void out.push(t), stderr: (t: string) => void err.push(t) },
  };
};

describe('the bundle as kubectl agent (a file named kubectl-agent*)', () => {
  it('with no arguments prints the command-line help instead of starting the controller', async () => {
    const r = await capture(() => main([], '/usr/local/bin/kubectl-agent'));
    assert.equal(r.code, 0);
    assert.equal(r.out, `${pluginHelp('kubectl agent')}\n`);
    assert.match(r.out, /^Usage: kubectl agent <command> \[flags\]/);
    for (const c of ['run', 'get', 'describe', 'logs', 'delete', 'prompt', 'close', 'completion', 'version'])
      assert.match(r.out, new RegExp(`\\n  ${c} +\\S`), c);
    assert.ok(!r.out.includes('controller '), 'the controller is not a plugin command');
  });

  it('runs a command, also through a symlink named kubectl-agent.mjs (Deno) and with flags first', async () => {
    const r = await capture(() => main(['version', '--json'], '/tmp/x/kubectl-agent.mjs'));
    assert.equal(r.code, 0);
    assert.match(r.out, /^\{"version":"[^"]+","runtime":"node v\d+/);
    const h = io();
    assert.equal(await pluginMain(['-n', 'team', 'get', '--help'], h.io), 0);
    assert.match(h.out.join(''), /^Usage: (agent-controller|kubectl agent) get/);
  });

  it('unknown or missing commands are exit 2 with one line', async () => {
    const a = io();
    assert.equal(await pluginMain(['controller'], a.io), 2);
    assert.equal(a.err.join(''), `error: unknown command "controller" (try 'kubectl agent --help')\n`);
    const b = io();
    assert.equal(await pluginMain(['-n', 'team'], b.io), 2);
    assert.equal(b.err.join(''), `error: missing the command (try 'kubectl agent --help')\n`);
    const c = io();
    assert.equal(await pluginMain(['--help'], c.io), 0);
    assert.equal(c.out.join(''), `${pluginHelp('kubectl agent')}\n`);
  });

  it('as kubectl_complete-agent it answers completion', async () => {
    const r = await capture(() => main(['ge'], '/usr/local/bin/kubectl_complete-agent'));
    assert.equal(r.code, 0);
    assert.equal(r.out, 'get\n:4\n');
  });
});

describe('agent-controller', () => {
  it('lists the command line next to the controller in its help', async () => {
    const r = await capture(() => main(['--help'], '/app/agent-controller.mjs'));
    assert.equal(r.code, 0);
    assert.match(r.out, /Controller, gateway and run pod \(default: controller\):\n {2}controller/);
    assert.match(r.out, /Command line \(also as the kubectl plugin: kubectl agent <command>\):\n {2}run /);
    assert.equal(CLI_COMMANDS.length, 12);
  });

  it('runs the CLI commands by name; usage mistakes are exit 2', async () => {
    const r = await capture(() => main(['get', '-o', 'xml'], '/app/agent-controller.mjs'));
    assert.equal(r.code, 2);
    assert.equal(
      r.err,
      'error: -o must be one of wide, json, yaml, name; got "xml" (see \'agent-controller get --help\')\n',
    );
    const c = await capture(() => main(['completion', 'bash'], '/app/agent-controller.mjs'));
    assert.equal(c.code, 0);
    assert.match(c.out, /complete -F _agent_controller agent-controller kubectl-agent/);
  });
});
