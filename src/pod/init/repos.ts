import { err, ok, type Result } from '../../shared/result.ts';
import { isStrictlyBelow, normalizeAbsolute, type RepoSpec } from './config.ts';
import type { Step } from './steps.ts';

/**
 * URL schemes a repository may use. `file` serves local origins (tests, pre-seeded volumes); `http` is allowed
 * only for loopback hosts (a token sent in clear never leaves the machine).
 */
export const ALLOWED_REPO_SCHEMES: readonly string[] = ['https', 'ssh', 'file', 'http'];

/** True for `localhost`, `127.0.0.0/8` and `[::1]`. */
export function isLoopbackHost(hostname: string): boolean {
  return (
    hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

const UNSAFE_CHARS = /[\s\u0000-\u001f\u007f]/;
const SHORTHAND = /^[A-Za-z0-9_][A-Za-z0-9_.-]*\/[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const SCP_LIKE = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)@([A-Za-z0-9][A-Za-z0-9.-]*):([^:].*)$/;
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SECRET_KEY_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Turns a repository URL from the recipe into the URL handed to git, or refuses it.
 * Guarantees for an accepted URL: it does not start with `-`, holds no whitespace or control characters, uses
 * one of ALLOWED_REPO_SCHEMES (or scp-like `user@host:path`, which is ssh; http only to loopback), and carries no password
 * (https/file lose all userinfo; ssh keeps only its login). `owner/name` becomes `https://github.com/owner/name.git`.
 * Refused: option-shaped strings, git's `transport::address` form, local paths, non-loopback `http`, `git` and
 * other schemes.
 */
export function normalizeRepoUrl(raw: string): Result<string, string> {
  if (raw === '') return err('empty URL');
  if (raw.startsWith('-')) return err('option-shaped URL');
  if (UNSAFE_CHARS.test(raw)) return err('URL contains whitespace or control characters');
  if (SHORTHAND.test(raw)) {
    return ok(`https://github.com/${raw.endsWith('.git') ? raw : `${raw}.git`}`);
  }
  const schemeMatch = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(raw);
  if (!schemeMatch) {
    if (raw.includes('::')) return err('git transport::address URLs are not allowed');
    const scp = SCP_LIKE.exec(raw);
    if (scp && !scp[3]!.startsWith('-')) return ok(raw);
    return err('not a URL (expected https://, ssh://, file://, user@host:path or owner/name)');
  }
  const scheme = schemeMatch[1]!.toLowerCase();
  if (!ALLOWED_REPO_SCHEMES.includes(scheme)) return err(`URL scheme "${scheme}" is not allowed`);
  if (scheme !== 'file' && raw.slice(schemeMatch[0].length).startsWith('/')) return err('URL has no host');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return err('unparseable URL');
  }
  if (scheme === 'file') {
    if (url.hostname !== '' && url.hostname !== 'localhost') return err('file URL must name a local path');
    if (url.pathname === '/' || url.pathname === '') return err('file URL must name a repository');
    return ok(`file://${url.pathname}`);
  }
  if (url.hostname === '') return err('URL has no host');
  if (scheme === 'http' && !isLoopbackHost(url.hostname))
    return err('plain http is allowed for loopback hosts only');
  if (scheme === 'ssh') {
    url.password = '';
  } else {
    url.username = '';
    url.password = '';
  }
  return ok(url.href);
}

/**
 * Replaces any `user:password@` in URLs inside `text` with `<redacted>@` and any query string with `?…` (tokens
 * travel there too), for logs and error messages.
 */
export function redactUrlCredentials(text: string): string {
  return text
    .replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@\s]*@/g, '$1<redacted>@')
    .replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'?]*)\?[^\s"']*/g, '$1?…');
}

/** The shell-safe name under which a token from a non-shell env name (e.g. `gh-token`) reaches the clone. */
export const REPO_TOKEN_ALIAS = 'AGENT_REPO_TOKEN';

/** True iff `name` can be expanded by every POSIX shell (a C identifier). */
export function isShellName(name: string): boolean {
  return SHELL_NAME.test(name);
}

/**
 * A git credential helper that reads the token from the env var `tokenEnv` (a shell identifier) when git asks for
 * it. The helper text names the variable, never holds its value; the shell that git starts resolves it.
 * Returns undefined for a name that is not a shell identifier.
 */
export function credentialHelper(tokenEnv: string): string | undefined {
  if (!isShellName(tokenEnv)) return undefined;
  return `!f() { test "$1" = get || return 0; echo username=x-access-token; printf 'password=%s\\n' "$${tokenEnv}"; }; f`;
}

