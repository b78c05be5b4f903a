import { atomicCopy, atomicWrite } from './fs-ops.ts';

/** File name of the runtime launcher in the bin dir; the agent container runs `<binDir>/node`. */
export const RUNTIME_FILE = 'node';
/** File name of the injected bundle in the bin dir. */
export const BUNDLE_FILE = 'agent-controller.mjs';
/** File name of the Deno executable when the init runs on Deno (then `node` is a launcher script). */
export const DENO_FILE = 'deno';

/**
 * `node` in the bin dir when the runtime is Deno: a POSIX sh launcher that runs the sibling `deno` with all
 * permissions, so `<binDir>/node <binDir>/agent-controller.mjs supervisor -- …` works unchanged. It finds `deno`
 * next to itself, so the bin dir may be moved. Needs `/bin/sh` in the agent image.
 */
export const DENO_LAUNCHER = [
  '#!/bin/sh',
  '# Written by agent-controller init: runs the bundle on the injected Deno runtime.',
  'DENO_NO_UPDATE_CHECK=1; export DENO_NO_UPDATE_CHECK',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  'exec "${0%/*}/deno" run -A "$@"',
  '',
].join('\n');

/** What gets injected: the runtime the init itself runs on and the bundle it runs from. */
export interface RuntimeSource {
  /** `process.execPath`: the Node or Deno executable. */
  readonly execPath: string;
  /** The bundle file (`fileURLToPath(import.meta.url)` of the bundle, or an override when running from source). */
  readonly bundlePath: string;
  readonly isDeno: boolean;
}

/** The files `injectSupervisor` wrote, for logs. */
export interface Injected {
  readonly runtime: string;
  readonly bundle: string;
  readonly launcher?: string;
}

/**
 * Injects a self-contained supervisor into `binDir` (which must exist): the runtime (mode 0755) and the bundle
 * (mode 0644), each written atomically (temp file + rename), so a crash never leaves a half-written executable.
 * Node: `node` is the Node executable. Deno: `deno` is the Deno executable and `node` is DENO_LAUNCHER.
 * The agent image then needs only glibc (plus libstdc++ for Node, and /bin/sh for the Deno launcher).
 */
export async function injectSupervisor(binDir: string, source: RuntimeSource): Promise<Injected> {
  const bundle = `${binDir}/${BUNDLE_FILE}`;
  await atomicCopy(source.bundlePath, bundle, 0o644);
  if (source.isDeno) {
    const runtime = `${binDir}/${DENO_FILE}`;
    await atomicCopy(source.execPath, runtime, 0o755);
    const launcher = `${binDir}/${RUNTIME_FILE}`;
    await atomicWrite(launcher, DENO_LAUNCHER, 0o755);
    return { runtime, bundle, launcher };
  }
  const runtime = `${binDir}/${RUNTIME_FILE}`;
  await atomicCopy(source.execPath, runtime, 0o755);
  return { runtime, bundle };
}
