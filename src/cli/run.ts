// `run <station>`: creates an Agent of a Station and prints its name; with --wait, waits for it (status line, exit
// code of the run); with --follow, also streams its log as readable text.
import type { AgentDefinition, Station } from '../api/index.ts';
import { createAgent, getDefinition, getStation, type Optional } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText, paints } from './context.ts';
import { CliError, EXIT, EXIT_CODES_HELP, kubeFailure } from './exit.ts';
import {
  CONNECTION_FLAGS,
  CONNECTION_HELP,
  connectionFlags,
  parseCliFlags,
  parseDuration,
  parseSets,
  strings,
} from './flags.ts';
import { awaitRun } from './follow.ts';
import { checkName } from './kinds.ts';

/** The parameter `--prompt` sets: the definition's prompt template uses it as `{prompt}`. */
export const PROMPT_PARAMETER = 'prompt';

export const RUN_FLAGS = {
  ...CONNECTION_FLAGS,
  prompt: { type: 'string', short: 'p' },
  'prompt-file': { type: 'string' },
  set: { type: 'string', multiple: true },
  model: { type: 'string' },
  name: { type: 'string' },
  wait: { type: 'boolean', short: 'w' },
  follow: { type: 'boolean', short: 'f' },
  json: { type: 'boolean' },
  timeout: { type: 'string' },
} as const;

/** What `run` was asked to do (parsed and checked, before any I/O). */
export interface RunRequest {
  readonly station: string;
  readonly name: string | undefined;
  readonly model: string | undefined;
  readonly parameters: Readonly<Record<string, string>>;
  /** Where the prompt comes from, if given: the text, a file, or stdin (`-`). */
  readonly prompt: { readonly text: string } | { readonly file: string } | undefined;
  readonly wait: boolean;
  readonly follow: boolean;
  readonly raw: boolean;
  readonly timeoutMs: number | undefined;
}

/** Checks the flags of `run` (pure). */
export function parseRunRequest(
  values: Readonly<Record<string, unknown>>,
  positionals: readonly string[],
): RunRequest {
  const [station, ...extra] = positionals;
  if (station === undefined || station === '') throw new UsageError('missing the Station to run');
  checkName(station, 'Station name');
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const text = typeof values.prompt === 'string' ? values.prompt : undefined;
  const file = typeof values['prompt-file'] === 'string' ? values['prompt-file'] : undefined;
  if (text !== undefined && file !== undefined)
    throw new UsageError('give --prompt or --prompt-file, not both');
  if (file === '') throw new UsageError('--prompt-file needs a file (or - for stdin)');
  const parameters = parseSets(strings(values.set));
  if ((text !== undefined || file !== undefined) && Object.hasOwn(parameters, PROMPT_PARAMETER))
    throw new UsageError(
      `--prompt and --set ${PROMPT_PARAMETER}=… both set the parameter ${PROMPT_PARAMETER}`,
    );
  const follow = values.follow === true;
  const wait = values.wait === true || follow;
  if (values.json === true && !follow) throw new UsageError('--json prints the raw log lines of --follow');
  const timeout = typeof values.timeout === 'string' ? values.timeout : undefined;
  if (timeout !== undefined && !wait) throw new UsageError('--timeout needs --wait or --follow');
  const name = typeof values.name === 'string' ? values.name : undefined;
  if (name !== undefined) checkName(name, '--name');
  const model = typeof values.model === 'string' && values.model !== '' ? values.model : undefined;
  return {
    station,
    name,
    model,
    parameters,
    prompt: text !== undefined ? { text } : file !== undefined ? { file } : undefined,
    wait,
    follow,
    raw: values.json === true,
    timeoutMs: timeout === undefined ? undefined : parseDuration(timeout),
  };
}

/** The Agent to create (pure): generateName `<station>-` unless named. */
export function agentBody(req: RunRequest, prompt: string | undefined): Record<string, unknown> {
  const parameters = { ...req.parameters, ...(prompt !== undefined ? { [PROMPT_PARAMETER]: prompt } : {}) };
  return {
    metadata: req.name !== undefined ? { name: req.name } : { generateName: `${req.station}-` },
    spec: {
      stationRef: req.station,
      ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
      ...(req.model !== undefined ? { model: req.model } : {}),
    },
  };
}

