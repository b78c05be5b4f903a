import type { Tool } from './steps.ts';

/** The facts about the routed vendor CLI that the init needs (supplied by `src/vendors/cli`). */
export interface CliFacts {
  /** Vendor name, used as the tool name in `init/running` (`claude`, `codex`, `opencode`, `gemini`, `exec`). */
  readonly vendor: string;
  /** Executable on PATH; undefined when the vendor has none of its own (`exec`). */
  readonly binary: string | undefined;
  /** Installer; undefined when nothing is installed. */
  readonly installer: { readonly script: string; readonly requires: readonly string[] } | undefined;
  /** Conversation state folder relative to HOME; undefined = no restore. */
  readonly stateDir: string | undefined;
}

/**
 * The vendor CLI tool (docs/design/reference-behaviour.md#init-steps,
 * docs/design/reference-behaviour.md#vendor-routing-and-argv): `mkdir -p $HOME/.local/bin`, then
 * `bash -o pipefail -c "<installer script>"` with HOME set. Undefined when the vendor has no installer or no
 * binary. The executor skips the tool when the binary is already on PATH, so an image that ships the CLI never
 * downloads it.
 */
export function planVendorCli(cli: CliFacts, home: string): Tool | undefined {
  if (cli.installer === undefined || cli.binary === undefined) return undefined;
  return {
    name: cli.vendor,
    requires: cli.installer.requires,
    skipIfPresent: cli.binary,
    steps: [
      { kind: 'mkdir', path: `${home}/.local/bin` },
      { kind: 'exec', argv: ['bash', '-o', 'pipefail', '-c', cli.installer.script], env: { HOME: home } },
    ],
  };
}
