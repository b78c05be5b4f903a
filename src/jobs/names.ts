// Names, labels and annotations of the Jobs and run pods the controller builds
// (docs/design/reference-behaviour.md#names, docs/design/reference-behaviour.md#labels-and-annotations).

/** Longest name or label value Kubernetes accepts for a Job name and a label value. */
export const MAX_NAME_LENGTH = 63;

/** Prefix of every run Job name: `agent-job-<agent name>`. */
export const JOB_NAME_PREFIX = 'agent-job-';

/** Label on the run pod template and on the Job: always {@link COMPONENT_JOB}; the NetworkPolicy selects on it. */
export const LABEL_COMPONENT = 'agents.re-cinq.com/component';
/** Label value of {@link LABEL_COMPONENT} on run pods and run Jobs. */
export const COMPONENT_JOB = 'job';
/** Label: `safeName(agent name)`. */
export const LABEL_AGENT = 'agents.re-cinq.com/agent';
/** Label: `safeName(station name)`. */
export const LABEL_STATION = 'agents.re-cinq.com/station';
/** Label the Job controller sets on the pods of a Job; the pod lookup selects `job-name=<jobName>`. */
export const LABEL_JOB_NAME = 'job-name';

/** Pod template annotation, forced to `"false"` so the cluster autoscaler never evicts a live run. */
export const ANNOTATION_SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict';
/** Job annotation (our addition): the uid of the Agent the Job runs, for adoption checks and debugging. */
export const ANNOTATION_AGENT_UID = 'agents.re-cinq.com/agent-uid';

/** Label selector (`key=value`) matching every run Job the controller owns; used by the Job watch. */
export const JOB_LABEL_SELECTOR = `${LABEL_COMPONENT}=${COMPONENT_JOB}`;

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;
const encoder = new TextEncoder();

/**
 * The low 32 bits of the 64-bit FNV-1a hash of the UTF-8 bytes of `s`, as exactly 8 lowercase hex digits.
 * Deterministic across runtimes.
 */
export function fnv1a8(s: string): string {
  let hash = FNV64_OFFSET;
  for (const byte of encoder.encode(s)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV64_PRIME) & MASK64;
  }
  return (hash & 0xffffffffn).toString(16).padStart(8, '0');
}

/**
 * Fits `s` into `max` characters: unchanged when it fits, else the first `max - 9` characters with trailing `.`/`-`
 * stripped, plus `-` and {@link fnv1a8} of the whole input. The result is never longer than `max` and depends only
 * on `s` and `max`, so the same input always yields the same name.
 */
export function safeName(s: string, max: number = MAX_NAME_LENGTH): string {
  if (s.length <= max) return s;
  const suffix = `-${fnv1a8(s)}`;
  const prefix = s.slice(0, Math.max(0, max - suffix.length)).replace(/[.-]+$/, '');
  return prefix + suffix;
}

/** The name of the Job that runs the Agent named `agentName`: `safeName("agent-job-" + agentName)`. */
export function jobNameFor(agentName: string): string {
  return safeName(JOB_NAME_PREFIX + agentName);
}
