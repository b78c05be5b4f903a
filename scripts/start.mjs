// `npm start [-- controller flags]`: builds the bundle, then runs the controller.
// - With $KUBECONFIG (or --kubeconfig, or in a pod): against that cluster, with the flags given.
// - Without any cluster: brings up the local test control plane (scripts/testbed up; builds it with Go the first
//   time), installs the CRDs and runs the controller there in namespace `default`, run pods executed as local
//   processes by the test node agent. Ctrl-C stops the controller; `scripts/testbed down` stops the control plane.
//   Batch runs are on (BATCH_ENABLED=true) against local fakes of the Anthropic, OpenAI and Gemini batch APIs
//   (test/support/fake-vendors/serve.ts), so deploy/examples/batch.yaml runs without a vendor account.
//   Realtime runs are on (REALTIME_ENABLED=true, prompt API on 127.0.0.1:8443) and run pods find a fake `claude` (the
//   mock agent CLI echoing each prompt) in the init image and in `debian:bookworm-slim`, through a test-node image
//   table (.testbed/images.d/npm-start.json, removed on exit), so deploy/examples/realtime.yaml runs locally too.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScript } from './runtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const env = { ...process.env };

const [buildCmd, ...buildArgs] = runScript('scripts/build.mjs');
const built = spawnSync(buildCmd, buildArgs, { cwd: root, stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);

/** The fake vendor batch APIs (local default only), stopped with the controller. */
let fakeVendors;

/** Starts the fake vendor batch APIs and points the controller at them with batch execution on. */
async function startFakeVendors(target) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/fake-vendors/serve.ts'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  fakeVendors = child;
  const line = await new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const nl = buffered.indexOf('\n');
      if (nl >= 0) resolve(buffered.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`the fake vendor APIs exited (${code})`)));
  });
  const vendors = JSON.parse(line);
  target.BATCH_ENABLED ??= 'true';
  target.BATCH_POLL_SECONDS ??= '2';
  target.ANTHROPIC_BASE_URL ??= vendors.anthropic.baseUrl;
  target.OPENAI_BASE_URL ??= vendors.openai.baseUrl;
  target.GEMINI_BASE_URL ??= vendors.gemini.baseUrl;
  console.error(
    'start: batch runs go to local fakes of the vendor batch APIs: scripts/testbed kubectl apply -f deploy/examples/batch.yaml',
  );
}

/** The image table npm start adds to the local test node (fake claude), removed on exit. */
let fakeCliTable;

/**
 * Gives run pods of the local control plane a fake `claude` on /usr/local/bin: in the init image (so nothing is
 * installed) and in `debian:bookworm-slim` (the examples' agent container), and turns realtime runs on.
 */
function startFakeClaude(target, kubeconfig) {
  const state = dirname(kubeconfig);
  const info = JSON.parse(readFileSync(join(state, 'testbed.json'), 'utf8'));
  if (!info.imageDir) return;
  const dir = join(state, 'npm-start');
  mkdirSync(dir, { recursive: true });
  const wrapper = join(dir, 'claude');
  writeFileSync(
    wrapper,
    '#!/bin/sh\nMOCK_STYLE=claude MOCK_ECHO_PROMPT=1 exec node /opt/fake-cli/mock-agent.mjs "$@"\n',
  );
  chmodSync(wrapper, 0o755);
  const files = {
    '/usr/local/bin/claude': wrapper,
    '/opt/fake-cli/mock-agent.mjs': join(root, 'test', 'mock-agent', 'mock-agent.mjs'),
  };
  const base = JSON.parse(readFileSync(info.imageTable, 'utf8'))['agent-controller:e2e'];
  fakeCliTable = join(info.imageDir, 'npm-start.json');
  writeFileSync(
    fakeCliTable,
    `${JSON.stringify(
      {
        'agent-controller:local': { ...base, files: { ...base.files, ...files } },
        'debian:bookworm-slim': { entrypoint: [], files },
      },
      null,
      2,
    )}\n`,
  );
  target.AGENT_IMAGE ??= 'agent-controller:local';
  target.REALTIME_ENABLED ??= 'true';
  // The test bed's session store (versitygw, issue 29), its credentials in the controller's environment only.
  if (info.sessionStore && target.AGENT_SESSION_STORE_URL === undefined) {
    const credentials = JSON.parse(readFileSync(info.sessionStore.credentialsFile, 'utf8'));
    target.AGENT_SESSION_STORE_URL = info.sessionStore.endpoint;
    target.AGENT_SESSION_STORE_BUCKET = info.sessionStore.bucket;
    target.AGENT_SESSION_STORE_REGION = info.sessionStore.region;
    target.AGENT_SESSION_STORE_ACCESS_KEY_ID = credentials.accessKeyId;
    target.AGENT_SESSION_STORE_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  }
  target.SERVER_ENABLED ??= 'true';
  console.error(
    'start: realtime runs use a fake claude that echoes each prompt: scripts/testbed kubectl apply -f deploy/examples/realtime.yaml',
  );
  console.error(
    'start: servers (OpenAI-compatible endpoints) use it too: scripts/testbed kubectl apply -f deploy/examples/server.yaml',
  );
}

const hasCluster =
  Boolean(env.KUBECONFIG) ||
  args.some((a) => a.startsWith('--kubeconfig')) ||
  Boolean(env.KUBERNETES_SERVICE_HOST);
const controllerArgs = ['controller', ...args];
if (!hasCluster) {
  console.error(
    'start: no $KUBECONFIG and not in a cluster: bringing up the local control plane (scripts/testbed up)',
  );
  const up = spawnSync('bash', ['scripts/testbed', 'up'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (up.status !== 0) {
    console.error(
      'start: scripts/testbed up failed (it needs Go >= 1.26 the first time, to build the control plane)',
    );
    process.exit(1);
  }
  env.KUBECONFIG = String(up.stdout).trim().split('\n').at(-1);
  // The test node agent maps this image to the bundle built above, so run pods get our init and supervisor
  // (npm start's own copy of it, with a fake claude, replaces it below when the node reads an image folder).
  if (!args.some((a) => a.startsWith('--namespace') || a === '--all-namespaces'))
    controllerArgs.push('--namespace', 'default');
  if (!args.includes('--install-crds')) controllerArgs.push('--install-crds');
  if (!args.some((a) => a.startsWith('--bind-address'))) controllerArgs.push('--bind-address', '127.0.0.1');
  // The web console on 127.0.0.1:8082; the controller prints a one-time sign-in link for the kubeconfig's user.
  if (!args.includes('--console') && env.CONSOLE_ENABLED === undefined) controllerArgs.push('--console');
  await startFakeVendors(env);
  startFakeClaude(env, env.KUBECONFIG);
  env.AGENT_IMAGE ??= 'agent-controller:e2e';
  console.error(`start: local control plane ready; KUBECONFIG=${env.KUBECONFIG}`);
  console.error(
    'start: try it: scripts/testbed kubectl apply -f deploy/examples/hello.yaml && scripts/testbed kubectl get agents -w',
  );
  console.error('start: or open the console with the one-time link the controller logs ("Open the console")');
}

const [cmd, ...cmdArgs] = runScript('dist/agent-controller.mjs', ...controllerArgs);
const child = spawn(cmd, cmdArgs, { cwd: root, env, stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => {
  fakeVendors?.kill('SIGTERM');
  if (fakeCliTable) rmSync(fakeCliTable, { force: true });
  process.exit(code ?? (signal ? 1 : 0));
});
