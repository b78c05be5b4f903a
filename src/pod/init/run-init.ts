import { mkdir } from 'node:fs/promises';
import type { Logger } from '../../shared/log.ts';
import {
  collectSkills,
  ensureWritableDir,
  findExecutable,
  lchownTree,
  linkIfMissing,
  removeConfined,
} from './fs-ops.ts';
import { injectSupervisor, type RuntimeSource } from './inject.ts';
import { type InitPlan, requiredExecutables } from './plan.ts';
import { choosePackageManager, installCommands } from './prerequisites.ts';
import { redactUrlCredentials } from './repos.ts';
import type { CommandRunner } from './runner.ts';
import { chooseVariant, describeStep, type Step, type Tool } from './steps.ts';

/** The uid and gid that own HOME and the workspace after the init (the agent container's user). */
export const RUN_UID = 1000;
export const RUN_GID = 1000;

/** Statuses of init lifecycle events (docs/design/reference-behaviour.md#lifecycle-events). */
export type InitStatus = 'started' | 'installing' | 'running' | 'succeeded' | 'failed';

/** Optional fields of an init lifecycle event. */
export interface InitEventDetails {
  readonly tool?: string;
  readonly reason?: string;
  readonly exitCode?: number;
}

/** Reports one `phase: init` lifecycle event (bare line on stdout and every sink). Must not throw. */
export type EmitInitEvent = (status: InitStatus, details?: InitEventDetails) => void;

/** Everything the executor touches, injectable for tests. */
export interface InitPorts {
  readonly runner: CommandRunner;
  readonly emit: EmitInitEvent;
  readonly log: Logger;
  /** The init's environment: base of every child env, PATH for lookups, source of `envFrom` values. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly runtime: RuntimeSource;
  /** Effective uid; 0 enables the final chown. Undefined when the platform has none. */
  readonly euid: number | undefined;
  /** Where an executable is looked up; default: the real filesystem. */
  readonly which?: (name: string, pathVar: string) => Promise<string | undefined>;
  /**
   * Records why the init failed, one line for people (the container's termination message, which the controller
   * puts in the Agent's failure reason). Must not throw; never given a secret.
   */
  readonly reportFailure?: (message: string) => void;
}

/** The failure lines of the init (its termination message); stable, so docs and tests can refer to them. */
export const INIT_FAILURE = {
  refusedRepo: 'init refused a repository (see the init log)',
  home: (home: string) => `HOME ${home} is not writable, so the vendor CLI cannot be installed`,
  needsRoot: (tools: readonly string[], missing: readonly string[]) =>
    `installing ${tools.join(', ')} needs ${missing.join(', ')}, which the image lacks, and installing them needs root; the restricted Pod Security profile runs the init as a non-root user: bake them into the image, or set the Station's spec.podSecurityProfile: baseline`,
  noPackageManager: (missing: readonly string[]) =>
    `the image lacks ${missing.join(', ')} and has no package manager (apt-get, dnf, apk) to install them`,
  install: (command: string, code: number) =>
    `installing prerequisites failed: ${command} exited with ${code}`,
  prerequisites: (missing: readonly string[]) =>
    `prerequisites still missing after installing: ${missing.join(', ')}`,
  step: (tool: string, step: string, code: number) => `${tool}: ${step} failed with exit code ${code}`,
  chown: 'could not give HOME and the workspace to the run user',
} as const;

class StepError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/**
 * Carries out an InitPlan (docs/design/reference-behaviour.md#init-steps) and resolves to the init's exit code:
 * `started`; a refused repo → `failed` (tool git, exitCode 2); vendor CLI skipped when already on PATH;
 * HOME writable when a CLI will be installed (`home`, 2); missing prerequisites installed with the package
 * manager (`installing`; `no-package-manager`, `install`, `prerequisites`); each tool `running` then its steps
 * (a failing step → `failed` with tool + exitCode, exit with that code; best-effort steps only log);
 * as root, lchown HOME and the workspace to 1000:1000 (`chown`, 2), otherwise a log line; `succeeded`, 0.
 * Never throws; never logs a secret (steps carry none, URLs are redacted).
 */
