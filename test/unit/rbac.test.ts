// Least privilege, read from the manifests users apply: deploy/rbac/controller-rbac.yaml grants the controller
// exactly what it uses, in its own namespace only (no wildcard, no Secrets, leases exactly get/create/patch),
// and deploy/rbac/caller-rbac.yaml lets callers create and read Agents and nothing else. Any added or widened
// permission fails here until this table is updated on purpose.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import * as v from 'valibot';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const RuleSchema = v.strictObject({
  apiGroups: v.array(v.string()),
  resources: v.array(v.string()),
  verbs: v.array(v.string()),
  resourceNames: v.optional(v.array(v.string())),
});
type Rule = v.InferOutput<typeof RuleSchema>;

const MetaSchema = v.looseObject({ name: v.string(), namespace: v.optional(v.string()) });
const DocSchema = v.variant('kind', [
  v.looseObject({ apiVersion: v.literal('v1'), kind: v.literal('ServiceAccount'), metadata: MetaSchema }),
  v.looseObject({
    apiVersion: v.literal('rbac.authorization.k8s.io/v1'),
    kind: v.literal('Role'),
    metadata: MetaSchema,
    rules: v.array(RuleSchema),
  }),
  v.looseObject({
    apiVersion: v.literal('rbac.authorization.k8s.io/v1'),
    kind: v.literal('ClusterRole'),
    metadata: MetaSchema,
    rules: v.array(RuleSchema),
  }),
  v.looseObject({
    apiVersion: v.literal('rbac.authorization.k8s.io/v1'),
    kind: v.literal('ClusterRoleBinding'),
    metadata: MetaSchema,
    roleRef: v.strictObject({ apiGroup: v.string(), kind: v.string(), name: v.string() }),
    subjects: v.array(
      v.looseObject({ kind: v.string(), name: v.string(), namespace: v.optional(v.string()) }),
    ),
  }),
  v.looseObject({
    apiVersion: v.literal('rbac.authorization.k8s.io/v1'),
    kind: v.literal('RoleBinding'),
    metadata: MetaSchema,
    roleRef: v.strictObject({ apiGroup: v.string(), kind: v.string(), name: v.string() }),
    subjects: v.array(
      v.looseObject({ kind: v.string(), name: v.string(), namespace: v.optional(v.string()) }),
    ),
  }),
]);
type Doc = v.InferOutput<typeof DocSchema>;

/** Parses every document of a deploy/rbac file; anything but a ServiceAccount, Role or RoleBinding fails. */
function load(file: string, dir: readonly string[] = ['deploy', 'rbac']): Doc[] {
  const text = readFileSync(join(ROOT, ...dir, file), 'utf8');
  return loadAll(text)
    .filter((d) => d !== null && d !== undefined)
    .map((d, i) => {
      const parsed = v.safeParse(DocSchema, d);
      assert.ok(parsed.success, `${file} document ${i}: ${parsed.success ? '' : v.summarize(parsed.issues)}`);
      return parsed.output;
    });
}

function only<K extends Doc['kind']>(docs: readonly Doc[], kind: K): Extract<Doc, { kind: K }> {
  const found = docs.filter((d): d is Extract<Doc, { kind: K }> => d.kind === kind);
  assert.equal(found.length, 1, `exactly one ${kind}`);
  const [doc] = found;
  assert.ok(doc);
  return doc;
}

/** One line per (apiGroup, resource), verbs sorted: order-independent and easy to read in a diff. */
function grants(rules: readonly Rule[]): string[] {
  const lines: string[] = [];
  for (const rule of rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        lines.push(`${group || 'core'} ${resource}: ${[...rule.verbs].sort().join(',')}`);
      }
    }
  }
  return lines.sort();
}

/** The verbs granted on `resource` of `group`, merged over every rule. */
function verbsOn(rules: readonly Rule[], group: string, resource: string): string[] {
  return [
    ...new Set(
      rules
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs),
    ),
  ].sort();
}

function assertNoWildcards(rules: readonly Rule[]): void {
  for (const rule of rules) {
    for (const field of [rule.apiGroups, rule.resources, rule.verbs]) {
      assert.ok(!field.some((x) => x.includes('*')), `no wildcard in ${JSON.stringify(rule)}`);
    }
  }
}

