import * as v from 'valibot';
import { err, ok, type Result } from '../shared/result.ts';

/**
 * Hints the CRD generator reads from `v.metadata({ openapi: … })` actions in a pipe.
 * They describe OpenAPI facts valibot has no action for; they never change what a parse accepts.
 */
export interface OpenApiHints {
  /** OpenAPI `type` for schemas valibot cannot type itself (`v.custom`). */
  readonly type?: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  /** OpenAPI `format`, e.g. `date-time`. */
  readonly format?: string;
  /** OpenAPI `enum` for a string whose parse is lenient (see `lenientEnum`). */
  readonly enum?: readonly string[];
  /** Emit `x-kubernetes-preserve-unknown-fields: true` (free-form object). */
  readonly preserveUnknownFields?: boolean;
  /** Emit `x-kubernetes-list-type`. */
  readonly listType?: 'atomic' | 'set' | 'map';
  /** Emit `x-kubernetes-list-map-keys` (with `listType: 'map'`). */
  readonly listMapKeys?: readonly string[];
  /** The default of the wrapped `v.optional` applies on parse only; the CRD declares no `default`. */
  readonly omitDefault?: boolean;
}

/** Key of the `v.metadata` object that carries `OpenApiHints`. */
export const OPENAPI_HINTS_KEY = 'openapi';

/** A pipe action carrying OpenAPI hints for the CRD generator; a no-op on parse. */
export function openapi<TInput>(hints: OpenApiHints) {
  return v.metadata<TInput, { openapi: OpenApiHints }>({ [OPENAPI_HINTS_KEY]: hints });
}

/**
 * A string enum parsed leniently, as the reference parser does: a known value is kept, an unknown string becomes
 * `fallback` (default: the first option). A non-string is still a type error. The CRD declares `enum: options`,
 * so the API server rejects unknown values on write.
 */
export function lenientEnum<const T extends readonly [string, ...string[]]>(
  options: T,
  fallback?: T[number],
) {
  const known: readonly string[] = options;
  const fb: T[number] = fallback ?? options[0];
  return v.pipe(
    v.string(),
    openapi<string>({ enum: options }),
    v.transform((s: string): T[number] => (known.includes(s) ? (s as T[number]) : fb)),
  );
}

/**
 * An optional field whose default is applied on parse but not declared in the CRD (so the API server does not
 * store it). Use `v.optional(schema, value)` when the CRD should declare the default too.
 */
export function parseDefault<
  const TSchema extends v.GenericSchema,
  const TDefault extends v.Default<TSchema, undefined>,
>(schema: TSchema, value: TDefault) {
  return v.pipe(v.optional(schema, value), openapi({ omitDefault: true }));
}

function isJsonObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A free-form JSON object kept as is (`x-kubernetes-preserve-unknown-fields: true` in the CRD). */
export function freeForm(description: string) {
  return v.pipe(
    v.custom<Record<string, unknown>>(
      isJsonObject,
      (issue) => `Invalid type: Expected Object but received ${issue.received}`,
    ),
    openapi<Record<string, unknown>>({ type: 'object', preserveUnknownFields: true }),
    v.description(description),
  );
}

/** Deepest nesting a JSON field read from the API server may have (the controller writes at most 64). */
const MAX_JSON_DEPTH = 128;

/** True for a JSON value no deeper than MAX_JSON_DEPTH; iterative, so no input can exhaust the stack. */
function isJsonValue(u: unknown): boolean {
  const stack: [unknown, number][] = [[u, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (typeof v !== 'object' || depth > MAX_JSON_DEPTH) return false;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      stack.push([child, depth + 1]);
    }
  }
  return true;
}

/** Any JSON value (a string, a number, an object…): no `type` in the CRD, `x-kubernetes-preserve-unknown-fields`. */
export function anyJson(description: string) {
  return v.pipe(
    v.custom<unknown>(isJsonValue, 'Invalid type: Expected a JSON value'),
    openapi<unknown>({ preserveUnknownFields: true }),
    v.description(description),
  );
}

/** An RFC 3339 timestamp string (`format: date-time` in the CRD); not re-validated on parse. */
export function dateTime(description: string) {
  return v.pipe(v.string(), openapi<string>({ format: 'date-time' }), v.description(description));
}

/** An integer (`type: integer` in the CRD). */
export function int(description: string) {
  return v.pipe(v.number(), v.integer(), v.description(description));
}

/** A plain string with a description. */
export function str(description: string) {
  return v.pipe(v.string(), v.description(description));
}

/** DNS-1123 subdomain pattern the reference puts on object references. */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A reference to an object in the same namespace: DNS-1123 subdomain, at most 253 characters. */
export function objectRef(description: string) {
  return v.pipe(v.string(), v.regex(DNS1123_SUBDOMAIN), v.maxLength(253), v.description(description));
}

/** Longest issue message kept by `formatIssues` (valibot quotes received strings in full). */
const MAX_MESSAGE_CHARS = 200;

/**
 * Formats valibot issues as one line: `path: message; path: message` (at most `max` issues, each message cut
 * to 200 characters so a huge received value cannot flood a log line or a status field).
 */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[], max = 5): string {
  const parts = issues.slice(0, max).map((issue) => {
    const path = v.getDotPath(issue);
    const message =
      issue.message.length > MAX_MESSAGE_CHARS
        ? `${issue.message.slice(0, MAX_MESSAGE_CHARS)}…`
        : issue.message;
    return path ? `${path}: ${message}` : message;
  });
  if (issues.length > max) parts.push(`(${issues.length - max} more)`);
  return parts.join('; ');
}

/**
 * Parses `input` with `schema` into a `Result`. The error is `invalid <what>: <issues>` — one line, meant for
 * logs and `status.failureReason`; it never contains more of the input than valibot's issue messages quote.
 */
export function parseWith<const TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
  what: string,
): Result<v.InferOutput<TSchema>, string> {
  const res = v.safeParse(schema, input, { abortPipeEarly: true });
  if (res.success) return ok(res.output);
  return err(`invalid ${what}: ${formatIssues(res.issues)}`);
}
