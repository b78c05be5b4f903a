// The project's test command: `npm test` (all tiers), `npm test -- unit`, `npm test -- e2e`, `npm test -- chaos`.
// unit:  every *.test.ts under src/, test/{unit,host,node-agent,support,chaos}/ (but test/chaos/profile) and bench/
//        on Node (tsx loader); host tests run real processes.
// e2e:   builds the bundle, brings up the local control plane (scripts/testbed up, with --real-node under CI or as
//        root with containerd installed: the real node's files run in the Node pass), and has the tools the e2e tier
//        uses installed (scripts/install-clis: the real vendor CLIs from npm) and built from their Go modules
//        (scripts/build-versitygw, build-otelcol, build-helm, build-promtool); cached after the first time; one after the other, in
//        the background from the start, while the unit tier runs; then runs
//        test/e2e/*.test.ts once per runtime with AGENT_E2E_RUNTIME set, one file at a time per lane, in two lanes
//        side by side (Node; Deno, then Node's real-CLI files); then, one runtime after the other, the files marked
//        `// e2e: alone` on their first line.
// chaos: the short chaos profile (test/chaos/profile), alone on the control plane after the e2e tiers: it restarts
//        the API server and compacts etcd.
// `npm run chaos -- [--minutes N] [--seed N] …` (tier `chaos-run`): one long chaos run, its report on stdout.
// Skips: at the end of each tier every skipped test or suite is listed with its reason (scripts/skip-reporter.mjs);
// under CI (CI=true) a tier fails on any skip that test/skips-allowed.json does not allow for CI's machine.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE, runScript } from './runtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chaosRun = process.argv[2] === 'chaos-run';
const tiers = chaosRun ? ['chaos-run'] : process.argv.slice(2).filter((a) => !a.startsWith('-'));
const wanted = tiers.length > 0 ? tiers : ['unit', 'e2e', 'chaos'];

function findTests(dir) {
  const out = [];
  let entries = [];
  try {
    entries = readdirSync(join(root, dir));
  } catch {
    return out;
  }
  for (const name of entries) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...findTests(rel));
    else if (name.endsWith('.test.ts')) out.push(rel);
  }
  return out.sort();
}

function run(cmd, args, env = {}) {
  console.log(`\n$ ${cmd} ${args.map((a) => relative(root, a) || a).join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function skipsFileOf(tier, part) {
  return join(
    tmpdir(),
    `agent-controller-skips-${process.pid}-${`${tier}-${part}`.replace(/\W+/g, '-')}.jsonl`,
  );
}

function testArgs(skipsFile, extra, files) {
  const reporters = [
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts', 'skip-reporter.mjs')}`,
    `--test-reporter-destination=${skipsFile}`,
  ];
  return ['--import', 'tsx', '--test', ...reporters, ...extra, ...files];
}

/** Runs `files` with node:test as tier `tier`; then lists its skips (and, under CI, checks them). */
async function nodeTest(tier, files, env, extra = []) {
  const status = await nodeTestPart(tier, 'all', files, env, extra);
  return status === 0 && checkSkips(tier, ['all']) ? 0 : 1;
}

/**
 * Runs `files` with node:test as part `part` of tier `tier` (its skips go to
 * `skipsFileOf(tier, part)`). With `logFile`, the output goes there instead of this process's stdout (a pass that
 * runs beside another, printed when it ends). Resolves with the exit status.
 */
function nodeTestPart(tier, part, files, env, extra, logFile) {
  const skipsFile = skipsFileOf(tier, part);
  rmSync(skipsFile, { force: true });
  if (files.length === 0) return Promise.resolve(0);
  const args = testArgs(skipsFile, extra, files);
  console.log(
    `\n$ ${NODE} ${args.map((a) => relative(root, a) || a).join(' ')}${logFile ? ' (output below when it ends)' : ''}`,
  );
  const out = logFile === undefined ? 'inherit' : openSync(logFile, 'w');
  const child = spawn(NODE, args, {
    cwd: root,
    stdio: ['ignore', out, out],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve) => {
    child.on('error', () => resolve(1));
    child.on('close', (code) => {
      if (typeof out === 'number') closeSync(out);
      resolve(code ?? 1);
    });
  });
}

/**
 * Prints every skip of `tier` with its reason. Under CI, returns false when one is not on test/skips-allowed.json
 * (a group per reason: the tier, why CI's machine skips it, and the exact skips, by file and test name).
 */