const DANGEROUS_VERBS = ['escalate', 'bind', 'impersonate', 'deletecollection'];

describe('deploy/rbac/controller-rbac.yaml', () => {
  const docs = load('controller-rbac.yaml');
  const sa = only(docs, 'ServiceAccount');
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');

  it('is namespaced: a ServiceAccount, a Role and a RoleBinding, all agent-controller in one namespace', () => {
    assert.deepEqual(
      docs.map((d) => d.kind),
      ['ServiceAccount', 'Role', 'RoleBinding'],
    );
    for (const d of docs) {
      assert.equal(d.metadata.name, 'agent-controller');
      assert.equal(d.metadata.namespace, 'ai-agents');
    }
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
  });

  it('grants exactly what the controller uses', () => {
    assert.deepEqual(grants(role.rules), [
      'agents.re-cinq.com agentdefinitions: get,list,watch',
      'agents.re-cinq.com agents/finalizers: update',
      'agents.re-cinq.com agents/status: get,patch',
      'agents.re-cinq.com agents: delete,get,list,patch,watch',
      'agents.re-cinq.com stations: get,list,watch',
      'batch jobs: create,delete,get,list,watch',
      'coordination.k8s.io leases: create,get,patch',
      'core configmaps: create,delete,get',
      'core configmaps: get,list,update,watch',
      'core events: create,list,patch,watch',
      'core pods/log: get',
      'core pods: get,list,watch',
      'core serviceaccounts: create',
      'discovery.k8s.io endpointslices: list,watch',
      'networking.k8s.io networkpolicies: create',
    ]);
  });

  it('networkpolicies: create only (sink egress per run, D-i; never read, changed or deleted)', () => {
    assert.deepEqual(verbsOn(role.rules, 'networking.k8s.io', 'networkpolicies'), ['create']);
    assert.deepEqual(verbsOn(role.rules, 'extensions', 'networkpolicies'), []);
  });

  it('leases: exactly get, create, patch (docs/design/reference-behaviour.md#leader-election)', () => {
    assert.deepEqual(verbsOn(role.rules, 'coordination.k8s.io', 'leases'), ['create', 'get', 'patch']);
  });

  it("events: create and patch (recorded and aggregated), list and watch (the Job controller's FailedCreate)", () => {
    assert.deepEqual(verbsOn(role.rules, '', 'events'), ['create', 'list', 'patch', 'watch']);
    assert.deepEqual(verbsOn(role.rules, 'events.k8s.io', 'events'), []);
  });

  it('configmaps: create, get, delete (the input ConfigMap of each run); list, watch, update only agent-spend', () => {
    const any = role.rules.filter(
      (r) => r.apiGroups.includes('') && r.resources.includes('configmaps') && r.resourceNames === undefined,
    );
    assert.deepEqual(verbsOn(any, '', 'configmaps'), ['create', 'delete', 'get']);
    const named = role.rules.filter(
      (r) => r.apiGroups.includes('') && r.resources.includes('configmaps') && r.resourceNames !== undefined,
    );
    assert.deepEqual(
      named.map((r) => r.resourceNames),
      [['agent-spend']],
    );
    assert.deepEqual(verbsOn(named, '', 'configmaps'), ['get', 'list', 'update', 'watch']);
  });

  it('has no wildcard, no Secret access, never creates Agents or Pods, no escalation verbs', () => {
    assertNoWildcards(role.rules);
    for (const resource of ['secrets', 'serviceaccounts/token']) {
      assert.deepEqual(verbsOn(role.rules, '', resource), [], `no access to ${resource}`);
    }
    assert.deepEqual(
      verbsOn(role.rules, '', 'serviceaccounts'),
      ['create'],
      'creates each run its own ServiceAccount; never reads, changes or deletes one, never mints a token',
    );
    assert.ok(
      !verbsOn(role.rules, 'agents.re-cinq.com', 'agents').includes('create'),
      'never creates Agents',
    );
    assert.ok(
      !verbsOn(role.rules, '', 'pods').some((x) => ['create', 'delete', 'patch', 'update'].includes(x)),
    );
    for (const verb of DANGEROUS_VERBS)
      assert.ok(!role.rules.some((r) => r.verbs.includes(verb)), `no ${verb}`);
    assert.ok(
      !role.rules.some((r) => r.apiGroups.includes('rbac.authorization.k8s.io')),
      'no RBAC object access',
    );
    assert.ok(
      !role.rules.some((r) => r.apiGroups.includes('apiextensions.k8s.io')),
      'no CRD access: deploy/ installs them',
    );
  });

  it('is the ServiceAccount the Deployment runs as', () => {
    const deployment = readFileSync(join(ROOT, 'deploy', 'controller.yaml'), 'utf8');
    assert.match(deployment, new RegExp(`serviceAccountName:\\s*${sa.metadata.name}\\b`));
  });
});

