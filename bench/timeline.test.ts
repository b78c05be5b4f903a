import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerFigures, Timeline } from './timeline.ts';

const job = (owner: string | undefined, ...trueConditions: string[]) => ({ owner, trueConditions });

/** One Agent's whole life: POST at t, returned at t+10, Job at t+60, verdict at t+1060, terminal at t+1100. */
function life(tl: Timeline, name: string, t: number, phase = 'Succeeded'): void {
  tl.postStarted(name, t);
  tl.created(name, t + 10);
  tl.agentEvent({ name, phase: undefined }, t + 12);
  tl.jobEvent(job(name), t + 60);
  tl.agentEvent({ name, phase: 'Running' }, t + 70);
  tl.jobEvent(job(name, 'SuccessCriteriaMet'), t + 1060);
  tl.jobEvent(job(name, 'SuccessCriteriaMet', 'Complete'), t + 1080);
  tl.agentEvent({ name, phase }, t + 1100);
}

describe('Timeline', () => {
  it('records the first sighting of each milestone only', () => {
    const tl = new Timeline();
    life(tl, 'a', 0);
    // Replays (a re-list after a reconnect) must not move any timestamp.
    tl.created('a', 500);
    tl.jobEvent(job('a', 'Complete'), 5000);
    tl.agentEvent({ name: 'a', phase: 'Failed' }, 6000);
    const a = tl.snapshot().get('a');
    assert.deepEqual(a, {
      postStartMs: 0,
      createdMs: 10,
      jobSeenMs: 60,
      jobFinishedMs: 1060,
      jobVerdict: 'SuccessCriteriaMet',
      terminalMs: 1100,
      phase: 'Succeeded',
    });
  });

  it('ignores Jobs without an owning Agent and conditions that are not verdicts', () => {
    const tl = new Timeline();
    tl.jobEvent(job(undefined, 'Complete'), 5);
    tl.jobEvent(job('b', 'Suspended'), 7);
    assert.deepEqual([...tl.snapshot().keys()], ['b']);
    assert.equal(tl.snapshot().get('b')?.jobFinishedMs, undefined);
    tl.jobEvent(job('b', 'FailureTarget'), 9);
    assert.equal(tl.snapshot().get('b')?.jobVerdict, 'FailureTarget');
  });

  it('an Agent deleted before it was seen terminal is lost; one deleted after is not', () => {
    const tl = new Timeline();
    tl.created('x', 1);
    tl.agentEvent({ name: 'x', phase: 'Running' }, 2, true);
    life(tl, 'y', 0);
    tl.agentEvent({ name: 'y', phase: 'Succeeded' }, 2000, true);
    assert.equal(tl.snapshot().get('x')?.lostMs, 2);
    assert.equal(tl.snapshot().get('y')?.lostMs, undefined);
    assert.equal(tl.settled(), 2);
  });

  it('counts progress over created Agents only (a watch may see an Agent before its POST returns)', () => {
    const tl = new Timeline();
    tl.agentEvent({ name: 'early', phase: undefined }, 1);
    tl.jobEvent(job('early'), 2);
    assert.deepEqual(tl.progress(), { created: 0, jobs: 0, finished: 0, terminal: 0 });
    tl.postStarted('early', 0);
    tl.created('early', 3);
    assert.deepEqual(tl.progress(), { created: 1, jobs: 1, finished: 0, terminal: 0 });
    assert.equal(tl.settled(), 0);
  });
});

describe('controllerFigures', () => {
  it('computes latencies, wall time and throughput from the timestamps', () => {
    const tl = new Timeline();
    for (let i = 0; i < 10; i++) life(tl, `a${i}`, i * 100, i === 9 ? 'Failed' : 'Succeeded');
    const f = controllerFigures(tl.snapshot(), 10);
    assert.equal(f.created, 10);
    assert.equal(f.succeeded, 9);
    assert.equal(f.failed, 1);
    assert.equal(f.unfinished, 0);
    assert.equal(f.lost, 0);
    assert.equal(f.createFailures, 0);
    assert.deepEqual(f.verdicts, { SuccessCriteriaMet: 10 });
    assert.equal(f.createToJob.p50, 50);
    assert.equal(f.createToJob.count, 10);
    assert.equal(f.finishedToTerminal.p99, 40);
    assert.equal(f.createToTerminal.max, 1090);
    assert.equal(f.jobRun.p50, 1000);
    assert.equal(f.post.p50, 10);
    // First POST at 0; last created at 910; last terminal at 1000 + 900 + 200; last Job at 960.
    assert.equal(f.createWallMs, 910);
    assert.equal(f.wallMs, 2000);
    assert.equal(f.agentsPerSecond, 5);
    assert.equal(f.jobsPerSecond, (10 * 1000) / 960);
    // Jobs run [60+100i, 1060+100i): ten overlap at once.
    assert.equal(f.peakJobsInFlight, 10);
  });

  it('counts failed POSTs, unfinished Agents, and leaves unmeasured figures NaN', () => {
    const tl = new Timeline();
    tl.postStarted('failed-post', 0);
    tl.postStarted('stuck', 1);
    tl.created('stuck', 5);
    tl.jobEvent(job('stuck'), 9);
    const f = controllerFigures(tl.snapshot(), 3);
    assert.equal(f.requested, 3);
    assert.equal(f.created, 1);
    assert.equal(f.createFailures, 1);
    assert.equal(f.unfinished, 1);
    assert.equal(f.createToJob.p50, 4);
    assert.equal(f.finishedToTerminal.count, 0);
    assert.ok(Number.isNaN(f.wallMs));
    assert.ok(Number.isNaN(f.agentsPerSecond));
    assert.equal(f.peakJobsInFlight, 1);
  });
});