export async function runInit(plan: InitPlan, ports: InitPorts): Promise<number> {
  const { emit, log } = ports;
  const report = (message: string): void => ports.reportFailure?.(redactUrlCredentials(message));
  const which = ports.which ?? findExecutable;
  const pathVar = ports.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const cliPath = `${plan.home}/.local/bin:${pathVar}`;
  emit('started');

  if (plan.refusals.length > 0) {
    for (const reason of plan.refusals)
      log.error('Refused repository', { reason: redactUrlCredentials(reason) });
    emit('failed', { tool: 'git', exitCode: 2 });
    report(INIT_FAILURE.refusedRepo);
    return 2;
  }
  for (const warning of plan.warnings)
    log.warn('Left out of the init', { reason: redactUrlCredentials(warning) });

  const tools: Tool[] = [];
  for (const tool of plan.tools) {
    if (tool.skipIfPresent !== undefined) {
      const found = await which(tool.skipIfPresent, cliPath);
      if (found !== undefined) {
        log.info('Vendor CLI already present; not installing it', { tool: tool.name, path: found });
        continue;
      }
    }
    tools.push(await resolveVariant(tool, pathVar, which, log));
  }

  if (tools.some((t) => t.skipIfPresent !== undefined) && !(await ensureWritableDir(plan.home))) {
    log.error('HOME is not writable; cannot install the vendor CLI', { home: plan.home });
    emit('failed', { reason: 'home' });
    report(INIT_FAILURE.home(plan.home));
    return 2;
  }

  const prerequisites = await installPrerequisites(tools, pathVar, ports, which, report);
  if (prerequisites !== 0) return prerequisites;

  for (const tool of tools) {
    emit('running', { tool: tool.name });
    for (const step of tool.steps) {
      try {
        await runStep(step, ports);
      } catch (error) {
        const code = error instanceof StepError ? error.code : 1;
        const message = error instanceof Error ? error.message : String(error);
        log.error('Init step failed', {
          tool: tool.name,
          step: redactUrlCredentials(describeStep(step)),
          exitCode: code,
          error: redactUrlCredentials(message),
        });
        emit('failed', { tool: tool.name, exitCode: code });
        report(INIT_FAILURE.step(tool.name, describeStep(step), code));
        return code;
      }
    }
  }

  if (ports.euid === 0) {
    try {
      for (const dir of [plan.home, plan.workspace]) {
        const count = await lchownTree(dir, RUN_UID, RUN_GID);
        log.info('Gave directory to the run user', { dir, uid: RUN_UID, gid: RUN_GID, entries: count });
      }
    } catch (error) {
      log.error('Could not give HOME and the workspace to the run user', { error });
      emit('failed', { reason: 'chown' });
      report(INIT_FAILURE.chown);
      return 2;
    }
  } else {
    log.info('Not running as root; leaving file ownership as is', { euid: ports.euid ?? null });
  }

  emit('succeeded');
  return 0;
}

/** The tool with its preferred variant chosen when the variant's executable is on PATH (logged either way). */
async function resolveVariant(
  tool: Tool,
  pathVar: string,
  which: (name: string, pathVar: string) => Promise<string | undefined>,
  log: Logger,
): Promise<Tool> {
  const preferred = tool.preferred;
  if (preferred === undefined) return tool;
  const found = await which(preferred.when, pathVar);
  const chosen = chooseVariant(tool, (exe) => exe === preferred.when && found !== undefined);
  if (found !== undefined) log.info('Installing the vendor CLI', { tool: tool.name, via: preferred.summary });
  else
    log.info('No npm in the image; installing the vendor CLI with its own installer', {
      tool: tool.name,
      missing: preferred.when,
    });
  return chosen;
}

