// What the shell needs to talk to the vendors for batch runs: the adapters, their base URLs, the credentials
// (from `agent-secrets`), and the little state the crash-safety protocol keeps in memory.

import type { Agent, AgentDefinition } from '../../api/index.ts';
import { describeKubeError } from '../../kube/index.ts';
import { apiKeySecretKey, batchModel, batchProviderFor } from '../../reconcile/batch/plan.ts';
import type { CredentialCheck, SubmissionObservation } from '../../reconcile/index.ts';
import { err, ok, type Result } from '../../shared/result.ts';
import { anthropicBatches } from '../../vendors/batch/anthropic.ts';
import { geminiBatches } from '../../vendors/batch/gemini.ts';
import { openaiBatches } from '../../vendors/batch/openai.ts';
import type { BatchProvider, BatchVendor, VendorCall } from '../../vendors/batch/port.ts';
import type { SecretReader } from './secrets.ts';

/** The three adapters. */
export const BATCH_VENDORS: Readonly<Record<BatchProvider, BatchVendor>> = {
  anthropic: anthropicBatches,
  openai: openaiBatches,
  gemini: geminiBatches,
};

/** Timeout of one vendor HTTP attempt. */
export const VENDOR_TIMEOUT_MS = 30_000;
/** Attempts per vendor request (429 / 5xx / lost answers of idempotent calls). */
export const VENDOR_ATTEMPTS = 3;

export interface BatchRuntime {
  readonly vendors: Readonly<Record<BatchProvider, BatchVendor>>;
  readonly baseUrls: Readonly<Record<BatchProvider, string>>;
  readonly secrets: SecretReader;
  readonly fetch: typeof fetch;
  readonly timeoutMs: number;
  readonly attempts: number;
  readonly sleep: (ms: number) => Promise<void>;
  /**
   * Agents (by uid) for which this process knows no vendor create is outstanding: it wrote their submission
   * record, or their last create was refused. Anything else is searched at the vendor before a submit.
   */
  readonly nothingOutstanding: Set<string>;
  /** After a failed cleanup: the earliest next attempt (epoch ms) by Agent uid. */
  readonly cleanupNotBefore: Map<string, number>;
}

export function createBatchRuntime(options: {
  readonly baseUrls: Readonly<Record<BatchProvider, string>>;
  readonly secrets: SecretReader;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  readonly attempts?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly vendors?: Readonly<Record<BatchProvider, BatchVendor>>;
}): BatchRuntime {
  return {
    vendors: options.vendors ?? BATCH_VENDORS,
    baseUrls: options.baseUrls,
    secrets: options.secrets,
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    timeoutMs: options.timeoutMs ?? VENDOR_TIMEOUT_MS,
    attempts: options.attempts ?? VENDOR_ATTEMPTS,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    nothingOutstanding: new Set(),
    cleanupNotBefore: new Map(),
  };
}

/** Why no vendor call can be made (the message names the key, never a value). */
export type CallProblem =
  | { readonly kind: 'missing'; readonly message: string }
  | { readonly kind: 'unreadable'; readonly message: string };

/** A vendor call for the Agent's namespace, with the key read from `agent-secrets[secretKey]`. */
export async function vendorCall(
  rt: BatchRuntime,
  provider: BatchProvider,
  namespace: string,
  secretKey: string,
): Promise<Result<VendorCall, CallProblem>> {
  const secret = await rt.secrets.read(namespace);
  if (!secret.ok) {
    if (secret.error.kind === 'forbidden') {
      return err({
        kind: 'missing',
        message: `batch credentials unreadable: the controller may not read Secret agent-secrets in namespace ${namespace} (apply deploy/components/batch)`,
      });
    }
    return err({
      kind: 'unreadable',
      message: `reading Secret agent-secrets failed: ${describeKubeError(secret.error.error)}`,
    });
  }
  if (secret.value === null) {
    return err({
      kind: 'missing',
      message: `batch credentials missing: Secret agent-secrets not found in namespace ${namespace} (it must hold the key ${secretKey})`,
    });
  }
  const key = secret.value.get(secretKey)?.trim() ?? '';
  if (key === '') {
    return err({
      kind: 'missing',
      message: `batch credentials missing: Secret agent-secrets has no key ${secretKey}`,
    });
  }
  return ok({
    apiKey: key,
    baseUrl: rt.baseUrls[provider].replace(/\/+$/, ''),
    fetch: rt.fetch,
    timeoutMs: rt.timeoutMs,
    attempts: rt.attempts,
    sleep: rt.sleep,
  });
}

/**
 * The credential check of a Pending batch run: `present`, `missing` (the run fails, naming the key), or an error
 * to retry (the Secret could not be read for another reason).
 */
export async function checkCredentials(
  rt: BatchRuntime,
  agent: Agent,
  definition: AgentDefinition,
): Promise<Result<CredentialCheck, string>> {
  const provider = batchProviderFor(batchModel(agent, definition));
  if (provider === undefined) return ok({ kind: 'present' });
  const call = await vendorCall(
    rt,
    provider,
    agent.metadata.namespace,
    apiKeySecretKey(definition, provider),
  );
  if (call.ok) return ok({ kind: 'present' });
  if (call.error.kind === 'missing') return ok({ kind: 'missing', message: call.error.message });
  return err(call.error.message);
}

/** What the shell knows about an Agent's submission before any search. */
export function knownSubmission(rt: BatchRuntime, uid: string): SubmissionObservation {
  return rt.nothingOutstanding.has(uid) ? { kind: 'none' } : { kind: 'unknown' };
}
