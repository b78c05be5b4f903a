// Whether a call may be forwarded (docs/design/gateway.md#run-identity), pure: the credential verified to a run, that
// run's Agent as the gateway reads it (the trimmed view below), the vendor and the model of the call.

import * as v from 'valibot';
import {
  ANNOTATION_GATEWAY_USAGE,
  type GatewayGrant,
  GatewayGrantSchema,
  type GatewayVendor,
} from '../api/gateway.ts';
import type { RunIdentity } from '../shared/gateway-credential.ts';
import { globMatch } from '../shared/glob.ts';
import type { RefusalReason } from './refusals.ts';

/**
 * What the gateway keeps of an Agent: identity, resourceVersion, the Station, the phase, the grant and the usage
 * annotation, nothing else (the cache holds every Agent of the cluster). A grant that does not parse reads as none.
 */
export const GatewayAgentSchema = v.object({
  metadata: v.pipe(
    v.object({
      name: v.string(),
      namespace: v.string(),
      uid: v.string(),
      resourceVersion: v.optional(v.string()),
      annotations: v.optional(v.nullable(v.record(v.string(), v.string()))),
    }),
    v.transform(({ annotations, ...meta }) => ({ ...meta, usage: annotations?.[ANNOTATION_GATEWAY_USAGE] })),
  ),
  spec: v.object({ stationRef: v.optional(v.string()) }),
  status: v.optional(
    v.object({
      phase: v.optional(v.string()),
      gateway: v.fallback(v.optional(GatewayGrantSchema), undefined),
    }),
  ),
});
export type GatewayAgent = v.InferOutput<typeof GatewayAgentSchema>;

/** A call the gateway forwards: with which key of agent-secrets, attributed to which Station. */
export interface Allowed {
  readonly ok: true;
  readonly keyName: string;
  readonly station: string | undefined;
}

export interface Refused {
  readonly ok: false;
  readonly reason: RefusalReason;
  /** Said to the client: names no secret. */
  readonly message: string;
}

/** The phases after which a run's credential is refused. */
const ENDED = new Set(['Succeeded', 'Failed']);

/**
 * The decision for one call. `run` is the credential's identity (undefined: it did not verify); `agent` is the Agent
 * of that name as read (undefined: none); `modelNamed` says whether the route names a model at all (model lists do
 * not); `model` is the call's model when it names one.
 */
export function authorize(input: {
  readonly run: RunIdentity | undefined;
  readonly agent: GatewayAgent | undefined;
  readonly vendor: GatewayVendor;
  readonly modelNamed: boolean;
  readonly model: string | undefined;
}): Allowed | Refused {
  const { run, agent, vendor } = input;
  if (run === undefined) return refused('credential', 'the credential is not valid');
  if (agent === undefined || agent.metadata.uid !== run.uid)
    return refused('unknown_run', `the run ${run.namespace}/${run.name} of this credential does not exist`);
  const phase = agent.status?.phase;
  if (phase !== undefined && ENDED.has(phase))
    return refused('run_ended', `the run ${run.namespace}/${run.name} has ended (${phase})`);
  const grant = agent.status?.gateway;
  if (grant === undefined)
    return refused('not_granted', `the run ${run.namespace}/${run.name} was not started behind the gateway`);
  const keyName = grant.keys[vendor];
  if (keyName === undefined || keyName === '')
    return refused('vendor', `the run ${run.namespace}/${run.name} has no ${vendor} key`);
  const modelRefusal = checkModel(grant, input.modelNamed, input.model);
  if (modelRefusal !== undefined) return modelRefusal;
  return { ok: true, keyName, station: agent.spec.stationRef };
}

/** A refusal when the grant limits models and the call's model is not among them (or not stated). */
function checkModel(grant: GatewayGrant, named: boolean, model: string | undefined): Refused | undefined {
  const globs = grant.models;
  if (!named || globs === undefined) return undefined;
  if (model === undefined) return refused('model', 'the call names no model and the policy limits models');
  if (globs.some((glob) => globMatch(glob, model))) return undefined;
  return refused('model', `the model ${model} is not allowed for this run (allowed: ${globs.join(', ')})`);
}

const refused = (reason: RefusalReason, message: string): Refused => ({ ok: false, reason, message });

/** Whether a cached Agent is enough to decide, or it is to be read again from the API server first. */
export function needsFreshRead(run: RunIdentity, cached: GatewayAgent | undefined): boolean {
  return cached === undefined || cached.metadata.uid !== run.uid || cached.status?.gateway === undefined;
}
