import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Command, parseFlags, UsageError } from '../cli/command.ts';
import { TERMINATION_MESSAGE_PATH } from '../jobs/bundle.ts';
import {
  createProcessRunner,
  type EmitInitEvent,
  parseInitConfig,
  planInit,
  type RuntimeSource,
  runInit,
} from '../pod/init/index.ts';
import { encodeEvent, eventSinkFromEnv, lifecycleEvent } from '../pod/shared/index.ts';
import { createLogger, type Logger, parseLogLevel } from '../shared/log.ts';
import { VENDOR_INFO, vendorForModel } from '../vendors/cli/index.ts';

/** How long the init waits for its sinks to take the last events before it exits. */
const SINK_CLOSE_BUDGET_MS = 10_000;
/** Env override of the bundle file to inject (for running from source, where this module is a .ts file). */
export const BUNDLE_OVERRIDE_ENV = 'AGENT_INIT_BUNDLE';

export const initCommand: Command = {
  name: 'init',
  summary: 'prepare a run pod: inject the supervisor, clone repos, copy skills (in-pod)',
  usage: [
    'Usage: agent-controller init [flags]',
    '',
    'Runs as the init container of a run pod. Configuration comes from the run environment',
    '(AGENT_REPOS, AGENT_SKILLS, AGENT_SKILLS_SOURCE, AGENT_CONVERSATION_*, AGENT_MODEL, AGENT_SINKS, ...).',
    'A missing vendor CLI is installed with npm at its pinned version (AGENT_CLI_VERSION overrides it; npm reads',
    'NPM_CONFIG_REGISTRY and its other settings from the env), or with the vendor installer when there is no npm.',
    'Injects <home>/bin/node and <home>/bin/agent-controller.mjs, clones repositories into the workspace,',
    'installs the vendor CLI when missing, copies skills, restores a conversation, and as root gives HOME',
    'and the workspace to uid/gid 1000. Lifecycle events go to stdout and the sinks; logs go to stderr.',
    '',
    'Examples:',
    '  agent-controller init                                   # the init container of a run pod',
    '  agent-controller init --home /agent --workspace /workspace --log-level debug',
    '',
    'Flags:',
    '  --home DIR          HOME and bundle root (default: $HOME, else /agent)',
    '  --workspace DIR     workspace (default: $WORKSPACE_DIR, else /workspace)',
    `  --bundle FILE       bundle file to inject (default: $${BUNDLE_OVERRIDE_ENV}, else the running bundle)`,
    '  --log-level LEVEL   debug, info, warn or error (default info)',
  ].join('\n'),
  async run(io) {
    const { values, help } = parseFlags(io.argv, {
      home: { type: 'string' },
      workspace: { type: 'string' },
      bundle: { type: 'string' },
      'log-level': { type: 'string' },
    });
    if (help) {
      io.stdout(`${initCommand.usage}\n`);
      return 0;
    }
    const levelFlag = stringFlag(values['log-level']);
    const level = parseLogLevel(levelFlag ?? 'info');
    if (level === undefined) throw new UsageError(`--log-level must be debug, info, warn or error`);
    const log = createLogger(level, io.stderr, { component: 'init' });
    const sink = eventSinkFromEnv(io.env, log, '[init]');
    const emit: EmitInitEvent = (status, details = {}) => {
      const event = lifecycleEvent('init', status, details);
      io.stdout(`${encodeEvent(event)}\n`);
      sink.deliverEvent(event);
    };

    const code = await (async (): Promise<number> => {
      const config = parseInitConfig(io.env, {
        home: stringFlag(values.home),
        workspace: stringFlag(values.workspace),
      });
      if (!config.ok) {
        emit('started');
        log.error('Invalid init configuration', { error: config.error });
        emit('failed', { reason: 'config' });
        return 2;
      }
      const vendor = vendorForModel(config.value.model);
      const info = VENDOR_INFO[vendor];
      const plan = planInit(config.value, {
        vendor,
        binary: info.binary,
        installer: info.installer,
        stateDir: info.stateDir,
        npmPackage: info.npmPackage,
      });
      const bundlePath =
        stringFlag(values.bundle) ?? nonEmpty(io.env[BUNDLE_OVERRIDE_ENV]) ?? runningBundle();
      if (!/\.(mjs|js)$/.test(bundlePath)) {
        emit('started');
        log.error('Cannot tell which bundle to inject; pass --bundle or set the override env', {
          running: bundlePath,
          env: BUNDLE_OVERRIDE_ENV,
        });
        emit('failed', { tool: 'supervisor', exitCode: 2 });
        return 2;
      }
      const runtime: RuntimeSource = { execPath: process.execPath, bundlePath, isDeno: isDeno() };
      log.info('Starting init', {
        vendor,
        home: plan.home,
        workspace: plan.workspace,
        tools: plan.tools.length,
      });
      return runInit(plan, {
        runner: createProcessRunner(),
        emit,
        log,
        env: io.env,
        runtime,
        euid: typeof process.geteuid === 'function' ? process.geteuid() : undefined,
        reportFailure: (message) => writeTerminationMessage(message, log),
      });
    })();

    await sink.close(SINK_CLOSE_BUDGET_MS);
    return code;
  },
};

/**
 * Writes the container's termination message (Kubernetes reads it into the container status, and the controller
 * into the Agent's failure reason). Only where the kubelet provides the file: never creates one elsewhere.
 */
function writeTerminationMessage(message: string, log: Logger): void {
  try {
    if (existsSync(TERMINATION_MESSAGE_PATH)) writeFileSync(TERMINATION_MESSAGE_PATH, message.slice(0, 4000));
  } catch (error) {
    log.debug('Could not write the termination message', { error });
  }
}

/** The file this code runs from: the bundle when bundled (esbuild keeps `import.meta.url`), a .ts file from source. */
function runningBundle(): string {
  return fileURLToPath(import.meta.url);
}

function isDeno(): boolean {
  return typeof (globalThis as { Deno?: unknown }).Deno !== 'undefined' || 'deno' in process.versions;
}

function stringFlag(value: string | boolean | string[] | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
