// Host-level: really starts processes through unshare + mount + setpriv. Needs root (skipped otherwise).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_PATH, type Identity } from './plan.ts';
import { findHostTools, setprivArgs, spawnContainer } from './process.ts';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const skip = root ? false : 'needs root (unshare --mount, mount --bind, setpriv)';

const ROOT_ID: Identity = { uid: 0, gid: 0, groups: [], noNewPrivs: false, capabilities: ['chown'] };

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  report: string;
}

function collect(child: ChildProcess): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  let report = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdio[3]?.on('data', (d: Buffer) => {
    report += d.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, report })));
}

describe('setprivArgs', () => {
  it('maps an identity to setpriv flags', () => {
    assert.deepEqual(
      setprivArgs({ uid: 1000, gid: 1000, groups: [1000, 5], noNewPrivs: true, capabilities: [] }),
      [
        '--reuid=1000',
        '--regid=1000',
        '--groups=1000,5',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        '--',
      ],
    );
    assert.deepEqual(setprivArgs(ROOT_ID).slice(2, 5), [
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all,+chown',
    ]);
  });
});

describe('spawnContainer (host)', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'node-agent-proc-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const tools = root ? findHostTools() : undefined;

  it('bind-mounts volumes privately, honours workingDir and env, and reports the start', async () => {
    const vol = join(dir, 'vol');
    const target = join(dir, 'mnt', 'inside');
    mkdirSync(vol);
    writeFileSync(join(vol, 'seed'), 'seeded');
    const child = spawnContainer(
      {
        argv: ['sh', '-c', 'cat inside/seed; echo " $GREETING"; pwd; echo out > inside/written; exit 7'],
        env: { PATH: DEFAULT_PATH, GREETING: 'hi' },
        workingDir: join(dir, 'mnt'),
        mounts: [{ source: vol, target, readOnly: false }],
        identity: ROOT_ID,
      },
      tools!,
    );
    const r = await collect(child);
    assert.equal(r.code, 7);
    assert.equal(r.report, 'started\n');
    assert.equal(r.stdout, `seeded hi\n${join(dir, 'mnt')}\n`);
    assert.equal(readFileSync(join(vol, 'written'), 'utf8'), 'out\n', 'writes land in the volume');
    assert.equal(existsSync(join(target, 'seed')), false, 'the mount is not visible on the host');
  });

  it('runs as the given uid/gid/groups with a reduced capability set', async () => {
    const child = spawnContainer(
      {
        argv: ['sh', '-c', 'id -u; id -g; id -G; grep CapEff /proc/self/status'],
        env: { PATH: DEFAULT_PATH },
        workingDir: '/',
        mounts: [],
        identity: { uid: 1000, gid: 1001, groups: [1002], noNewPrivs: true, capabilities: [] },
      },
      tools!,
    );
    const r = await collect(child);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), ['1000', '1001', '1001 1002', 'CapEff:\t0000000000000000']);
  });

  it('read-only mounts reject writes', async () => {
    const vol = join(dir, 'ro');
    mkdirSync(vol);
    const child = spawnContainer(
      {
        argv: ['sh', '-c', `echo x > ${join(dir, 'ro-target')}/f 2>/dev/null && echo wrote || echo refused`],
        env: { PATH: DEFAULT_PATH },
        workingDir: '/',
        mounts: [{ source: vol, target: join(dir, 'ro-target'), readOnly: true }],
        identity: ROOT_ID,
      },
      tools!,
    );
    const r = await collect(child);
    assert.equal(r.stdout, 'refused\n');
    assert.equal(existsSync(join(vol, 'f')), false);
  });

  it('a setup failure is reported on the start pipe, not as the program starting', async () => {
    const child = spawnContainer(
      {
        argv: ['true'],
        env: { PATH: DEFAULT_PATH },
        workingDir: '/',
        mounts: [{ source: join(dir, 'does-not-exist'), target: join(dir, 'never'), readOnly: false }],
        identity: ROOT_ID,
      },
      tools!,
    );
    const r = await collect(child);
    assert.notEqual(r.code, 0);
    assert.doesNotMatch(r.report, /started/);
    assert.match(r.report, /mount/);
  });
});
