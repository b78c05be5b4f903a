// `npm start [-- controller flags]`: builds the bundle, then runs the controller.
// - With $KUBECONFIG (or --kubeconfig, or in a pod): against that cluster, with the flags given.
// - Without any cluster: brings up the local test control plane (scripts/testbed up; builds it with Go the first
//   time), installs the CRDs and runs the controller there in namespace `default`, run pods executed as local
//   processes by the test node agent. Ctrl-C stops the controller; `scripts/testbed down` stops the control plane.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScript } from './runtime.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const env = { ...process.env };

const [buildCmd, ...buildArgs] = runScript('scripts/build.mjs');
const built = spawnSync(buildCmd, buildArgs, { cwd: root, stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);

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
  // The test node agent maps this image to the bundle built above, so run pods get our init and supervisor.
  env.AGENT_IMAGE ??= 'agent-controller:e2e';
  if (!args.some((a) => a.startsWith('--namespace') || a === '--all-namespaces'))
    controllerArgs.push('--namespace', 'default');
  if (!args.includes('--install-crds')) controllerArgs.push('--install-crds');
  if (!args.some((a) => a.startsWith('--bind-address'))) controllerArgs.push('--bind-address', '127.0.0.1');
  console.error(`start: local control plane ready; KUBECONFIG=${env.KUBECONFIG}`);
  console.error(
    'start: try it: scripts/testbed kubectl apply -f deploy/examples/hello.yaml && scripts/testbed kubectl get agents -w',
  );
}

const [cmd, ...cmdArgs] = runScript('dist/agent-controller.mjs', ...controllerArgs);
const child = spawn(cmd, cmdArgs, { cwd: root, env, stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
