// The real vendor CLIs in run pods on the test node: installed once by `scripts/install-clis` at the versions pinned
// by test/clis/package-lock.json (docs/reference/vendor-clis.md#installing), and shipped in test images the way a
// user's image ships them, on the run PATH (`/usr/local/bin`).
import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import {
  controllerSkipReason,
  type E2eRuntime,
  GROUP_VERSION,
  type ImageHost,
  type Manifest,
  runPodImage,
} from './controller.ts';
import { addTestImages, testbedImage } from './testbed.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const REAL_CLIS = ['claude', 'codex', 'gemini', 'opencode'] as const;
export type RealCli = (typeof REAL_CLIS)[number];

const CliEntrySchema = v.object({
  package: v.string(),
  version: v.string(),
  kind: v.picklist(['native', 'node']),
  path: v.string(),
});
/** `clis.json` as `scripts/install-clis --json` prints it. */
const ManifestSchema = v.object({
  lockfileSha256: v.string(),
  clis: v.object({
    claude: CliEntrySchema,
    codex: CliEntrySchema,
    gemini: CliEntrySchema,
    opencode: CliEntrySchema,
  }),
});
export type CliManifest = v.InferOutput<typeof ManifestSchema>;

let manifest: CliManifest | undefined;

/** Installs (or reuses) the pinned CLIs and returns their manifest. Throws with the script's stderr when it fails. */
export function installRealClis(): CliManifest {
  if (manifest !== undefined) return manifest;
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'install-clis'), '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 600_000,
  });
  if (r.status !== 0) throw new Error(`scripts/install-clis failed (${r.status}): ${r.stderr}`);
  manifest = v.parse(ManifestSchema, JSON.parse(r.stdout.trim().split('\n').at(-1) ?? ''));
  return manifest;
}

/** Where each CLI's npm package is mounted in the images. */
const CLI_ROOT = '/opt/vendor-cli';

/** The folder of the npm package that holds `path` (`…/node_modules/<name>` or `…/node_modules/@scope/<name>`). */
export function packageRoot(path: string): string {
  const at = path.lastIndexOf('/node_modules/');
  if (at === -1) throw new Error(`${path} is not inside node_modules`);
  const parts = path.slice(at + '/node_modules/'.length).split('/');
  const name = parts[0]?.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1);
  return `${path.slice(0, at)}/node_modules/${name.join('/')}`;
}

/**
 * Test images that ship the real CLIs as npm installs them: each CLI's package under /opt (a CLI finds its own
 * resources beside its executable, e.g. Codex's bundled bubblewrap) and a launcher at `/usr/local/bin/<cli>` that
 * runs its executable (Gemini CLI with the image's `node`). `init` is the run-pod image of `runtime` with the CLIs
 * added (so the init container finds them and installs nothing), `agent` an agent-container image. Removed with the
 * scenario (`s` is a Scenario, or the benchmark's own ImageHost).
 */
export function realCliImages(
  s: ImageHost,
  runtime: E2eRuntime,
): { init: string; agent: string; manifest: CliManifest } {
  const m = installRealClis();
  const files: Record<string, string> = {};
  for (const cli of REAL_CLIS) {
    const entry = m.clis[cli];
    const root = packageRoot(entry.path);
    const mount = `${CLI_ROOT}/${cli}`;
    const executable = `${mount}${entry.path.slice(root.length)}`;
    const launcher = join(s.tempDir(), cli);
    writeFileSync(launcher, `#!/bin/sh\nexec ${entry.kind === 'node' ? 'node ' : ''}${executable} "$@"\n`);
    chmodSync(launcher, 0o755);
    files[mount] = root;
    files[`/usr/local/bin/${cli}`] = launcher;
  }
  const base = testbedImage(s.cluster, runPodImage(runtime));
  const names = { init: `agent-controller-real:${s.ns}`, agent: `real-clis:${s.ns}` };
  s.defer(
    addTestImages(s.cluster, `real-${s.ns}`, {
      [names.init]: { ...base, files: { ...(base.files as Record<string, string>), ...files } },
      [names.agent]: { entrypoint: [], files },
    }),
  );
  return { ...names, manifest: m };
}

/** Why a real-CLI e2e file skips: no cluster or bundle, or the Deno pass (the mock CLI covers that path there). */
export function realCliSkipReason(cluster: unknown, runtime: E2eRuntime): string | false {
  return (
    controllerSkipReason(cluster) ||
    (runtime === 'deno'
      ? 'the real CLIs run in the Node pass (the Deno pass covers this path with the mock CLI)'
      : false)
  );
}

/** The `agent-secrets` Secret of a namespace, holding the vendor keys a run's `resources.secrets` name. */
export function agentSecrets(keys: Readonly<Record<string, string>>): Manifest {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'agent-secrets' }, stringData: { ...keys } };
}

/** A Station pod template whose agent container is `image` (a real-CLI image), stopped within 2 s. */
export function agentTemplate(image: string): Readonly<Record<string, unknown>> {
  return { spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image }] } };
}

/**
 * A recipe of `model` for a real CLI: literal `env` (the fake's base URL), the key from agent-secrets, and `extra`
 * spec fields (which may replace the prompt).
 */
export function cliDefinition(
  name: string,
  model: string,
  env: Readonly<Record<string, string>>,
  secret: { name: string; ref: string },
  extra: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model,
      prompt: 'Leave a marker in the workspace, then say what you did.',
      resources: {
        env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
        secrets: [secret],
      },
      ...extra,
    },
  };
}
