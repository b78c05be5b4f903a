import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AGENTS_KIND, KINDS } from './kinds.ts';
import { painter } from './style.ts';
import {
  buildTable,
  cellText,
  clockDuration,
  columnWidths,
  humanAge,
  jsonPathValue,
  renderTable,
  tableHeader,
} from './table.ts';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('humanAge (kubectl ages)', () => {
  it('follows kubectl at every boundary', () => {
    const cases: [number, string][] = [
      [-3 * S, '<invalid>'],
      [-1.5 * S, '0s'],
      [0, '0s'],
      [999, '0s'],
      [59 * S, '59s'],
      [119 * S, '119s'],
      [120 * S, '2m'],
      [125 * S, '2m5s'],
      [9 * M + 59 * S, '9m59s'],
      [10 * M + 30 * S, '10m'],
      [179 * M, '179m'],
      [3 * H, '3h'],
      [3 * H + 5 * M, '3h5m'],
      [7 * H + 59 * M, '7h59m'],
      [8 * H, '8h'],
      [47 * H, '47h'],
      [2 * D, '2d'],
      [3 * D + 4 * H, '3d4h'],
      [8 * D, '8d'],
      [729 * D, '729d'],
      [730 * D, '2y'],
      [731 * D, '2y1d'],
      [8 * 365 * D, '8y'],
      [20 * 365 * D + 3 * D, '20y'],
    ];
    for (const [ms, want] of cases) assert.equal(humanAge(ms), want, `${ms} ms`);
  });

  it('clockDuration is a short running time', () => {
    assert.equal(clockDuration(-5), '0s');
    assert.equal(clockDuration(12_400), '12s');
    assert.equal(clockDuration(3 * M + 5 * S), '3m05s');
    assert.equal(clockDuration(H + 2 * M + 9 * S), '1h02m');
  });
});

describe('jsonPathValue (printer column paths)', () => {
  const obj = {
    status: { phase: 'Running', tokenUsage: { total: 0 } },
    metadata: { labels: { 'agents.re-cinq.com/default-policy': 'true' } },
  };
  it('walks dotted names, with escaped dots inside a name', () => {
    assert.equal(jsonPathValue(obj, '.status.phase'), 'Running');
    assert.equal(jsonPathValue(obj, '.status.tokenUsage.total'), 0);
    assert.equal(jsonPathValue(obj, '.metadata.labels.agents\\.re-cinq\\.com/default-policy'), 'true');
  });
  it('is undefined for missing steps, arrays, scalars and inherited names', () => {
    assert.equal(jsonPathValue(obj, '.status.jobName'), undefined);
    assert.equal(jsonPathValue(obj, '.status.phase.x'), undefined);
    assert.equal(jsonPathValue({ a: [1] }, '.a.0'), undefined);
    assert.equal(jsonPathValue({}, '.toString'), undefined);
    assert.equal(jsonPathValue(null, '.a'), undefined);
  });
});

describe('cellText', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('formats dates as ages, numbers and booleans as text, strings up to the first line break', () => {
    assert.equal(cellText({ type: 'date' }, '2026-12-01T11:55:00Z', now), '5m');
    assert.equal(cellText({ type: 'date' }, 'not a date', now), '');
    assert.equal(cellText({ type: 'integer' }, 1790, now), '1790');
    assert.equal(cellText({ type: 'boolean' }, false, now), 'false');
    assert.equal(cellText({ type: 'string' }, 'one\ntwo', now), 'one');
    assert.equal(cellText({ type: 'string' }, { a: 1 }, now), '{"a":1}');
    assert.equal(cellText({ type: 'string' }, undefined, now), '');
    assert.equal(cellText({ type: 'string' }, null, now), '');
  });
  it('never lets a terminal escape through', () => {
    assert.equal(cellText({ type: 'string' }, 'x\x1b[31mred', now), 'x^[[31mred');
  });
});

