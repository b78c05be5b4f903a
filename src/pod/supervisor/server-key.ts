// The API key of a server-mode run (server.ts): read from the file `AGENT_SERVER_API_KEY_FILE` names (the pod's
// mounted Secret; the value is never in the environment), again at most once a second while serving.

import { readFile } from 'node:fs/promises';

/** The shortest API key accepted. */
export const MIN_API_KEY_LENGTH = 16;
/** How long a key read from its file is used before the file is read again (when the key is next needed). */
export const API_KEY_RELOAD_MS = 1000;

/** The API key as its file was last read: usable, or why not (never the content). */
export type ApiKeyState =
  | { readonly kind: 'usable'; readonly key: string }
  | { readonly kind: 'unusable'; readonly why: string };

/** What the key file's content says: the key between the surrounding whitespace, if it is long enough. */
export function apiKeyOfText(text: string): ApiKeyState {
  // A Secret made with `--from-file` usually ends in a newline, which no `Authorization: Bearer` header can carry.
  const key = text.trim();
  if (key === '') return { kind: 'unusable', why: 'the API key file is empty' };
  if (key.length < MIN_API_KEY_LENGTH)
    return {
      kind: 'unusable',
      why: `the API key in its file is shorter than ${MIN_API_KEY_LENGTH} characters`,
    };
  return { kind: 'usable', key };
}

/** What an ApiKeyFile reads with and reports to; every field has a default (the real ones). */
export interface ApiKeyFileOptions {
  /**
   * A monotonic clock in ms (default `performance.now()`): the age of the last read is measured with it, so a wall
   * clock stepping backwards cannot stop the re-reads (and keep a revoked key in use).
   */
  readonly now?: () => number;
  /** Reads the file's text (default `fs.promises.readFile(path, 'utf8')`); rejects with the errno error. */
  readonly readFile?: (path: string) => Promise<string>;
  /** Hears of each new state (the first read included; never the key itself), with the one before. */
  readonly onChange?: (state: ApiKeyState, previous: ApiKeyState | undefined) => void;
}

/**
 * The API key file, read when the key is needed and the last read is at least API_KEY_RELOAD_MS old (one read at a
 * time; callers meanwhile share it), so a rewritten file (the kubelet swapping in a refreshed Secret) takes effect
 * within a second and an unchanging one costs one small read a second at most. The age is measured on a monotonic
 * clock; should the clock given ever run backwards, the key is read again at once. `onChange` hears of each new
 * state (the first read included; never the key itself).
 */
export class ApiKeyFile {
  readonly #path: string;
  readonly #now: () => number;
  readonly #readFile: (path: string) => Promise<string>;
  readonly #onChange: (state: ApiKeyState, previous: ApiKeyState | undefined) => void;
  #state: ApiKeyState | undefined;
  #readAt = 0;
  #reading: Promise<ApiKeyState> | undefined;

  constructor(path: string, options: ApiKeyFileOptions = {}) {
    this.#path = path;
    this.#now = options.now ?? (() => performance.now());
    this.#readFile = options.readFile ?? ((file) => readFile(file, 'utf8'));
    this.#onChange = options.onChange ?? (() => undefined);
  }

  /** The key as of at most API_KEY_RELOAD_MS ago. */
  current(): Promise<ApiKeyState> {
    const state = this.#state;
    const age = this.#now() - this.#readAt;
    if (state !== undefined && age >= 0 && age < API_KEY_RELOAD_MS) return Promise.resolve(state);
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<ApiKeyState> {
    let next: ApiKeyState;
    try {
      next = apiKeyOfText(await this.#readFile(this.#path));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      next = {
        kind: 'unusable',
        why:
          code === 'ENOENT'
            ? 'the API key file is missing'
            : `the API key file cannot be read (${code ?? describe(error)})`,
      };
    }
    this.#readAt = this.#now();
    const previous = this.#state;
    this.#state = next;
    if (!sameKeyState(previous, next)) this.#onChange(next, previous);
    return next;
  }
}

function sameKeyState(a: ApiKeyState | undefined, b: ApiKeyState): boolean {
  if (a === undefined || a.kind !== b.kind) return false;
  return a.kind === 'usable'
    ? b.kind === 'usable' && a.key === b.key
    : b.kind === 'unusable' && a.why === b.why;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