describe('deploy/rbac/policy-reader-rbac.yaml', () => {
  const docs = load('policy-reader-rbac.yaml');
  const role = only(docs, 'ClusterRole');
  const binding = only(docs, 'ClusterRoleBinding');
  const sa = only(load('controller-rbac.yaml'), 'ServiceAccount');

  it('lets the controller read AgentPolicies and nothing else, cluster-wide', () => {
    assert.deepEqual(grants(role.rules), ['agents.re-cinq.com agentpolicies: get,list,watch']);
    assertNoWildcards(role.rules);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
    const kustomization = readFileSync(join(ROOT, 'deploy', 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /- rbac\/policy-reader-rbac\.yaml/);
    assert.match(kustomization, /- crds\/agentpolicy\.yaml/);
  });
});

describe('deploy/rbac/crd-reader-rbac.yaml', () => {
  const docs = load('crd-reader-rbac.yaml');
  const role = only(docs, 'ClusterRole');
  const binding = only(docs, 'ClusterRoleBinding');
  const sa = only(load('controller-rbac.yaml'), 'ServiceAccount');

  it('lets the controller get its own four CRDs by name and nothing else', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: [
          'agents.agents.re-cinq.com',
          'stations.agents.re-cinq.com',
          'agentdefinitions.agents.re-cinq.com',
          'agentpolicies.agents.re-cinq.com',
        ],
        verbs: ['get'],
      },
    ]);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
    const kustomization = readFileSync(join(ROOT, 'deploy', 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /- rbac\/crd-reader-rbac\.yaml/);
  });
});

describe('deploy/rbac/caller-rbac.yaml', () => {
  const docs = load('caller-rbac.yaml');
  const sa = only(docs, 'ServiceAccount');
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');

  it('binds the agent-launcher ServiceAccount to its own Role in the controller namespace', () => {
    for (const d of docs) {
      assert.equal(d.metadata.name, 'agent-launcher');
      assert.equal(d.metadata.namespace, 'ai-agents');
    }
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
  });

  it('only creates and reads Agents and prompts or closes realtime runs: no status, no delete, no wildcard', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(grants(role.rules), [
      'agents.re-cinq.com agents/close: create',
      'agents.re-cinq.com agents/prompt: create',
      'agents.re-cinq.com agents: create,get,list,watch',
    ]);
  });
});

describe('deploy/components/batch', () => {
  const dir = ['deploy', 'components', 'batch'];
  const docs = load('batch-rbac.yaml', dir);
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');

  it('grants get on the one Secret agent-secrets, by name: no list, no watch, no other Secret', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['agent-secrets'], verbs: ['get'] },
    ]);
  });

  it('binds it to the controller ServiceAccount in the controller namespace', () => {
    const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');
    assert.equal(role.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
    ]);
  });

  it('is a kustomize Component that adds the RBAC and sets BATCH_ENABLED=true on the controller', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    assert.match(kustomization, /- batch-rbac\.yaml/);
    const patch = readFileSync(join(ROOT, ...dir, 'batch-env.yaml'), 'utf8');
    assert.match(patch, /name: BATCH_ENABLED, value: "true"/);
    assert.match(patch, /- name: controller\n/);
  });
});

