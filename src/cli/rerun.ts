// `rerun <agent>`: creates a new Agent with the same spec as an existing one (its Station, parameters, model and
// every other spec field), named `<source>-rerun-xxxxx` unless `--name` is given, and annotated with the run it
// repeats. The new Agent built from the source is pure (`rerunBody`, shared with the console's Rerun button).
import { GROUP, VERSION } from '../api/index.ts';
import { createObject, type KubeObject } from '../kube/index.ts';
import { getRaw, must, what } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText } from './context.ts';
import { CliError, EXIT, EXIT_CODES_HELP } from './exit.ts';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFlags, parseCliFlags } from './flags.ts';
import { AGENTS_KIND, checkName, parseTargets, qualifiedName, validatedSchema } from './kinds.ts';
import { formatObjects } from './output.ts';

/** The annotation naming the Agent a rerun repeats (its name, same namespace). */
export const ANNOTATION_RERUN_OF = 'agents.re-cinq.com/rerun-of';
/** The uid of that Agent: a later Agent of the same name is not the one repeated. */
export const ANNOTATION_RERUN_OF_UID = 'agents.re-cinq.com/rerun-of-uid';

/**
 * Labels and annotations under the project's own prefix belong to the controller, the prompt API and the gateway
 * (a session id, the gateway's measured usage, the rerun link itself): a rerun never carries the source's.
 */
const PROJECT_PREFIX = `${GROUP}/`;

/**
 * Annotations that describe the source object itself rather than what to run: kubectl's record of the last applied
 * configuration (it names the source) and `traceparent` (the trace the source joined; a rerun has its own trace).
 */
const SOURCE_ONLY_ANNOTATIONS: ReadonlySet<string> = new Set([
  'kubectl.kubernetes.io/last-applied-configuration',
  'traceparent',
]);

/** The suffix a generated rerun name ends with (dropped from the prefix, so a rerun of a rerun does not grow). */
const GENERATED_RERUN_SUFFIX = /-rerun-[a-z0-9]{5}$/;

/** What a rerun is built from: the source Agent as read (raw or parsed). */
export interface RerunSource {
  readonly metadata: {
    readonly name?: string | undefined;
    readonly uid?: string | undefined;
    readonly labels?: Readonly<Record<string, string>> | null | undefined;
    readonly annotations?: Readonly<Record<string, string>> | null | undefined;
  };
  readonly spec?: unknown;
}

/** The prefix of a rerun's generated name: `<source>-rerun-`, from the original name for a rerun of a rerun. */
export function rerunPrefix(source: string): string {
  return `${source.replace(GENERATED_RERUN_SUFFIX, '')}-rerun-`;
}

function kept(
  entries: Readonly<Record<string, string>> | null | undefined,
  keep: (key: string) => boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(entries ?? {}))
    if (keep(key))
      // An own property whatever the key (`out[key] =` would set the prototype for `__proto__`).
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * The Agent a rerun creates (pure): the source's whole spec, copied as is; its labels and annotations except the
 * project's own (`agents.re-cinq.com/…`) and those describing the source object; the rerun annotations. Nothing
 * else of the source's metadata (uid, resourceVersion, generation, timestamps, managedFields, finalizers,
 * ownerReferences) and no status.
 */
export function rerunBody(source: RerunSource, name?: string): Record<string, unknown> {
  const sourceName = source.metadata.name ?? '';
  const labels = kept(source.metadata.labels, (k) => !k.startsWith(PROJECT_PREFIX));
  const annotations = {
    ...kept(
      source.metadata.annotations,
      (k) => !k.startsWith(PROJECT_PREFIX) && !SOURCE_ONLY_ANNOTATIONS.has(k),
    ),
    [ANNOTATION_RERUN_OF]: sourceName,
    ...(source.metadata.uid !== undefined && source.metadata.uid !== ''
      ? { [ANNOTATION_RERUN_OF_UID]: source.metadata.uid }
      : {}),
  };
  const spec = typeof source.spec === 'object' && source.spec !== null ? structuredClone(source.spec) : {};
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Agent',
    metadata: {
      ...(name !== undefined ? { name } : { generateName: rerunPrefix(sourceName) }),
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      annotations,
    },
    spec,
  };
}

/** How a created rerun is printed. */
export type RerunOutput = 'text' | 'name' | 'yaml' | 'json';

