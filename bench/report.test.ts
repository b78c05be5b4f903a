import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerSample, resourceFigures } from './prom-text.ts';
import { rawFigures } from './raw-figures.ts';
import { type BenchReport, fmtMiB, fmtMs, fmtRate, fmtRatio, fmtS, formatReport } from './report.ts';
import { controllerFigures, Timeline } from './timeline.ts';

describe('formatters', () => {
  it('print measured values and a dash for missing ones', () => {
    assert.equal(fmtMs(12.345), '12.3');
    assert.equal(fmtMs(1234.5), '1235');
    assert.equal(fmtMs(Number.NaN), '-');
    assert.equal(fmtMs(undefined), '-');
    assert.equal(fmtS(1500), '1.5 s');
    assert.equal(fmtRate(1.234), '1.23');
    assert.equal(fmtRate(12.34), '12.3');
    assert.equal(fmtRate(123.4), '123');
    assert.equal(fmtMiB(1048576 * 1.5), '1.5 MiB');
    assert.equal(fmtRatio(10, 4), '×2.50');
    assert.equal(fmtRatio(100, 4), '×25');
    assert.equal(fmtRatio(1, 0), '-');
    assert.equal(fmtRatio(Number.NaN, 1), '-');
  });
});

describe('formatReport', () => {
  const tl = new Timeline();
  for (let i = 0; i < 4; i++) {
    const n = `a${i}`;
    tl.postStarted(n, i);
    tl.created(n, i + 10);
    tl.jobEvent({ owner: n, trueConditions: [] }, i + 110);
    tl.jobEvent({ owner: n, trueConditions: ['Complete'] }, i + 1110);
    tl.agentEvent({ name: n, phase: 'Succeeded' }, i + 1310);
  }
  const base = controllerSample('');
  const report: BenchReport = {
    header: {
      agents: 4,
      concurrency: 2,
      runtime: 'node',
      cpus: 2,
      loadAverage: [1, 2, 3],
      node: 'v20.0.0',
      startedAt: '2026-01-01T00:00:00.000Z',
    },
    controller: {
      namespace: 'bench-x',
      figures: controllerFigures(tl.snapshot(), 4),
      resources: resourceFigures([
        { ...base, rssBytes: 50 * 1048576, cpuSeconds: 1 },
        {
          ...base,
          rssBytes: 80 * 1048576,
          cpuSeconds: 2.5,
          reconcile: { sum: 0.2, count: 10 },
          apiByVerb: { POST: { sum: 0.4, count: 4 } },
        },
      ]),
      pods: { samples: 5, peakInit: 2, peakSupervisor: 3, peakTotal: 4 },
      logWarnings: 1,
      logErrors: 0,
      firstErrors: [],
      logFile: '/tmp/log',
      watchReconnects: 0,
      watchRelists: 2,
      timedOut: false,
      cleanupMs: 1000,
    },
    raw: {
      namespace: 'bench-raw-x',
      figures: rawFigures([
        { startMs: 0, agentMs: 20, jobMs: 45, runningMs: 60, doneMs: 100 },
        { startMs: 0, agentMs: 20, jobMs: 45, runningMs: 60, doneMs: 100 },
      ]),
      cleanupMs: undefined,
    },
    totalMs: 9000,
    interrupted: false,
  };
  const text = formatReport(report);

  it('prints the controller figures', () => {
    assert.match(text, /4 Agents, client concurrency 2, controller on node/);
    assert.match(text, /4\/4 created \(0 POST failures\); 4 Succeeded, 0 Failed/);
    assert.match(text, /create → Job\s+4\s+100\s+100\s+100\s+100/);
    assert.match(text, /Job finished → Agent terminal\s+4\s+200\s+200/);
    assert.match(text, /controller RSS: idle 50\.0 MiB, peak 80\.0 MiB, final 80\.0 MiB \(2 samples/);
    assert.match(text, /controller CPU: 1\.5 s during the run/);
    assert.match(text, /reconcile 20\.0 ms × 10; API calls POST 100 ms × 4/);
    assert.match(text, /peak 4 at once \(init 2, supervisor 3; 5 samples\)/);
  });

  it('prints the raw bound and the side-by-side ratios', () => {
    assert.match(text, /POST run objects \+ Job\s+2\s+25\.0/);
    assert.match(text, /throughput 20\.0 items\/s/);
    // Without an informer baseline its column reads "-".
    assert.match(text, /create→Job p50 \(ms\) {2}vs {2}POSTs to Job\s+100\s+25\.0\s+-\s+×4\.00\s+-/);
    assert.match(text, /finished→terminal p50 \(ms\) {2}vs {2}PATCH\s+200\s+40\.0\s+-\s+×5\.00/);
    assert.match(text, /total bench time 9\.0 s/);
  });

  it('adds the informer baseline section and its ratios', () => {
    const c = report.controller;
    assert.ok(c);
    const slower = {
      ...c,
      namespace: 'bench-b-x',
      figures: { ...c.figures, createToJob: { ...c.figures.createToJob, p50: 400 } },
    };
    const both = formatReport({ ...report, baseline: slower });
    assert.match(both, /Informer baseline run: @kubernetes\/client-node informers \(namespace bench-b-x\)/);
    assert.match(both, /create→Job p50 \(ms\) {2}vs {2}POSTs to Job\s+100\s+25\.0\s+400\s+×4\.00\s+×0\.25/);
  });

  it('omits what did not run and flags an interruption', () => {
    const { controller: _dropped, ...rawOnly } = report;
    const only = formatReport({ ...rawOnly, interrupted: true });
    assert.doesNotMatch(only, /Controller run|Side by side/);
    assert.match(only, /INTERRUPTED/);
  });
});