/** A warning when the prompt would not reach the prompt template (pure); undefined when it does or cannot be told. */
export function promptWarning(
  definition: Optional<AgentDefinition>,
  prompt: string | undefined,
): string | undefined {
  if (prompt === undefined || definition.kind !== 'ok') return undefined;
  if (definition.value.spec.prompt.includes(`{${PROMPT_PARAMETER}}`)) return undefined;
  return `warning: the prompt of AgentDefinition "${definition.value.metadata.name}" has no {${PROMPT_PARAMETER}} placeholder: the text reaches the run only as its parameter ${PROMPT_PARAMETER} (AGENT_PARAMETERS)`;
}

async function readPrompt(req: RunRequest, deps: CliDeps): Promise<string | undefined> {
  if (req.prompt === undefined) return undefined;
  if ('text' in req.prompt) return req.prompt.text;
  const file = req.prompt.file;
  try {
    return file === '-' ? await deps.readStdin() : await deps.readFile(file);
  } catch (error) {
    throw new CliError(
      `cannot read --prompt-file ${file}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

export const runSpec: CliCommandSpec = {
  name: 'run',
  summary: 'start a run of a Station (an Agent) and optionally wait for it or follow its log',
  usage: [
    'Usage: {program} run <station> [--prompt TEXT | --prompt-file FILE] [--set key=value ...] [--model M]',
    '       [--name NAME] [--wait | --follow [--json]] [--timeout DURATION] [flags]',
    '',
    'Creates an Agent of <station> and prints its name (generated as <station>-xxxxx unless --name is given).',
    'The Agent runs the recipe of the Station with these parameters: --set key=value fills {key} in the',
    "definition's prompt template; --prompt TEXT (or --prompt-file FILE, - for stdin) sets the parameter prompt,",
    'which the template uses as {prompt}.',
    '',
    'With --wait it then waits for the run to end, showing its phase, its place in the queue behind the',
    "Station's concurrency limit and the time elapsed (a live line on a terminal, a line per change otherwise),",
    "and exits with the run's exit code. --follow also streams the agent's log as readable text (assistant",
    'text, tool calls and results); --json prints the raw log lines instead.',
    '',
    'Examples:',
    '  {program} run hello --set name=world',
    '  {program} run reviewer --prompt "review the open pull request" --follow',
    '  {program} run nightly --prompt-file task.md --model claude-sonnet-5-5 --wait --timeout 30m',
    '  git diff | {program} run reviewer --prompt-file - --wait',
    '',
    'Flags:',
    '  -p, --prompt TEXT     the prompt (parameter prompt)',
    '  --prompt-file FILE    read the prompt from FILE; - reads stdin',
    '  --set key=value       a parameter of the run (repeatable)',
    "  --model M             the model, instead of the definition's",
    '  --name NAME           the Agent name (default: generated from the Station name)',
    "  -w, --wait            wait for the run to end; exit with the run's exit code",
    '  -f, --follow          wait, streaming the run log as readable text',
    '  --json                with --follow: the raw log lines (stream-JSON)',
    '  --timeout DURATION    stop waiting after DURATION (90s, 10m, 1h30m): exit 124, the run goes on',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, RUN_FLAGS);
    if (help) {
      io.stdout(`${helpText(runSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const req = parseRunRequest(values, positionals);
    const prompt = await readPrompt(req, deps);
    const conn = await deps.connect(connectionFlags(values));
    try {
      const ns = conn.namespace;
      const found = await getStation(conn.transport, ns, req.station);
      if (found.kind === 'missing')
        throw new CliError(`station "${req.station}" not found in namespace "${ns}"`, EXIT.notFound);
      if (found.kind === 'error')
        throw kubeFailure(found.error, `station "${req.station}" in namespace "${ns}"`);
      const station: Station | undefined = found.kind === 'ok' ? found.value : undefined;
      if (station !== undefined) {
        const warning = promptWarning(
          await getDefinition(conn.transport, ns, station.spec.agentDefRef),
          prompt,
        );
        if (warning !== undefined) io.stderr(`${warning}\n`);
      }
      const startedAt = deps.clock.now();
      const agent = await createAgent(conn.transport, ns, agentBody(req, prompt), req.name);
      io.stdout(`${agent.metadata.name}\n`);
      if (!req.wait) return EXIT.ok;
      const { out, err } = paints(io, deps);
      return await awaitRun({
        io,
        deps,
        conn,
        program: deps.program,
        agent,
        station,
        startedAt,
        timeoutMs: req.timeoutMs,
        statusLine: true,
        follow: req.follow ? { raw: req.raw } : undefined,
        paintOut: out,
        paintErr: err,
      });
    } finally {
      conn.close();
    }
  },
};

export const runCommand = cliCommand(runSpec);
