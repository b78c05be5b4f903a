import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_AGENTS,
  DEFAULT_BENCH_POLL_SECONDS,
  DEFAULT_CONCURRENCY,
  DEFAULT_QUEUE_AGENTS,
  DEFAULT_TTFT_BURST,
  parseBenchArgs,
} from './args.ts';

describe('parseBenchArgs', () => {
  it('defaults: N, concurrency, node runtime, both phases, timeout 10 min + N/20 min', () => {
    const r = parseBenchArgs(['--kubeconfig', '/k'], {});
    assert.ok(r.ok);
    assert.deepEqual(r.value, {
      scenario: 'runs',
      mode: 'job',
      vendor: 'anthropic',
      pollSeconds: DEFAULT_BENCH_POLL_SECONDS,
      batchList: true,
      sessions: 100,
      prompts: 5,
      streams: 200,
      agents: DEFAULT_AGENTS,
      concurrency: DEFAULT_CONCURRENCY,
      kubeconfig: '/k',
      bundle: 'dist/agent-controller.mjs',
      runtime: 'node',
      agentImage: 'agent-controller:e2e',
      baseline: true,
      controller: true,
      informerBaseline: true,
      pods: 'real',
      timeoutMs: (10 + Math.ceil(DEFAULT_AGENTS / 20)) * 60_000,
      jsonOut: undefined,
      cpuProfDir: undefined,
      apiPaths: false,
      help: false,
    });
  });

  it('reads every flag', () => {
    const r = parseBenchArgs(
      [
        '--agents=200',
        '--concurrency',
        '10',
        '--runtime',
        'deno',
        '--no-baseline',
        '--timeout-minutes',
        '3',
        '--json',
        '/tmp/x.json',
        '--bundle',
        'b.mjs',
      ],
      { KUBECONFIG: '/a:/b' },
    );
    assert.ok(r.ok);
    assert.equal(r.value.agents, 200);
    assert.equal(r.value.concurrency, 10);
    assert.equal(r.value.runtime, 'deno');
    assert.equal(r.value.agentImage, 'agent-controller:e2e-deno');
    assert.equal(r.value.kubeconfig, '/a');
    assert.equal(r.value.baseline, false);
    assert.equal(r.value.controller, true);
    assert.equal(r.value.timeoutMs, 180_000);
    assert.equal(r.value.jsonOut, '/tmp/x.json');
    assert.equal(r.value.bundle, 'b.mjs');
  });

  it('--cpu-prof takes a folder and needs the Node runtime', () => {
    const r = parseBenchArgs(['--cpu-prof', '/tmp/prof'], { KUBECONFIG: '/k' });
    assert.ok(r.ok);
    assert.equal(r.value.cpuProfDir, '/tmp/prof');
    const deno = parseBenchArgs(['--cpu-prof', '/tmp/prof', '--runtime', 'deno'], { KUBECONFIG: '/k' });
    assert.deepEqual(deno, { ok: false, error: '--cpu-prof needs --runtime node' });
  });

  it('--api-paths belongs to the queue scenario and is off by default', () => {
    const r = parseBenchArgs(['--scenario', 'queue-10k', '--api-paths'], { KUBECONFIG: '/k' });
    assert.ok(r.ok);
    assert.equal(r.value.apiPaths, true);
    const off = parseBenchArgs(['--scenario', 'queue-10k'], { KUBECONFIG: '/k' });
    assert.ok(off.ok);
    assert.equal(off.value.apiPaths, false);
    assert.deepEqual(parseBenchArgs(['--api-paths'], { KUBECONFIG: '/k' }), {
      ok: false,
      error: '--api-paths needs --scenario queue-10k',
    });
  });

  it('an explicit --agent-image wins over the runtime default', () => {
    const r = parseBenchArgs(['--kubeconfig', 'k', '--runtime', 'deno', '--agent-image', 'img:1'], {});
    assert.ok(r.ok);
    assert.equal(r.value.agentImage, 'img:1');
  });

  it('refuses bad values with one line naming the flag', () => {
    const bad: [string[], RegExp][] = [
      [['--agents', '0'], /--agents must be at least 1/],
      [['--agents', '1e3'], /--agents must be a positive integer/],
      [['--concurrency', '-1'], /concurrency/],
      [['--runtime', 'bun'], /--runtime must be node or deno/],
      [['--no-baseline', '--no-controller'], /nothing to run/],
      [['--frobnicate'], /frobnicate/],
      [['extra'], /extra|positional/i],
    ];
    for (const [argv, re] of bad) {
      const r = parseBenchArgs(['--kubeconfig', 'k', ...argv], {});
      assert.ok(!r.ok, argv.join(' '));
      assert.match(r.error, re);
    }
  });

  it('needs a cluster unless asking for help', () => {
    const r = parseBenchArgs([], {});
    assert.ok(!r.ok);
    assert.match(r.error, /--kubeconfig/);
    const h = parseBenchArgs(['-h'], {});
    assert.ok(h.ok);
    assert.equal(h.value.help, true);
  });

  it('--scenario queue-10k defaults to 10,000 Agents; an unknown scenario is refused', () => {
    const q = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'queue-10k'], {});
    assert.ok(q.ok);
    assert.equal(q.value.scenario, 'queue-10k');
    assert.equal(q.value.agents, DEFAULT_QUEUE_AGENTS);
    const small = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'queue-10k', '--agents', '200'], {});
    assert.ok(small.ok && small.value.agents === 200);
    const bad = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'soak'], {});
    assert.deepEqual(bad, { ok: false, error: '--scenario must be runs, queue-10k, ttft or gateway' });
  });
  it('--scenario ttft bursts DEFAULT_TTFT_BURST runs unless --agents says otherwise', () => {
    const t = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'ttft'], {});
    assert.ok(t.ok);
    assert.equal(t.value.scenario, 'ttft');
    assert.equal(t.value.agents, DEFAULT_TTFT_BURST);
    const full = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'ttft', '--agents', '100'], {});
    assert.ok(full.ok && full.value.agents === 100);
  });
  it('--scenario gateway: 500 calls of each kind and bursts of 200 streams unless told otherwise', () => {
    const g = parseBenchArgs(['--kubeconfig', '/k', '--scenario', 'gateway'], {});
    assert.ok(g.ok);
    assert.equal(g.value.scenario, 'gateway');
    assert.equal(g.value.agents, 500);
    assert.equal(g.value.streams, 200);
    const small = parseBenchArgs(
      ['--kubeconfig', '/k', '--scenario', 'gateway', '--agents', '50', '--streams', '20'],
      {},
    );
    assert.ok(small.ok && small.value.agents === 50 && small.value.streams === 20);
    assert.deepEqual(parseBenchArgs(['--kubeconfig', '/k', '--streams', '20'], {}), {
      ok: false,
      error: '--streams needs --scenario gateway',
    });
  });
  it('--mode batch takes a vendor, a poll period and --no-batch-list; they make no sense without it', () => {
    const r = parseBenchArgs(
      [
        '--kubeconfig',
        '/k',
        '--mode',
        'batch',
        '--vendor',
        'gemini',
        '--poll-seconds',
        '3',
        '--no-batch-list',
      ],
      {},
    );
    assert.ok(r.ok);
    assert.deepEqual(
      [r.value.mode, r.value.vendor, r.value.pollSeconds, r.value.batchList],
      ['batch', 'gemini', 3, false],
    );
    const bad = (argv: string[]) => {
      const x = parseBenchArgs(['--kubeconfig', '/k', ...argv], {});
      return x.ok ? 'ok' : x.error;
    };
    assert.equal(bad(['--mode', 'pods']), '--mode must be job, batch or realtime');
    assert.equal(bad(['--sessions', '5']), '--sessions and --prompts need --mode realtime');
    const rt = parseBenchArgs(
      ['--kubeconfig', '/k', '--mode', 'realtime', '--sessions', '20', '--prompts', '3'],
      {},
    );
    assert.ok(rt.ok);
    assert.deepEqual([rt.value.sessions, rt.value.prompts], [20, 3]);
    assert.equal(
      bad(['--mode', 'batch', '--vendor', 'mistral']),
      '--vendor must be anthropic, openai or gemini',
    );
    assert.equal(bad(['--mode', 'batch', '--poll-seconds', '0']), '--poll-seconds must be at least 1');
    assert.equal(
      bad(['--mode', 'batch', '--scenario', 'queue-10k']),
      '--mode batch runs only the runs scenario',
    );
    assert.equal(
      bad(['--vendor', 'openai']),
      '--vendor, --poll-seconds and --no-batch-list need --mode batch',
    );
  });
});
