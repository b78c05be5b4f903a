// The session store's e2e probe (test/e2e/session-store.test.ts): bundled with esbuild and run on the pass's
// runtime (Node or Deno) against the test bed's versitygw. It prints one JSON line per step; the test asserts.
// Environment: PROBE_ENDPOINT, PROBE_BUCKET, PROBE_REGION, PROBE_ACCESS_KEY_ID, PROBE_SECRET_ACCESS_KEY, PROBE_PREFIX.
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { S3SessionStore, type SessionRef } from '../../src/sessions/store.ts';
import { S3Client } from '../../src/store/s3/index.ts';

const out = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
};
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

const config = {
  endpoint: env('PROBE_ENDPOINT'),
  bucket: env('PROBE_BUCKET'),
  region: env('PROBE_REGION'),
  credentials: { accessKeyId: env('PROBE_ACCESS_KEY_ID'), secretAccessKey: env('PROBE_SECRET_ACCESS_KEY') },
};
const prefix = env('PROBE_PREFIX');
const client = new S3Client(config);
// Two keys a page, so every listing below takes several pages.
const store = new S3SessionStore({ client, prefix, pageSize: 2 });
const a: SessionRef = { namespace: 'team-a', uid: '11111111-aaaa-4bbb-8ccc-000000000001' };
const b: SessionRef = { namespace: 'team-a', uid: '11111111-aaaa-4bbb-8ccc-000000000002' };
const other: SessionRef = { namespace: 'team-b', uid: '11111111-aaaa-4bbb-8ccc-000000000001' };

out({ step: 'runtime', runtime: 'Deno' in globalThis ? 'deno' : 'node' });

// A real-sized archive: 8 MiB of incompressible content gzipped (a session with a workspace), and turns of a few KB.
const big = gzipSync(randomBytes(8 * 1024 * 1024));
const saved = await store.saveTurn(a, 1, big, { sessionId: 'claude-session-1', vendor: 'claude' });
const loaded = await store.loadTurn(a, 1);
out({
  step: 'roundtrip',
  saved: saved.ok ? saved.value : saved.error,
  size: big.length,
  sha: sha(big),
  loadedSha: loaded.ok ? sha(loaded.value.archive) : undefined,
  loadedSize: loaded.ok ? loaded.value.archive.length : undefined,
  sessionId: loaded.ok ? loaded.value.sessionId : undefined,
  vendor: loaded.ok ? loaded.value.vendor : undefined,
  error: loaded.ok ? undefined : loaded.error,
});

// Turns 2..7 of a, one turn of another namespace's Agent with the same uid, and a stray object under a's prefix.
const small = new Map<number, string>();
for (let turn = 2; turn <= 7; turn++) {
  const archive = gzipSync(randomBytes(3000));
  small.set(turn, sha(archive));
  const r = await store.saveTurn(a, turn, archive, { sessionId: 'claude-session-1', vendor: 'claude' });
  if (!r.ok) out({ step: 'save', turn, error: r.error });
}
await store.saveTurn(other, 1, gzipSync(Buffer.from('other')), { sessionId: 'x', vendor: 'codex' });
const stray = await client.putObject(
  `${prefix}sessions/team-a/${a.uid}/notes.txt`,
  Buffer.from('not a turn'),
);
const head = await client.headObject(`${prefix}sessions/team-a/${a.uid}/turn-000001.tar.gz`);
out({
  step: 'head',
  stray: stray.ok,
  size: head.ok ? head.value.size : undefined,
  metadata: head.ok ? head.value.metadata : head.error,
  contentType: head.ok ? head.value.contentType : undefined,
});