async function installPrerequisites(
  tools: readonly Tool[],
  pathVar: string,
  ports: InitPorts,
  which: (name: string, pathVar: string) => Promise<string | undefined>,
  report: (message: string) => void,
): Promise<number> {
  const required = requiredExecutables(tools);
  const missingNow = async (): Promise<string[]> => {
    const missing: string[] = [];
    for (const exe of required) if ((await which(exe, pathVar)) === undefined) missing.push(exe);
    return missing;
  };
  const missing = await missingNow();
  if (missing.length === 0) return 0;
  if (ports.euid !== undefined && ports.euid !== 0) {
    // A package manager needs root; the restricted profile's init is the run user. Name what to bake in.
    const needing = tools.filter((t) => t.requires.some((r) => missing.includes(r))).map((t) => t.name);
    ports.log.error('Prerequisites are missing and installing them needs root', {
      missing,
      tools: needing,
      euid: ports.euid,
    });
    ports.emit('failed', { reason: 'needs-root', tool: needing.join(',') });
    report(INIT_FAILURE.needsRoot(needing, missing));
    return 2;
  }
  const present = new Set<string>();
  for (const binary of ['apt-get', 'dnf', 'apk'])
    if ((await which(binary, pathVar)) !== undefined) present.add(binary);
  const pm = choosePackageManager((b) => present.has(b));
  if (pm === undefined) {
    ports.log.error('Prerequisites are missing and no package manager was found', { missing });
    ports.emit('failed', { reason: 'no-package-manager' });
    report(INIT_FAILURE.noPackageManager(missing));
    return 2;
  }
  ports.emit('installing', { tool: pm });
  ports.log.info('Installing prerequisites', { packageManager: pm, missing });
  for (const argv of installCommands(pm, missing)) {
    const code = await ports.runner(argv, { env: childEnv(ports.env, {}) });
    if (code !== 0) {
      ports.log.error('Installing prerequisites failed', { command: argv.join(' '), exitCode: code });
      ports.emit('failed', { reason: 'install', exitCode: code });
      report(INIT_FAILURE.install(argv.join(' '), code));
      return code;
    }
  }
  const still = await missingNow();
  if (still.length > 0) {
    ports.log.error('Prerequisites still missing after installing', { missing: still });
    ports.emit('failed', { reason: 'prerequisites' });
    report(INIT_FAILURE.prerequisites(still));
    return 2;
  }
  return 0;
}

function childEnv(
  base: Readonly<Record<string, string | undefined>>,
  extra: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined) env[name] = value;
  return Object.assign(env, extra);
}

async function runStep(step: Step, ports: InitPorts): Promise<void> {
  switch (step.kind) {
    case 'exec': {
      const resolved: Record<string, string> = {};
      for (const [child, source] of Object.entries(step.envFrom ?? {})) {
        // Strings only: a recipe-chosen name like `constructor` reads what the env object inherits, a function.
        const value: unknown = ports.env[source];
        if (typeof value === 'string' && value !== '') resolved[child] = value;
      }
      const env = childEnv(ports.env, { ...step.env, ...resolved });
      const code = await ports.runner(step.argv, { env, cwd: step.cwd });
      if (code === 0) return;
      if (step.bestEffort) {
        ports.log.warn('Best-effort init step failed; going on', {
          step: redactUrlCredentials(describeStep(step)),
          exitCode: code,
        });
        return;
      }
      throw new StepError(`exited with ${code}`, code);
    }
    case 'remove':
      try {
        await removeConfined(step.path, step.root);
      } catch (error) {
        throw new StepError(error instanceof Error ? error.message : String(error), 2);
      }
      return;
    case 'inject-supervisor': {
      const injected = await injectSupervisor(step.binDir, ports.runtime);
      ports.log.info('Injected the supervisor', { ...injected });
      return;
    }
    case 'collect-skills': {
      const files = await collectSkills(step.workspace, step.dest);
      ports.log.info('Copied skills from the workspace', { files, dest: step.dest });
      return;
    }
    case 'mkdir':
      await mkdir(step.path, { recursive: true });
      return;
    case 'link':
      if (await linkIfMissing(step.target, step.link)) {
        ports.log.info('Linked the vendor CLI onto PATH', { target: step.target, link: step.link });
      }
      return;
  }
}