function reportSkips(tier, skipsFiles) {
  const skips = skipsFiles
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, 'utf8').split('\n'))
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
    .map((s) => ({ ...s, file: s.file === '' ? '' : relative(root, s.file) }));
  if (skips.length === 0) {
    console.log(`\n${tier}: nothing skipped`);
    return true;
  }
  console.log(`\n${tier}: ${skips.length} skipped`);
  for (const s of skips) console.log(`  - ${s.file} › ${s.name}: ${s.reason || '(no reason given)'}`);
  if (process.env.CI !== 'true') return true;
  const groups = JSON.parse(readFileSync(join(root, 'test', 'skips-allowed.json'), 'utf8')).allowed;
  const allowed = (s) =>
    groups.some((g) => g.tier === tier && g.skips.some((a) => a.file === s.file && a.test === s.name));
  const refused = skips.filter((s) => !allowed(s));
  if (refused.length === 0) return true;
  console.error(
    `\n${tier}: ${refused.length} skipped that CI's machine must run (not in test/skips-allowed.json):`,
  );
  for (const s of refused) console.error(`  - ${s.file} › ${s.name}: ${s.reason || '(no reason given)'}`);
  return false;
}

/** `reportSkips` over the parts of `tier` that ran, whose skip files it then removes. */
function checkSkips(tier, parts) {
  const files = parts.map((p) => skipsFileOf(tier, p));
  const ok = reportSkips(tier, files);
  for (const f of files) rmSync(f, { force: true });
  return ok;
}

/**
 * The tools of the e2e tier (the real vendor CLIs, then the Go tools), installed or built one after the other by one background shell (each is a Go build of minutes
 * when not cached; two at once on two cores only slow each other; the unit tier runs beside it).
 * Resolves with the names of those that failed.
 * The shell leads a process group of its own, and a watcher in it ends that whole group (the build scripts and their
 * `go` processes) as soon as this process goes away however it ends (a failed unit tier's exit, Ctrl-C, a kill):
 * the watcher reads the shell's stdin, whose other end only this process holds. No build outlives `npm test`.
 */
