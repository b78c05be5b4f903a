import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  collectFileEvents,
  isStrictlyBelow,
  MAX_WATCH_ENTRIES,
  MAX_WATCH_FILE_BYTES,
  normalizeRoot,
  parseWatch,
  resolveWatchPath,
} from './watch.ts';

describe('AGENT_WATCH parsing', () => {
  it('keeps entries with a non-empty event and path', () => {
    const r = parseWatch(
      JSON.stringify([
        { event: 'report', path: 'out/r.md', extra: 1 },
        { event: '', path: 'x' },
        { path: 'y' },
        3,
      ]),
    );
    assert.deepEqual(r.entries, [{ event: 'report', path: 'out/r.md' }]);
    assert.equal(r.warnings.length, 3);
  });

  it('unset gives nothing; malformed JSON and non-arrays give nothing and a warning', () => {
    assert.deepEqual(parseWatch(undefined), { entries: [], warnings: [] });
    assert.equal(parseWatch('[').warnings.length, 1);
    assert.equal(parseWatch('{}').warnings.length, 1);
  });

  it(`honours at most ${MAX_WATCH_ENTRIES} entries`, () => {
    const many = Array.from({ length: MAX_WATCH_ENTRIES + 3 }, (_, i) => ({ event: `e${i}`, path: `f${i}` }));
    const r = parseWatch(JSON.stringify(many));
    assert.equal(r.entries.length, MAX_WATCH_ENTRIES);
    assert.equal(r.warnings.length, 3);
  });
});

describe('watch path confinement', () => {
  it('normalizes roots and refuses relative ones', () => {
    assert.equal(normalizeRoot('/workspace/'), '/workspace');
    assert.equal(normalizeRoot('/a/./b/../c'), '/a/c');
    assert.equal(normalizeRoot('/'), '/');
    assert.equal(normalizeRoot('workspace'), undefined);
    assert.equal(normalizeRoot(''), undefined);
  });

  it('strictly below means a real descendant', () => {
    assert.ok(isStrictlyBelow('/workspace', '/workspace/a'));
    assert.ok(!isStrictlyBelow('/workspace', '/workspace'));
    assert.ok(!isStrictlyBelow('/workspace', '/workspace2/a'));
    assert.ok(isStrictlyBelow('/', '/etc'));
    assert.ok(!isStrictlyBelow('/', '/'));
  });

  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ['out/result.json', '/workspace/out/result.json'],
    ['./out/../out/result.json', '/workspace/out/result.json'],
    ['/workspace/a.txt', '/workspace/a.txt'],
    ['dir/', '/workspace/dir'],
    ['../etc/passwd', undefined],
    ['out/../../etc/passwd', undefined],
    ['/etc/passwd', undefined],
    ['/workspace', undefined],
    ['.', undefined],
    ['', undefined],
    ['/workspace/../workspace2/x', undefined],
    ['a\0b', undefined],
  ];
  for (const [path, expected] of cases) {
    it(`${JSON.stringify(path)} → ${expected ?? 'refused'}`, () => {
      const r = resolveWatchPath('/workspace', path);
      assert.deepEqual(
        r,
        expected === undefined ? { ok: false, error: 'outside-workspace' } : { ok: true, value: expected },
      );
    });
  }
});

describe('collectFileEvents', () => {
  let root = '';
  let ws = '';
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'watch-'));
    ws = join(root, 'ws');
    await mkdir(join(ws, 'out'), { recursive: true });
    await mkdir(join(root, 'outside'));
    await writeFile(join(root, 'outside', 'secret'), 'secret');
    await writeFile(join(ws, 'out', 'ok.txt'), 'fine \u00e9');
    await writeFile(join(ws, 'out', 'edge.bin'), Buffer.alloc(MAX_WATCH_FILE_BYTES, 0x61));
    await writeFile(join(ws, 'out', 'big.bin'), Buffer.alloc(MAX_WATCH_FILE_BYTES + 1, 0x61));
    await symlink(join(root, 'outside', 'secret'), join(ws, 'escape'));
    await symlink(join(ws, 'out', 'ok.txt'), join(ws, 'inside-link'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('emits content, missing, too-large; refuses escapes (lexical and symlink) without an event', async () => {
    const { events, refused } = await collectFileEvents(ws, [
      { event: 'ok', path: 'out/ok.txt' },
      { event: 'edge', path: 'out/edge.bin' },
      { event: 'big', path: 'out/big.bin' },
      { event: 'gone', path: 'out/none.txt' },
      { event: 'dir', path: 'out' },
      { event: 'through-file', path: 'out/ok.txt/x' },
      { event: 'link-in', path: 'inside-link' },
      { event: 'link-out', path: 'escape' },
      { event: 'dotdot', path: '../outside/secret' },
    ]);
    assert.deepEqual(
      events.map((e) => ('content' in e ? [e.event, e.path, e.content.length] : [e.event, e.path, e.reason])),
      [
        ['ok', join(ws, 'out', 'ok.txt'), 6],
        ['edge', join(ws, 'out', 'edge.bin'), MAX_WATCH_FILE_BYTES],
        ['big', join(ws, 'out', 'big.bin'), 'too-large'],
        ['gone', join(ws, 'out', 'none.txt'), 'missing'],
        ['dir', join(ws, 'out'), 'missing'],
        ['through-file', join(ws, 'out', 'ok.txt', 'x'), 'missing'],
        ['link-in', join(ws, 'inside-link'), 6],
      ],
    );
    assert.deepEqual(
      refused.map((r) => r.entry.event),
      ['link-out', 'dotdot'],
    );
    assert.equal(events[0] && 'content' in events[0] && events[0].content, 'fine \u00e9');
  });

  it('a missing workspace makes every file missing', async () => {
    const { events } = await collectFileEvents(join(root, 'nope'), [{ event: 'a', path: 'x' }]);
    assert.deepEqual(events, [
      { kind: 'file', event: 'a', path: join(root, 'nope', 'x'), reason: 'missing' },
    ]);
  });
});
