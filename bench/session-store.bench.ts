// The session store benchmark (issue 29, docs/design/sessions.md "The store"): our S3 client and S3SessionStore
// against the test bed's versitygw (scripts/testbed up), on this machine's loopback. Prints figures; asserts nothing
// about timings.
//
//   node --import tsx bench/session-store.bench.ts [--kubeconfig PATH] [--iterations N] [--sessions S] [--json PATH]
//
// 1. PUT (saveTurn) and GET (loadTurn) latency, p50/p99, for archives of the sizes real sessions have: the state a
//    CLI keeps after two turns (Claude Code, Codex, Gemini CLI: a few KB of JSON lines, gzipped), OpenCode's SQLite
//    folder (55 kB, docs/reference/vendor-clis.md "Resume"), and a session with a workspace (1 MiB, 16 MiB of
//    incompressible content).
// 2. S sessions (default 100) of two turns each, saved with 16 in flight: throughput, then each woken
//    (loadTurn latest: a LIST and a GET), then each deleted (deleteSession): throughput of each.
// 3. Store bytes per session: the objects' sizes, and the bytes versitygw's POSIX backend used on disk (data and
//    metadata sidecar), divided by S.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { S3SessionStore, type SessionRef } from '../src/sessions/store.ts';
import { S3Client } from '../src/store/s3/index.ts';
import { readTestbedInfo, testbedSessionStore } from '../test/support/testbed.ts';
import { perSecond, summarize } from './stats.ts';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string', default: join(process.cwd(), '.testbed', 'admin.kubeconfig') },
    iterations: { type: 'string', default: '100' },
    sessions: { type: 'string', default: '100' },
    json: { type: 'string' },
  },
});
const iterations = Number(values.iterations);
const sessions = Number(values.sessions);
const info = readTestbedInfo(values.kubeconfig);
const cfg = testbedSessionStore(info);
const client = new S3Client(cfg);
const prefix = `bench-${randomBytes(4).toString('hex')}/`;
const store = new S3SessionStore({ client, prefix });

/** JSON lines like a CLI's session file: one event per line, ids and text that vary. */
function sessionJsonl(bytes: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = JSON.stringify({
      type: i % 2 === 0 ? 'user' : 'assistant',
      uuid: randomBytes(16).toString('hex'),
      parentUuid: randomBytes(16).toString('hex'),
      sessionId: '7f1c2d3e-0000-4000-8000-000000000001',
      timestamp: new Date(1_765_000_000_000 + i * 1000).toISOString(),
      cwd: '/workspace',
      message: { role: i % 2 === 0 ? 'user' : 'assistant', content: randomBytes(48).toString('base64') },
    });
    lines.push(line);
    size += line.length + 1;
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

const sizes: { name: string; archive: Buffer }[] = [
  { name: 'CLI session, 2 turns', archive: gzipSync(sessionJsonl(12 * 1024)) },
  {
    name: 'OpenCode folder',
    archive: gzipSync(Buffer.concat([sessionJsonl(40 * 1024), randomBytes(30 * 1024)])),
  },
  { name: 'session + 1 MiB workspace', archive: gzipSync(randomBytes(1024 * 1024)) },
  { name: 'session + 16 MiB workspace', archive: gzipSync(randomBytes(16 * 1024 * 1024)) },
];

const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
const ref = (i: number): SessionRef => ({
  namespace: 'bench',
  uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
});
const fail = (what: string, e: unknown): never => {
  throw new Error(`${what}: ${JSON.stringify(e)}`);
};
const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : 'n/a');

/** Bytes a folder's files occupy on disk (allocated blocks). */
function diskBytes(dir: string): number {
  let total = 0;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const p = join(dir, name);
    const st = statSync(p);
    total += st.blocks * 512;
    if (st.isDirectory()) total += diskBytes(p);
  }
  return total;
}

