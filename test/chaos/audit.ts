// kube-apiserver audit log (audit.k8s.io/v1 Event, one JSON object a line, `--audit-log-format=json`) as records
// the chaos invariants read. Only stage ResponseComplete is kept: one record per finished request.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import * as v from 'valibot';

export interface AuditRecord {
  readonly auditID: string;
  /** create | update | patch | delete (whatever the policy logs). */
  readonly verb: string;
  /** user.username */
  readonly user: string;
  /** '' when absent */
  readonly userAgent: string;
  /** objectRef.apiGroup, '' for core */
  readonly apiGroup: string;
  /** objectRef.resource, e.g. 'agents', 'jobs', 'leases' */
  readonly resource: string;
  /** e.g. 'status' */
  readonly subresource?: string;
  readonly namespace?: string;
  /** objectRef.name (absent on a create: then responseObject.metadata.name) */
  readonly name?: string;
  /** responseStatus.code */
  readonly code: number;
  /** requestReceivedTimestamp, epoch ms (fractional: audit times have microseconds) */
  readonly received: number;
  /** stageTimestamp, epoch ms */
  readonly completed: number;
  readonly requestObject?: unknown;
  readonly responseObject?: unknown;
}

const ObjectRefSchema = v.looseObject({
  resource: v.optional(v.string()),
  namespace: v.optional(v.string()),
  name: v.optional(v.string()),
  apiGroup: v.optional(v.string()),
  apiVersion: v.optional(v.string()),
  subresource: v.optional(v.string()),
});

/** The fields of an audit.k8s.io/v1 Event the records need (the rest, e.g. sourceIPs, annotations, is ignored). */
const AuditEventSchema = v.looseObject({
  kind: v.literal('Event'),
  apiVersion: v.optional(v.string()),
  level: v.optional(v.string()),
  auditID: v.string(),
  stage: v.string(),
  requestURI: v.optional(v.string()),
  verb: v.string(),
  user: v.looseObject({ username: v.optional(v.string(), ''), groups: v.optional(v.array(v.string())) }),
  userAgent: v.optional(v.string(), ''),
  /** Absent on non-resource requests (e.g. /healthz). */
  objectRef: v.optional(ObjectRefSchema),
  responseStatus: v.looseObject({ code: v.number() }),
  requestObject: v.optional(v.unknown()),
  responseObject: v.optional(v.unknown()),
  requestReceivedTimestamp: v.string(),
  stageTimestamp: v.string(),
});

const ResponseNameSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });

const TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 time with any fraction (audit times are metav1.MicroTime, `2026-12-02T05:10:11.123456Z`) as epoch
 * milliseconds with the sub-millisecond part kept; NaN when it is not one.
 */
function parseAuditTime(text: string): number {
  const m = TIME.exec(text);
  if (!m) return Number.NaN;
  const whole = Date.parse(`${m[1]}${m[3]}`);
  return whole + (m[2] === undefined ? 0 : Number(`0.${m[2]}`) * 1000);
}

/** One audit line as a record: undefined for another stage; throws when it is not an audit event. */
function toRecord(line: string): AuditRecord | undefined {
  const e = v.parse(AuditEventSchema, JSON.parse(line));
  if (e.stage !== 'ResponseComplete') return undefined;
  const received = parseAuditTime(e.requestReceivedTimestamp);
  const completed = parseAuditTime(e.stageTimestamp);
  if (Number.isNaN(received) || Number.isNaN(completed)) throw new Error('bad timestamp');
  const ref = e.objectRef ?? {};
  const created = v.safeParse(ResponseNameSchema, e.responseObject);
  const name = ref.name ?? (created.success ? created.output.metadata.name : undefined);
  return {
    auditID: e.auditID,
    verb: e.verb,
    user: e.user.username,
    userAgent: e.userAgent,
    apiGroup: ref.apiGroup ?? '',
    resource: ref.resource ?? '',
    ...(ref.subresource !== undefined && ref.subresource !== '' ? { subresource: ref.subresource } : {}),
    ...(ref.namespace !== undefined && ref.namespace !== '' ? { namespace: ref.namespace } : {}),
    ...(name !== undefined && name !== '' ? { name } : {}),
    code: e.responseStatus.code,
    received,
    completed,
    ...(e.requestObject !== undefined ? { requestObject: e.requestObject } : {}),
    ...(e.responseObject !== undefined ? { responseObject: e.responseObject } : {}),
  };
}

/** Parses audit JSON lines (stage ResponseComplete only; other stages and unparsable lines are counted in skipped). */
export function parseAuditLog(text: string): { records: AuditRecord[]; skipped: number } {
  const records: AuditRecord[] = [];
  let skipped = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    try {
      const record = toRecord(line);
      if (record) records.push(record);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { records, skipped };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The rotated backups of audit log `path`, oldest first: kube-apiserver (lumberjack) renames a full `audit.log` to
 * `audit-<UTC 2006-01-02T15-04-05.000>.log` in the same folder (`.log.gz` with --audit-log-compress).
 */
function auditBackups(path: string): string[] {
  const dir = dirname(path);
  const ext = extname(path);
  const prefix = basename(path, ext);
  const pattern = new RegExp(
    `^${escapeRegExp(prefix)}-\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}\\.\\d{3}${escapeRegExp(ext)}(\\.gz)?$`,
  );
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  // The timestamp sorts as text.
  return names
    .filter((n) => pattern.test(n))
    .sort()
    .map((n) => join(dir, n));
}

function readText(file: string): string {
  const bytes = readFileSync(file);
  return (file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
}

/**
 * The lines of `text` whose stageTimestamp is at or after `sinceMs` (and those it cannot tell), found without
 * parsing the JSON: the shared testbed's log holds every e2e tier's writes, and only the last minutes matter.
 */
function recentLines(text: string, sinceMs: number): string {
  if (!Number.isFinite(sinceMs)) return text;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /"stageTimestamp":"([^"]+)"/.exec(line);
    const t = m?.[1] === undefined ? Number.NaN : Date.parse(m[1]);
    // Microseconds are cut by Date.parse: a millisecond of slack keeps a record at the boundary.
    if (Number.isNaN(t) || t >= sinceMs - 1) out.push(line);
  }
  return out.join('\n');
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * Reads `path` and its rotated backups (kube-apiserver names them `audit-<timestamp>.log` in the same folder), keeps
 * records with completed >= sinceMs, sorted by received. Throws when neither the log nor a backup exists.
 */
export function readAuditLog(path: string, sinceMs = Number.NEGATIVE_INFINITY): AuditRecord[] {
  const files = [...auditBackups(path), ...(existsSync(path) ? [path] : [])];
  if (files.length === 0)
    throw new Error(`no audit log at ${path} (is the API server started with --audit-log-path?)`);
  const byId = new Map<string, AuditRecord>();
  for (const file of files) {
    // A rotated file last written before `sinceMs` holds nothing newer: not even read.
    if (file !== path && Number.isFinite(sinceMs) && mtimeOf(file) < sinceMs) continue;
    let text: string;
    try {
      text = readText(file);
    } catch (error) {
      // A backup removed by rotation (maxbackup) between listing and reading: its records are gone anyway.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && file !== path) continue;
      throw error;
    }
    for (const r of parseAuditLog(recentLines(text, sinceMs)).records)
      if (r.completed >= sinceMs) byId.set(r.auditID, r);
  }
  return [...byId.values()].sort((a, b) => a.received - b.received || a.completed - b.completed);
}