/** What `rerun` was asked to do (parsed and checked, before any I/O). */
export interface RerunRequest {
  readonly source: string;
  readonly name: string | undefined;
  readonly output: RerunOutput;
}

export const RERUN_FLAGS = {
  ...CONNECTION_FLAGS,
  name: { type: 'string' },
  output: { type: 'string', short: 'o' },
} as const;

/** Checks the flags of `rerun` (pure): one Agent (`NAME`, `agent NAME` or `agent/NAME`), `--name`, `-o`. */
export function parseRerunRequest(
  values: Readonly<Record<string, unknown>>,
  positionals: readonly string[],
): RerunRequest {
  if (positionals.length === 0) throw new UsageError('missing the Agent to run again');
  const { kind, names } = parseTargets(positionals);
  if (kind !== undefined && kind.name !== 'agents')
    throw new UsageError(`rerun runs Agents again, not ${kind.name}`);
  const [source, ...extra] = names;
  if (source === undefined) throw new UsageError('missing the Agent to run again');
  if (extra.length > 0) throw new UsageError(`one Agent at a time; unexpected ${JSON.stringify(extra[0])}`);
  const name = typeof values.name === 'string' ? checkName(values.name, '--name') : undefined;
  const o = values.output;
  if (o !== undefined && o !== 'name' && o !== 'yaml' && o !== 'json')
    throw new UsageError(`-o must be one of name, yaml, json; got ${JSON.stringify(o)}`);
  return { source, name, output: o ?? 'text' };
}

/** What `rerun` prints for the Agent it created (pure). */
export function rerunOutput(created: KubeObject, source: string, output: RerunOutput): string {
  const name = created.metadata.name ?? '';
  if (output === 'text') return `agent/${name} created (rerun of ${source})\n`;
  if (output === 'name') return `${qualifiedName(AGENTS_KIND, name)}\n`;
  return formatObjects(AGENTS_KIND, [created], output, true);
}

export const rerunSpec: CliCommandSpec = {
  name: 'rerun',
  summary: 'run an Agent again: a new Agent with the same Station, parameters, model and spec',
  usage: [
    'Usage: {program} rerun [agent] NAME [--name NEW] [-o name|yaml|json] [flags]',
    '',
    'Creates a new Agent with the whole spec of Agent NAME (its Station, parameters, model and every other',
    'field), named NAME-rerun-xxxxx unless --name is given, and annotated agents.re-cinq.com/rerun-of: NAME',
    '(and agents.re-cinq.com/rerun-of-uid). Works for job, batch, realtime and server runs, finished or not:',
    'the source is left as it is. Its labels are copied, except the agents.re-cinq.com/ ones; so are its',
    'annotations, except those and the ones that describe the source object (kubectl last-applied-configuration,',
    'traceparent). A spec.resumeSession is copied too: the rerun continues the same earlier session again.',
    '',
    'Examples:',
    '  {program} rerun hello-x7k2p',
    '  {program} rerun agent/nightly-4kq9z --name nightly-again -n team',
    '  {program} rerun hello-x7k2p -o name | xargs {program} describe',
    '',
    'Flags:',
    '  --name NEW            the new Agent name (default: generated, NAME-rerun-xxxxx)',
    '  -o, --output FORMAT   print the new Agent as name, yaml or json instead of a sentence',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, RERUN_FLAGS);
    if (help) {
      io.stdout(`${helpText(rerunSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const req = parseRerunRequest(values, positionals);
    const conn = await deps.connect(connectionFlags(values));
    try {
      const ns = conn.namespace;
      const source = must(
        await getRaw(conn.transport, AGENTS_KIND, ns, req.source),
        what(AGENTS_KIND, req.source, ns),
      );
      const r = await createObject(
        conn.transport,
        AGENTS_KIND.resource,
        ns,
        rerunBody(source, req.name),
        validatedSchema(AGENTS_KIND),
      );
      if (!r.ok && r.error.kind === 'api' && r.error.reason === 'AlreadyExists' && req.name !== undefined)
        throw new CliError(`${what(AGENTS_KIND, req.name, ns)} already exists`);
      const created = must(
        r,
        req.name !== undefined ? what(AGENTS_KIND, req.name, ns) : `a new agent in namespace "${ns}"`,
      );
      io.stdout(rerunOutput(created, req.source, req.output));
      return EXIT.ok;
    } finally {
      conn.close();
    }
  },
};

export const rerunCommand = cliCommand(rerunSpec);
