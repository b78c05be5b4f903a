import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import type { KubeError } from './errors.ts';

/** Parses a JSON body and validates it with `schema`; any mismatch is a `decode` error naming the first issue. */
export function decodeJson<T>(
  text: string,
  schema: v.GenericSchema<unknown, T>,
  what = 'response',
): Result<T, KubeError> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return err({
      kind: 'decode',
      message: `${what} is not JSON: ${e instanceof Error ? e.message : String(e)}`,
    });
  }
  return validate(parsed, schema, what);
}

/** Validates an already-parsed value with `schema`; a mismatch is a `decode` error naming the first issue. */
export function validate<T>(
  value: unknown,
  schema: v.GenericSchema<unknown, T>,
  what = 'object',
): Result<T, KubeError> {
  const r = v.safeParse(schema, value);
  if (r.success) return ok(r.output);
  const issue = r.issues[0];
  const path = issue?.path?.map((p) => String(p.key)).join('.') ?? '';
  return err({
    kind: 'decode',
    message: `${what} is invalid${path ? ` at ${path}` : ''}: ${issue?.message ?? 'unknown issue'}`,
  });
}
