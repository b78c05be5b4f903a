import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  ContainerLogWriter,
  logFilesOnDisk,
  MAX_RECORD,
  nanoTime,
  parseCriLog,
  renderLog,
  terminationMessageFromLog,
  waitingToStartMessage,
} from './logs.ts';

const dir = mkdtempSync(join(tmpdir(), 'node-agent-logs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let clock = Date.parse('2026-01-02T03:04:05.006Z');
const now = () => clock;

function writerWith(name: string): ContainerLogWriter {
  return new ContainerLogWriter(join(dir, name), now);
}

describe('ContainerLogWriter + parseCriLog', () => {
  it('writes one F record per line, partial records for unterminated output, per stream', () => {
    const w = writerWith('a.log');
    w.write('stdout', 'hel');
    w.write('stdout', 'lo\nwor');
    clock += 1000;
    w.write('stderr', 'oops\n');
    w.write('stdout', 'ld\n');
    w.write('stdout', 'no newline');
    w.close();
    const text = readFileSync(w.file, 'utf8');
    assert.deepEqual(text.split('\n'), [
      '2026-01-02T03:04:05.006000000Z stdout F hello',
      '2026-01-02T03:04:06.006000000Z stderr F oops',
      '2026-01-02T03:04:06.006000000Z stdout F world',
      '2026-01-02T03:04:06.006000000Z stdout P no newline',
      '',
    ]);
    const entries = parseCriLog(text);
    assert.equal(entries.length, 4);
    assert.equal(renderLog(entries).toString(), 'hello\noops\nworld\nno newline');
  });

  it('splits very long lines into partial records that render back whole', () => {
    const w = writerWith('long.log');
    const line = 'x'.repeat(MAX_RECORD * 2 + 10);
    w.write('stdout', `${line}\n`);
    w.close();
    const entries = parseCriLog(readFileSync(w.file, 'utf8'));
    assert.deepEqual(
      entries.map((e) => e.partial),
      [true, true, false],
    );
    assert.equal(renderLog(entries).toString(), `${line}\n`);
    assert.equal(renderLog(entries, { tailLines: 1 }).toString(), `${line}\n`, 'one logical line');
  });

  it('skips malformed lines', () => {
    assert.deepEqual(
      parseCriLog('garbage\n\n2026-01-01T00:00:00Z stdout F ok\n').map((e) => e.content),
      ['ok'],
    );
  });
});

describe('renderLog', () => {
  const entries = parseCriLog(
    ['1', '2', '3', '4', '5'].map((n) => `2026-01-02T03:04:0${n}.000000000Z stdout F line-${n}`).join('\n'),
  );
  it('tailLines keeps the last N lines', () => {
    assert.equal(renderLog(entries, { tailLines: 2 }).toString(), 'line-4\nline-5\n');
    assert.equal(renderLog(entries, { tailLines: 0 }).toString(), '');
    assert.equal(renderLog(entries, { tailLines: 99 }).toString().split('\n').length, 6);
  });
  it('limitBytes cuts the output, after tailLines', () => {
    assert.equal(renderLog(entries, { limitBytes: 10 }).toString(), 'line-1\nlin');
    assert.equal(renderLog(entries, { tailLines: 1, limitBytes: 4 }).toString(), 'line');
  });
  it('timestamps prefix each line; sinceMs filters', () => {
    assert.equal(
      renderLog(entries, { tailLines: 1, timestamps: true }).toString(),
      '2026-01-02T03:04:05.000000000Z line-5\n',
    );
    assert.equal(
      renderLog(entries, { sinceMs: Date.parse('2026-01-02T03:04:04Z') }).toString(),
      'line-4\nline-5\n',
    );
  });
  it('termination messages keep the end of the log', () => {
    assert.equal(terminationMessageFromLog(entries, 2), 'line-4\nline-5\n');
    assert.equal(terminationMessageFromLog(entries, 80, 7), 'line-5\n');
  });
  it('nanoTime pads milliseconds to nanoseconds', () => {
    assert.equal(nanoTime(Date.parse('2026-01-02T03:04:05.120Z')), '2026-01-02T03:04:05.120000000Z');
  });
});

describe('waitingToStartMessage (log request for a container not started yet)', () => {
  it('spells out image pull failures as the kubelet does and gives other reasons as is', () => {
    const msg = (reason: string | undefined) => waitingToStartMessage('app', 'p1', reason);
    assert.equal(
      msg('ErrImagePull'),
      'container "app" in pod "p1" is waiting to start: image can\'t be pulled',
    );
    assert.equal(
      msg('ImagePullBackOff'),
      'container "app" in pod "p1" is waiting to start: trying and failing to pull image',
    );
    assert.equal(msg('PodInitializing'), 'container "app" in pod "p1" is waiting to start: PodInitializing');
    assert.equal(msg(undefined), 'container "app" in pod "p1" is waiting to start: ContainerCreating');
  });
});

describe('logFilesOnDisk', () => {
  it("lists a container's log files by restart count (numerically), ignoring other files", () => {
    const podDir = join(dir, 'pod-uid');
    const logs = join(podDir, 'logs', 'agent');
    mkdirSync(logs, { recursive: true });
    for (const name of ['10.log', '2.log', '0.log', 'notes.txt', 'x.log'])
      writeFileSync(join(logs, name), '');
    assert.deepEqual(logFilesOnDisk(podDir, 'agent'), [
      join(logs, '0.log'),
      join(logs, '2.log'),
      join(logs, '10.log'),
    ]);
  });

  it('is empty for a container or pod with no folder', () => {
    assert.deepEqual(logFilesOnDisk(join(dir, 'pod-uid'), 'sidecar'), []);
    assert.deepEqual(logFilesOnDisk(join(dir, 'no-such-pod'), 'agent'), []);
  });
});
