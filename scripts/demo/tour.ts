// `npm run demo [-- --exit] [-- --namespace NS]`: a guided tour on the local control plane. It starts the controller
// the way `npm start` does with no cluster (local control plane, fake vendor batch APIs, a fake `claude` that echoes,
// the console), then walks through a Job run with streamed output, a failing run, queueing behind a Forbid Station,
// a batch run against the fake vendor and a realtime session, using the product's own CLI and saying what to look
// at. At the end it prints the console's one-time sign-in link and leaves everything running until Ctrl-C
// (`--exit`: stops instead; the tests use it). It never touches another cluster: $KUBECONFIG is ignored.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const args = process.argv.slice(2);
const exitAtEnd = args.includes('--exit');
const nsAt = args.indexOf('--namespace');
const NS = nsAt >= 0 ? (args[nsAt + 1] ?? 'agent-demo') : 'agent-demo';
const LOG = join(ROOT, '.testbed', 'demo-controller.log');
/** The Agents the tour creates by name (with deploy/examples/batch.yaml's and realtime.yaml's). */
const DEMO_AGENTS = [
  'broken-build',
  'queued-1',
  'queued-2',
  'queued-3',
  'queued-4',
  'batch-1',
  'summary-1',
  'pair-1',
];

const bold = (t: string) =>
  process.stdout.isTTY && process.env.NO_COLOR === undefined ? `\x1b[1m${t}\x1b[0m` : t;
const say = (title: string, ...lines: string[]) => {
  process.stdout.write(`\n${bold(`== ${title}`)}\n${lines.map((l) => `   ${l}\n`).join('')}`);
};

let controller: ChildProcess | undefined;
/** Set once the tour stops the controller itself (at the end, on a failure or a signal). */
let stopping = false;
let kubeconfig = '';
let output = '';

/** Longest a command of the tour may take (a run with --wait included) before the demo gives up. */
const COMMAND_TIMEOUT_MS = 180_000;

/** Why the demo stops; main's catch reports it and stops the controller. */
class DemoFailure extends Error {}

function fail(message: string): never {
  throw new DemoFailure(message);
}

/**
 * Stops the controller (npm start's process: it stops the controller, the fake vendors and removes its image table)
 * and waits for it, at most 30 s, then exits with `code`; with `clean`, with 1 instead when the controller did not
 * stop by itself with 0.
 */
async function stop(code: number, clean = false): Promise<never> {
  stopping = true;
  const child = controller;
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
  }
  if (clean && child?.exitCode !== 0) {
    process.stderr.write(
      `demo: the controller did not stop cleanly (${child?.exitCode ?? child?.signalCode ?? 'still running'}); its log: ${LOG}\n`,
    );
    process.exit(1);
  }
  process.exit(code);
}

/** Runs a command in the foreground; its output is the user's to see. Returns its exit code. */
function show(command: string, commandArgs: readonly string[], input?: string): number {
  const shown =
    command === process.execPath ? ['agent-controller', ...commandArgs.slice(1)] : [command, ...commandArgs];
  process.stdout.write(`\n   $ ${shown.map((a) => (/\s/.test(a) ? `'${a}'` : a)).join(' ')}\n`);
  const r = spawnSync(command, commandArgs, {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: kubeconfig, NO_COLOR: process.env.NO_COLOR ?? '' },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'inherit', 'inherit'],
    timeout: COMMAND_TIMEOUT_MS,
    ...(input !== undefined ? { input } : {}),
  });
  if (r.error !== undefined) fail(`${shown.join(' ')}: ${r.error.message}`);
  return r.status ?? 1;
}

