import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  type CpuProfile,
  formatProfileSummary,
  parseCpuProfile,
  readCpuProfiles,
  summarizeCpuProfile,
} from './cpu-profile.ts';

const frame = (functionName: string, url = '', lineNumber = -1) => ({ functionName, url, lineNumber });

/** Samples on nodes 2 (idle), 3 (GC), 4 (admit), 5 (parse) with the given durations in µs. */
function profile(samples: [number, number][]): CpuProfile {
  return parseCpuProfile({
    nodes: [
      { id: 1, callFrame: frame('(root)') },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('(garbage collector)') },
      { id: 4, callFrame: frame('admit', 'file:///app/dist/agent-controller.mjs', 99) },
      { id: 5, callFrame: frame('', 'file:///app/dist/agent-controller.mjs', 9) },
    ],
    startTime: 0,
    endTime: 10_000_000,
    samples: samples.map(([id]) => id),
    // timeDeltas[i + 1] is the length of sample i.
    timeDeltas: [0, ...samples.map(([, us]) => us)].slice(0, samples.length),
  });
}

describe('summarizeCpuProfile', () => {
  it('splits idle, GC and busy time and ranks functions by self time with file:line (1-based)', () => {
    const s = summarizeCpuProfile(
      profile([
        [2, 6_000_000],
        [4, 2_000_000],
        [5, 1_000_000],
        [3, 500_000],
        [4, 500_000],
        [2, 0],
      ]),
    );
    assert.equal(s.wallMs, 10_000);
    assert.equal(s.idleMs, 6000);
    assert.equal(s.gcMs, 500);
    assert.equal(s.busyMs, 3500);
    assert.deepEqual(
      s.top.map((f) => [f.where, f.selfMs]),
      [
        ['admit (agent-controller.mjs:100)', 2500],
        ['(anonymous) (agent-controller.mjs:10)', 1000],
        ['(garbage collector)', 500],
      ],
    );
    assert.equal(s.top[0]?.share, 2500 / 4000);
  });

  it('keeps only the `top` heaviest and formats one line per function', () => {
    const s = summarizeCpuProfile(
      profile([
        [4, 2000],
        [5, 1000],
        [2, 0],
      ]),
      1,
    );
    assert.equal(s.top.length, 1);
    const lines = formatProfileSummary(s);
    assert.match(lines[0] ?? '', /^CPU profile: 10\.0 s wall; busy 0\.0 s/);
    assert.match(lines[2] ?? '', /2 ms\s+66\.7%\s+admit \(agent-controller\.mjs:100\)$/);
  });

  it('refuses a document that is not a profile', () => {
    assert.throws(() => parseCpuProfile({ nodes: 'x' }), /not a V8 CPU profile/);
  });
});

describe('readCpuProfiles', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cpu-prof-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the profiles written since a time, oldest first, and nothing else', () => {
    assert.deepEqual(readCpuProfiles(dir), []);
    const doc = (end: number) =>
      JSON.stringify({ nodes: [], startTime: 0, endTime: end, samples: [], timeDeltas: [] });
    for (const [name, end, at] of [
      ['before.cpuprofile', 1, 1000],
      ['b.cpuprofile', 3, 3000],
      ['a.cpuprofile', 2, 2000],
    ] as const) {
      writeFileSync(join(dir, name), doc(end));
      utimesSync(join(dir, name), at, at);
    }
    writeFileSync(join(dir, 'notes.txt'), 'x');
    const read = readCpuProfiles(dir, 2_000_000);
    assert.deepEqual(
      read.map((r) => [r.path, r.profile.endTime]),
      [
        [join(dir, 'a.cpuprofile'), 2],
        [join(dir, 'b.cpuprofile'), 3],
      ],
    );
  });
});
