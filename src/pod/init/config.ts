import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';

/**
 * Where the run pod's shared volumes live when nothing overrides them
 * (docs/design/reference-behaviour.md#pod-layout).
 */
export const DEFAULT_HOME_DIR = '/agent';
/** The shared workspace volume's mount point (docs/design/reference-behaviour.md#pod-layout). */
export const DEFAULT_WORKSPACE_DIR = '/workspace';

/** One entry of `AGENT_REPOS` in CRD wire shape (`resources.repos[]`); unknown keys are ignored. */
export const RepoSpecSchema = v.looseObject({
  name: v.string(),
  url: v.string(),
  ref: v.optional(v.nullable(v.string())),
  path: v.optional(v.nullable(v.string())),
  token_secret: v.optional(v.nullable(v.string())),
});
export type RepoSpec = v.InferOutput<typeof RepoSpecSchema>;

const ReposSchema = v.array(RepoSpecSchema);
const SkillsSchema = v.array(v.string());

/**
 * Conversation restore settings from `AGENT_CONVERSATION_*`
 * (docs/design/reference-behaviour.md#conversation-continuity); empty strings mean unset.
 */
export interface ConversationConfig {
  readonly source: string;
  readonly id: string;
  readonly pin: string;
  /** The NAME of the env var holding the header line, never its value. */
  readonly authEnv: string;
}

/** Everything the init reads from its environment, validated. Secrets are not part of it. */
export interface InitConfig {
  /** Absolute, normalized, never `/`: HOME of the run, root of `bin/` and `.claude/`. */
  readonly home: string;
  /** Absolute, normalized, never `/`: the workspace volume. */
  readonly workspace: string;
  readonly model: string;
  readonly repos: readonly RepoSpec[];
  readonly skills: readonly string[];
  readonly skillsSource: string;
  readonly conversation: ConversationConfig;
  /** `AGENT_CLI_VERSION`: the vendor CLI version the npm install uses instead of the pinned one; undefined = pinned. */
  readonly cliVersion: string | undefined;
}

/** An npm version or dist-tag (`2.1.332`, `1.0.0-beta.1`, `latest`): never an option, a path or a URL. */
const CliVersionSchema = v.pipe(
  v.string(),
  v.regex(/^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/, 'AGENT_CLI_VERSION must be an npm version or dist-tag'),
);

/** Overrides from command-line flags; they win over the environment. */
export interface InitOverrides {
  readonly home?: string | undefined;
  readonly workspace?: string | undefined;
}

/**
 * Normalizes an absolute POSIX path lexically (`.`/`..`/duplicate slashes), without touching the filesystem.
 * Returns undefined for a relative or empty path.
 */
export function normalizeAbsolute(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

/** True iff `child` (normalized, absolute) lies strictly below `root` (normalized, absolute, not `/`). */
export function isStrictlyBelow(child: string, root: string): boolean {
  if (root === '/' || child === root) return false;
  return child.startsWith(`${root}/`);
}

function rootDir(label: string, raw: string): Result<string, string> {
  const normalized = normalizeAbsolute(raw);
  if (normalized === undefined) return err(`${label} must be an absolute path, got ${JSON.stringify(raw)}`);
  if (normalized === '/') return err(`${label} must not be the filesystem root`);
  return ok(normalized);
}

function parseJson<T>(
  label: string,
  raw: string | undefined,
  schema: v.GenericSchema<unknown, T>,
  empty: T,
): Result<T, string> {
  if (raw === undefined || raw.trim() === '') return ok(empty);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return err(`${label} is not valid JSON`);
  }
  if (value === null) return ok(empty);
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = issue ? v.getDotPath(issue) : null;
    return err(`${label} is malformed${where ? ` at ${where}` : ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.output);
}

/**
 * Reads the init configuration from the run env (docs/design/reference-behaviour.md#run-environment): `HOME`,
 * `WORKSPACE_DIR`, `AGENT_MODEL`, `AGENT_REPOS`, `AGENT_SKILLS`, `AGENT_SKILLS_SOURCE`, `AGENT_CONVERSATION_*`,
 * `AGENT_CLI_VERSION`.
 * Guarantees: home and workspace are absolute, normalized and not `/` (init later chowns them recursively);
 * missing list variables mean empty lists; a malformed JSON list is an error, never silently ignored.
 */
export function parseInitConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: InitOverrides = {},
): Result<InitConfig, string> {
  const home = rootDir('HOME', overrides.home ?? nonEmpty(env.HOME) ?? DEFAULT_HOME_DIR);
  if (!home.ok) return home;
  const workspace = rootDir(
    'WORKSPACE_DIR',
    overrides.workspace ?? nonEmpty(env.WORKSPACE_DIR) ?? DEFAULT_WORKSPACE_DIR,
  );
  if (!workspace.ok) return workspace;
  const repos = parseJson('AGENT_REPOS', env.AGENT_REPOS, ReposSchema, []);
  if (!repos.ok) return repos;
  const skills = parseJson('AGENT_SKILLS', env.AGENT_SKILLS, SkillsSchema, []);
  if (!skills.ok) return skills;
  const rawVersion = nonEmpty(env.AGENT_CLI_VERSION?.trim());
  const cliVersion = rawVersion === undefined ? undefined : v.safeParse(CliVersionSchema, rawVersion);
  if (cliVersion !== undefined && !cliVersion.success)
    return err(cliVersion.issues[0]?.message ?? 'AGENT_CLI_VERSION is malformed');
  return ok({
    home: home.value,
    workspace: workspace.value,
    model: env.AGENT_MODEL ?? '',
    repos: repos.value,
    skills: skills.value,
    skillsSource: (env.AGENT_SKILLS_SOURCE ?? '').trim(),
    conversation: {
      source: (env.AGENT_CONVERSATION_SOURCE ?? '').trim(),
      id: (env.AGENT_CONVERSATION_ID ?? '').trim(),
      pin: (env.AGENT_CONVERSATION_PIN ?? '').trim(),
      authEnv: (env.AGENT_CONVERSATION_AUTH ?? '').trim(),
    },
    cliVersion: cliVersion?.output,
  });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