/** Where a repository is cloned: `path` if absolute, else `workspace/path`, else `workspace/name`; normalized. */
export function repoDestination(repo: RepoSpec, workspace: string): string | undefined {
  const path = repo.path ?? '';
  const raw = path.startsWith('/') ? path : `${workspace}/${path !== '' ? path : repo.name}`;
  return normalizeAbsolute(raw);
}

/** What the planner decided for one repository. */
export type RepoDecision =
  | {
      readonly kind: 'clone';
      readonly name: string;
      readonly url: string;
      readonly dest: string;
      readonly steps: readonly Step[];
      /** Something the run should know (a token that cannot be persisted or used). */
      readonly warning?: string;
    }
  /** Destination escapes the workspace: the repo is skipped (logged), the run goes on (reference behaviour). */
  | { readonly kind: 'skip'; readonly name: string; readonly reason: string }
  /** Unsafe URL or ref: the init fails before running any git command. */
  | { readonly kind: 'refuse'; readonly name: string; readonly reason: string };

/**
 * Plans the clone of one repository (docs/design/reference-behaviour.md#repositories, hardened):
 * `rm -rf dest` (confined), `git [-c credential.helper= -c credential.helper=<fn>] clone -- <url> <dest>`,
 * with a token `git -C dest config credential.helper <fn>` (so the agent can push, lesson #204),
 * and with a ref `git -C dest checkout <ref> --`.
 * Guarantees: untrusted positionals follow `--` or are validated not to start with `-`; the destination is
 * strictly below the workspace (lexically here; the executor re-checks symlinks); no secret in any argv.
 */
export function planRepo(repo: RepoSpec, workspace: string): RepoDecision {
  const name = repo.name;
  const url = normalizeRepoUrl(repo.url);
  if (!url.ok)
    return { kind: 'refuse', name, reason: `repository ${JSON.stringify(repo.url)}: ${url.error}` };
  const ref = repo.ref ?? '';
  if (ref !== '') {
    if (ref.startsWith('-'))
      return { kind: 'refuse', name, reason: `ref ${JSON.stringify(ref)} is option-shaped` };
    if (UNSAFE_CHARS.test(ref)) {
      return {
        kind: 'refuse',
        name,
        reason: `ref ${JSON.stringify(ref)} contains whitespace or control characters`,
      };
    }
  }
  const dest = repoDestination(repo, workspace);
  if (dest === undefined || !isStrictlyBelow(dest, workspace)) {
    return {
      kind: 'skip',
      name,
      reason: `destination ${JSON.stringify(repo.path ?? name)} is not inside ${workspace}`,
    };
  }
  const tokenEnv = repo.token_secret ?? '';
  // A shell name is referenced directly, in the clone and persisted in the clone's config. Any other Secret-key
  // name is invisible to sh (dash drops such variables), so the executor resolves it in-process and hands it to
  // the clone as REPO_TOKEN_ALIAS; the agent container lacks that alias, so nothing is persisted then.
  const aliased = tokenEnv !== '' && !isShellName(tokenEnv) && SECRET_KEY_NAME.test(tokenEnv);
  const helper = credentialHelper(aliased ? REPO_TOKEN_ALIAS : tokenEnv);
  const auth = helper === undefined ? [] : ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`];
  const clone: Step = aliased
    ? {
        kind: 'exec',
        argv: ['git', ...auth, 'clone', '--', url.value, dest],
        env: GIT_ENV,
        envFrom: { [REPO_TOKEN_ALIAS]: tokenEnv },
      }
    : { kind: 'exec', argv: ['git', ...auth, 'clone', '--', url.value, dest], env: GIT_ENV };
  const steps: Step[] = [{ kind: 'remove', path: dest, root: workspace }, clone];
  if (helper !== undefined && !aliased) {
    steps.push({
      kind: 'exec',
      argv: ['git', '-C', dest, 'config', 'credential.helper', helper],
      env: GIT_ENV,
    });
  }
  if (ref !== '')
    steps.push({ kind: 'exec', argv: ['git', '-C', dest, 'checkout', ref, '--'], env: GIT_ENV });
  let warning: string | undefined;
  if (aliased)
    warning = `token env ${JSON.stringify(tokenEnv)} is not a shell name; the clone's config keeps no credential helper`;
  else if (tokenEnv !== '' && helper === undefined)
    warning = `token env ${JSON.stringify(tokenEnv)} is unusable; cloning without credentials`;
  if (warning !== undefined) return { kind: 'clone', name, url: url.value, dest, steps, warning };
  return { kind: 'clone', name, url: url.value, dest, steps };
}

/** Env for every git step: never prompt (no terminal in a pod; a prompt would hang the init). */
export const GIT_ENV: Readonly<Record<string, string>> = { GIT_TERMINAL_PROMPT: '0' };
