// The session store (issue 29) against the test bed's real S3-compatible server (versitygw, started by
// scripts/testbed): our S3 client and S3SessionStore bundled by esbuild into one ESM file, as the product is, and run
// on the pass's runtime (Node, or Deno when AGENT_E2E_RUNTIME=deno). Round trip of a real-sized archive with its
// metadata, listing over several pages, a fork's copy, deleting one session's prefix, wrong credentials.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { e2eKubeconfigPath } from '../support/kubeconfig.ts';
import { readTestbedInfo, testbedSessionStore } from '../support/testbed.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const kubeconfig = e2eKubeconfigPath();
const runtime = process.env.AGENT_E2E_RUNTIME === 'deno' ? 'deno' : 'node';
const info = kubeconfig === undefined ? undefined : readTestbedInfo(kubeconfig);
const skip =
  kubeconfig === undefined
    ? 'KUBECONFIG is not set'
    : info?.sessionStore === undefined
      ? 'the e2e cluster is not a testbed with a session store (run scripts/testbed up)'
      : false;

describe(`session store on versitygw, run on ${runtime}`, { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'session-store-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('saves, lists, loads, copies and deletes sessions; wrong credentials are a typed error', async () => {
    const store = testbedSessionStore(info);
    const outfile = join(dir, 'probe.mjs');
    await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: [join(ROOT, 'test', 'support', 'session-store-probe.ts')],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: ['node20', 'deno2'],
      logLevel: 'error',
      banner: {
        js: "import { createRequire as __acCreateRequire } from 'node:module';\nconst require = __acCreateRequire(import.meta.url);",
      },
    });
    const [cmd, args] =
      runtime === 'deno'
        ? [join(ROOT, 'node_modules/.bin/deno'), ['run', '-A', '--quiet', outfile]]
        : [process.execPath, [outfile]];
    const prefix = `e2e-${runtime}-${randomBytes(4).toString('hex')}/`;
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      const child = spawn(cmd, args, {
        env: {
          ...process.env,
          PROBE_ENDPOINT: store.endpoint,
          PROBE_BUCKET: store.bucket,
          PROBE_REGION: store.region,
          PROBE_ACCESS_KEY_ID: store.credentials.accessKeyId,
          PROBE_SECRET_ACCESS_KEY: store.credentials.secretAccessKey,
          PROBE_PREFIX: prefix,
          NO_COLOR: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => {
        stdout += c;
      });
      child.stderr.on('data', (c) => {
        stderr += c;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    const steps = new Map<string, Record<string, unknown>>();
    for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) {
      const o = JSON.parse(line) as Record<string, unknown>;
      steps.set(String(o.step), o);
    }
    const context = `exit ${code}\nstdout: ${stdout}\nstderr: ${stderr.slice(0, 2000)}`;
    assert.equal(code, 0, context);
    assert.equal(steps.get('runtime')?.runtime, runtime, context);
    assert.equal(steps.has('save'), false, context);

    const rt = steps.get('roundtrip');
    assert.ok(rt, context);
    assert.ok(Number(rt.size) > 8 * 1024 * 1024, context);
    assert.equal(rt.loadedSize, rt.size, context);
    assert.equal(rt.loadedSha, rt.sha, context);
    assert.equal(rt.sessionId, 'claude-session-1', context);
    assert.equal(rt.vendor, 'claude', context);
    assert.deepEqual(
      rt.saved,
      {
        turn: 1,
        key: `${prefix}sessions/team-a/11111111-aaaa-4bbb-8ccc-000000000001/turn-000001.tar.gz`,
        size: rt.size,
      },
      context,
    );

    assert.deepEqual(
      steps.get('head'),
      {
        step: 'head',
        stray: true,
        size: rt.size,
        metadata: { 'session-id': 'claude-session-1', vendor: 'claude' },
        contentType: 'application/gzip',
      },
      context,
    );
    // 8 objects under a's prefix, 3 a page: 3 + 3 + 2.
    assert.deepEqual(
      steps.get('pages')?.pages,
      [
        { keys: 3, truncated: true, token: true },
        { keys: 3, truncated: true, token: true },
        { keys: 2, truncated: false, token: false },
      ],
      context,
    );
    assert.deepEqual(
      steps.get('list'),
      { step: 'list', turns: [1, 2, 3, 4, 5, 6, 7], latest: 7, latestShaMatches: true },
      context,
    );
    assert.deepEqual(
      steps.get('copy'),
      {
        step: 'copy',
        copied: {
          turn: 3,
          key: `${prefix}sessions/team-a/11111111-aaaa-4bbb-8ccc-000000000002/turn-000003.tar.gz`,
        },
        forkedTurn: 3,
        forkedShaMatches: true,
        forkedSessionId: 'claude-session-1',
        sourceTurns: [1, 2, 3, 4, 5, 6, 7],
      },
      context,
    );
    assert.deepEqual(
      steps.get('missing'),
      { step: 'missing', copy: 'not-found', load: 'not-found', latest: 'not-found' },
      context,
    );
    assert.deepEqual(
      steps.get('delete'),
      { step: 'delete', deleted: 8, again: 0, left: 0, bTurns: [3], otherTurns: [1] },
      context,
    );
    const credentials = steps.get('credentials');
    assert.deepEqual(credentials?.wrongSecret, { status: 403, code: 'SignatureDoesNotMatch' }, context);
    // An unknown access key: AWS answers 403 InvalidAccessKeyId; versitygw 1.8.0 answers 404 XAdminUserNotFound.
    assert.ok(
      [
        JSON.stringify({ status: 403, code: 'InvalidAccessKeyId' }),
        JSON.stringify({ status: 404, code: 'XAdminUserNotFound' }),
      ].includes(JSON.stringify(credentials?.wrongKey)),
      context,
    );
    assert.equal(credentials?.written, 0, context);
    assert.ok(steps.has('done'), context);
  });
});
