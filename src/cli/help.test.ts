import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { main } from '../cli.ts';
import { controllerCommand } from '../cmd/controller.ts';
import { gatewayCommand } from '../cmd/gateway.ts';
import { initCommand } from '../cmd/init.ts';
import { supervisorCommand } from '../cmd/supervisor.ts';
import type { Command } from './command.ts';
import { CLI_COMMANDS, pluginHelp } from './index.ts';

const PROGRAM = 'agent-controller';

/** Every command a person can ask `--help` of: the services, then the command line (as `agent-controller --help` lists them). */
const COMMANDS: readonly Command[] = [
  controllerCommand,
  gatewayCommand,
  supervisorCommand,
  initCommand,
  ...CLI_COMMANDS,
];

/** Runs `main` with process.stdout captured. */
async function captureStdout(fn: () => Promise<number>): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((t: string) => out.push(String(t)) > 0) as typeof process.stdout.write;
  try {
    return { code: await fn(), out: out.join('') };
  } finally {
    process.stdout.write = write;
  }
}

/** The command names of a help's command rows (`  name        summary`), above its Examples. */
function listedNames(help: string): string[] {
  const lines = help.split('\n');
  const examplesAt = lines.indexOf('Examples:');
  return lines
    .slice(0, examplesAt < 0 ? undefined : examplesAt)
    .map((line) => /^ {2}([a-z_][\w-]*) +\S/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
}

/** The lines of the "Examples:" section: from the heading to the first blank line. */
function examples(help: string): string[] | undefined {
  const lines = help.split('\n');
  const start = lines.indexOf('Examples:');
  if (start < 0) return undefined;
  const end = lines.findIndex((line, i) => i > start && line.trim() === '');
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

describe('--help of every command', () => {
  it('has an Examples section with at least one command line of the program running that command', async () => {
    // The list under test is the list the program shows: a command added to the help but not here fails.
    const top = await captureStdout(() => main(['--help'], `/app/${PROGRAM}.mjs`));
    assert.equal(top.code, 0);
    const listed = [...new Set([...listedNames(top.out), ...listedNames(pluginHelp('kubectl agent'))])];
    assert.deepEqual(listed.toSorted(), COMMANDS.map((c) => c.name).toSorted());

    const lacking: string[] = [];
    for (const command of COMMANDS) {
      let out = '';
      let err = '';
      const code = await command.run({
        argv: ['--help'],
        env: {},
        stdout: (t) => {
          out += t;
        },
        stderr: (t) => {
          err += t;
        },
      });
      assert.equal(code, 0, `${command.name} --help: exit ${code}, stderr ${err}`);
      assert.match(out, /^Usage: /, `${command.name} --help prints its usage`);
      const lines = examples(out);
      if (lines === undefined) {
        lacking.push(`${command.name}: no "Examples:" section`);
        continue;
      }
      if (lines.length === 0 || !lines.every((line) => /^ {2}\S/.test(line)))
        lacking.push(
          `${command.name}: the Examples section is empty or not indented: ${JSON.stringify(lines)}`,
        );
      if (!lines.some((line) => line.trim().startsWith(`${PROGRAM} ${command.name}`)))
        lacking.push(`${command.name}: no example line starts with "${PROGRAM} ${command.name}"`);
    }
    assert.deepEqual(lacking, []);
  });
});
