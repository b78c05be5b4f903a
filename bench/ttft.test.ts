import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentRunMarks,
  firstRequests,
  formatTtftReport,
  markerText,
  parseTimedLog,
  rawRunMarks,
  type TimedRun,
  ttftRows,
} from './ttft.ts';

const T0 = Date.parse('2026-12-06T07:00:00.000Z');

describe('parseTimedLog', () => {
  it('reads nanosecond and second timestamps, cuts to milliseconds, skips lines without one', () => {
    const lines = parseTimedLog(
      [
        '2026-12-06T07:00:00.123456789Z {"kind":"lifecycle"}',
        'no timestamp here',
        '2026-12-06T07:00:01Z plain text with  two spaces',
        '2026-12-06T09:00:00.5+02:00 offset',
        '',
      ].join('\n'),
    );
    assert.deepEqual(lines, [
      { at: T0 + 123, text: '{"kind":"lifecycle"}' },
      { at: T0 + 1000, text: 'plain text with  two spaces' },
      { at: T0 + 500, text: 'offset' },
    ]);
  });
});

describe('run marks from pod logs', () => {
  const started = '{"kind":"lifecycle","phase":"agent","status":"started"}';
  it('an Agent run: init first line, agent/started, then the first CLI event after it', () => {
    const init = [
      { at: T0 + 10, text: '{"kind":"lifecycle","phase":"init","status":"started"}' },
      { at: T0 + 90, text: 'copied' },
    ];
    const agent = [
      { at: T0 + 100, text: '{"type":"early"}' },
      { at: T0 + 120, text: started },
      { at: T0 + 130, text: '[agent] a stderr line' },
      { at: T0 + 140, text: '{"level":"info","msg":"supervisor log"}' },
      { at: T0 + 300, text: '{"type":"system","subtype":"init"}' },
      { at: T0 + 400, text: '{"type":"result"}' },
    ];
    assert.deepEqual(agentRunMarks(init, agent), {
      podStarted: T0 + 10,
      cliSpawned: T0 + 120,
      firstLine: T0 + 300,
    });
  });
  it('an Agent run that never spawned its CLI has only what was seen', () => {
    assert.deepEqual(agentRunMarks([], [{ at: T0, text: '{"type":"x"}' }]), {});
  });
  it('a raw run: the sh line is the process start and the exec, then the first CLI event', () => {
    const log = [
      { at: T0 + 5, text: 'raw started' },
      { at: T0 + 250, text: '{"type":"system"}' },
    ];
    assert.deepEqual(rawRunMarks(log), { podStarted: T0 + 5, cliSpawned: T0 + 5, firstLine: T0 + 250 });
    assert.deepEqual(rawRunMarks([]), {});
  });
});

describe('firstRequests', () => {
  it('takes the earliest model request carrying each marker, never a prefix of another marker', () => {
    const body = (m: string) => ({ messages: [{ role: 'user', content: `say done ${markerText(m)}` }] });
    const got = firstRequests(
      [
        { method: 'POST', path: '/v1/messages', body: body('r-10'), at: T0 + 50 },
        { method: 'POST', path: '/v1/messages', body: body('r-1'), at: T0 + 70 },
        { method: 'POST', path: '/v1/messages', body: body('r-1'), at: T0 + 60 },
        { method: 'POST', path: '/v1/messages/count_tokens', body: body('r-2'), at: T0 + 1 },
        { method: 'GET', path: '/v1/messages', body: undefined, at: T0 + 2 },
      ],
      ['r-1', 'r-2', 'r-10'],
    );
    assert.deepEqual([...got.entries()].sort(), [
      ['r-1', T0 + 60],
      ['r-10', T0 + 50],
    ]);
  });
});

describe('ttftRows and the report', () => {
  const run = (
    cli: TimedRun['cli'],
    path: TimedRun['path'],
    phase: TimedRun['phase'],
    i: number,
    marks: Omit<TimedRun['marks'], 'created'>,
  ): TimedRun => ({ cli, path, phase, name: `${cli}-${i}`, marks: { created: T0, ...marks } });

  it('summarises each interval per group, counts runs missing a mark, and leaves out unseen intervals', () => {
    const runs: TimedRun[] = [
      run('claude', 'controller', 'burst', 1, {
        podStarted: T0 + 100,
        cliSpawned: T0 + 200,
        firstRequest: T0 + 1200,
      }),
      run('claude', 'controller', 'burst', 2, { podStarted: T0 + 300, cliSpawned: T0 + 400 }),
      run('claude', 'controller', 'idle', 0, { cliSpawned: T0 + 50, firstRequest: T0 + 650 }),
      run('mock', 'raw', 'idle', 0, { podStarted: T0 + 20, cliSpawned: T0 + 20, firstLine: T0 + 80 }),
    ];
    const rows = ttftRows(runs);
    assert.deepEqual(
      rows.map((r) => [
        r.phase,
        r.cli,
        r.path,
        r.interval,
        r.runs,
        r.summary.count,
        r.summary.p50,
        r.summary.max,
      ]),
      [
        ['idle', 'claude', 'controller', 'created → CLI spawned', 1, 1, 50, 50],
        ['idle', 'claude', 'controller', 'created → first request', 1, 1, 650, 650],
        ['idle', 'claude', 'controller', 'CLI spawned → first request', 1, 1, 600, 600],
        ['idle', 'mock', 'raw', 'created → pod process', 1, 1, 20, 20],
        ['idle', 'mock', 'raw', 'created → CLI spawned', 1, 1, 20, 20],
        ['idle', 'mock', 'raw', 'created → CLI first line', 1, 1, 80, 80],
        ['burst', 'claude', 'controller', 'created → pod process', 2, 2, 100, 300],
        ['burst', 'claude', 'controller', 'created → CLI spawned', 2, 2, 200, 400],
        ['burst', 'claude', 'controller', 'created → first request', 2, 1, 1200, 1200],
        ['burst', 'claude', 'controller', 'CLI spawned → first request', 2, 1, 1000, 1000],
      ],
    );
    const text = formatTtftReport({
      idleRuns: 1,
      burst: 2,
      claudeVersion: '2.1.332',
      runs,
      rows,
      burstWallMs: { 'claude-controller': 1500 },
      claudePeak: { rssMiB: 512, processes: 2 },
      notes: ['a note'],
    });
    assert.match(text, /claude controller burst {2}created → first request +1\/2 +1200 +1200 +1200 +1200/);
    assert.match(text, /burst wall time \(first POST → last mark\): claude-controller 1\.5 s/);
    assert.match(text, /peak 2 at once, 512 MiB/);
    assert.match(text, /note: a note/);
  });
});
