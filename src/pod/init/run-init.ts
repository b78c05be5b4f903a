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
import { describeStep, type Step, type Tool } from './steps.ts';

/** The uid and gid that own HOME and the workspace after the init (the agent container's user). */
export const RUN_UID = 1000;
export const RUN_GID = 1000;

/** Statuses of init lifecycle events (reference §7.2). */
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
}

class StepError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/**
 * Carries out an InitPlan (reference §8, steps 3–9) and resolves to the init's exit code:
 * `started`; a refused repo → `failed` (tool git, exitCode 2); vendor CLI skipped when already on PATH;
 * HOME writable when a CLI will be installed (`home`, 2); missing prerequisites installed with the package
 * manager (`installing`; `no-package-manager`, `install`, `prerequisites`); each tool `running` then its steps
 * (a failing step → `failed` with tool + exitCode, exit with that code; best-effort steps only log);
 * as root, lchown HOME and the workspace to 1000:1000 (`chown`, 2), otherwise a log line; `succeeded`, 0.
 * Never throws; never logs a secret (steps carry none, URLs are redacted).
 */
export async function runInit(plan: InitPlan, ports: InitPorts): Promise<number> {
  const { emit, log } = ports;
  const which = ports.which ?? findExecutable;
  const pathVar = ports.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const cliPath = `${plan.home}/.local/bin:${pathVar}`;
  emit('started');

  if (plan.refusals.length > 0) {
    for (const reason of plan.refusals)
      log.error('Refused repository', { reason: redactUrlCredentials(reason) });
    emit('failed', { tool: 'git', exitCode: 2 });
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
    tools.push(tool);
  }

  if (tools.some((t) => t.skipIfPresent !== undefined) && !(await ensureWritableDir(plan.home))) {
    log.error('HOME is not writable; cannot install the vendor CLI', { home: plan.home });
    emit('failed', { reason: 'home' });
    return 2;
  }

  const prerequisites = await installPrerequisites(requiredExecutables(tools), pathVar, ports, which);
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
      return 2;
    }
  } else {
    log.info('Not running as root; leaving file ownership as is', { euid: ports.euid ?? null });
  }

  emit('succeeded');
  return 0;
}

async function installPrerequisites(
  required: readonly string[],
  pathVar: string,
  ports: InitPorts,
  which: (name: string, pathVar: string) => Promise<string | undefined>,
): Promise<number> {
  const missingNow = async (): Promise<string[]> => {
    const missing: string[] = [];
    for (const exe of required) if ((await which(exe, pathVar)) === undefined) missing.push(exe);
    return missing;
  };
  const missing = await missingNow();
  if (missing.length === 0) return 0;
  const present = new Set<string>();
  for (const binary of ['apt-get', 'dnf', 'apk'])
    if ((await which(binary, pathVar)) !== undefined) present.add(binary);
  const pm = choosePackageManager((b) => present.has(b));
  if (pm === undefined) {
    ports.log.error('Prerequisites are missing and no package manager was found', { missing });
    ports.emit('failed', { reason: 'no-package-manager' });
    return 2;
  }
  ports.emit('installing', { tool: pm });
  ports.log.info('Installing prerequisites', { packageManager: pm, missing });
  for (const argv of installCommands(pm, missing)) {
    const code = await ports.runner(argv, { env: childEnv(ports.env, {}) });
    if (code !== 0) {
      ports.log.error('Installing prerequisites failed', { command: argv.join(' '), exitCode: code });
      ports.emit('failed', { reason: 'install', exitCode: code });
      return code;
    }
  }
  const still = await missingNow();
  if (still.length > 0) {
    ports.log.error('Prerequisites still missing after installing', { missing: still });
    ports.emit('failed', { reason: 'prerequisites' });
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
        const value = ports.env[source];
        if (value !== undefined && value !== '') resolved[child] = value;
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