describe('deploy/components/realtime', () => {
  const dir = ['deploy', 'components', 'realtime'];
  const docs = load('realtime-rbac.yaml', dir);
  const role = only(docs, 'Role');
  const bindings = docs.filter((d) => d.kind === 'RoleBinding');
  const binding = bindings.find((d) => d.metadata.namespace !== 'kube-system');
  const caReader = bindings.find((d) => d.metadata.namespace === 'kube-system');
  const delegator = only(docs, 'ClusterRoleBinding');
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');
  const subject = [
    { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
  ];

  it('creates Secrets (run tokens, the key once) and reads only the key Secret by name: no list, no watch', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['agent-controller-realtime'],
        verbs: ['get'],
      },
    ]);
    assert.equal(role.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(binding?.kind === 'RoleBinding' && binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding?.kind === 'RoleBinding' && binding.subjects, subject);
  });

  it('reads the cluster client CA through the built-in extension-apiserver-authentication-reader only', () => {
    assert.equal(bindings.length, 2);
    assert.deepEqual(caReader?.kind === 'RoleBinding' && caReader.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'extension-apiserver-authentication-reader',
    });
    assert.deepEqual(caReader?.kind === 'RoleBinding' && caReader.subjects, subject);
  });

  it('delegates authentication and authorisation through system:auth-delegator only', () => {
    assert.deepEqual(delegator.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:auth-delegator',
    });
    assert.deepEqual(delegator.subjects, subject);
  });

  it('lets CLI users port-forward to the prompt API: the Service by name, list pods, pods/portforward; no binding', () => {
    const cli = load('realtime-cli-rbac.yaml', dir);
    const forwarder = only(cli, 'Role');
    assert.equal(cli.length, 1, 'a Role for admins to bind, nothing bound by default');
    assertNoWildcards(forwarder.rules);
    assert.deepEqual(forwarder.rules, [
      { apiGroups: [''], resources: ['services'], resourceNames: ['agent-controller-api'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
      { apiGroups: [''], resources: ['pods/portforward'], verbs: ['create'] },
    ]);
  });

  it('is a kustomize Component: RBAC, NetworkPolicy, Service, REALTIME_ENABLED=true and TLS on the controller', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    for (const file of [
      'realtime-rbac.yaml',
      'realtime-cli-rbac.yaml',
      'realtime-networkpolicy.yaml',
      'realtime-service.yaml',
    ])
      assert.match(kustomization, new RegExp(`- ${file.replace('.', '\\.')}`));
    const patch = readFileSync(join(ROOT, ...dir, 'realtime-env.yaml'), 'utf8');
    assert.match(patch, /name: REALTIME_ENABLED, value: "true"/);
    assert.match(patch, /--tls-cert-file=/);
    const policy = readFileSync(join(ROOT, ...dir, 'realtime-networkpolicy.yaml'), 'utf8');
    assert.match(policy, /agents\.re-cinq\.com\/execution: realtime/);
    assert.match(policy, /port: 8090/);
  });
});

describe('deploy/components/server', () => {
  const dir = ['deploy', 'components', 'server'];
  const docs = load('server-rbac.yaml', dir);
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');

  it("writes servers' Deployments, Services and HTTPRoutes and creates their key Secrets, in its namespace: no list, no patch", () => {
    assert.equal(docs.length, 2);
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'create', 'update'] },
      { apiGroups: [''], resources: ['services'], verbs: ['get', 'create', 'update'] },
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes'],
        verbs: ['get', 'create', 'update', 'delete'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    ]);
    assert.equal(role.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
    ]);
  });

  it('never reads Secrets: create only (a generated key, a dry-run create to tell one exists), no get, list or watch', () => {
    assert.deepEqual(verbsOn(role.rules, '', 'secrets'), ['create']);
    for (const verb of ['get', 'list', 'watch'])
      assert.ok(
        !role.rules.some(
          (r) =>
            r.apiGroups.includes('') &&
            (r.resources.includes('secrets') || r.resources.includes('*')) &&
            (r.verbs.includes(verb) || r.verbs.includes('*')),
        ),
        `no ${verb} on Secrets, by name or not`,
      );
  });

  it('is a kustomize Component that turns SERVER_ENABLED on', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    assert.match(kustomization, /- server-rbac\.yaml/);
    const patch = readFileSync(join(ROOT, ...dir, 'server-env.yaml'), 'utf8');
    assert.match(patch, /name: SERVER_ENABLED, value: "true"/);
  });
});

