import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { PolicyBudgetsSchema } from './budget.ts';
import { ObjectMetaSchema } from './meta.ts';
import { parseWith } from './schema-kit.ts';

/** Label that makes an AgentPolicy the one for Stations that name none (`"true"`). */
export const LABEL_DEFAULT_POLICY = 'agents.re-cinq.com/default-policy';

/** Seccomp profile types a policy may require (Unconfined is never allowed on a run pod). */
export const SECCOMP_PROFILE_TYPES = ['RuntimeDefault', 'Localhost'] as const;

const names = (description: string) => v.optional(v.pipe(v.array(v.string()), v.description(description)));

/**
 * `AgentPolicy.spec`: what the Stations that name this policy (`Station.spec.policyRef`) may run. Every field is
 * optional; an absent field sets no limit. Platform admins own policies (cluster-scoped); teams own Stations.
 */
export const AgentPolicySpecSchema = v.pipe(
  v.object({
    namespaces: names(
      'Namespaces whose Stations this policy serves, by policyRef or as their default; absent: every namespace. A Station elsewhere that names it fails, so a team cannot pick a looser policy meant for another.',
    ),
    images: v.optional(
      v.pipe(
        v.object({
          allowedPrefixes: names(
            'Image prefixes every container of a run may use (the Station template and sidecars), e.g. ghcr.io/acme/.',
          ),
        }),
        v.description('Which images runs may use.'),
      ),
    ),
    models: v.optional(
      v.pipe(
        v.object({ allowed: names('Model globs a run may use (* matches any characters), e.g. claude-*.') }),
        v.description('Which models runs may use.'),
      ),
    ),
    vendors: v.optional(
      v.pipe(
        v.object({ allowed: names('Vendor CLIs a run may use: claude, codex, gemini, opencode, exec.') }),
        v.description('Which vendor CLIs runs may use.'),
      ),
    ),
    executions: v.optional(
      v.pipe(
        v.object({
          allowed: names(
            'Execution modes a run may use: job, batch, realtime, server. server must be listed: a Station without a policy that allows it cannot serve.',
          ),
        }),
        v.description('Which execution modes runs may use.'),
      ),
    ),
    tools: v.optional(
      v.pipe(
        v.object({
          allow: names(
            'Agent tools a run may allow; a definition without allowed_tools gets exactly these. The vendor CLI must be able to enforce it.',
          ),
          deny: names(
            'Agent tools every run denies, on top of its own; the vendor CLI must be able to enforce it.',
          ),
        }),
        v.description('Tool gating handed to the vendor CLI.'),
      ),
    ),
    resources: v.optional(
      v.pipe(
        v.object({
          maxCpu: v.optional(
            v.pipe(
              v.string(),
              v.description('Most CPU any container may request or be limited to (a quantity).'),
            ),
          ),
          maxMemory: v.optional(
            v.pipe(
              v.string(),
              v.description('Most memory any container may request or be limited to (a quantity).'),
            ),
          ),
          maxDeadlineMinutes: v.optional(
            v.pipe(v.number(), v.integer(), v.minValue(1), v.description('Longest Station deadlineMinutes.')),
          ),
        }),
        v.description('Resource caps of every container, and the longest run deadline.'),
      ),
    ),
    sandbox: v.optional(
      v.pipe(
        v.object({
          runtimeClassNames: names('RuntimeClasses a Station template may name (gVisor, Kata, …).'),
          requireRuntimeClass: v.optional(
            v.pipe(v.boolean(), v.description('A Station template must name one of runtimeClassNames.')),
          ),
          seccompProfile: v.optional(
            v.pipe(
              v.object({
                type: v.pipe(
                  v.picklist(SECCOMP_PROFILE_TYPES),
                  v.description('RuntimeDefault (the default of every run pod) or Localhost.'),
                ),
                localhostProfile: v.optional(
                  v.pipe(
                    v.string(),
                    v.description('With Localhost: the profile file, relative to the kubelet seccomp root.'),
                  ),
                ),
              }),
              v.description(
                'The seccomp profile of every container of a run (the pod, the agent, the init and tool sidecars get it; a Station container that sets another is refused).',
              ),
            ),
          ),
        }),
        v.description('Sandboxed runtimes.'),
      ),
    ),
    env: v.optional(
      v.pipe(
        v.object({
          deny: names(
            'Environment variable names no container of a run may set (PATH, LD_PRELOAD, NODE_OPTIONS, …).',
          ),
        }),
        v.description('Environment variables runs may not set.'),
      ),
    ),
    rbac: v.optional(
      v.pipe(
        v.object({
          roles: names(
            "ClusterRoles a run may have bound in its own namespace (AgentDefinition spec.rbac.roles); the controller's RBAC must hold bind on each (deploy/components/run-rbac).",
          ),
          clusterRoles: names(
            'ClusterRoles a run may have bound cluster-wide (AgentDefinition spec.rbac.clusterRoles); absent: none.',
          ),
        }),
        v.description(
          'Which ClusterRoles runs may have bound to their own ServiceAccount. Without a policy that lists a role, no run gets it.',
        ),
      ),
    ),
    sidecars: v.optional(
      v.pipe(
        v.object({
          allowed: v.optional(
            v.pipe(
              v.boolean(),
              v.description(
                "Containers besides agent in a run (the Station template's and the definition's tool sidecars); default true.",
              ),
            ),
          ),
        }),
        v.description('Whether runs may have sidecar containers.'),
      ),
    ),
    budgets: v.optional(PolicyBudgetsSchema),
  }),
  v.description('What runs of the Stations that name this policy may do.'),
);
export type AgentPolicySpec = v.InferOutput<typeof AgentPolicySpecSchema>;

/** An AgentPolicy as read from the API server (cluster-scoped: no namespace; no status). */
export const AgentPolicySchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: v.object({
    ...v.omit(ObjectMetaSchema, ['namespace']).entries,
    namespace: v.optional(v.string()),
  }),
  spec: AgentPolicySpecSchema,
});
export type AgentPolicy = v.InferOutput<typeof AgentPolicySchema>;

/** Parses an AgentPolicy read from the API server; unknown fields dropped, a type mismatch is an error. */
export function parseAgentPolicy(u: unknown): Result<AgentPolicy, string> {
  return parseWith(AgentPolicySchema, u, 'AgentPolicy');
}
