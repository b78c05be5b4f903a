// The session state archive on real folders: what GET packs (the state folder and the workspace, links left out),
// what PUT unpacks (into the right places, never through a link, nothing outside the two trees), and the caps.
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import {
  collectSessionState,
  gunzipCapped,
  memberTarget,
  packSessionState,
  type StatePlaces,
  unpackSessionState,
} from './session-state.ts';
import { buildTar, type TarEntry } from './tar.ts';

const text = (s: string) => new TextEncoder().encode(s);
const file = (name: string, data: string, mode = 0o644): TarEntry => ({
  type: 'file',
  name,
  mode,
  mtimeSec: 1_700_000_000,
  data: text(data),
});

describe('session state archive', () => {
  let root = '';
  let n = 0;
  /** A fresh pod layout: HOME and a workspace under a temp folder. */
  const places = async (): Promise<StatePlaces> => {
    const base = join(root, `pod-${n++}`);
    await mkdir(join(base, 'home'), { recursive: true });
    return { home: join(base, 'home'), stateDir: '.claude/projects', workspace: join(base, 'workspace') };
  };
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'session-state-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  it('packs the state folder and the workspace, links left out and counted, then unpacks them in another pod', async () => {
    const a = await places();
    await mkdir(join(a.home, '.claude', 'projects', '-workspace'), { recursive: true });
    await writeFile(join(a.home, '.claude', 'projects', '-workspace', 's1.jsonl'), '{"turn":1}\n');
    await writeFile(join(a.home, '.claude', 'settings.json'), 'not state');
    await mkdir(join(a.workspace, 'src'), { recursive: true });
    await writeFile(join(a.workspace, 'src', 'main.ts'), 'export {};\n');
    await writeFile(join(a.workspace, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await symlink('/etc/passwd', join(a.workspace, 'passwd-link'));
    await symlink(join(a.workspace, 'src'), join(a.workspace, 'src-link'));

    const collected = await collectSessionState(a);
    assert.ok(collected.ok);
    assert.deepEqual(
      collected.entries.map((e) => `${e.type}:${e.name}`),
      [
        'dir:.claude/projects/',
        'dir:.claude/projects/-workspace/',
        'file:.claude/projects/-workspace/s1.jsonl',
        'dir:workspace/',
        'file:workspace/run.sh',
        'dir:workspace/src/',
        'file:workspace/src/main.ts',
      ],
    );
    assert.equal(collected.skipped, 2, 'the two links');

    const packed = await packSessionState(a);
    assert.ok(packed.ok);
    const b = await places();
    const unpacked = await unpackSessionState(packed.archive, b);
    assert.deepEqual(unpacked, { ok: true, members: 7 });
    assert.equal(
      await readFile(join(b.home, '.claude', 'projects', '-workspace', 's1.jsonl'), 'utf8'),
      '{"turn":1}\n',
    );
    assert.equal(await readFile(join(b.workspace, 'src', 'main.ts'), 'utf8'), 'export {};\n');
    assert.equal((await lstat(join(b.workspace, 'run.sh'))).mode & 0o777, 0o755);
    await assert.rejects(lstat(join(b.workspace, 'passwd-link')), 'links are not restored');
    await assert.rejects(lstat(join(b.home, '.claude', 'settings.json')), 'only the state folder');
  });

  it('packs an empty archive when neither tree exists', async () => {
    const a = await places();
    const collected = await collectSessionState(a);
    assert.deepEqual(collected, { ok: true, entries: [], skipped: 0 });
  });

  it('refuses members outside the state folder and the workspace, writing nothing', async () => {
    const b = await places();
    for (const name of [
      '.bashrc',
      '.claude/settings.json',
      '.claude/projectsX/a',
      'workspaceX/a',
      'etc/passwd',
    ]) {
      const archive = gzipSync(buildTar([file('workspace/ok.txt', 'ok'), file(name, 'evil')]));
      const r = await unpackSessionState(new Uint8Array(archive), b);
      assert.equal(r.ok ? 'ok' : r.error.kind, 'invalid', name);
    }
    await assert.rejects(lstat(join(b.workspace, 'ok.txt')), 'checked before anything is written');
    assert.equal(memberTarget('workspace/', b)?.root, b.workspace);
    assert.equal(memberTarget('.claude/projects/x', { ...b, stateDir: undefined }), undefined);
  });

  it('never writes through a link found in the new pod: the link is replaced', async () => {
    const b = await places();
    const outside = join(root, 'outside');
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'target.txt'), 'untouched');
    await mkdir(b.workspace, { recursive: true });
    // A repository clone's links: a folder link and a file link, both pointing outside.
    await symlink(outside, join(b.workspace, 'dir'));
    await symlink(join(outside, 'target.txt'), join(b.workspace, 'file.txt'));
    const archive = gzipSync(
      buildTar([file('workspace/dir/target.txt', 'from the archive'), file('workspace/file.txt', 'also')]),
    );
    const r = await unpackSessionState(new Uint8Array(archive), b);
    assert.deepEqual(r, { ok: true, members: 2 });
    assert.equal(await readFile(join(outside, 'target.txt'), 'utf8'), 'untouched');
    assert.equal((await lstat(join(b.workspace, 'dir'))).isDirectory(), true);
    assert.equal(await readFile(join(b.workspace, 'dir', 'target.txt'), 'utf8'), 'from the archive');
    assert.equal((await lstat(join(b.workspace, 'file.txt'))).isFile(), true);
    await assert.rejects(readlink(join(b.workspace, 'file.txt')));
  });

  it('refuses what is not gzip (400), hostile tar members (400) and bombs past the cap (413)', async () => {
    const b = await places();
    const notGzip = await unpackSessionState(text('plain text'), b);
    assert.equal(notGzip.ok ? 'ok' : notGzip.error.kind, 'invalid');
    const hostile = await unpackSessionState(
      new Uint8Array(gzipSync(buildTar([file('workspace/../../escape', 'x')]))),
      b,
    );
    assert.equal(
      hostile.ok ? 'ok' : hostile.error.message,
      'the member name "workspace/../../escape" is not a safe relative path',
    );
    // A gzip bomb: 2 MiB of zeros unpacked under a 1 MiB cap stops at the cap.
    const bomb = new Uint8Array(gzipSync(new Uint8Array(2 * 1024 * 1024)));
    const capped = await gunzipCapped(bomb, 1024 * 1024);
    assert.equal(capped.ok ? 'ok' : capped.error.kind, 'too-large');
  });
});