function buildGoTools() {
  // In the order the e2e files that use them run (helm-chart, monitoring, tracing: otelcol is small and first).
  // install-clis first: the real vendor CLIs (an npm install of under a minute, cached), used by the real-CLI files.
  // versitygw next: `scripts/testbed up` starts it as the session store (it waits for this build when it runs first).
  const tools = ['install-clis', 'versitygw', 'otelcol', 'helm', 'promtool'];
  console.log(`\n$ scripts/{${tools.join(',')}} (in the background, one after the other)`);
  const script = [
    'exec 3<&0 </dev/null',
    '(cat <&3 >/dev/null; kill -TERM 0) >/dev/null 2>&1 &',
    'exec 3<&-',
    `for t in ${tools.join(' ')}; do s="scripts/build-$t"; [ -f "$s" ] || s="scripts/$t"; bash "$s" >/dev/null || echo "$t"; done`,
  ].join('\n');
  const child = spawn('bash', ['-c', script], {
    cwd: root,
    detached: true,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  // 'close', not 'exit': the names the shell printed last may still be in the pipe when it exits.
  return new Promise((resolve) => {
    child.on('error', () => resolve(tools));
    child.on('close', () => resolve(out.split('\n').filter((t) => t !== '')));
  });
}
// Only the e2e tier uses them (the chaos profile does not).
const goTools = wanted.includes('e2e') ? buildGoTools() : undefined;

let failed = false;
if (wanted.includes('unit')) {
  const files = [
    ...findTests('src'),
    ...findTests('test/unit'),
    ...findTests('test/host'),
    ...findTests('test/node-agent'),
    ...findTests('test/support'),
    ...findTests('test/chaos').filter((f) => !f.startsWith(join('test', 'chaos', 'profile'))),
    ...findTests('bench'),
  ];
  if ((await nodeTest('unit', files, {})) !== 0) failed = true;
}
/**
 * Whether the e2e tier starts the real node too (`testbed up --real-node`, docs/design/real-node.md): always under
 * CI (its machine has root and `scripts/install-node-runtime` ran), else when this machine can (root, containerd
 * installed); AGENT_TESTBED_REAL_NODE=0 opts out. Without it the real-node files skip, saying why.
 */
function realNodeWanted() {
  if (process.env.AGENT_TESTBED_REAL_NODE === '0') return false;
  if (process.env.CI === 'true') return true;
  return process.getuid?.() === 0 && existsSync('/usr/bin/containerd');
}

/** Builds the bundle and brings up the control plane (and the test collector) once; returns the kubeconfig. */
let prepared;
async function prepareCluster(realNode = false) {
  if (prepared !== undefined) return prepared;
  const [buildCmd, ...buildArgs] = runScript('scripts/build.mjs');
  if (run(buildCmd, buildArgs) !== 0) process.exit(1);
  if (!realNode && wanted.includes('e2e'))
    console.log('test: not starting the real node (needs root and scripts/install-node-runtime)');
  const up = spawnSync('bash', ['scripts/testbed', 'up', ...(realNode ? ['--real-node'] : [])], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = String(up.stdout).trim().split('\n');
  process.stdout.write(`${lines.slice(0, -1).join('\n')}\n`);
  if (up.status !== 0) {
    console.error('test: scripts/testbed up failed');
    process.exit(1);
  }
  // Not waited for: the e2e files that use a tool build it on demand, waiting on the build in progress (the build
  // scripts hold a lock), and most e2e files need none.
  void goTools?.then((failedTools) => {
    for (const tool of failedTools)
      console.error(`test: scripts/${tool} failed (the tests that need it will say why)`);
  });
  prepared = lines.at(-1);
  return prepared;
}

/**
 * The e2e files that must run with no other file beside them: their first line says `// e2e: alone — <why>` (they
 * restart a control-plane component, compact etcd, or swap a cluster-wide object the others rely on).
 */
function runsAlone(file) {
  return /^\/\/ e2e: alone\b/.test(readFileSync(join(root, file), 'utf8').split('\n', 1)[0] ?? '');
}

/**
 * The e2e files of the first runtime's pass that run in the second lane, after the other runtimes' passes: the
 * real-CLI files (`real-cli-*`, Node only, long: the CLIs' own retries and deadlines), so that the two lanes take
 * about as long as each other.
 */
function runsInSecondLane(file) {
  return /^real-cli-/.test(file.split('/').at(-1) ?? '');
}

/**
 * The e2e tier: once per runtime (AGENT_E2E_RUNTIMES, default `node,deno`), one file at a time within a pass. Two
 * lanes run side by side (each file has namespaces of its own; most of an e2e file's time is spent waiting on the
 * cluster): the first runtime's pass (its output live), and the other runtimes' passes followed by the first
 * runtime's real-CLI files (their output printed when the lane ends). Then the files that must run alone, one runtime
 * after the other. Each runtime is still its own tier for the skip report.
 */
async function e2eTier(kubeconfig) {
  const files = findTests('test/e2e');
  const alone = files.filter(runsAlone);
  const shared = files.filter((f) => !alone.includes(f));
  const runtimes = (process.env.AGENT_E2E_RUNTIMES ?? 'node,deno').split(',');
  const [first, ...others] = runtimes;
  const tierOf = (runtime) => `e2e (${runtime})`;
  const envOf = (runtime) => ({ KUBECONFIG: kubeconfig, AGENT_E2E_RUNTIME: runtime });
  const extra = ['--test-concurrency=1'];
  const laneLog = (name) => join(tmpdir(), `agent-controller-e2e-${process.pid}-${name}.log`);
  const secondLane = [
    ...others.map((r) => ({ runtime: r, part: 'shared', files: shared })),
    { runtime: first, part: 'second-lane', files: shared.filter(runsInSecondLane) },
  ];
  const [firstStatus, secondStatus] = await Promise.all([
    nodeTestPart(
      tierOf(first),
      'shared',
      shared.filter((f) => !runsInSecondLane(f)),
      envOf(first),
      extra,
    ),
    (async () => {
      const statuses = [];
      for (const [i, p] of secondLane.entries())
        statuses.push(
          await nodeTestPart(tierOf(p.runtime), p.part, p.files, envOf(p.runtime), extra, laneLog(i)),
        );
      return statuses;
    })(),
  ]);
  for (const [i, p] of secondLane.entries()) {
    if (p.files.length === 0) continue;
    console.log(
      `\n=== ${tierOf(p.runtime)}: ${p.part === 'shared' ? 'the files' : 'the real-CLI files'}, in the second lane\n`,
    );
    process.stdout.write(readFileSync(laneLog(i), 'utf8'));
    rmSync(laneLog(i), { force: true });
  }
  let ok = firstStatus === 0 && secondStatus.every((s) => s === 0);
  for (const r of runtimes) {
    if (alone.length > 0) console.log(`\n=== ${tierOf(r)}: the files that run alone`);
    if ((await nodeTestPart(tierOf(r), 'alone', alone, envOf(r), extra)) !== 0) ok = false;
    if (!checkSkips(tierOf(r), ['shared', 'second-lane', 'alone'])) ok = false;
  }
  return ok;
}

if (wanted.includes('e2e') && !failed) {
  const kubeconfig = await prepareCluster(realNodeWanted());
  if (!(await e2eTier(kubeconfig))) failed = true;
}
if (wanted.includes('chaos') && !failed) {
  const kubeconfig = await prepareCluster();
  if (
    (await nodeTest('chaos', findTests(join('test', 'chaos', 'profile')), { KUBECONFIG: kubeconfig })) !== 0
  )
    failed = true;
}
if (wanted.includes('chaos-run')) {
  const kubeconfig = await prepareCluster();
  const args = ['--import', 'tsx', join(root, 'test', 'chaos', 'run.ts'), ...process.argv.slice(3)];
  if (run(NODE, args, { KUBECONFIG: kubeconfig }) !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