/** Runs a command quietly and returns its stdout (fails the demo when it fails). */
function quiet(command: string, commandArgs: readonly string[]): string {
  const r = spawnSync(command, commandArgs, {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: kubeconfig },
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
  if (r.status !== 0)
    fail(`${command} ${commandArgs.join(' ')} failed: ${r.error?.message ?? r.stderr ?? r.signal}`);
  return r.stdout;
}

const cli = (...a: string[]) => show(process.execPath, [BUNDLE, ...a, '-n', NS]);
const kubectl = (...a: string[]) => quiet('bash', ['scripts/testbed', 'kubectl', ...a]);

/** Waits until the controller's output has a line matching `pattern`; returns the match. */
async function waitForOutput(pattern: RegExp, what: string, timeoutMs = 240_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = output.match(pattern);
    if (m !== null) return m;
    if (controller?.exitCode !== null && controller?.exitCode !== undefined)
      fail(`the controller exited before ${what}`);
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Polls `check` (every 250 ms) until it holds; fails the demo after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface AgentSummary {
  readonly metadata: { readonly name: string };
  readonly status?: {
    readonly phase?: string;
    readonly conditions?: readonly {
      readonly type: string;
      readonly status: string;
      readonly reason?: string;
    }[];
  };
}

/** Whether each named Agent is Pending and marked queued (Ready=False, reason Queued). */
function allQueued(names: readonly string[]): boolean {
  const list = JSON.parse(kubectl('get', 'agents', '-n', NS, '-o', 'json')) as { items: AgentSummary[] };
  return names.every((name) => {
    const a = list.items.find((x) => x.metadata.name === name);
    return (
      a?.status?.phase === 'Pending' &&
      (a.status.conditions ?? []).some(
        (c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'Queued',
      )
    );
  });
}

async function main(): Promise<void> {
  say(
    'agent-controller demo',
    'Starting the local control plane and the controller as `npm start` does (the first time this builds the',
    `control plane with Go, which takes minutes). The controller's log goes to ${LOG}.`,
  );
  // The namespace must exist before the controller takes its Lease there.
  const up = spawnSync('bash', ['scripts/testbed', 'up'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (up.status !== 0)
    fail('scripts/testbed up failed (it needs Go >= 1.26 the first time, to build the control plane)');
  kubeconfig = up.stdout.trim().split('\n').at(-1) ?? '';
  spawnSync('bash', ['scripts/testbed', 'kubectl', 'create', 'namespace', NS], {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: 'ignore',
  });
  mkdirSync(dirname(LOG), { recursive: true });
  const log = createWriteStream(LOG);
  // npm start's local mode: no kubeconfig and not in a pod, whatever this shell has.
  const env = { ...process.env };
  delete env.KUBECONFIG;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.KUBERNETES_SERVICE_PORT;
  controller = spawn(process.execPath, ['scripts/start.mjs', '--namespace', NS], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [controller.stdout, controller.stderr])
    stream?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      log.write(chunk);
    });
  controller.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`demo: the controller stopped (${code ?? signal}); its log: ${LOG}\n`);
    process.exit(code === 0 ? 1 : (code ?? 1));
  });

  const link =
    (await waitForOutput(/"url":"(http:\/\/[^"]*\/login\?code=[^"]+)"/, "the console's sign-in link"))[1] ??
    '';
  await waitForOutput(/"msg":"Started leading"/, 'the controller to lead');
  // A tour run before in this namespace left its runs: they go first (their names are taken again below, and pair-1
  // must be a new session). The controller is running, so their finalizers are handled and the delete returns.
  kubectl('delete', 'agents', ...DEMO_AGENTS, '-n', NS, '--ignore-not-found', '--timeout=120s');
  kubectl('apply', '-n', NS, '-f', 'scripts/demo/demo.yaml');

  say(
    '1. A run, its output streamed as it is written',
    'The Station `demo` pairs a recipe (AgentDefinition demo-steps) with a pod template. `run --follow` creates an',
    "Agent, waits for its Job and streams the agent's output, then the final status. Exit code = the run's.",
  );
  const first = cli('run', 'demo', '--prompt', 'fix the flaky test', '--follow');
  if (first !== 0) fail(`the first run exited ${first}`);

  say(
    '2. A run that fails',
    "The recipe demo-fail exits 3: the Agent ends Failed with that exit code and the log's tail; `--wait` exits 3 too.",
  );
  const failed = cli('run', 'demo-fail', '--name', 'broken-build', '--prompt', 'check the build', '--wait');
  process.stdout.write(`   (exit code ${failed})\n`);
  if (failed !== 3) fail(`the failing run exited ${failed}, not 3`);
  cli('describe', 'agent', 'broken-build');

  say(
    '3. Queueing: a Forbid Station runs one at a time',
    'Three runs of demo-queue at once: one Running, two Pending in order. `get -o wide` shows who waits.',
  );
  for (const n of [1, 2, 3])
    quiet(process.execPath, [
      BUNDLE,
      'run',
      'demo-queue',
      '--name',
      `queued-${n}`,
      '--prompt',
      `task ${n}`,
      '-n',
      NS,
    ]);
  await until('queued-2 and queued-3 to wait in the queue', () => allQueued(['queued-2', 'queued-3']));
  cli('get', 'agents', '-o', 'wide');
  const last = cli('run', 'demo-queue', '--name', 'queued-4', '--prompt', 'task 4', '--wait');
  if (last !== 0) fail(`queued-4 exited ${last}`);
  cli('get', 'agents', '-o', 'wide');

  say(
    '4. A batch run: no pod, the controller submits the prompt to the vendor batch API',
    'Here the "vendor" is a local fake of the Anthropic batch API (deploy/examples/batch.yaml).',
  );
  kubectl('apply', '-n', NS, '-f', 'deploy/examples/batch.yaml');
  const batch = cli(
    'run',
    'summaries',
    '--name',
    'batch-1',
    '--set',
    'text=Kubernetes runs agents as Jobs.',
    '--wait',
  );
  if (batch !== 0) fail(`the batch run exited ${batch}`);
  cli('describe', 'agent', 'batch-1');

  say(
    '5. A realtime session: a run that takes prompts',
    'deploy/examples/realtime.yaml starts pair-1; its `claude` is a local fake that echoes. `prompt` sends one turn',
    'through the controller prompt API as the ServiceAccount prompter (RBAC on agents/prompt decides).',
  );
  kubectl('apply', '-n', NS, '-f', 'deploy/examples/realtime.yaml');
  const token = kubectl('create', 'token', 'prompter', '-n', NS).trim();
  process.env.AGENT_API_TOKEN = token;
  let answered = 1;
  for (let i = 0; i < 60 && answered !== 0; i++) {
    const r = spawnSync(process.execPath, [BUNDLE, 'prompt', 'pair-1', 'what changed today?', '-n', NS], {
      cwd: ROOT,
      env: { ...process.env, KUBECONFIG: kubeconfig },
      encoding: 'utf8',
      timeout: 60_000,
    });
    answered = r.status ?? 1;
    if (answered === 0)
      process.stdout.write(`\n   $ agent-controller prompt pair-1 "what changed today?"\n${r.stdout}`);
    else await new Promise((res) => setTimeout(res, 2000));
  }
  if (answered !== 0) fail('the realtime session did not answer');
  cli('close', 'pair-1');

  say(
    'The console',
    `Open ${link}`,
    '(a one-time sign-in link for the local admin): Agents by Station and phase, each run with its status,',
    'conditions, Events, usage and live output; start a run from a Station; talk to a realtime run.',
    `Also try: KUBECONFIG=${kubeconfig} node dist/agent-controller.mjs get agents -n ${NS} -w`,
    '(or kubectl agent …, see the README)',
  );
  if (exitAtEnd) {
    process.stdout.write('\ndemo: done\n');
    await stop(0, true);
  }
  say(
    'Running',
    'The controller keeps running for the console. Ctrl-C stops it (`scripts/testbed down` stops the control plane).',
  );
}

// Ctrl-C (or a kill of this process alone): stop the controller and what npm start started, then exit.
for (const [sig, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)
  process.on(sig, () => void stop(code));

void main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`demo: ${message}\n(the controller's log: ${LOG})\n`);
  void stop(1);
});
