import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AgentPolicy, parseAgentPolicy } from '../../api/index.ts';
import { agent, definition, iso, NS, station } from '../test-fixtures.ts';
import {
  effectiveTools,
  globMatch,
  policyUnusable,
  policyViolation,
  runIntent,
  runLimits,
  withPolicyTools,
} from './check.ts';

function policy(spec: Record<string, unknown>, name = 'tight'): AgentPolicy {
  const r = parseAgentPolicy({
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: iso(-1000) },
    spec,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const limited = { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '2Gi' } };
const template = (containers: Record<string, unknown>[], spec: Record<string, unknown> = {}) => ({
  template: { spec: { containers, ...spec } },
});
const agentC = (extra: Record<string, unknown> = {}) => ({
  name: 'agent',
  image: 'ghcr.io/acme/agent:1',
  resources: limited,
  ...extra,
});

/** The violation for a run of a default Agent on a Station (spec) and definition (spec) under `p`. */
function verdict(
  p: AgentPolicy,
  o: { station?: Record<string, unknown>; definition?: Record<string, unknown>; model?: string } = {},
): string | undefined {
  const a = agent('a');
  const withModel = o.model !== undefined ? { ...a, spec: { ...a.spec, model: o.model } } : a;
  const st = station('stn', o.station ?? template([agentC()]));
  const d = definition('def', { model: 'claude-opus-5-5', ...o.definition });
  return policyViolation(p, runIntent(withModel, st, d));
}

describe('AgentPolicy checks: each limit with its exact reason', () => {
  it('an empty policy allows everything', () => {
    assert.equal(verdict(policy({})), undefined);
  });

  const rows: [string, Record<string, unknown>, Parameters<typeof verdict>[1], string | undefined][] = [
    [
      'execution not allowed',
      { executions: { allowed: ['job'] } },
      { definition: { execution: 'realtime' } },
      'AgentPolicy tight: execution realtime is not allowed (allowed: job)',
    ],
    ['execution allowed', { executions: { allowed: ['job', 'batch'] } }, {}, undefined],
    [
      'a Localhost seccomp profile without its file',
      { sandbox: { seccompProfile: { type: 'Localhost' } } },
      {},
      'AgentPolicy tight: sandbox.seccompProfile type Localhost needs a localhostProfile',
    ],
    [
      'a RuntimeDefault seccomp profile with a file',
      { sandbox: { seccompProfile: { type: 'RuntimeDefault', localhostProfile: 'p.json' } } },
      {},
      'AgentPolicy tight: sandbox.seccompProfile type RuntimeDefault takes no localhostProfile',
    ],
    [
      'a Station sidecar with another seccomp profile',
      { sandbox: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } },
      {
        station: template([
          agentC({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
          {
            name: 'proxy',
            image: 'x',
            resources: limited,
            securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          },
        ]),
      },
      "AgentPolicy tight: container proxy sets another seccomp profile than the policy's Localhost (p.json)",
    ],
    [
      "a Station sidecar with the policy's seccomp profile, or none (the agent's own is replaced)",
      { sandbox: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } },
      {
        station: template([
          agentC({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
          {
            name: 'proxy',
            image: 'x',
            resources: limited,
            securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } },
          },
          { name: 'quiet', image: 'x', resources: limited },
        ]),
      },
      undefined,
    ],
    [
      'a namespace the policy does not serve',
      { namespaces: ['team-b', 'team-c'] },
      {},
      `AgentPolicy tight: it does not serve namespace ${NS} (spec.namespaces: team-b, team-c)`,
    ],
    ['a namespace the policy serves', { namespaces: [NS] }, {}, undefined],
    [
      'a role the policy does not grant',
      { rbac: { roles: ['view'] } },
      { definition: { rbac: { roles: ['edit'] } } },
      'AgentPolicy tight: role edit is not grantable (spec.rbac.roles: view)',
    ],
    [
      'a role granted in the namespace but asked cluster-wide',
      { rbac: { roles: ['view'] } },
      { definition: { rbac: { clusterRoles: ['view'] } } },
      'AgentPolicy tight: cluster role view is not grantable cluster-wide (spec.rbac.clusterRoles: (none))',
    ],
    [
      'roles the policy grants',
      { rbac: { roles: ['view'], clusterRoles: ['reader'] } },
      { definition: { rbac: { roles: ['view', 'view'], clusterRoles: ['reader'] } } },
      undefined,
    ],
    [
      'vendor not allowed',
      { vendors: { allowed: ['claude'] } },
      { definition: { model: 'gpt-5-codex' } },
      'AgentPolicy tight: vendor codex is not allowed (allowed: claude)',
    ],
    [
      'model outside the globs (the Agent override counts)',
      { models: { allowed: ['claude-sonnet-*', 'claude-haiku-*'] } },
      { model: 'claude-opus-5-5' },
      'AgentPolicy tight: model claude-opus-5-5 is not allowed (allowed: claude-sonnet-*, claude-haiku-*)',
    ],
    ['model inside a glob', { models: { allowed: ['claude-*'] } }, {}, undefined],
    [
      'a tool outside the allow list',
      { tools: { allow: ['Read', 'Grep'] } },
      { definition: { allowed_tools: ['Read', 'Bash'] } },
      'AgentPolicy tight: tool Bash is not allowed (allowed: Read, Grep)',
    ],
    [
      'a denied tool the definition allows',
      { tools: { deny: ['Bash'] } },
      { definition: { allowed_tools: ['Read', 'Bash'] } },
      'AgentPolicy tight: tool Bash is denied',
    ],
    [
      'a deny list on a CLI that cannot enforce it (codex)',
      { tools: { deny: ['shell'] } },
      { definition: { model: 'gpt-5-codex' } },
      'AgentPolicy tight: the codex CLI cannot enforce a tool deny list',
    ],
    [
      'gemini enforces a deny list (its settings)',
      { tools: { deny: ['run_shell_command'] } },
      { definition: { model: 'gemini-3-pro' } },
      undefined,
    ],
    [
      'opencode enforces a deny list (its config)',
      { tools: { deny: ['bash'] } },
      { definition: { model: 'opencode/anthropic/claude-sonnet-4-5' } },
      undefined,
    ],
    [
      'an allow list on a CLI that cannot enforce it (codex)',
      { tools: { allow: ['Read'] } },
      { definition: { model: 'gpt-5-codex' } },
      'AgentPolicy tight: the codex CLI cannot enforce a tool allow list',
    ],
    [
      'bypass mode under an allow list (the CLI would get no allow list at all)',
      { tools: { allow: ['Read'] } },
      { definition: { permission_mode: 'bypass' } },
      'AgentPolicy tight: permission_mode bypass is not allowed under a tool allow list',
    ],
    [
      'envFrom under an env deny list (names nobody can check)',
      { env: { deny: ['LD_PRELOAD'] } },
      {
        station: template([
          agentC(),
          { name: 'helper', image: 'y', envFrom: [{ configMapRef: { name: 'x' } }] },
        ]),
      },
      'AgentPolicy tight: envFrom (container helper) is not allowed under an env deny list',
    ],
    [
      'tool lists do not concern a batch run (no CLI, no tools)',
      { tools: { deny: ['shell'] } },
      { definition: { model: 'gemini-3-pro', execution: 'batch' } },
      undefined,
    ],
    [
      'gemini enforces an allow list',
      { tools: { allow: ['read_file'] } },
      { definition: { model: 'gemini-3-pro' } },
      undefined,
    ],
    [
      'sidecars not allowed',
      { sidecars: { allowed: false } },
      { station: template([agentC(), { name: 'proxy', image: 'ghcr.io/acme/proxy:1', resources: limited }]) },
      'AgentPolicy tight: sidecar containers are not allowed (container proxy)',
    ],
    [
      'an image outside the prefixes (every container)',
      { images: { allowedPrefixes: ['ghcr.io/acme/'] } },
      { station: template([agentC(), { name: 'proxy', image: 'docker.io/envoy:1' }]) },
      'AgentPolicy tight: image docker.io/envoy:1 of container proxy is not allowed (allowed prefixes: ghcr.io/acme/)',
    ],
    ['images inside the prefixes', { images: { allowedPrefixes: ['ghcr.io/acme/'] } }, {}, undefined],
    [
      "a tool sidecar's image (the definition's sidecars count as containers)",
      { images: { allowedPrefixes: ['ghcr.io/acme/'] } },
      { definition: { sidecars: [{ name: 'search', image: 'docker.io/search:1' }] } },
      'AgentPolicy tight: image docker.io/search:1 of container search is not allowed (allowed prefixes: ghcr.io/acme/)',
    ],
    [
      'tool sidecars when sidecars are not allowed',
      { sidecars: { allowed: false } },
      { definition: { sidecars: [{ name: 'search', image: 'ghcr.io/acme/search:1' }] } },
      'AgentPolicy tight: sidecar containers are not allowed (container search)',
    ],
    [
      'a deadline over the maximum',
      { resources: { maxDeadlineMinutes: 20 } },
      { station: { ...template([agentC()]), deadlineMinutes: 30 } },
      'AgentPolicy tight: deadlineMinutes 30 is over the maximum of 20',
    ],
    [
      'a memory limit over the cap',
      { resources: { maxMemory: '1Gi' } },
      {},
      'AgentPolicy tight: container agent memory limit 2Gi is over the cap of 1Gi',
    ],
    [
      'a cpu request over the cap',
      { resources: { maxCpu: '250m' } },
      {},
      'AgentPolicy tight: container agent cpu request 500m is over the cap of 250m',
    ],
    [
      'no cpu limit under a cpu cap (the agent default sets none)',
      { resources: { maxCpu: '2' } },
      { station: template([{ name: 'agent', image: 'x' }]) },
      'AgentPolicy tight: container agent has no cpu limit (the policy caps cpu at 2)',
    ],
    ['resources inside the caps', { resources: { maxCpu: '1', maxMemory: '2Gi' } }, {}, undefined],
    [
      'a cap that is not a quantity',
      { resources: { maxMemory: 'lots' } },
      {},
      'AgentPolicy tight: resources.maxMemory lots is not a quantity',
    ],
    [
      'a runtimeClass required and missing',
      { sandbox: { runtimeClassNames: ['gvisor'], requireRuntimeClass: true } },
      {},
      'AgentPolicy tight: a runtimeClassName is required (one of gvisor)',
    ],
    [
      'a runtimeClass not in the list',
      { sandbox: { runtimeClassNames: ['gvisor', 'kata'] } },
      { station: template([agentC()], { runtimeClassName: 'runc' }) },
      'AgentPolicy tight: runtimeClassName runc is not allowed (allowed: gvisor, kata)',
    ],
    [
      'an allowed runtimeClass',
      { sandbox: { runtimeClassNames: ['gvisor'], requireRuntimeClass: true } },
      { station: template([agentC()], { runtimeClassName: 'gvisor' }) },
      undefined,
    ],
    [
      'a denied env name in the definition',
      { env: { deny: ['LD_PRELOAD', 'NODE_OPTIONS'] } },
      { definition: { resources: { env: [{ name: 'NODE_OPTIONS', value: '--require x' }] } } },
      'AgentPolicy tight: env NODE_OPTIONS (set by the definition) is denied',
    ],
    [
      'a denied env name in a sidecar',
      { env: { deny: ['LD_PRELOAD'] } },
      {
        station: template([
          agentC(),
          { name: 'helper', image: 'y', env: [{ name: 'LD_PRELOAD', value: '/x.so' }] },
        ]),
      },
      'AgentPolicy tight: env LD_PRELOAD (set by container helper) is denied',
    ],
    [
      "the Station's env on the agent container is replaced by the run env: not checked",
      { env: { deny: ['PATH'] } },
      { station: template([agentC({ env: [{ name: 'PATH', value: '/evil' }] })]) },
      undefined,
    ],
  ];
  for (const [name, spec, o, expected] of rows) {
    it(name, () => assert.equal(verdict(policy(spec), o), expected));
  }
});

describe('AgentPolicy tool lists handed to the CLI', () => {
  it('a definition without allowed_tools gets the policy allow list; deny lists add up', () => {
    const p = policy({ tools: { allow: ['Read', 'Grep'], deny: ['WebFetch'] } });
    const d = definition('def', { disallowed_tools: ['Bash'] });
    assert.deepEqual(effectiveTools(d, p), { allowed: ['Read', 'Grep'], disallowed: ['Bash', 'WebFetch'] });
    const applied = withPolicyTools(d, p);
    assert.deepEqual(applied.spec.allowed_tools, ['Read', 'Grep']);
    assert.deepEqual(applied.spec.disallowed_tools, ['Bash', 'WebFetch']);
  });

  it('keeps the definition as it is without a tools section', () => {
    const d = definition('def', { allowed_tools: ['Read'] });
    assert.equal(withPolicyTools(d, policy({})), d);
    assert.equal(withPolicyTools(d, undefined), d);
  });
});

describe('globMatch', () => {
  it('* matches any run of characters, the rest literally', () => {
    assert.equal(globMatch('claude-*', 'claude-opus-5-5'), true);
    assert.equal(globMatch('claude-*', 'xclaude-opus'), false);
    assert.equal(globMatch('gpt-5.?', 'gpt-5.1'), false, '? and . are literal');
    assert.equal(globMatch('gpt-5.?', 'gpt-5.?'), true);
    assert.equal(globMatch('*', 'anything'), true);
  });
});

describe('policyUnusable', () => {
  it('names a missing policy (with why) and an ambiguous default', () => {
    assert.equal(policyUnusable({ kind: 'missing', name: 'p' }), 'AgentPolicy p not found');
    assert.equal(policyUnusable({ kind: 'missing', name: 'p', message: 'x' }), 'AgentPolicy p not found: x');
    assert.equal(
      policyUnusable({ kind: 'ambiguous', names: ['a', 'b'] }),
      'more than one AgentPolicy is labelled agents.re-cinq.com/default-policy=true (a, b): keep one default, or name a policy with spec.policyRef',
    );
  });
});

describe('runLimits: what a policy imposes on the containers the controller writes', () => {
  it('the seccomp profile and the cpu/memory caps, or nothing', () => {
    assert.equal(runLimits(undefined), undefined);
    assert.equal(runLimits(policy({ images: { allowedPrefixes: ['x/'] } })), undefined);
    assert.deepEqual(
      runLimits(
        policy({
          sandbox: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } },
          resources: { maxCpu: '2', maxMemory: '4Gi', maxDeadlineMinutes: 9 },
        }),
      ),
      { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' }, maxCpu: '2', maxMemory: '4Gi' },
    );
    assert.throws(
      () => policy({ sandbox: { seccompProfile: { type: 'Unconfined' } } }),
      /seccompProfile|type/,
    );
  });
});
