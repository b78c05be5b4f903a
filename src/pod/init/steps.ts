/**
 * The init's unit of work. The pure planner produces steps; the executor (run-init.ts) performs them.
 * Steps never carry secret values: a secret reaches a child process only through env vars the child inherits,
 * or through `envFrom`, which the executor resolves in-process.
 */
export type Step =
  | {
      readonly kind: 'exec';
      /** argv[0] is looked up on PATH; never contains a secret. */
      readonly argv: readonly string[];
      /** Literal extra env for this step (no secrets). */
      readonly env?: Readonly<Record<string, string>>;
      /** Child env var name → name of the init env var whose value it gets (resolved in-process, never logged). */
      readonly envFrom?: Readonly<Record<string, string>>;
      /** Failure is logged and ignored (reference `|| true`). */
      readonly bestEffort?: boolean;
      /** Working directory; must exist. */
      readonly cwd?: string;
    }
  | {
      /** `rm -rf path`, but only after checking that its real location stays strictly below `root`. */
      readonly kind: 'remove';
      readonly path: string;
      readonly root: string;
    }
  | {
      /** Copies the running runtime and bundle into `binDir` (`node`, `agent-controller.mjs`). */
      readonly kind: 'inject-supervisor';
      readonly binDir: string;
    }
  | {
      /** Copies `<workspace>/*\/.claude/skills` and `<workspace>/.claude/skills` into `dest` (no symlinks). */
      readonly kind: 'collect-skills';
      readonly workspace: string;
      readonly dest: string;
    }
  | {
      /** `mkdir -p path`. */
      readonly kind: 'mkdir';
      readonly path: string;
    }
  | {
      /** Creates symlink `link` → `target` when `target` exists and `link` does not. */
      readonly kind: 'link';
      readonly target: string;
      readonly link: string;
    };

/**
 * Names of init tools as they appear in `init/running` events (docs/design/reference-behaviour.md#lifecycle-events):
 * `supervisor`, `git`, the vendor name (`claude`, `codex`, `opencode`, `gemini`), `skills`, `conversation`.
 */
export type ToolName = string;

/** One active tool: its steps run in order after an `init/running` event naming it. */
export interface Tool {
  readonly name: ToolName;
  readonly steps: readonly Step[];
  /** Executables the steps need on PATH (installed through the package manager when missing). */
  readonly requires: readonly string[];
  /** For a vendor CLI tool: the CLI's executable; when it is already on PATH the tool is skipped. */
  readonly skipIfPresent?: string;
  /** A way to do the tool's work that wins when its executable `when` is on PATH (the npm install of a CLI). */
  readonly preferred?: ToolVariant;
}

/** Steps that replace a tool's own when the executable `when` is on PATH. */
export interface ToolVariant {
  readonly when: string;
  readonly steps: readonly Step[];
  readonly requires: readonly string[];
  /** What the variant does, for the log (e.g. `npm install @anthropic-ai/claude-code@2.1.332`). */
  readonly summary: string;
}

/**
 * The tool as it will run: its preferred variant when `onPath(variant.when)`, else its own steps (the fallback).
 * Pure; the executor supplies the PATH lookup's answer.
 */
export function chooseVariant(tool: Tool, onPath: (executable: string) => boolean): Tool {
  const { preferred, ...rest } = tool;
  if (preferred === undefined || !onPath(preferred.when)) return rest;
  return { ...rest, steps: preferred.steps, requires: preferred.requires };
}

/** A one-line rendering of a step for logs; argv elements are JSON-quoted when they contain spaces. */
export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'exec':
      return step.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
    case 'remove':
      return `rm -rf ${step.path}`;
    case 'inject-supervisor':
      return `inject supervisor into ${step.binDir}`;
    case 'collect-skills':
      return `copy skills from ${step.workspace} into ${step.dest}`;
    case 'mkdir':
      return `mkdir -p ${step.path}`;
    case 'link':
      return `ln -s ${step.target} ${step.link}`;
  }
}
