// `get [agents|stations|definitions] [name ...]`: kubectl-like tables (the CRDs' printer columns), `-o wide|json|
// yaml|name`, `--watch` (rows re-printed as objects change, from the project's informer: no polling), `-A`.

import { type KubeObject, objectKey } from '../kube/index.ts';
import { getRaw, listKind, what } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import {
  type CliCommandSpec,
  type CliDeps,
  type Connection,
  cliCommand,
  helpText,
  paints,
} from './context.ts';
import { CliError, EXIT, EXIT_CODES_HELP, exitCodeOf, kubeErrorLine, kubeFailure } from './exit.ts';
import {
  CONNECTION_FLAGS,
  CONNECTION_HELP,
  connectionFlags,
  type OutputFormat,
  parseCliFlags,
  parseOutput,
} from './flags.ts';
import { AGENTS_KIND, type KindInfo, parseTargets, validatedSchema } from './kinds.ts';
import { formatChange, formatObjects, noResources } from './output.ts';
import { type Paint, sanitize } from './style.ts';
import { buildTable, renderTable } from './table.ts';
import { startWatch } from './watch.ts';

export const GET_FLAGS = {
  ...CONNECTION_FLAGS,
  output: { type: 'string', short: 'o' },
  watch: { type: 'boolean', short: 'w' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  selector: { type: 'string', short: 'l' },
} as const;

/** What `get` was asked for (pure). */
export interface GetRequest {
  readonly kind: KindInfo;
  readonly names: readonly string[];
  readonly format: OutputFormat;
  readonly watch: boolean;
  readonly allNamespaces: boolean;
  readonly selector: string | undefined;
}

/** Reads the positionals: an optional kind word, then names (without a kind word, names of Agents). */
export function parseGetRequest(
  values: Readonly<Record<string, unknown>>,
  positionals: readonly string[],
): GetRequest {
  const targets = parseTargets(positionals);
  const kind = targets.kind ?? AGENTS_KIND;
  const names = targets.names;
  const allNamespaces = values['all-namespaces'] === true;
  const watch = values.watch === true;
  const selector =
    typeof values.selector === 'string' && values.selector !== '' ? values.selector : undefined;
  if (allNamespaces && names.length > 0)
    throw new UsageError('a name cannot be looked up across all namespaces: drop -A or the name');
  if (watch && names.length > 1) throw new UsageError('--watch follows one name, or a whole list');
  if (selector !== undefined && names.length > 0)
    throw new UsageError('give names or a --selector, not both');
  return { kind, names, format: parseOutput(values.output), watch, allNamespaces, selector };
}

async function fetchObjects(
  conn: Connection,
  req: GetRequest,
  io: CommandIo,
): Promise<{ items: KubeObject[]; code: number }> {
  const ns = req.allNamespaces ? undefined : conn.namespace;
  if (req.names.length === 0) {
    const listed = await listKind(conn.transport, req.kind, ns, req.selector);
    for (const w of listed.warnings) io.stderr(`${sanitize(w)}\n`);
    return { items: [...listed.items], code: EXIT.ok };
  }
  const items: KubeObject[] = [];
  let code: number = EXIT.ok;
  for (const name of req.names) {
    const r = await getRaw(conn.transport, req.kind, conn.namespace, name);
    if (r.ok) items.push(r.value);
    else {
      const subject = what(req.kind, name, conn.namespace);
      // A refusal ends the command (the guard prints it, once); anything else is said and the next name tried.
      if (exitCodeOf(r.error) === EXIT.notAllowed) throw kubeFailure(r.error, subject);
      io.stderr(`error: ${kubeErrorLine(r.error, subject)}\n`);
      code = exitCodeOf(r.error);
    }
  }
  return { items, code };
}

/** Prints a table; returns the widths for later rows. */
function printTable(
  io: CommandIo,
  req: GetRequest,
  items: readonly KubeObject[],
  now: number,
  paint: Paint,
  o: { header: boolean; widths?: readonly number[] | undefined },
): number[] {
  const table = buildTable(req.kind, items, {
    wide: req.format === 'wide',
    allNamespaces: req.allNamespaces,
    now,
    paint,
  });
  const { lines, widths } = renderTable(table, {
    header: o.header,
    ...(o.widths ? { widths: o.widths } : {}),
  });
  if (lines.length > 0) io.stdout(`${lines.join('\n')}\n`);
  return widths;
}

async function watchChanges(
  io: CommandIo,
  deps: CliDeps,
  conn: Connection,
  req: GetRequest,
  paint: Paint,
): Promise<number> {
  const ns = req.allNamespaces ? undefined : conn.namespace;
  let widths: number[] | undefined;
  let printed = false;
  let failure: CliError | undefined;
  let wake: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const print = (items: readonly KubeObject[]): void => {
    if (req.format === 'table' || req.format === 'wide') {
      if (items.length === 0) return;
      widths = printTable(io, req, items, deps.clock.now(), paint, { header: widths === undefined, widths });
    } else for (const obj of items) io.stdout(formatChange(req.kind, obj, req.format));
  };
  const watch = startWatch<KubeObject>({
    transport: conn.transport,
    resource: req.kind.resource,
    namespace: ns,
    labelSelector: req.selector,
    fieldSelector: req.names[0] !== undefined ? `metadata.name=${req.names[0]}` : undefined,
    schema: validatedSchema(req.kind),
    clock: deps.clock,
    random: deps.random,
    subject:
      req.names[0] !== undefined
        ? what(req.kind, req.names[0], ns)
        : `${req.kind.name}${ns ? ` in namespace "${ns}"` : ''}`,
    onChange: (c) => {
      if (printed) print([c.object]);
    },
    onFatal: (e) => {
      failure = e;
      wake();
    },
  });
  const interrupt = deps.interrupt();
  interrupt.signal.addEventListener('abort', () => wake(), { once: true });
  void watch.ready.then(() => {
    const items = watch.store.list().sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
    if (req.names[0] !== undefined && items.length === 0) {
      // As kubectl: watching one name that does not exist is an error (exit 4), not a wait for it to appear.
      failure = new CliError(`${what(req.kind, req.names[0], conn.namespace)} not found`, EXIT.notFound);
      wake();
      return;
    }
    if (items.length === 0) io.stderr(`${noResources(ns)}\n`);
    print(items);
    printed = true;
  });
  try {
    await stopped;
  } finally {
    interrupt.dispose();
    await watch.stop();
  }
  if (failure !== undefined) throw failure;
  return EXIT.ok;
}

export const getSpec: CliCommandSpec = {
  name: 'get',
  summary: 'list Agents, Stations or AgentDefinitions (tables, -o wide|json|yaml|name, --watch)',
  usage: [
    'Usage: {program} get [agents|stations|definitions] [NAME ...] [-o wide|json|yaml|name] [-w] [-A] [-l SELECTOR] [flags]',
    '',
    'Prints the objects of a kind as kubectl does: a table with the columns of its CRD (-o wide adds the',
    'Agent columns Session, Batch, Tokens and Cost), or the objects as JSON or YAML, or their names. Without a',
    'kind word the names are Agents; without names, every object of the namespace (-A: of every namespace).',
    '--watch prints the table, then a row each time an object changes (Ctrl-C stops).',
    '',
    'Kinds: agents (agent, agt), stations (station, stn), definitions (definition, agentdefinitions, ad).',
    '',
    'Examples:',
    '  {program} get',
    '  {program} get agents -o wide -A',
    '  {program} get agent hello-x7k2p -o yaml',
    '  {program} get stations',
    '  {program} get agents --watch',
    '',
    'Flags:',
    '  -o, --output FORMAT   wide, json, yaml or name (default: a table)',
    '  -w, --watch           after the list, print each change',
    '  -A, --all-namespaces  every namespace',
    '  -l, --selector SEL    label selector (key=value,...)',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, GET_FLAGS);
    if (help) {
      io.stdout(`${helpText(getSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const req = parseGetRequest(values, positionals);
    const conn = await deps.connect(connectionFlags(values));
    const paint = paints(io, deps).out;
    try {
      if (req.watch) return await watchChanges(io, deps, conn, req, paint);
      const { items, code } = await fetchObjects(conn, req, io);
      if (req.format === 'table' || req.format === 'wide') {
        if (items.length === 0 && req.names.length === 0)
          io.stderr(`${noResources(req.allNamespaces ? undefined : conn.namespace)}\n`);
        else if (items.length > 0) printTable(io, req, items, deps.clock.now(), paint, { header: true });
      } else if (items.length > 0 || req.names.length === 0)
        io.stdout(formatObjects(req.kind, items, req.format, req.names.length === 1));
      return code;
    } finally {
      conn.close();
    }
  },
};

export const getCommand = cliCommand(getSpec);