const report: Record<string, unknown> = {
  endpoint: cfg.endpoint,
  iterations,
  sessions,
  latency: [] as unknown[],
};
console.log(`session store benchmark: versitygw at ${cfg.endpoint}, prefix ${prefix}`);
console.log(`\n1. latency, ${iterations} PUTs then ${iterations} GETs per size, one at a time (ms)`);
console.log('   archive                        bytes     PUT p50   PUT p99   GET p50   GET p99');
try {
  for (const { name, archive } of sizes) {
    const r = ref(0);
    const put: number[] = [];
    const get: number[] = [];
    const digest = createHash('sha256').update(archive).digest('hex');
    for (let i = 1; i <= iterations; i++) {
      const t = process.hrtime.bigint();
      const saved = await store.saveTurn(r, i, archive, { sessionId: 's', vendor: 'claude' });
      put.push(ms(t));
      if (!saved.ok) fail('saveTurn', saved.error);
    }
    for (let i = 1; i <= iterations; i++) {
      const t = process.hrtime.bigint();
      const loaded = await store.loadTurn(r, i);
      get.push(ms(t));
      if (!loaded.ok) fail('loadTurn', loaded.error);
      if (loaded.ok && i === 1 && createHash('sha256').update(loaded.value.archive).digest('hex') !== digest)
        fail('loadTurn', 'the archive came back different');
    }
    const p = summarize(put);
    const g = summarize(get);
    (report.latency as unknown[]).push({ name, bytes: archive.length, put: p, get: g });
    console.log(
      `   ${name.padEnd(28)} ${String(archive.length).padStart(9)} ${f(p.p50).padStart(9)} ${f(p.p99).padStart(9)} ${f(g.p50).padStart(9)} ${f(g.p99).padStart(9)}`,
    );
    const gone = await store.deleteSession(r);
    if (!gone.ok) fail('deleteSession', gone.error);
  }

  console.log(
    `\n2. ${sessions} sessions of two turns (CLI session files of 6 and 12 KB, gzipped), 16 in flight`,
  );
  const pool = async (n: number, work: (i: number) => Promise<void>): Promise<number> => {
    let next = 0;
    const t = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < n) await work(next++);
      }),
    );
    return ms(t);
  };
  const turnArchive = (i: number, turn: number) => gzipSync(sessionJsonl(6 * 1024 * turn + (i % 7) * 100));
  const saveMs = await pool(sessions, async (i) => {
    for (const turn of [1, 2]) {
      const saved = await store.saveTurn(ref(i + 1), turn, turnArchive(i, turn), {
        sessionId: `s${i}`,
        vendor: 'claude',
      });
      if (!saved.ok) fail('saveTurn', saved.error);
    }
  });
  const listed = await client.listAll(`${prefix}sessions/bench/`);
  if (!listed.ok) fail('listAll', listed.error);
  const objectBytes = listed.ok ? listed.value.reduce((a, o) => a + o.size, 0) : 0;
  const storeDir = info?.sessionStore
    ? join(info.sessionStore.credentialsFile, '..', 'session-store')
    : undefined;
  const onDisk =
    storeDir === undefined
      ? Number.NaN
      : diskBytes(join(storeDir, 'data', cfg.bucket, prefix)) +
        diskBytes(join(storeDir, 'meta', cfg.bucket, prefix));
  const wakeLatency: number[] = [];
  const wakeMs = await pool(sessions, async (i) => {
    const t = process.hrtime.bigint();
    const loaded = await store.loadTurn(ref(i + 1), 'latest');
    wakeLatency.push(ms(t));
    if (!loaded.ok || loaded.value.turn !== 2)
      fail('loadTurn latest', loaded.ok ? loaded.value.turn : loaded.error);
  });
  const deleteMs = await pool(sessions, async (i) => {
    const gone = await store.deleteSession(ref(i + 1));
    if (!gone.ok || gone.value.deleted !== 2) fail('deleteSession', gone.ok ? gone.value : gone.error);
  });
  const wake = summarize(wakeLatency);
  report.sessions100 = {
    saveMs,
    savePerSecond: perSecond(sessions, saveMs),
    wakeMs,
    wakePerSecond: perSecond(sessions, wakeMs),
    wakeLatency: wake,
    deleteMs,
    deletePerSecond: perSecond(sessions, deleteMs),
    objectBytesPerSession: objectBytes / sessions,
    diskBytesPerSession: onDisk / sessions,
  };
  console.log(
    `   save (2 PUTs a session)          ${f(saveMs)} ms, ${f(perSecond(sessions, saveMs))} sessions/s`,
  );
  console.log(
    `   wake (LIST + GET of the latest)  ${f(wakeMs)} ms, ${f(perSecond(sessions, wakeMs))} sessions/s; p50 ${f(wake.p50)} ms, p99 ${f(wake.p99)} ms`,
  );
  console.log(
    `   delete (LIST + 2 DELETEs)        ${f(deleteMs)} ms, ${f(perSecond(sessions, deleteMs))} sessions/s`,
  );
  console.log('\n3. store bytes per session (two turns)');
  console.log(`   objects                          ${f(objectBytes / sessions)} bytes`);
  console.log(`   on disk (POSIX backend, data + metadata sidecar)  ${f(onDisk / sessions)} bytes`);
} finally {
  // Whatever is left of this run.
  const left = await client.listAll(prefix);
  if (left.ok) for (const o of left.value) await client.deleteObject(o.key);
}
if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
