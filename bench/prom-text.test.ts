import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerSample, resourceFigures, sumByLabel, sumSamples } from './prom-text.ts';

const EXPOSITION = `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.25
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 104857600
controller_jobs_created_total 200
controller_is_leader 1
controller_reconciles_total{result="success"} 500
controller_reconciles_total{result="requeue"} 90
controller_reconciles_total{result="error"} 6
controller_run_queue_seconds_bucket{le="1"} 3
controller_run_queue_seconds_bucket{le="+Inf"} 4
controller_run_queue_seconds_sum 6.5
controller_run_queue_seconds_count 4
controller_reconcile_duration_seconds_sum 12
controller_reconcile_duration_seconds_count 600
controller_apiserver_request_duration_seconds_sum{verb="POST",code="201"} 2
controller_apiserver_request_duration_seconds_sum{verb="POST",code="409"} 1
controller_apiserver_request_duration_seconds_count{verb="POST",code="201"} 20
controller_apiserver_request_duration_seconds_count{verb="POST",code="409"} 10
controller_apiserver_request_duration_seconds_sum{verb="GET",code="200"} 0.5
controller_apiserver_request_duration_seconds_count{verb="GET",code="200"} 5
controller_run_evidence_reads_total{source="read_ahead"} 7
controller_run_evidence_reads_total{source="live"} 2
odd_metric{path="a \\"quoted\\" } value"} 1
broken line
nan_metric NaN
`;

describe('sumSamples', () => {
  it('sums every series of exactly that name and ignores comments, buckets and garbage', () => {
    assert.equal(sumSamples(EXPOSITION, 'process_cpu_seconds_total'), 3.25);
    assert.equal(sumSamples(EXPOSITION, 'controller_reconciles_total'), 596);
    assert.equal(sumSamples(EXPOSITION, 'controller_run_queue_seconds'), undefined);
    assert.equal(sumSamples(EXPOSITION, 'controller_run_queue_seconds_count'), 4);
    assert.equal(sumSamples(EXPOSITION, 'missing'), undefined);
    assert.equal(sumSamples(EXPOSITION, 'broken'), undefined);
    assert.ok(Number.isNaN(sumSamples(EXPOSITION, 'nan_metric')));
    assert.equal(sumSamples(EXPOSITION, 'odd_metric'), 1);
  });
});

describe('sumByLabel', () => {
  it('groups by one label, summing the other label sets', () => {
    assert.deepEqual(sumByLabel(EXPOSITION, 'controller_apiserver_request_duration_seconds_sum', 'verb'), {
      POST: 3,
      GET: 0.5,
    });
    assert.deepEqual(sumByLabel(EXPOSITION, 'controller_reconciles_total', 'result'), {
      success: 500,
      requeue: 90,
      error: 6,
    });
    assert.deepEqual(sumByLabel(EXPOSITION, 'odd_metric', 'path'), { 'a "quoted" } value': 1 });
    assert.deepEqual(sumByLabel(EXPOSITION, 'process_cpu_seconds_total', 'verb'), {});
  });
});

describe('controllerSample', () => {
  it('reads the tracked figures', () => {
    const s = controllerSample(EXPOSITION);
    assert.equal(s.rssBytes, 104857600);
    assert.equal(s.cpuSeconds, 3.25);
    assert.equal(s.jobsCreated, 200);
    assert.equal(s.reconciles, 596);
    assert.equal(s.runQueueSum, 6.5);
    assert.equal(s.runQueueCount, 4);
    assert.equal(s.isLeader, 1);
    assert.equal(s.statusPatches, undefined);
    assert.deepEqual(s.reconcile, { sum: 12, count: 600 });
    assert.deepEqual(s.apiByVerb, { POST: { sum: 3, count: 30 }, GET: { sum: 0.5, count: 5 } });
    assert.deepEqual(s.evidenceBySource, { read_ahead: 7, live: 2 });
  });
});

describe('resourceFigures', () => {
  it('peak and final RSS, CPU as last minus first', () => {
    const base = controllerSample('');
    const f = resourceFigures([
      { ...base, rssBytes: 10, cpuSeconds: 1 },
      { ...base, rssBytes: 30 },
      { ...base, rssBytes: 20, cpuSeconds: 4.5 },
    ]);
    assert.equal(f.samples, 3);
    assert.equal(f.startRssBytes, 10);
    assert.equal(f.peakRssBytes, 30);
    assert.equal(f.finalRssBytes, 20);
    assert.equal(f.cpuSeconds, 3.5);
    assert.equal(f.cpuSecondsTotal, 4.5);
  });

  it('no samples: everything undefined', () => {
    const f = resourceFigures([]);
    assert.equal(f.samples, 0);
    assert.equal(f.peakRssBytes, undefined);
    assert.equal(f.cpuSeconds, undefined);
    assert.equal(f.last, undefined);
  });
});