describe('deploy/components/console', () => {
  const dir = ['deploy', 'components', 'console'];
  const docs = load('console-rbac.yaml', dir);
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');
  const delegator = only(docs, 'ClusterRoleBinding');
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');
  const subject = [
    { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
  ];

  it('adds creating Agents only (the runs people start, after their own SubjectAccessReview), in its namespace', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      { apiGroups: ['agents.re-cinq.com'], resources: ['agents'], verbs: ['create'] },
    ]);
    assert.equal(role.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, subject);
    assert.equal(docs.length, 3);
  });

  it('delegates authentication and authorisation through system:auth-delegator only', () => {
    assert.deepEqual(delegator.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:auth-delegator',
    });
    assert.deepEqual(delegator.subjects, subject);
  });

  it('offers people a Role to bind: read runs and their surroundings, start runs, prompt realtime ones; no binding', () => {
    const user = load('console-user-rbac.yaml', dir);
    const r = only(user, 'Role');
    assert.equal(user.length, 1, 'a Role for admins to bind, nothing bound by default');
    assertNoWildcards(r.rules);
    assert.deepEqual(r.rules, [
      { apiGroups: ['agents.re-cinq.com'], resources: ['agents'], verbs: ['get', 'list', 'create'] },
      { apiGroups: ['agents.re-cinq.com'], resources: ['agents/prompt'], verbs: ['create'] },
      {
        apiGroups: ['agents.re-cinq.com'],
        resources: ['stations', 'agentdefinitions'],
        verbs: ['get', 'list'],
      },
      { apiGroups: [''], resources: ['events', 'pods'], verbs: ['list'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get'] },
    ]);
  });

  it('is a kustomize Component that turns the console on (loopback: no Service, no TLS needed)', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    for (const file of ['console-rbac.yaml', 'console-user-rbac.yaml'])
      assert.match(kustomization, new RegExp(`- ${file.replace('.', '\\.')}`));
    const patch = readFileSync(join(ROOT, ...dir, 'console-env.yaml'), 'utf8');
    assert.match(patch, /name: CONSOLE_ENABLED, value: "true"/);
    assert.doesNotMatch(patch, /CONSOLE_BIND_ADDRESS/);
  });
});

describe('deploy/components/run-rbac', () => {
  const dir = ['deploy', 'components', 'run-rbac'];
  const docs = load('run-rbac.yaml', dir);
  const clusterRoles = docs.filter((d) => d.kind === 'ClusterRole');
  const grantable = clusterRoles.find((d) => d.metadata.name === 'agent-run-pod-reader');
  const controllerRole = clusterRoles.find((d) => d.metadata.name === 'agent-controller-run-rbac');
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');
  const subject = {
    kind: 'ServiceAccount',
    name: controller.metadata.name,
    namespace: controller.metadata.namespace,
  };

  it('binds by name only: bind on the listed ClusterRoles, never escalate, never a Role or ClusterRole written', () => {
    assert.ok(controllerRole && controllerRole.kind === 'ClusterRole');
    assertNoWildcards(controllerRole.rules);
    assert.deepEqual(controllerRole.rules, [
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['bind'],
        resourceNames: ['agent-run-pod-reader'],
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterrolebindings'],
        verbs: ['create', 'get', 'list', 'delete'],
      },
    ]);
    for (const d of docs) {
      if (d.kind !== 'Role' && d.kind !== 'ClusterRole') continue;
      for (const r of d.rules) {
        assert.ok(!r.verbs.includes('escalate') && !r.verbs.includes('impersonate'), JSON.stringify(r));
        if (r.apiGroups.includes('rbac.authorization.k8s.io')) {
          assert.ok(!r.resources.includes('roles') || d.metadata.name === 'agent-run-pod-reader');
          if (r.resources.includes('clusterroles')) assert.deepEqual(r.verbs, ['bind']);
        }
      }
    }
  });

  it('ships agent-run-pod-reader: read pods and their logs, nothing else', () => {
    assert.ok(grantable && grantable.kind === 'ClusterRole');
    assert.deepEqual(grants(grantable.rules), ['core pods/log: get,list,watch', 'core pods: get,list,watch']);
  });

  it('RoleBindings of runs in the controller namespace only; the API server EndpointSlice by name, get only', () => {
    const roles = docs.filter((d) => d.kind === 'Role');
    const local = roles.find((d) => d.metadata.namespace === controller.metadata.namespace);
    const endpoints = roles.find((d) => d.metadata.namespace === 'default');
    assert.equal(roles.length, 2);
    assert.ok(local?.kind === 'Role' && endpoints?.kind === 'Role');
    assert.deepEqual(grants(local.rules), ['rbac.authorization.k8s.io rolebindings: create,delete,get,list']);
    assert.deepEqual(endpoints.rules, [
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        verbs: ['get'],
        resourceNames: ['kubernetes'],
      },
    ]);
    for (const b of docs) {
      if (b.kind !== 'RoleBinding' && b.kind !== 'ClusterRoleBinding') continue;
      assert.deepEqual(b.subjects, [subject], `${b.kind} ${b.metadata.name} binds the controller only`);
    }
    assert.equal(docs.filter((d) => d.kind === 'ClusterRoleBinding').length, 1);
  });

  it('is a kustomize Component with that file', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    assert.match(kustomization, /- run-rbac\.yaml/);
  });
});

