// Exit codes of the command line (`run`, `get`, `describe`, `logs`, `delete`, `completion`) and the one-line error
// every failure becomes. Pure.
import { describeKubeError, type KubeError } from '../kube/index.ts';
import { sanitize } from './style.ts';

/** Exit codes, the same for every command (README "Command line"). */
export const EXIT = {
  ok: 0,
  /** The run failed (`--wait`/`--follow` without an exit code of its own), or any other error. */
  failed: 1,
  usage: 2,
  /** Not authenticated or not allowed (HTTP 401/403). */
  notAllowed: 3,
  notFound: 4,
  /** `--timeout` passed before the run ended. */
  timedOut: 124,
  /** Interrupted (Ctrl-C) while waiting; the run goes on. */
  interrupted: 130,
} as const;

/** The exit-code table every `--help` ends with. */
export const EXIT_CODES_HELP = [
  'Exit codes: 0 ok; 1 the run failed (with --wait/--follow: the run exit code, 1 when it failed without one)',
  'or another error; 2 usage; 3 not allowed (401/403); 4 not found; 124 timed out (--timeout); 130 interrupted.',
].join('\n');

/** A failure the command reports as one line on stderr, with its exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: number;
  constructor(message: string, code: number = EXIT.failed) {
    super(message);
    this.code = code;
  }
}

/** The exit code an API error maps to: 401/403 → 3, 404 → 4, anything else → 1. */
export function exitCodeOf(e: KubeError): number {
  if (e.kind !== 'api') return EXIT.failed;
  if (e.code === 401 || e.code === 403) return EXIT.notAllowed;
  if (e.code === 404) return EXIT.notFound;
  return EXIT.failed;
}

/**
 * One line for an API error about `what` (e.g. `agent "x" in namespace "ns"`): the server's own message for a
 * refusal (it names the user and the verb), `not found` for a 404, the transport's description otherwise.
 */
export function kubeErrorLine(e: KubeError, what: string): string {
  if (e.kind === 'api') {
    const message = oneLine(e.message);
    if (e.code === 404) return `${what} not found`;
    if (e.code === 401)
      return `not authenticated (401)${message ? `: ${message}` : ''}; check the kubeconfig credentials`;
    if (e.code === 403) return `not allowed (403): ${message || `cannot access ${what}`}`;
    return `${what}: ${e.code}${e.reason ? ` ${oneLine(e.reason)}` : ''}${message ? `: ${message}` : ''}`;
  }
  if (e.kind === 'network') return `cannot reach the API server: ${oneLine(e.message)}`;
  return `${what}: ${oneLine(describeKubeError(e))}`;
}

/** The CliError of an API error about `what`. */
export function kubeFailure(e: KubeError, what: string): CliError {
  return new CliError(kubeErrorLine(e, what), exitCodeOf(e));
}

/**
 * `text` on one line: line breaks and runs of blanks become single spaces, control characters are made visible
 * ({@link sanitize}: server and webhook messages are cluster text).
 */
export function oneLine(text: string): string {
  return sanitize(text.replace(/\s+/g, ' ').trim());
}