describe('get tables', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const agent = (name: string, status: Record<string, unknown> | undefined, ns = 'team') => ({
    metadata: { name, namespace: ns, creationTimestamp: '2026-12-01T11:59:00Z' },
    spec: { stationRef: 'hello' },
    ...(status !== undefined ? { status } : {}),
  });

  it("has the Agent CRD's printer columns (wide ones with -o wide) and NAMESPACE with -A", () => {
    assert.deepEqual(tableHeader(AGENTS_KIND, { wide: false, allNamespaces: false }), [
      'NAME',
      'PHASE',
      'STATION',
      'JOB',
      'AGE',
    ]);
    assert.deepEqual(tableHeader(AGENTS_KIND, { wide: true, allNamespaces: true }), [
      'NAMESPACE',
      'NAME',
      'PHASE',
      'STATION',
      'JOB',
      'AGE',
      'SESSION',
      'BATCH',
      'TOKENS',
      'COST',
      'URL',
    ]);
    const stations = KINDS.find((k) => k.name === 'stations')!;
    const definitions = KINDS.find((k) => k.name === 'definitions')!;
    assert.deepEqual(tableHeader(stations, { wide: false, allNamespaces: false }), [
      'NAME',
      'RECIPE',
      'DEADLINE',
      'AGE',
    ]);
    assert.deepEqual(tableHeader(definitions, { wide: true, allNamespaces: false }), [
      'NAME',
      'MODEL',
      'AGE',
    ]);
  });

  it('renders rows padded like kubectl: widest cell + 3, at least 6, last column unpadded', () => {
    const t = buildTable(
      AGENTS_KIND,
      [
        agent('hello-x7k2p', { phase: 'Succeeded', jobName: 'agent-job-hello-x7k2p' }),
        agent('queued', undefined),
      ],
      { wide: false, allNamespaces: false, now },
    );
    assert.deepEqual(renderTable(t).lines, [
      'NAME          PHASE       STATION   JOB                     AGE',
      'hello-x7k2p   Succeeded   hello     agent-job-hello-x7k2p   60s',
      'queued        Pending     hello                             60s',
    ]);
  });

  it('wide rows carry tokens and cost; -A the namespace', () => {
    const t = buildTable(
      AGENTS_KIND,
      [
        agent('a', {
          phase: 'Succeeded',
          sessionId: 's-1',
          tokenUsage: { total: 1790 },
          costEstimate: { usd: '0.25' },
        }),
      ],
      { wide: true, allNamespaces: true, now },
    );
    assert.deepEqual(t.rows[0], [
      'team',
      'a',
      'Succeeded',
      'hello',
      '',
      '60s',
      's-1',
      '',
      '1790',
      '0.25',
      '',
    ]);
  });

  it('colours the phase without counting the colour codes in the widths', () => {
    const t = buildTable(AGENTS_KIND, [agent('a', { phase: 'Failed' })], {
      wide: false,
      allNamespaces: false,
      now,
      paint: painter(true),
    });
    assert.equal(renderTable(t).lines[1], 'a      \x1b[31mFailed\x1b[0m   hello           60s');
    assert.deepEqual(columnWidths(t), [7, 9, 10, 6, 6]);
  });

  it('makes every cell safe before painting it: cluster text cannot drive the terminal or break the row', () => {
    const evil = 'x\x1b[2J\u202e\x9b1A\ny';
    const { lines } = renderTable({
      header: ['NAME', 'PHASE', 'MESSAGE'],
      rows: [[evil, { text: evil, paint: (t) => `<${t}>` }, evil]],
    });
    const safe = 'x^[[2J<U+202E>^[[1A y';
    assert.equal(lines.length, 2);
    assert.equal(lines[1], `${safe}   <${safe}>   ${safe}`);
    assert.doesNotMatch(lines.join('\n'), /[\x1b\x9b\u202e]/);
    const row = buildTable(AGENTS_KIND, [agent('a', { phase: 'Running\x1b[31m' })], {
      wide: false,
      allNamespaces: false,
      now,
      paint: painter(true),
    });
    assert.match(renderTable(row).lines[1] ?? '', /^a {6}\x1b\[33mRunning\^\[\[31m\x1b\[0m/);
  });

  it('keeps earlier widths for rows printed later (--watch), growing them when needed', () => {
    const first = renderTable({ header: ['NAME', 'PHASE'], rows: [['a', 'Running']] });
    assert.deepEqual(first.widths, [7, 10]);
    const later = renderTable(
      { header: ['NAME', 'PHASE'], rows: [['a-much-longer-name', 'Succeeded']] },
      { header: false, widths: first.widths },
    );
    assert.deepEqual(later.lines, ['a-much-longer-name   Succeeded']);
    assert.deepEqual(later.widths, [21, 12]);
  });
});
