import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { StationBudgetsSchema } from './budget.ts';
import { ObjectMetaSchema } from './meta.ts';
import { freeForm, lenientEnum, objectRef, parseDefault, parseWith } from './schema-kit.ts';

/** Station concurrency policies; an unknown string reads as `Allow`. */
export const CONCURRENCY_POLICIES = ['Allow', 'Forbid', 'Replace'] as const;
export type ConcurrencyPolicy = (typeof CONCURRENCY_POLICIES)[number];

/**
 * Pod Security profiles a Station's run pods are built for: `restricted` (the default: non-root init without added
 * capabilities, every container hardened) or `baseline` (the init runs as root with five capabilities, so it can
 * install missing prerequisites with the image's package manager and chown; the reference system's pods).
 */
export const POD_SECURITY_PROFILES = ['restricted', 'baseline'] as const;
export type PodSecurityProfile = (typeof POD_SECURITY_PROFILES)[number];

/** Default `deadlineMinutes` of a Station (CRD default and parse default). */
export const DEFAULT_DEADLINE_MINUTES = 30;
/** Default `startTimeoutMinutes` of a Station (CRD default and parse default; issue 13 §4). */
export const DEFAULT_START_TIMEOUT_MINUTES = 5;
/** Default successful/failed history limits of a Station (CRD default and parse default). */
export const DEFAULT_HISTORY_LIMIT = 3;

/** `Station.spec`: a runtime template pairing a recipe (AgentDefinition) with a Pod template. */
export const StationSpecSchema = v.pipe(
  v.object({
    agentDefRef: objectRef('Name of the AgentDefinition (same namespace) this Station runs.'),
    deadlineMinutes: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description('Run deadline in minutes; becomes the Job activeDeadlineSeconds.'),
      ),
      DEFAULT_DEADLINE_MINUTES,
    ),
    startTimeoutMinutes: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description(
          "How long a run's pod may be kept from starting (unschedulable, image not pulled, container config " +
            'error, pod refused by admission) before the run fails with that cause.',
        ),
      ),
      DEFAULT_START_TIMEOUT_MINUTES,
    ),
    successfulRunsHistoryLimit: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description('Succeeded Agents of this Station to keep; older ones are deleted.'),
      ),
      DEFAULT_HISTORY_LIMIT,
    ),
    failedRunsHistoryLimit: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description('Failed Agents of this Station to keep; older ones are deleted.'),
      ),
      DEFAULT_HISTORY_LIMIT,
    ),
    maxConcurrentRuns: parseDefault(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description(
          'Most runs of this Station at once under concurrencyPolicy Allow; 0 or absent means unlimited.',
        ),
      ),
      0,
    ),
    concurrencyPolicy: parseDefault(
      v.pipe(
        lenientEnum(CONCURRENCY_POLICIES),
        v.description(
          'What a new run does at the limit: Allow queues it; Forbid allows one run at a time and queues the others; Replace allows one run at a time and deletes the oldest running Agent to start the new one.',
        ),
      ),
      'Allow',
    ),
    podSecurityProfile: parseDefault(
      v.pipe(
        lenientEnum(POD_SECURITY_PROFILES),
        v.description(
          'Pod Security profile run pods are admissible under: restricted (default; non-root init, no added capabilities) or baseline (the init runs as root to install prerequisites).',
        ),
      ),
      'restricted',
    ),
    policyRef: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1),
        v.description(
          "Name of the AgentPolicy (cluster-scoped) that limits this Station's runs; absent: the policy labelled agents.re-cinq.com/default-policy=true, if any.",
        ),
      ),
    ),
    server: parseDefault(
      v.pipe(
        v.object({
          replicas: v.optional(
            v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Replicas of a server Deployment.')),
            1,
          ),
        }),
        v.description('Settings of the servers of this Station (execution: server).'),
      ),
      {},
    ),
    gateway: v.optional(
      v.pipe(
        v.object({
          name: v.pipe(
            v.string(),
            v.minLength(1),
            v.description('Name of the Gateway (gateway.networking.k8s.io).'),
          ),
          namespace: v.optional(
            v.pipe(
              v.string(),
              v.minLength(1),
              v.description("Namespace of the Gateway; absent: the Station's."),
            ),
          ),
          hostname: v.optional(
            v.pipe(
              v.string(),
              v.minLength(1),
              v.description('Hostname the route answers; absent: whatever the Gateway listener accepts.'),
            ),
          ),
        }),
        v.description(
          'Gateway the servers of this Station are routed through: an HTTPRoute per server, when the Gateway API is installed.',
        ),
      ),
    ),
    budgets: v.optional(StationBudgetsSchema),
    idleTimeoutSeconds: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description(
          "Realtime runs only: seconds without a prompt after which a session is saved, its pod deleted and the Agent Suspended until its next prompt; wins over the AgentDefinition's idleTimeoutSeconds. Needs a controller with a session store.",
        ),
      ),
    ),
    sessionHistoryLimit: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description(
          'Finished runs of this Station whose stored sessions are kept in the session store; the oldest beyond it are deleted from the store (the Agents stay). Absent: all are kept.',
        ),
      ),
    ),
    template: freeForm('Pod template (PodTemplateSpec) for runs; the container named agent runs the recipe.'),
  }),
  v.description('Runtime template of the Station.'),
);
export type StationSpec = v.InferOutput<typeof StationSpecSchema>;

/** A Station as read from the API server. Stations have no status. */
export const StationSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: StationSpecSchema,
});
export type Station = v.InferOutput<typeof StationSchema>;

/**
 * Parses a Station read from the API server: unknown fields dropped, absent fields defaulted (deadline 30,
 * history limits 3, maxConcurrentRuns 0, concurrencyPolicy Allow), an unknown policy string reads as `Allow`.
 * A type mismatch, a missing `agentDefRef`/`template`, or a value outside the CRD bounds is an error.
 */
export function parseStation(u: unknown): Result<Station, string> {
  return parseWith(StationSchema, u, 'Station');
}