describe('deploy/components/memory', () => {
  const dir = ['deploy', 'components', 'memory'];
  const docs = load('memory-rbac.yaml', dir);
  const role = only(docs, 'Role');
  const binding = only(docs, 'RoleBinding');
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');

  it('grants get, create and update on ConfigMaps: no list, no watch, no delete, nothing else', () => {
    assert.equal(docs.length, 2, 'a Role and its RoleBinding only');
    assertNoWildcards(role.rules);
    assert.deepEqual(grants(role.rules), ['core configmaps: create,get,update']);
    assert.deepEqual(verbsOn(role.rules, '', 'secrets'), []);
  });

  it('binds it to the controller ServiceAccount in the controller namespace', () => {
    assert.equal(role.metadata.namespace, controller.metadata.namespace);
    assert.equal(binding.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
    ]);
  });

  it('is an opt-in kustomize Component: the base deploy/ does not include it', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    assert.match(kustomization, /- memory-rbac\.yaml/);
    const base = readFileSync(join(ROOT, 'deploy', 'kustomization.yaml'), 'utf8');
    assert.doesNotMatch(base, /memory/);
  });
});

describe('deploy/components/gateway', () => {
  const dir = ['deploy', 'components', 'gateway'];
  const docs = load('gateway-rbac.yaml', dir);
  const sa = only(docs, 'ServiceAccount');
  const clusterRole = only(docs, 'ClusterRole');
  const clusterBinding = only(docs, 'ClusterRoleBinding');
  const roles = docs.filter((d) => d.kind === 'Role');
  const bindings = docs.filter((d) => d.kind === 'RoleBinding');
  const role = roles.find((r) => r.metadata.name === 'agent-gateway-key')!;
  const binding = bindings.find((b) => b.roleRef.name === role.metadata.name)!;
  const controllerRole = roles.find((r) => r.metadata.name === 'agent-controller-gateway')!;
  const controllerBinding = bindings.find((b) => b.roleRef.name === controllerRole.metadata.name)!;
  const controller = only(load('controller-rbac.yaml'), 'ServiceAccount');
  const subject = [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }];

  it('has a ServiceAccount of its own in the controller namespace, the one its Deployment runs as', () => {
    assert.equal(docs.length, 7);
    assert.equal(roles.length, 2);
    assert.equal(sa.metadata.name, 'agent-gateway');
    assert.notEqual(sa.metadata.name, controller.metadata.name);
    assert.equal(sa.metadata.namespace, controller.metadata.namespace);
    const deployment = readFileSync(join(ROOT, ...dir, 'gateway-deployment.yaml'), 'utf8');
    assert.match(deployment, new RegExp(`serviceAccountName:\\s*${sa.metadata.name}\\b`));
  });

  it('cluster-wide: Agents get, list, watch and patch; Secrets get by the name agent-secrets only', () => {
    assertNoWildcards(clusterRole.rules);
    assert.deepEqual(clusterRole.rules, [
      { apiGroups: ['agents.re-cinq.com'], resources: ['agents'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['agent-secrets'], verbs: ['get'] },
    ]);
    assert.deepEqual(
      verbsOn(clusterRole.rules, 'agents.re-cinq.com', 'agents/status'),
      [],
      'never writes status',
    );
    for (const verb of DANGEROUS_VERBS)
      assert.ok(!clusterRole.rules.some((r) => r.verbs.includes(verb)), `no ${verb}`);
    assert.deepEqual(clusterBinding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: clusterRole.metadata.name,
    });
    assert.deepEqual(clusterBinding.subjects, subject);
  });

  it('in its namespace: get the credential key Secret by name, never create it; get and patch the saturation ConfigMap by name', () => {
    assertNoWildcards(role.rules);
    assert.deepEqual(role.rules, [
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['agent-controller-gateway'],
        verbs: ['get'],
      },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['agent-gateway-saturation'],
        verbs: ['get', 'patch'],
      },
    ]);
    assert.ok(
      !role.rules.some((r) => r.resources.includes('configmaps') && r.verbs.includes('create')),
      'the ConfigMap is deployed, never created by the gateway',
    );
    assert.equal(role.metadata.namespace, sa.metadata.namespace);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    assert.deepEqual(binding.subjects, subject);
  });

  it('gives the controller, in its namespace: create Secrets (run credentials, the key once), get the key by name, watch the saturation ConfigMap by name', () => {
    assertNoWildcards(controllerRole.rules);
    assert.deepEqual(controllerRole.rules, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['agent-controller-gateway'],
        verbs: ['get'],
      },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['agent-gateway-saturation'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    assert.equal(controllerRole.metadata.namespace, controller.metadata.namespace);
    assert.deepEqual(controllerBinding.subjects, [
      { kind: 'ServiceAccount', name: controller.metadata.name, namespace: controller.metadata.namespace },
    ]);
  });

  it('is a kustomize Component: RBAC, Deployment, Service, NetworkPolicy, and AGENT_GATEWAY_URL on the controller', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    for (const file of [
      'gateway-rbac.yaml',
      'gateway-deployment.yaml',
      'gateway-service.yaml',
      'gateway-networkpolicy.yaml',
      'gateway-saturation.yaml',
    ])
      assert.match(kustomization, new RegExp(`- ${file.replace('.', '\\.')}`));
    const saturation = readFileSync(join(ROOT, ...dir, 'gateway-saturation.yaml'), 'utf8');
    assert.match(saturation, /^kind: ConfigMap$/m);
    assert.match(saturation, /^ {2}name: agent-gateway-saturation$/m);
    const patch = readFileSync(join(ROOT, ...dir, 'gateway-env.yaml'), 'utf8');
    assert.match(patch, /name: AGENT_GATEWAY_URL, value: "http:\/\/agent-gateway\.ai-agents\.svc:8080"/);
    assert.match(patch, /- name: controller\n/);
  });
});

describe('deploy/components/sessions', () => {
  const dir = ['deploy', 'components', 'sessions'];

  it('adds no grant: the store credentials come by secretKeyRef from the Secret agent-session-store', () => {
    const kustomization = readFileSync(join(ROOT, ...dir, 'kustomization.yaml'), 'utf8');
    assert.match(kustomization, /^kind: Component$/m);
    assert.doesNotMatch(kustomization, /^resources:/m);
    const patch = readFileSync(join(ROOT, ...dir, 'sessions-env.yaml'), 'utf8');
    assert.match(patch, /- name: controller\n/);
    assert.match(patch, /name: AGENT_SESSION_STORE_URL, value: "https:\/\//);
    for (const [name, key] of [
      ['AGENT_SESSION_STORE_ACCESS_KEY_ID', 'access-key-id'],
      ['AGENT_SESSION_STORE_SECRET_ACCESS_KEY', 'secret-access-key'],
    ])
      assert.match(
        patch,
        new RegExp(
          `- name: ${name}\\n *valueFrom:\\n *secretKeyRef: \\{ name: agent-session-store, key: ${key} \\}`,
        ),
      );
    assert.doesNotMatch(patch, /SECRET_ACCESS_KEY, value:/);
  });
});
