// What a batch run is made of, decided purely from the Agent and its AgentDefinition: which vendor, whether the
// recipe can run as one prompt at all, which Secret key holds the vendor key, and the request itself.

import type { Agent, AgentDefinition, SelectEntry } from '../../api/index.ts';
import { resolveModel } from '../../api/model.ts';
import { runPromptText, runSystemPrompt } from '../../jobs/prompt.ts';
import {
  API_KEY_ENV,
  type BatchProvider,
  type BatchRequest,
  type RenderContext,
  runCustomId,
} from '../../vendors/batch/port.ts';
import { classifySelectEvent, type Vendor, vendorForModel } from '../../vendors/cli/index.ts';

/** The finalizer a batch run holds while something of it may exist at the vendor. */
export const BATCH_FINALIZER = 'agents.re-cinq.com/batch-cleanup';

/** Failed cleanups after which the finalizer is removed anyway (a Warning Event names what was left behind). */
export const MAX_CLEANUP_ATTEMPTS = 5;

/** The vendor batch API a model's runs go to; undefined when its vendor has none (OpenCode, exec). */
export function batchProviderFor(model: string): BatchProvider | undefined {
  switch (vendorForModel(model)) {
    case 'claude':
      return 'anthropic';
    case 'codex':
      return 'openai';
    case 'gemini':
      return 'gemini';
    default:
      return undefined;
  }
}

/**
 * The CLI whose stream-JSON lines a provider's results are rendered as
 * (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines).
 */
export const CLI_OF_PROVIDER: Readonly<Record<BatchProvider, Vendor>> = {
  anthropic: 'claude',
  openai: 'codex',
  gemini: 'gemini',
};

/** True when `value` names a provider (as read back from `status.batchProvider`). */
export function isBatchProvider(value: string | undefined): value is BatchProvider {
  return value === 'anthropic' || value === 'openai' || value === 'gemini';
}

/**
 * Why the recipe cannot run as one batch prompt (a batch run has no tools, workspace or CLI), naming the field;
 * undefined when it can. Checked in a fixed order so the reason is stable.
 */
export function batchUnsupported(definition: AgentDefinition, model: string): string | undefined {
  const s = definition.spec;
  const r = s.resources;
  if (r.repos.length > 0) return 'batch execution cannot use resources.repos';
  if (r.skills.length > 0) return 'batch execution cannot use resources.skills';
  if (r.mcp_servers.length > 0) return 'batch execution cannot use resources.mcp_servers';
  if (r.conversation !== undefined) return 'batch execution cannot use resources.conversation';
  if (s.tool_config !== undefined) return 'batch execution cannot use tool_config';
  if (s.output.watch.length > 0) return 'batch execution cannot use output.watch';
  if (s.memory !== undefined) return 'batch execution cannot use memory: a batch run has no pod to mount it';
  if (model.trim().toLowerCase() === 'exec') return 'batch execution cannot use the exec model';
  if (batchProviderFor(model) === undefined)
    return `batch execution cannot use model ${model}: its vendor has no batch API`;
  return undefined;
}

/**
 * The key of the Secret `agent-secrets` holding the vendor's API key: the key that the definition's
 * `resources.secrets` maps to `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` / `GEMINI_API_KEY`, else that very name.
 */
export function apiKeySecretKey(definition: AgentDefinition | null, provider: BatchProvider): string {
  const env = API_KEY_ENV[provider];
  const mapped = definition?.spec.resources.secrets.find((s) => s.name === env);
  return mapped !== undefined && mapped.ref !== '' ? mapped.ref : env;
}

/** The model of a run (Agent → definition → default). */
export function batchModel(agent: Agent, definition: AgentDefinition | null): string {
  return resolveModel(agent, definition ?? undefined);
}

/** A batch run's prompt: the rendered prompt, after the rendered system prompt and a blank line when there is one. */
function batchPrompt(agent: Agent, definition: AgentDefinition): string {
  const prompt = runPromptText(agent, definition);
  const system = runSystemPrompt(agent, definition);
  return system === undefined ? prompt : `${system}\n\n${prompt}`;
}

/** The one request a batch run sends. */
export function batchRequestFor(agent: Agent, definition: AgentDefinition, model: string): BatchRequest {
  const schema = definition.spec.output.schema;
  return {
    customId: runCustomId(agent.metadata.uid),
    label: `${agent.metadata.namespace ?? ''}/${agent.metadata.name}`,
    model,
    prompt: batchPrompt(agent, definition),
    maxTokens: definition.spec.batch.maxTokens,
    ...(schema !== undefined ? { schema } : {}),
  };
}

/** What the renderer of a finished batch needs (the session id is the Agent uid: stable across restarts). */
export function renderContextFor(
  agent: Agent,
  definition: AgentDefinition | null,
  durationMs: number,
): RenderContext {
  const model = batchModel(agent, definition);
  return {
    sessionId: agent.metadata.uid,
    model,
    prompt: definition === null ? '' : runPromptText(agent, definition),
    structured: definition?.spec.output.schema !== undefined,
    durationMs: Math.max(0, Math.round(durationMs)),
  };
}

/**
 * The lines of `lines` that `output.select` lets through to the sinks, classified as the provider's CLI would
 * print them (the supervisor's rule: an empty list passes everything; an unparseable or unclassified line never
 * passes a non-empty list).
 */
export function selectLines(
  provider: BatchProvider,
  select: readonly SelectEntry[],
  lines: readonly string[],
): string[] {
  if (select.length === 0) return [...lines];
  const vendor = CLI_OF_PROVIDER[provider];
  return lines.filter((line) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return false;
    }
    const c = classifySelectEvent(vendor, value);
    if (c === undefined) return false;
    return select.some(
      (s) =>
        s.event === c.event &&
        (s.tool === undefined || s.tool === '' || s.tool === c.tool) &&
        (s.contains === undefined || s.contains === '' || (c.text ?? '').includes(s.contains)),
    );
  });
}

/** True when the Agent holds the batch finalizer; its index in `metadata.finalizers` (or -1). */
export function batchFinalizerIndex(agent: Agent): number {
  return agent.metadata.finalizers.indexOf(BATCH_FINALIZER);
}

/** True when the Agent still holds the batch finalizer. */
export function holdsBatchFinalizer(agent: Agent): boolean {
  return batchFinalizerIndex(agent) >= 0;
}
