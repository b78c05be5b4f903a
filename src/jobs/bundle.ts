// In-pod layout of a run pod (docs/design/reference-behaviour.md#pod-layout, with our own bundle in /agent/bin).

/** HOME of both run containers and mount point of the `agent` emptyDir. */
export const BUNDLE_ROOT = '/agent';
/** Folder the init container fills with the runtime and the bundle. */
export const BUNDLE_BIN_DIR = '/agent/bin';
/** The JavaScript runtime the init container copies from its own `process.execPath`. */
export const RUNTIME_PATH = '/agent/bin/node';
/** The bundle file the init container copies from the file it runs from. */
export const BUNDLE_PATH = '/agent/bin/agent-controller.mjs';
/** Where vendor CLI installers put their executables (`$HOME/.local/bin`). */
export const LOCAL_BIN_DIR = '/agent/.local/bin';
/** Where the OpenCode installer puts its executable (`$HOME/.opencode/bin`); on PATH, unlike the reference. */
export const OPENCODE_BIN_DIR = '/agent/.opencode/bin';
/** Claude Code state folder. */
export const CLAUDE_CONFIG_DIR = '/agent/.claude';
/** Claude Code skills folder filled by the init container. */
export const CLAUDE_SKILLS_DIR = '/agent/.claude/skills';
/** Claude Code's user settings file under the run's HOME (defined beside the Claude argv). */
export { CLAUDE_SETTINGS_PATH } from '../vendors/cli/claude.ts';
/** Mount point of the `workspace` emptyDir; value of `WORKSPACE_DIR`. */
export const DEFAULT_WORKSPACE = '/workspace';

/**
 * PATH of both run containers: the vendor CLI folders first, then the usual system folders, then our runtime
 * folder last (so `#!/usr/bin/env node` CLIs work in images without Node, while an image's own Node wins).
 */
export const RUN_PATH = [
  LOCAL_BIN_DIR,
  OPENCODE_BIN_DIR,
  '/usr/local/bin',
  '/usr/bin',
  '/bin',
  BUNDLE_BIN_DIR,
].join(':');

/** Where a container's termination message is written (the Kubernetes default `terminationMessagePath`). */
export const TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/** Name of the container the recipe is wired into; a Station template must have one. */
export const AGENT_CONTAINER_NAME = 'agent';
/** Name of the init container that injects the runtime and the bundle. */
export const INIT_CONTAINER_NAME = 'init';
/** Volume mounted at {@link BUNDLE_ROOT}. */
export const AGENT_VOLUME_NAME = 'agent';
/** Volume mounted at {@link DEFAULT_WORKSPACE}. */
export const WORKSPACE_VOLUME_NAME = 'workspace';

/** `args` of the init container; it has no `command`, so the image ENTRYPOINT runs the bundle's `init`. */
export const INIT_ARGS: readonly string[] = ['init'];

/** The agent container command: the injected runtime runs the bundle's supervisor around `vendorArgv`. */
export function supervisorCommand(vendorArgv: readonly string[]): string[] {
  return [RUNTIME_PATH, BUNDLE_PATH, 'supervisor', '--', ...vendorArgv];
}
