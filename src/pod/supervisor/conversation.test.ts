import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { collectTree } from './conversation.ts';

describe('conversation tree collection', () => {
  let home = '';
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'conv-'));
    await mkdir(join(home, '.claude', 'projects', 'b'), { recursive: true });
    await mkdir(join(home, '.claude', 'projects', 'a'), { recursive: true });
    await writeFile(join(home, '.claude', 'projects', 'b', 'z.jsonl'), 'zz');
    await writeFile(join(home, '.claude', 'projects', 'a', 'y.jsonl'), 'y');
    await writeFile(join(home, 'outside.txt'), 'not archived');
    await symlink(join(home, 'outside.txt'), join(home, '.claude', 'projects', 'a', 'link'));
  });
  after(async () => {
    await rm(home, { recursive: true, force: true });
  });

  it('lists dirs and regular files relative to HOME, sorted, skipping symlinks', async () => {
    const tree = await collectTree(home, '.claude/projects');
    assert.ok(Array.isArray(tree));
    assert.deepEqual(
      tree.map((e) => `${e.type}:${e.name}`),
      [
        'dir:.claude/projects/',
        'dir:.claude/projects/a/',
        'file:.claude/projects/a/y.jsonl',
        'dir:.claude/projects/b/',
        'file:.claude/projects/b/z.jsonl',
      ],
    );
  });

  it('reports a missing state dir', async () => {
    assert.equal(await collectTree(home, '.codex/sessions'), 'missing');
    assert.equal(await collectTree(home, 'outside.txt'), 'missing');
  });
});
