// `logs <agent> [-f]`: the agent container's log of a run, as readable text (or the raw lines with --json); when
// the pod is gone (or there never was one: a batch run), the run's captured output (status.output).
import type { Agent } from '../api/index.ts';
import { getAgent, jobPods, must } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import {
  type CliCommandSpec,
  type CliDeps,
  type Connection,
  cliCommand,
  helpText,
  paints,
} from './context.ts';
import { renderText } from './event-lines.ts';
import { CliError, EXIT, EXIT_CODES_HELP } from './exit.ts';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFlags, parseCliFlags } from './flags.ts';
import { awaitRun } from './follow.ts';
import { parseTargets } from './kinds.ts';
import { AGENT_CONTAINER, logPath, pickPod } from './log-stream.ts';
import type { Paint } from './style.ts';

export const LOGS_FLAGS = {
  ...CONNECTION_FLAGS,
  follow: { type: 'boolean', short: 'f' },
  json: { type: 'boolean' },
  tail: { type: 'string' },
} as const;

/** The Agent name and options of `logs` (pure). */
export function parseLogsRequest(
  values: Readonly<Record<string, unknown>>,
  positionals: readonly string[],
): { name: string; follow: boolean; raw: boolean; tail: number | undefined } {
  const { kind, names } = parseTargets(positionals);
  if (kind !== undefined && kind.name !== 'agents')
    throw new UsageError(`logs reads the log of an Agent, not of ${kind.name}`);
  const [name, ...extra] = names;
  if (name === undefined) throw new UsageError('missing the Agent name');
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  let tail: number | undefined;
  if (typeof values.tail === 'string') {
    if (!/^\d+$/.test(values.tail))
      throw new UsageError(`--tail takes a number of lines, got ${JSON.stringify(values.tail)}`);
    tail = Number(values.tail);
  }
  return { name, follow: values.follow === true, raw: values.json === true, tail };
}

function printText(io: CommandIo, text: string, raw: boolean, paint: Paint): void {
  if (text === '') return;
  io.stdout(raw ? (text.endsWith('\n') ? text : `${text}\n`) : renderText(text, paint));
}

/** The log of a run as it is now: its pod's, else its captured output. */
async function printLog(
  io: CommandIo,
  conn: Connection,
  agent: Agent,
  o: { raw: boolean; tail: number | undefined; paint: Paint },
): Promise<number> {
  const name = agent.metadata.name;
  const fallback = (why: string): number => {
    const output = agent.status.output ?? '';
    if (output === '')
      throw new CliError(
        `no log for agent "${name}": ${why}, and the run recorded no output (phase ${agent.status.phase})`,
      );
    io.stderr(
      `note: ${why}: showing the output the run recorded (status.output, at most its last 256 KiB)\n`,
    );
    printText(io, output, o.raw, o.paint);
    return EXIT.ok;
  };
  const jobName = agent.status.jobName;
  if (jobName === undefined || jobName === '') return fallback('the run has no pod');
  const pods = await jobPods(conn.transport, conn.namespace, jobName);
  if (pods.kind === 'forbidden')
    throw new CliError(`not allowed (403): cannot list the pods of job "${jobName}"`, EXIT.notAllowed);
  if (pods.kind === 'error') return fallback(`its pods cannot be listed (${pods.error.message})`);
  const pod = pods.kind === 'ok' ? (pickPod(pods.value) ?? pods.value[0]) : undefined;
  if (pod === undefined) return fallback(`the pod of job "${jobName}" is gone`);
  const r = await conn.transport.request('GET', logPath(conn.namespace, pod.metadata.name), {
    query: { container: AGENT_CONTAINER, ...(o.tail !== undefined ? { tailLines: o.tail } : {}) },
  });
  if (!r.ok) {
    if (r.error.kind === 'api' && r.error.code === 404) return fallback(`pod "${pod.metadata.name}" is gone`);
    if (r.error.kind === 'api' && r.error.code === 400)
      throw new CliError(
        `the agent container of pod "${pod.metadata.name}" has not started yet: ${r.error.message}`,
      );
    must(r, `the log of pod "${pod.metadata.name}"`);
  }
  if (r.ok) printText(io, r.value.text, o.raw, o.paint);
  return EXIT.ok;
}

export const logsSpec: CliCommandSpec = {
  name: 'logs',
  summary: "print (or follow) the log of a run's agent container",
  usage: [
    'Usage: {program} logs [agent] NAME [-f] [--json] [--tail N] [flags]',
    '',
    "Prints the log of the run's agent container as readable text: assistant text, tool calls and results,",
    "the supervisor's notes; --json prints the log as it is (the vendor CLI's stream-JSON lines). -f follows",
    'the log until the container ends, waiting for the run to start if it is still queued. When the pod is gone',
    '(collected after the run, or a batch run that never had one) the output the run recorded is shown.',
    '',
    'Examples:',
    '  {program} logs hello-x7k2p',
    '  {program} logs hello-x7k2p -f',
    '  {program} logs hello-x7k2p --json | jq -c "select(.type == \\"result\\")"',
    '',
    'Flags:',
    '  -f, --follow          stream the log until the container ends',
    '  --json                the raw log lines',
    '  --tail N              only the last N lines (without -f)',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, LOGS_FLAGS);
    if (help) {
      io.stdout(`${helpText(logsSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const req = parseLogsRequest(values, positionals);
    const conn = await deps.connect(connectionFlags(values));
    const { out, err } = paints(io, deps);
    try {
      const agent = await getAgent(conn.transport, conn.namespace, req.name);
      const terminal = agent.status.phase === 'Succeeded' || agent.status.phase === 'Failed';
      if (!req.follow || terminal)
        return await printLog(io, conn, agent, { raw: req.raw, tail: req.tail, paint: out });
      if (agent.status.jobName === undefined)
        io.stderr(`waiting for agent "${req.name}" to start (${agent.status.phase})…\n`);
      const code = await awaitRun({
        io,
        deps,
        conn,
        program: deps.program,
        agent,
        station: undefined,
        startedAt: deps.clock.now(),
        timeoutMs: undefined,
        statusLine: false,
        follow: { raw: req.raw },
        untilLogEnds: true,
        paintOut: out,
        paintErr: err,
      });
      return code === EXIT.interrupted ? code : EXIT.ok;
    } finally {
      conn.close();
    }
  },
};

export const logsCommand = cliCommand(logsSpec);
