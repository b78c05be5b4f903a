import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  countSseEvents,
  cpuTicksOfStat,
  formatGatewayReport,
  type GatewayReport,
  pairedDifference,
  phaseUsage,
  rssOfStatus,
} from './gateway-figures.ts';
import { summarize } from './stats.ts';

describe('gateway benchmark figures', () => {
  it('reads utime + stime from /proc/<pid>/stat, a command name with spaces and parentheses included', () => {
    const stat =
      '4242 (node (gw) x) S 1 4242 4242 0 -1 4194304 9000 0 12 0 1234 567 0 0 20 0 11 0 100 1000 20000 0';
    assert.equal(cpuTicksOfStat(stat), 1234 + 567);
    assert.equal(cpuTicksOfStat('garbage'), undefined);
    assert.equal(cpuTicksOfStat('1 (x) S 1 2'), undefined);
  });

  it('reads VmRSS from /proc/<pid>/status in bytes', () => {
    assert.equal(
      rssOfStatus('Name:\tnode\nVmHWM:\t  99999 kB\nVmRSS:\t   65432 kB\nThreads:\t11\n'),
      65432 * 1024,
    );
    assert.equal(rssOfStatus('Name:\tnode\n'), undefined);
  });

  it('folds samples into a phase: CPU between the samples around it, the peak RSS within', () => {
    const MiB = 1024 * 1024;
    const samples = [
      { at: 1000, rssBytes: 60 * MiB, cpuSeconds: 1 },
      { at: 2000, rssBytes: 80 * MiB, cpuSeconds: 1.5 },
      { at: 3000, rssBytes: 90 * MiB, cpuSeconds: 2.5 },
      { at: 4000, rssBytes: 70 * MiB, cpuSeconds: 3 },
      { at: 5000, rssBytes: 99 * MiB, cpuSeconds: 9 },
    ];
    assert.deepEqual(phaseUsage(samples, 1500, 3500), {
      samples: 4,
      peakRssMiB: 90,
      cpuSeconds: 2,
      cores: 2 / 3,
    });
    assert.equal(phaseUsage([{ at: 1000, rssBytes: MiB, cpuSeconds: 1 }], 0, 10), undefined);
  });

  it('counts the events of a server-sent event stream (blocks with a data line)', () => {
    const text =
      'event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n: comment\n\nevent: message_stop\ndata: {}\n\n';
    assert.equal(countSseEvents(text), 3);
    assert.equal(countSseEvents(''), 0);
  });

  it('takes differences within pairs', () => {
    const d = pairedDifference([1, 2, 3, 4], [3, 3, 9, 5]);
    assert.deepEqual([d.count, d.min, d.p50, d.max], [4, 1, 1, 6]);
  });

  it('prints every section of the report', () => {
    const s = summarize([1, 2, 3]);
    const seq = { direct: s, gateway: s, added: s };
    const report: GatewayReport = {
      runtime: 'node',
      calls: 3,
      sequentialGatewayCalls: 6,
      streamsPerBurst: 2,
      eventsPerStream: 9,
      whole: seq,
      streamed: seq,
      ttft: seq,
      bursts: [
        {
          path: 'gateway',
          round: 1,
          streams: 2,
          completed: 2,
          wallMs: 10,
          streamsPerSecond: 200,
          eventsPerSecond: 1800,
          eventsPerStream: 9,
          ttft: s,
          total: s,
        },
      ],
      idleRssMiB: 60,
      sequentialUsage: { samples: 3, peakRssMiB: 70, cpuSeconds: 0.5, cores: 0.25 },
      burstUsage: undefined,
      finalRssMiB: 71,
      gatewayCalls: 8,
      meteredRequests: 8,
      annotatedCalls: 8,
      failures: 1,
      firstFailures: ['HTTP 502'],
    };
    const text = formatGatewayReport(report);
    for (const wanted of [
      'whole added (pairs)',
      'streamed, first token gateway',
      '  gateway      1       2/2      10.0        200      1800',
      'idle RSS 60.0 MiB',
      '(83.3 ms CPU per call)',
      'bursts: no samples',
      'gateway_requests_total{code="200"} 8, usage annotation calls 8',
      'failures: 1 (first: HTTP 502)',
    ])
      assert.ok(text.includes(wanted), `${wanted} in\n${text}`);
  });
});
