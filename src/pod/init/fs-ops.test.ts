import assert from 'node:assert/strict';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  atomicCopy,
  collectSkills,
  copyTree,
  findExecutable,
  isConfinedBelow,
  linkIfMissing,
  removeConfined,
} from './fs-ops.ts';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'fs-ops-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

function dir(...parts: string[]): string {
  const p = join(root, ...parts);
  mkdirSync(p, { recursive: true });
  return p;
}

describe('isConfinedBelow / removeConfined', () => {
  it('accepts real paths below the root, existing or not', async () => {
    const ws = dir('c1', 'ws');
    assert.equal(await isConfinedBelow(join(ws, 'a', 'b'), ws), true);
    assert.equal(await isConfinedBelow(ws, ws), false);
  });

  it('rejects a path whose ancestor is a symlink leading out', async () => {
    const ws = dir('c2', 'ws');
    const out = dir('c2', 'out');
    symlinkSync(out, join(ws, 'link'));
    assert.equal(await isConfinedBelow(join(ws, 'link', 'app'), ws), false);
    await assert.rejects(removeConfined(join(ws, 'link', 'app'), ws), /resolves outside/);
  });

  it('removes a symlink at the path itself, not its target', async () => {
    const ws = dir('c3', 'ws');
    const out = dir('c3', 'out');
    writeFileSync(join(out, 'keep'), 'x');
    symlinkSync(out, join(ws, 'app'));
    await removeConfined(join(ws, 'app'), ws);
    assert.throws(() => lstatSync(join(ws, 'app')));
    assert.equal(readFileSync(join(out, 'keep'), 'utf8'), 'x');
  });

  it('follows a symlinked root to its real location', async () => {
    const real = dir('c4', 'real');
    symlinkSync(real, join(root, 'c4', 'alias'));
    assert.equal(await isConfinedBelow(join(root, 'c4', 'alias', 'x'), join(root, 'c4', 'alias')), true);
  });
});

describe('copyTree / collectSkills', () => {
  it('copies files and directories but never symlinks', async () => {
    const src = dir('c5', 'src');
    mkdirSync(join(src, 'sub'));
    writeFileSync(join(src, 'sub', 'f'), 'f');
    symlinkSync('/etc/passwd', join(src, 'leak'));
    const n = await copyTree(src, join(root, 'c5', 'dest'));
    assert.equal(n, 1);
    assert.deepEqual(readdirSync(join(root, 'c5', 'dest')), ['sub']);
  });

  it('collects workspace/*/.claude/skills and workspace/.claude/skills, skipping symlinked dirs', async () => {
    const ws = dir('c6', 'ws');
    dir('c6', 'ws', 'a', '.claude', 'skills', 'one');
    writeFileSync(join(ws, 'a', '.claude', 'skills', 'one', 'SKILL.md'), '1');
    dir('c6', 'ws', '.claude', 'skills', 'two');
    writeFileSync(join(ws, '.claude', 'skills', 'two', 'SKILL.md'), '2');
    const evil = dir('c6', 'evil', 'skills', 'three');
    writeFileSync(join(evil, 'SKILL.md'), '3');
    dir('c6', 'ws', 'b');
    symlinkSync(join(root, 'c6', 'evil'), join(ws, 'b', '.claude'));
    const dest = join(root, 'c6', 'dest');
    assert.equal(await collectSkills(ws, dest), 2);
    assert.deepEqual(readdirSync(dest).sort(), ['one', 'two']);
  });

  it('copes with a missing workspace', async () => {
    assert.equal(await collectSkills(join(root, 'nope'), join(root, 'nope-dest')), 0);
  });
});

describe('atomicCopy / linkIfMissing / findExecutable', () => {
  it('writes the file with the mode and leaves no temp file', async () => {
    const d = dir('c7');
    writeFileSync(join(d, 'src'), 'payload');
    await atomicCopy(join(d, 'src'), join(d, 'dest'), 0o750);
    assert.equal(readFileSync(join(d, 'dest'), 'utf8'), 'payload');
    assert.equal(statSync(join(d, 'dest')).mode & 0o777, 0o750);
    assert.deepEqual(readdirSync(d).sort(), ['dest', 'src']);
  });

  it('links only when the target exists and the link does not', async () => {
    const d = dir('c8');
    assert.equal(await linkIfMissing(join(d, 'missing'), join(d, 'l1')), false);
    writeFileSync(join(d, 't'), 't');
    assert.equal(await linkIfMissing(join(d, 't'), join(d, 'bin', 'l2')), true);
    assert.equal(await linkIfMissing(join(d, 't'), join(d, 'bin', 'l2')), false);
  });

  it('finds executables on a PATH, skipping non-executable files', async () => {
    const a = dir('c9', 'a');
    const b = dir('c9', 'b');
    writeFileSync(join(a, 'tool'), '', { mode: 0o644 });
    writeFileSync(join(b, 'tool'), '', { mode: 0o755 });
    const found = await findExecutable('tool', `${a}::${b}`);
    // root may execute any file with an x bit; a 0644 file has none
    assert.equal(found, join(b, 'tool'));
    assert.equal(await findExecutable('nope', `${a}:${b}`), undefined);
  });
});
