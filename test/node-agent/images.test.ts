import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadImageTables } from './images.ts';

describe('image tables', () => {
  it('reads bare entrypoints and full configs with image files, later files winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    try {
      const a = join(dir, 'a.json');
      const b = join(dir, 'b.json');
      writeFileSync(a, JSON.stringify({ 'x:1': ['/bin/x'], 'y:1': ['/bin/y'] }));
      writeFileSync(
        b,
        JSON.stringify({
          'y:1': { entrypoint: ['/opt/y/run'], files: { '/opt/y/run': '/home/me/private/y' }, user: 1000 },
        }),
      );
      const table = loadImageTables([a, b]);
      assert.deepEqual(table['x:1'], {
        entrypoint: ['/bin/x'],
        cmd: [],
        env: {},
        workingDir: undefined,
        user: undefined,
        files: {},
      });
      assert.deepEqual(table['y:1']?.files, { '/opt/y/run': '/home/me/private/y' });
      assert.deepEqual(table['y:1']?.entrypoint, ['/opt/y/run']);
      assert.equal(table['y:1']?.user, 1000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads a folder of tables in name order after the files before it, ignoring other files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    try {
      const base = join(dir, 'images.json');
      const folder = join(dir, 'images.d');
      mkdirSync(folder);
      writeFileSync(base, JSON.stringify({ 'x:1': ['/bin/base'], 'y:1': ['/bin/y'] }));
      assert.deepEqual(Object.keys(loadImageTables([base, folder])).sort(), ['x:1', 'y:1']);
      writeFileSync(join(folder, 'b.json'), JSON.stringify({ 'x:1': ['/bin/b'] }));
      writeFileSync(join(folder, 'a.json'), JSON.stringify({ 'x:1': ['/bin/a'], 'z:1': ['/bin/z'] }));
      writeFileSync(join(folder, 'notes.txt'), 'not a table');
      const table = loadImageTables([base, folder]);
      assert.deepEqual(table['x:1']?.entrypoint, ['/bin/b'], 'b.json is read after a.json');
      assert.deepEqual(table['z:1']?.entrypoint, ['/bin/z']);
      assert.deepEqual(table['y:1']?.entrypoint, ['/bin/y']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads pullError entries: with or without an entrypoint, the other fields defaulted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    try {
      const file = join(dir, 'a.json');
      writeFileSync(
        file,
        JSON.stringify({
          'gone:1': { pullError: 'manifest unknown' },
          'private:1': { entrypoint: ['/bin/p'], pullError: 'pull access denied' },
          'fine:1': { entrypoint: ['/bin/f'] },
        }),
      );
      const table = loadImageTables([file]);
      assert.deepEqual(table['gone:1'], {
        entrypoint: [],
        cmd: [],
        env: {},
        workingDir: undefined,
        user: undefined,
        files: {},
        pullError: 'manifest unknown',
      });
      assert.equal(table['private:1']?.pullError, 'pull access denied');
      assert.deepEqual(table['private:1']?.entrypoint, ['/bin/p']);
      assert.equal('pullError' in (table['fine:1'] ?? {}), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses entries with neither entrypoint nor pullError, and empty or non-string pullErrors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    try {
      const bad = join(dir, 'bad.json');
      for (const [entry, why] of [
        [{ cmd: ['x'] }, /entrypoint is required \(unless the entry has a pullError\)/],
        [{ pullError: '' }, /pullError must not be empty/],
        // A wrong type is reported as the union's (like any other malformed entry).
        [{ entrypoint: [], pullError: 404 }, /Expected \(Array \| Object\)/],
      ] as const) {
        writeFileSync(bad, JSON.stringify({ 'z:1': entry }));
        assert.throws(() => loadImageTables([bad]), why, JSON.stringify(entry));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the file of a malformed table', () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    try {
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ 'z:1': { entrypoint: 'not-a-list' } }));
      assert.throws(() => loadImageTables([bad]), new RegExp(`image table ${bad}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
