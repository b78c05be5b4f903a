import { VERSION } from '../shared/version.ts';
import { type Command, parseFlags } from './command.ts';

export const versionCommand: Command = {
  name: 'version',
  summary: 'print the version and the runtime',
  usage: [
    'Usage: agent-controller version [--json]',
    '',
    'Prints the product version and the JavaScript runtime it runs on (also: agent-controller --version).',
    '',
    'Examples:',
    '  agent-controller version',
    '  agent-controller version --json | jq -r .version',
    '',
    'Flags:',
    '  --json                print {"version": ..., "runtime": ...} as one JSON line',
  ].join('\n'),
  async run(io) {
    const { values, help } = parseFlags(io.argv, { json: { type: 'boolean' } });
    if (help) {
      io.stdout(`${versionCommand.usage}\n`);
      return 0;
    }
    const runtime = runtimeName();
    if (values.json === true) io.stdout(`${JSON.stringify({ version: VERSION, runtime })}\n`);
    else io.stdout(`agent-controller ${VERSION} (${runtime})\n`);
    return 0;
  },
};

/** `deno 2.x.y` or `node v20.x.y`: the runtime this bundle is executing on. */
export function runtimeName(): string {
  const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno;
  if (deno?.version?.deno) return `deno ${deno.version.deno}`;
  return `node ${process.version}`;
}