// Pages of ListObjectsV2 as the client sees them.
const pages: { keys: number; truncated: boolean; token: boolean }[] = [];
let token: string | undefined;
do {
  const page = await client.listObjectsV2({
    prefix: `${prefix}sessions/team-a/${a.uid}/`,
    maxKeys: 3,
    ...(token !== undefined ? { continuationToken: token } : {}),
  });
  if (!page.ok) {
    out({ step: 'pages', error: page.error });
    break;
  }
  pages.push({
    keys: page.value.objects.length,
    truncated: page.value.isTruncated,
    token: page.value.nextContinuationToken !== undefined,
  });
  token = page.value.isTruncated ? page.value.nextContinuationToken : undefined;
} while (token !== undefined && pages.length < 20);
out({ step: 'pages', pages });

const turns = await store.listTurns(a);
const latest = await store.loadTurn(a, 'latest');
out({
  step: 'list',
  turns: turns.ok ? turns.value.map((t) => t.turn) : turns.error,
  latest: latest.ok ? latest.value.turn : latest.error,
  latestShaMatches: latest.ok ? sha(latest.value.archive) === small.get(7) : false,
});

// Fork: turn 3 of a into b; a untouched.
const copied = await store.copyTurn(a, 3, b);
const forked = await store.loadTurn(b, 'latest');
const aAfter = await store.listTurns(a);
out({
  step: 'copy',
  copied: copied.ok ? { turn: copied.value.turn, key: copied.value.key } : copied.error,
  forkedTurn: forked.ok ? forked.value.turn : forked.error,
  forkedShaMatches: forked.ok ? sha(forked.value.archive) === small.get(3) : false,
  forkedSessionId: forked.ok ? forked.value.sessionId : undefined,
  sourceTurns: aAfter.ok ? aAfter.value.map((t) => t.turn) : aAfter.error,
});
const missingCopy = await store.copyTurn(a, 99, b);
const missingLoad = await store.loadTurn(b, 2);
const noneLoad = await store.loadTurn({ namespace: 'team-c', uid: 'nobody' }, 'latest');
out({
  step: 'missing',
  copy: missingCopy.ok ? 'ok' : missingCopy.error.kind,
  load: missingLoad.ok ? 'ok' : missingLoad.error.kind,
  latest: noneLoad.ok ? 'ok' : noneLoad.error.kind,
});

// Delete a's prefix: all 8 objects (7 turns and the stray), b and other untouched; twice is fine.
const deleted = await store.deleteSession(a);
const again = await store.deleteSession(a);
const left = await client.listAll(`${prefix}sessions/team-a/${a.uid}/`);
const bLeft = await store.listTurns(b);
const otherLeft = await store.listTurns(other);
out({
  step: 'delete',
  deleted: deleted.ok ? deleted.value.deleted : deleted.error,
  again: again.ok ? again.value.deleted : again.error,
  left: left.ok ? left.value.length : left.error,
  bTurns: bLeft.ok ? bLeft.value.map((t) => t.turn) : bLeft.error,
  otherTurns: otherLeft.ok ? otherLeft.value.map((t) => t.turn) : otherLeft.error,
});

// Wrong credentials: a typed error, nothing written.
const wrongSecret = new S3SessionStore({
  client: new S3Client({
    ...config,
    credentials: { ...config.credentials, secretAccessKey: 'wrong-secret' },
  }),
  prefix,
});
const wrongKey = new S3SessionStore({
  client: new S3Client({ ...config, credentials: { accessKeyId: 'NOSUCHKEY', secretAccessKey: 'x' } }),
  prefix,
});
const ws = await wrongSecret.saveTurn(a, 1, Buffer.from('x'), { sessionId: 's', vendor: 'claude' });
const wk = await wrongKey.listTurns(b);
const nothing = await store.listTurns(a);
const s3Of = (r: typeof ws | typeof wk) =>
  !r.ok && r.error.kind === 's3'
    ? { status: r.error.s3.status, code: r.error.s3.code }
    : r.ok
      ? 'ok'
      : r.error.kind;
out({
  step: 'credentials',
  wrongSecret: s3Of(ws),
  wrongKey: s3Of(wk),
  written: nothing.ok ? nothing.value.length : nothing.error,
});

await store.deleteSession(b);
await store.deleteSession(other);
out({ step: 'done' });
