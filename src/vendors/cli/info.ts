// Static facts about each vendor CLI that the init container and the supervisor need
// (docs/design/reference-behaviour.md#conversation-continuity, docs/design/reference-behaviour.md#init-container,
// docs/design/reference-behaviour.md#vendor-routing-and-argv).

import type { Vendor } from './route.ts';

/** How the init container installs a vendor CLI when it is missing. */
export interface Installer {
  /** Shell line run with `bash -o pipefail -c`; a no-op when the CLI is already on PATH. */
  readonly script: string;
  /** Executables the script needs; missing ones are installed with the image's package manager first. */
  readonly requires: readonly string[];
}

/** The CLI's npm package, pinned to the version the tests run (test/clis/package.json). */
export interface NpmPackage {
  readonly name: string;
  readonly version: string;
  /**
   * True when the package's npm `bin` is a stub until its own postinstall puts the platform binary there
   * (docs/reference/vendor-clis.md#installing): the init allows that one package's install scripts.
   */
  readonly binaryFromPostinstall?: boolean;
}

/** Facts about one vendor CLI. */
export interface VendorInfo {
  /** Executable name on PATH (`exec` has none of its own: it runs `tool_config.command`). */
  readonly binary: string | undefined;
  /** Conversation state folder relative to HOME, saved and restored for continuity; undefined = none. */
  readonly stateDir: string | undefined;
  /** The vendor's own installer (the reference's), used when the image has no `npm`; undefined = none. */
  readonly installer: Installer | undefined;
  /**
   * The npm package the init installs when the image has `npm` (docs/reference/vendor-clis.md#installing-in-the-init);
   * undefined = none.
   */
  readonly npmPackage: NpmPackage | undefined;
}

const curlInstaller = (
  binary: string,
  url: string,
  shell: 'bash' | 'sh',
  requires: readonly string[],
): Installer => ({
  script: `command -v ${binary} >/dev/null 2>&1 || curl -fsSL ${url} | ${shell}`,
  requires,
});

/**
 * Vendor facts. The npm pins equal test/clis/package.json (a unit test ties them). OpenCode installs into `$HOME/.opencode/bin`, which our run PATH includes (the reference's did not).
 * Gemini CLI is an npm package; it is installed under `$HOME/.local` and runs on the injected runtime
 * (`/agent/bin` is on the run PATH), so it needs `npm` only in the init container.
 */
export const VENDOR_INFO: Readonly<Record<Vendor, VendorInfo>> = {
  claude: {
    binary: 'claude',
    stateDir: '.claude/projects',
    installer: curlInstaller('claude', 'https://claude.ai/install.sh', 'bash', ['bash', 'curl', 'sha256sum']),
    npmPackage: { name: '@anthropic-ai/claude-code', version: '2.1.332', binaryFromPostinstall: true },
  },
  codex: {
    binary: 'codex',
    stateDir: '.codex/sessions',
    installer: curlInstaller('codex', 'https://chatgpt.com/codex/install.sh', 'sh', ['bash', 'curl', 'tar']),
    npmPackage: { name: '@openai/codex', version: '0.171.0' },
  },
  opencode: {
    binary: 'opencode',
    // Its sessions are rows of `opencode.db` in its XDG data folder (docs/reference/vendor-clis.md#resume-3).
    stateDir: '.local/share/opencode',
    installer: curlInstaller('opencode', 'https://opencode.ai/install', 'bash', ['bash', 'curl', 'tar']),
    npmPackage: { name: 'opencode-ai', version: '1.18.33', binaryFromPostinstall: true },
  },
  gemini: {
    binary: 'gemini',
    stateDir: '.gemini/tmp',
    installer: {
      script:
        'command -v gemini >/dev/null 2>&1 || npm install -g --prefix "$HOME/.local" @google/gemini-cli',
      requires: ['bash', 'npm'],
    },
    npmPackage: { name: '@google/gemini-cli', version: '0.61.0' },
  },
  exec: { binary: undefined, stateDir: undefined, installer: undefined, npmPackage: undefined },
};
