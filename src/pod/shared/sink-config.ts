import * as v from 'valibot';
import type { Env, EnvProblem } from './env.ts';

/**
 * One configured output sink (docs/design/reference-behaviour.md#sinks-and-the-envelope): `stdout` is a no-op, `http`
 * POSTs, `file` appends.
 */
export type SinkConfig =
  | { readonly type: 'stdout' }
  | { readonly type: 'http'; readonly url: string; readonly headersSecret?: string }
  | { readonly type: 'file'; readonly path: string };

import { RESERVED_ENV_NAMES } from '../../shared/reserved-env.ts';

export { RESERVED_ENV_NAMES };

const OptionalString = v.optional(v.nullable(v.string()));
const SinkEntry = v.object({
  type: v.optional(v.nullable(v.unknown())),
  url: OptionalString,
  headers_secret: OptionalString,
  path: OptionalString,
});

/** Accepts absolute http(s) URLs only. */
export function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Parses `AGENT_SINKS` (a JSON array in CRD wire shape) and appends `AGENT_NOTIFY_URL` as an http sink. Entries
 * that cannot be used (not an object, unknown type, http without a valid http(s) url, file without a path) are
 * skipped and reported; malformed JSON gives no sinks from `AGENT_SINKS` and one problem. Never throws.
 */
export function parseSinkConfig(env: Env, problems: EnvProblem[]): SinkConfig[] {
  const sinks: SinkConfig[] = [];
  const raw = (env.AGENT_SINKS ?? '').trim();
  if (raw !== '') {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      problems.push({
        name: 'AGENT_SINKS',
        message: 'AGENT_SINKS is not valid JSON; no sinks configured from it',
      });
      json = [];
    }
    if (!Array.isArray(json)) {
      problems.push({ name: 'AGENT_SINKS', message: 'AGENT_SINKS must be a JSON array; ignoring it' });
    } else {
      json.forEach((entry, index) => {
        const sink = parseEntry(entry, index, problems);
        if (sink) sinks.push(sink);
      });
    }
  }
  const notify = (env.AGENT_NOTIFY_URL ?? '').trim();
  if (notify !== '') {
    if (isHttpUrl(notify)) sinks.push({ type: 'http', url: notify });
    else
      problems.push({
        name: 'AGENT_NOTIFY_URL',
        message: 'AGENT_NOTIFY_URL is not an http(s) URL; ignoring it',
      });
  }
  return sinks;
}

function parseEntry(entry: unknown, index: number, problems: EnvProblem[]): SinkConfig | undefined {
  const where = `AGENT_SINKS[${index}]`;
  const parsed = v.safeParse(SinkEntry, entry);
  if (!parsed.success) {
    problems.push({ name: 'AGENT_SINKS', message: `${where} is not a sink object; skipping it` });
    return undefined;
  }
  const { type, url, headers_secret: headersSecret, path } = parsed.output;
  switch (type) {
    case 'stdout':
      return { type: 'stdout' };
    case 'http': {
      const target = (url ?? '').trim();
      if (!isHttpUrl(target)) {
        problems.push({
          name: 'AGENT_SINKS',
          message: `${where} is an http sink without an http(s) url; skipping it`,
        });
        return undefined;
      }
      const secret = (headersSecret ?? '').trim();
      if (secret === '' || RESERVED_ENV_NAMES.has(secret)) return { type: 'http', url: target };
      return { type: 'http', url: target, headersSecret: secret };
    }
    case 'file': {
      const file = (path ?? '').trim();
      if (file === '') {
        problems.push({
          name: 'AGENT_SINKS',
          message: `${where} is a file sink without a path; skipping it`,
        });
        return undefined;
      }
      return { type: 'file', path: file };
    }
    default:
      problems.push({ name: 'AGENT_SINKS', message: `${where} has an unknown type; skipping it` });
      return undefined;
  }
}
