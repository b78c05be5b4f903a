import * as v from 'valibot';

/** The process environment as the pod code sees it (read-only, values may be absent). */
export type Env = Readonly<Record<string, string | undefined>>;

/** One environment value that was present but unusable; the caller reports it and uses the default. */
export interface EnvProblem {
  readonly name: string;
  readonly message: string;
}

const IntegerText = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^[+-]?\d{1,16}$/, 'must be an integer'),
  v.transform((text) => Number(text)),
  v.safeInteger('must be a safe integer'),
);

/** Parses integer text with valibot; undefined for anything that is not a (safe) decimal integer. */
export function parseInteger(text: string): number | undefined {
  const r = v.safeParse(IntegerText, text);
  return r.success ? r.output : undefined;
}

export interface IntRule {
  /** Value used when the variable is unset, empty or unusable. */
  readonly fallback: number;
  /** Smallest accepted value; smaller values are unusable unless `clampBelow` is set. */
  readonly min: number;
  /** When set, values below `min` are clamped to `min` instead of being reported as unusable. */
  readonly clampBelow?: boolean;
}

/**
 * Reads an integer from `env[name]`. Unset or blank → `rule.fallback` with no problem; a value that is not an
 * integer, or is below `rule.min` (unless clamped), → `rule.fallback` plus one entry appended to `problems`.
 * Never throws.
 */
export function readInt(env: Env, name: string, rule: IntRule, problems: EnvProblem[]): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return rule.fallback;
  const n = parseInteger(raw);
  if (n === undefined) {
    problems.push({
      name,
      message: `${name} must be an integer, got ${JSON.stringify(raw)}; using ${rule.fallback}`,
    });
    return rule.fallback;
  }
  if (n < rule.min) {
    if (rule.clampBelow === true) return rule.min;
    problems.push({
      name,
      message: `${name} must be at least ${rule.min}, got ${n}; using ${rule.fallback}`,
    });
    return rule.fallback;
  }
  return n;
}

/**
 * Like `readInt` but the documented default is "none": unset/blank → undefined, unusable or not positive →
 * undefined plus a problem.
 */
export function readOptionalPositiveInt(env: Env, name: string, problems: EnvProblem[]): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = parseInteger(raw);
  if (n === undefined || n <= 0) {
    problems.push({
      name,
      message: `${name} must be a positive integer, got ${JSON.stringify(raw)}; ignoring it`,
    });
    return undefined;
  }
  return n;
}

/** `env[name]` trimmed, or '' when unset. */
export function readString(env: Env, name: string): string {
  return (env[name] ?? '').trim();
}
