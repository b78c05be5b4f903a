import type { Step, Tool } from './steps.ts';

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
  /** The CLI's npm package and pinned version; undefined = no npm install. */
  readonly npmPackage?:
    | { readonly name: string; readonly version: string; readonly binaryFromPostinstall?: boolean }
    | undefined;
}

/**
 * The vendor CLI tool (docs/design/reference-behaviour.md#init-steps,
 * docs/reference/vendor-clis.md#installing-in-the-init): `mkdir -p $HOME/.local/bin`, then, when the image has
 * `npm`, `mkdir -p $HOME/.local/lib` and `npm install --global --prefix $HOME/.local <package>@<version>` (the pinned version, or `version` when
 * the run sets one) and `<binary> --version` for the log; a package whose `bin` is a stub until its postinstall
 * runs (Claude Code, OpenCode) gets `--allow-scripts=<package>`, which npm needs to run that script once it blocks
 * unreviewed install scripts (`strict-allow-scripts`, npm 11.19's opt-in); otherwise the vendor's installer
 * (`bash -o pipefail -c "<installer script>"`, the reference's way). HOME is set for both; everything else of the
 * init's env (NPM_CONFIG_REGISTRY, proxies) reaches npm as is. Undefined when the vendor has no installer or no
 * binary. The executor skips the tool when the binary is already on PATH, so an image that ships the CLI never
 * downloads it.
 */
export function planVendorCli(cli: CliFacts, home: string, version?: string): Tool | undefined {
  if (cli.installer === undefined || cli.binary === undefined) return undefined;
  const localBin = `${home}/.local/bin`;
  const mkdir: Step = { kind: 'mkdir', path: localBin };
  const tool: Tool = {
    name: cli.vendor,
    requires: cli.installer.requires,
    skipIfPresent: cli.binary,
    steps: [
      mkdir,
      { kind: 'exec', argv: ['bash', '-o', 'pipefail', '-c', cli.installer.script], env: { HOME: home } },
    ],
  };
  if (cli.npmPackage === undefined) return tool;
  const spec = `${cli.npmPackage.name}@${version ?? cli.npmPackage.version}`;
  const npm: readonly string[] = [
    'npm',
    'install',
    '--global',
    '--prefix',
    `${home}/.local`,
    '--no-audit',
    '--no-fund',
    ...(cli.npmPackage.binaryFromPostinstall === true ? [`--allow-scripts=${cli.npmPackage.name}`] : []),
  ];
  return {
    ...tool,
    preferred: {
      when: 'npm',
      requires: ['npm'],
      summary: `npm install ${spec}`,
      steps: [
        mkdir,
        // npm 11.19.1 fails a global install whose prefix has no `lib` (`ENOENT: … lstat '<prefix>/lib'`, exit 254).
        { kind: 'mkdir', path: `${home}/.local/lib` },
        { kind: 'exec', argv: [...npm, spec], env: { HOME: home, npm_config_update_notifier: 'false' } },
        { kind: 'exec', argv: [`${localBin}/${cli.binary}`, '--version'], env: { HOME: home } },
      ],
    },
  };
}
