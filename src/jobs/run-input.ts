// The run's input ConfigMap (issue 10 §1): `<run>-input`, owned by the Agent and immutable, holding the rendered
// prompt and the run's ids; mounted read-only into the agent container only, where the supervisor reads the prompt
// (`AGENT_PROMPT_FILE`). The prompt is thus never in the Job, its env or its argv, and is not limited by them; nor
// are parameters too large for `AGENT_PARAMETERS` (`AGENT_PARAMETERS_FILE`).
// Nothing secret goes into it: the prompt is the rendered template (parameters are not secret,
// docs/design/reference-behaviour.md#prompt-templating).

import type { JsonObject } from '../shared/json-object.ts';
import { jobNameFor } from './names.ts';

import type { RunObjectMetadata } from './run-metadata.ts';

/** Pod volume of the input ConfigMap (agent container only). */
export const INPUT_VOLUME_NAME = 'run-input';
/** Where the agent container sees the input ConfigMap. */
export const INPUT_DIR = '/agent/input';
/** Key (and file) of the rendered prompt. */
export const INPUT_PROMPT_KEY = 'prompt';
/** Key (and file) of the rendered system prompt, when the definition has one. */
export const INPUT_SYSTEM_PROMPT_KEY = 'system-prompt';
/** The file the supervisor reads the system prompt from (`AGENT_SYSTEM_PROMPT_FILE`). */
export const INPUT_SYSTEM_PROMPT_FILE = `${INPUT_DIR}/${INPUT_SYSTEM_PROMPT_KEY}`;
/** Key (and file) of the run's ids, JSON. */
export const INPUT_RUN_KEY = 'run.json';
/** Key (and file) of the Agent's `spec.parameters`, JSON (`{}` when it has none). */
export const INPUT_PARAMETERS_KEY = 'parameters.json';
/** Where a run whose parameters are too large for `AGENT_PARAMETERS` reads them (`AGENT_PARAMETERS_FILE`). */
export const INPUT_PARAMETERS_FILE = `${INPUT_DIR}/${INPUT_PARAMETERS_KEY}`;
/** The file the supervisor reads the prompt from (`AGENT_PROMPT_FILE`). */
export const INPUT_PROMPT_FILE = `${INPUT_DIR}/${INPUT_PROMPT_KEY}`;

/** The name of the input ConfigMap of the Agent named `agentName`: `<run>-input` (`<run>` is its Job's name). */
export function inputConfigMapName(agentName: string): string {
  return `${jobNameFor(agentName)}-input`;
}

/** A v1 ConfigMap manifest ready to POST: the run's input. */
export interface InputConfigMapManifest {
  readonly apiVersion: 'v1';
  readonly kind: 'ConfigMap';
  readonly metadata: RunObjectMetadata;
  readonly immutable: true;
  readonly data: Readonly<Record<string, string>>;
}

/** What identifies a run, as written to `run.json`. */
export interface RunIds {
  readonly namespace: string;
  readonly agent: string;
  readonly uid: string;
  readonly station: string;
  readonly definition: string;
  readonly job: string;
  readonly model: string;
  readonly taskId?: string | undefined;
}

/** What a run is given: its rendered prompt and system prompt and, when they go there, the Agent's parameters. */
export interface RunInputContent {
  readonly prompt: string;
  readonly systemPrompt?: string | undefined;
  /** Written as `parameters.json` (see {@link parametersPlacement}: only when placed in the file). */
  readonly parameters?: Readonly<Record<string, string>> | undefined;
}

/** The largest `AGENT_PARAMETERS` JSON kept in the env (Linux refuses an env string over 128 KiB). */
export const MAX_PARAMETERS_ENV_BYTES = 32 * 1024;
/** What the data of an input ConfigMap may hold in all (the API server's limit is 1 MiB with the keys). */
export const MAX_INPUT_BYTES = 1_000_000;

const encoder = new TextEncoder();

/**
 * Where a run's parameters go: `env` (`AGENT_PARAMETERS`, as in the reference) when their JSON is at most 32 KiB;
 * else `file` (`parameters.json` in the input ConfigMap, `AGENT_PARAMETERS_FILE`) when they fit beside the prompt;
 * else `none` (the rendered prompt still carries what the template uses of them). `absent` without parameters.
 */
export function parametersPlacement(
  parameters: Readonly<Record<string, string>> | undefined,
  prompt: string,
): 'absent' | 'env' | 'file' | 'none' {
  if (parameters === undefined || Object.keys(parameters).length === 0) return 'absent';
  const bytes = encoder.encode(JSON.stringify(parameters)).length;
  if (bytes <= MAX_PARAMETERS_ENV_BYTES) return 'env';
  return bytes + encoder.encode(prompt).length <= MAX_INPUT_BYTES ? 'file' : 'none';
}

/** The input ConfigMap of a run (pure): `prompt`, `parameters.json` and `run.json`, owned by the Agent like its Job. */
export function buildInputConfigMap(
  ids: RunIds,
  content: RunInputContent,
  ownerMetadata: RunObjectMetadata,
): InputConfigMapManifest {
  const run: JsonObject = {
    namespace: ids.namespace,
    agent: ids.agent,
    uid: ids.uid,
    station: ids.station,
    definition: ids.definition,
    job: ids.job,
    model: ids.model,
    ...(ids.taskId !== undefined && ids.taskId !== '' ? { taskId: ids.taskId } : {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { ...ownerMetadata, name: inputConfigMapName(ids.agent) },
    immutable: true,
    data: {
      [INPUT_PROMPT_KEY]: content.prompt,
      ...(content.systemPrompt !== undefined ? { [INPUT_SYSTEM_PROMPT_KEY]: content.systemPrompt } : {}),
      ...(content.parameters !== undefined
        ? { [INPUT_PARAMETERS_KEY]: JSON.stringify(content.parameters) }
        : {}),
      [INPUT_RUN_KEY]: `${JSON.stringify(run)}\n`,
    },
  };
}

/** Which optional keys an input ConfigMap has. */
export interface InputKeys {
  readonly parameters: boolean;
  readonly systemPrompt: boolean;
}

/** The run pod volume of the input ConfigMap (required: the pod waits for it), with the optional keys it has. */
export function inputVolume(configMap: string, has: InputKeys): JsonObject {
  const keys = [
    INPUT_PROMPT_KEY,
    ...(has.systemPrompt ? [INPUT_SYSTEM_PROMPT_KEY] : []),
    ...(has.parameters ? [INPUT_PARAMETERS_KEY] : []),
    INPUT_RUN_KEY,
  ];
  return {
    name: INPUT_VOLUME_NAME,
    configMap: { name: configMap, defaultMode: 0o444, items: keys.map((key) => ({ key, path: key })) },
  };
}
