import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Agent,
  type AgentDefinition,
  parseAgent,
  parseAgentDefinition,
  parseStation,
  type Station,
} from '../api/index.ts';
import type { Result } from '../shared/result.ts';
import { buildJob } from './build-job.ts';
import { jobNameFor } from './names.ts';
import {
  ANY_IPV4,
  ANY_IPV6,
  buildRunNetworkPolicy,
  type Destination,
  DNS_RULE,
  type NetworkPolicyEgressRule,
  PUBLIC_HTTPS_RULE,
  repoDestination,
  urlDestination,
} from './run-network-policy.ts';

const must = <T>(r: Result<T, string>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const meta = (name: string, uid: string) => ({
  name,
  namespace: 'team-a',
  uid,
  resourceVersion: '42',
  creationTimestamp: '2026-11-30T11:59:00Z',
});

function agent(name = 'notify-run-1'): Agent {
  return must(
    parseAgent({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: meta(name, `uid-${name}`),
      spec: { stationRef: 'notifier' },
    }),
  );
}
function station(name = 'notifier'): Station {
  return must(
    parseStation({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Station',
      metadata: meta(name, 'uid-station'),
      spec: {
        agentDefRef: 'recipe',
        template: { spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
      },
    }),
  );
}
/** A definition with these `output.sinks` (wire shape) and more of its spec. */
function definition(
  sinks: readonly Record<string, unknown>[],
  spec: Readonly<Record<string, unknown>> = {},
): AgentDefinition {
  return must(
    parseAgentDefinition({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'AgentDefinition',
      metadata: meta('recipe', 'uid-def'),
      spec: { prompt: 'go', output: { sinks }, ...spec },
    }),
  );
}
const http = (url: string) => ({ type: 'http', url });
/** The egress rules beyond the two every run has (DNS, public 443), asserting those come first. */
const extraRules = (d: AgentDefinition): readonly NetworkPolicyEgressRule[] => {
  const egress = buildRunNetworkPolicy({ agent: agent(), station: station(), definition: d }).spec.egress;
  assert.deepEqual(egress.slice(0, 2), [DNS_RULE, PUBLIC_HTTPS_RULE]);
  return egress.slice(2);
};
const rulesFor = (sinks: readonly Record<string, unknown>[]): readonly NetworkPolicyEgressRule[] =>
  extraRules(definition(sinks));

const exact = (cidr: string, port: number): NetworkPolicyEgressRule => ({
  to: [{ ipBlock: { cidr } }],
  ports: [{ protocol: 'TCP', port }],
});
const anywhere = (port: number): NetworkPolicyEgressRule => ({
  to: [
    { ipBlock: { cidr: ANY_IPV4, except: ['169.254.0.0/16'] } },
    { ipBlock: { cidr: ANY_IPV6, except: ['fe80::/10', 'fd00:ec2::254/128'] } },
  ],
  ports: [{ protocol: 'TCP', port }],
});

describe('urlDestination', () => {
  const rows: [string, Destination | undefined][] = [
    // IPv4 literals: exact address; port explicit or by scheme.
    ['http://10.1.2.3:8080/x', { cidr: '10.1.2.3/32', port: 8080 }],
    ['http://10.1.2.3/x', { cidr: '10.1.2.3/32', port: 80 }],
    ['https://10.1.2.3/x', { cidr: '10.1.2.3/32', port: 443 }],
    ['http://10.1.2.3:80/x', { cidr: '10.1.2.3/32', port: 80 }],
    ['https://192.168.0.9:443', { cidr: '192.168.0.9/32', port: 443 }],
    ['https://192.168.0.9:80', { cidr: '192.168.0.9/32', port: 80 }],
    ['  http://172.16.0.1:9000/hook  ', { cidr: '172.16.0.1/32', port: 9000 }],
    // Other IPv4 notations normalise to dotted decimal.
    ['http://0x7f.1:8099/', { cidr: '127.0.0.1/32', port: 8099 }],
    ['http://167772161/', { cidr: '10.0.0.1/32', port: 80 }],
    ['http://1.2.3/', { cidr: '1.2.0.3/32', port: 80 }],
    // IPv6 literals: /128, canonical (compressed, lower case); IPv4-mapped ones as IPv4.
    ['http://[fd00::1]:8080/x', { cidr: 'fd00::1/128', port: 8080 }],
    ['HTTPS://[2001:DB8:0:0:0:0:0:1]/x', { cidr: '2001:db8::1/128', port: 443 }],
    ['http://[::1]/', { cidr: '::1/128', port: 80 }],
    ['http://[::ffff:10.1.2.3]:81/', { cidr: '10.1.2.3/32', port: 81 }],
    // Hostnames: every address on the port.
    ['https://hooks.example.com/y', { cidr: undefined, port: 443 }],
    ['http://hooks.example.com/y', { cidr: undefined, port: 80 }],
    ['http://sink.team-a.svc.cluster.local:8099/events', { cidr: undefined, port: 8099 }],
    ['https://user:secret@hooks.example.com:8443/y?token=1', { cidr: undefined, port: 8443 }],
    ['http://localhost:3000', { cidr: undefined, port: 3000 }],
    // Nothing the supervisor could use either.
    ['', undefined],
    ['not a url', undefined],
    ['hooks.example.com/y', undefined],
    ['/relative/path', undefined],
    ['ftp://10.1.2.3/x', undefined],
    ['file:///tmp/events', undefined],
    ['ws://10.1.2.3:8080/', undefined],
    ['http://10.1.2.3:0/x', undefined],
    ['http://10.1.2.3:65536/x', undefined],
    ['http://10.1.2.3.4/x', undefined],
    ['http://[fd00::zz]/x', undefined],
    ['http://exa mple.com/', undefined],
  ];
  for (const [url, expected] of rows) {
    it(`${JSON.stringify(url)} → ${expected === undefined ? 'nothing' : `${expected.cidr ?? 'anywhere'} TCP ${expected.port}`}`, () => {
      assert.deepEqual(urlDestination(url), expected);
    });
  }
});

describe('buildRunNetworkPolicy: egress rules of http sinks', () => {
  const rows: [string, readonly Record<string, unknown>[], readonly NetworkPolicyEgressRule[]][] = [
    ['no sinks → DNS and public 443 only', [], []],
    [
      'only stdout and file sinks → nothing more',
      [{ type: 'stdout' }, { type: 'file', path: '/workspace/e.jsonl' }],
      [],
    ],
    ['an http sink without a url → nothing more', [{ type: 'http' }], []],
    [
      'only unusable urls → nothing more',
      [http('not a url'), http('ftp://10.1.2.3/'), http('http://1.2.3.4:0/')],
      [],
    ],
    [
      'a url on a non-http sink type adds nothing',
      [{ type: 'file', url: 'http://10.1.2.3/', path: '/x' }],
      [],
    ],
    ['an unknown sink type (read as stdout) adds nothing', [{ type: 'kafka', url: 'http://10.1.2.3/' }], []],
    ['IPv4 with an explicit port', [http('http://10.1.2.3:8080/x')], [exact('10.1.2.3/32', 8080)]],
    ['IPv4, default http port', [http('http://10.1.2.3/x')], [exact('10.1.2.3/32', 80)]],
    ['IPv4, default https port', [http('https://10.1.2.3/x')], [exact('10.1.2.3/32', 443)]],
    ['IPv6', [http('http://[fd00::1]:8080/x')], [exact('fd00::1/128', 8080)]],
    ['a hostname, https', [http('https://hooks.example.com/y')], [anywhere(443)]],
    ['a hostname, explicit port', [http('http://sink.svc:8099/')], [anywhere(8099)]],
    [
      'the brief example: an IP on 8080 and a hostname on 443, in sink order',
      [http('http://10.1.2.3:8080/x'), http('https://hooks.example.com/y')],
      [exact('10.1.2.3/32', 8080), anywhere(443)],
    ],
    [
      'mixed with other sinks and bad urls: only the usable http ones count',
      [
        { type: 'stdout' },
        http('http://10.1.2.3:8080/x'),
        { type: 'file', path: '/tmp/x' },
        http('::bad::'),
        http('http://[2001:db8::7]/'),
      ],
      [exact('10.1.2.3/32', 8080), exact('2001:db8::7/128', 80)],
    ],
    [
      'duplicates (same address and port, other paths or spellings) → one rule',
      [
        http('http://10.1.2.3:8080/a'),
        http('http://10.1.2.3:8080/b'),
        http('HTTP://10.1.2.3:8080'),
        http('http://0xa.1.2.3:8080/'),
      ],
      [exact('10.1.2.3/32', 8080)],
    ],
    [
      'the same address on two ports → two rules',
      [http('http://10.1.2.3:8080/'), http('https://10.1.2.3/')],
      [exact('10.1.2.3/32', 8080), exact('10.1.2.3/32', 443)],
    ],
    [
      'two hostnames on one port → one rule',
      [http('https://a.example.com/'), http('https://b.example.com/x')],
      [anywhere(443)],
    ],
    [
      'an explicit default port equals the default',
      [http('https://hooks.example.com:443/'), http('https://hooks.example.com/')],
      [anywhere(443)],
    ],
    [
      'an exact address on a port a hostname already opens everywhere adds nothing (either order)',
      [http('http://10.1.2.3:8080/'), http('http://sink.svc:8080/'), http('http://[fd00::1]:8080/')],
      [anywhere(8080)],
    ],
  ];
  for (const [name, sinks, expected] of rows) {
    it(name, () => {
      assert.deepEqual(rulesFor(sinks), expected);
    });
  }
});

describe('buildRunNetworkPolicy: the object', () => {
  const a = agent();
  const s = station();
  const d = definition([http('http://10.1.2.3:8080/x'), http('https://hooks.example.com/y')]);
  const policy = buildRunNetworkPolicy({ agent: a, station: s, definition: d });

  it('is a networking.k8s.io/v1 NetworkPolicy named and labelled like the Job, owned by the Agent', () => {
    assert.ok(policy);
    const job = must(
      buildJob({ agent: a, station: s, definition: d, agentImage: 'img:1', now: new Date(0) }),
    );
    assert.equal(policy.apiVersion, 'networking.k8s.io/v1');
    assert.equal(policy.kind, 'NetworkPolicy');
    assert.equal(policy.metadata.name, job.metadata.name);
    assert.equal(policy.metadata.name, 'agent-job-notify-run-1');
    assert.equal(policy.metadata.namespace, 'team-a');
    assert.deepEqual(policy.metadata.labels, job.metadata.labels);
    assert.deepEqual(policy.metadata.labels, {
      'agents.re-cinq.com/component': 'job',
      'agents.re-cinq.com/agent': 'notify-run-1',
      'agents.re-cinq.com/station': 'notifier',
    });
    assert.deepEqual(policy.metadata.annotations, { 'agents.re-cinq.com/agent-uid': 'uid-notify-run-1' });
    assert.deepEqual(policy.metadata.ownerReferences, [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'notify-run-1',
        uid: 'uid-notify-run-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it("selects exactly the run's pods by the labels the Job's pod template carries; no ingress", () => {
    assert.ok(policy);
    assert.deepEqual(policy.spec.podSelector, {
      matchLabels: { 'agents.re-cinq.com/component': 'job', 'agents.re-cinq.com/agent': 'notify-run-1' },
    });
    const job = must(
      buildJob({ agent: a, station: s, definition: d, agentImage: 'img:1', now: new Date(0) }),
    );
    const podLabels = (job.spec.template as { metadata?: { labels?: Record<string, string> } }).metadata
      ?.labels;
    for (const [k, v] of Object.entries(policy.spec.podSelector.matchLabels)) {
      assert.equal(podLabels?.[k], v, `the run pod carries ${k}=${v}`);
    }
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(policy.spec.ingress, [], 'no way in');
  });

  it('uses the hash-truncated Job name and label value for a long Agent name', () => {
    const long = agent('an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit');
    const p = buildRunNetworkPolicy({ agent: long, station: s, definition: d });
    assert.ok(p);
    assert.equal(p.metadata.name, jobNameFor(long.metadata.name));
    assert.equal(p.metadata.name, 'agent-job-an-extremely-long-agent-name-that-runs-well-1a4440fa');
    assert.equal(
      p.spec.podSelector.matchLabels['agents.re-cinq.com/agent'],
      'an-extremely-long-agent-name-that-runs-well-past-the-s-7ae605e8',
    );
    assert.equal(p.metadata.ownerReferences[0].name, long.metadata.name, 'the owner keeps the full name');
  });

  it('is deterministic: the same input gives the same policy', () => {
    assert.deepEqual(buildRunNetworkPolicy({ agent: a, station: s, definition: d }), policy);
  });
});

describe('buildRunNetworkPolicy: the other endpoints a definition names', () => {
  it('http and sse MCP servers, repositories, the conversation store and the skills source; stdio MCP adds nothing', () => {
    const d = definition([], {
      resources: {
        mcp_servers: [
          { name: 'local', transport: 'stdio', command: 'mcp' },
          { name: 'tools', transport: 'http', url: 'http://10.0.0.9:7000/mcp' },
          { name: 'events', transport: 'sse', url: 'https://mcp.example.com/sse' },
        ],
        repos: [
          { name: 'gh', url: 'acme/app' },
          { name: 'internal', url: 'https://git.corp.internal:8443/team/repo.git' },
          { name: 'ssh', url: 'git@10.0.0.7:team/repo.git' },
        ],
        conversation: { source: 'http://10.0.0.8:9000/store' },
        skills_source: 'http://skills.svc:8080/',
      },
    });
    assert.deepEqual(extraRules(d), [
      exact('10.0.0.9/32', 7000),
      anywhere(443),
      anywhere(8443),
      exact('10.0.0.7/32', 22),
      exact('10.0.0.8/32', 9000),
      anywhere(8080),
    ]);
  });

  it('repository forms: owner/name is public GitHub (the public rule covers it), ssh and scp-like on 22', () => {
    assert.equal(repoDestination('acme/app'), undefined);
    assert.deepEqual(repoDestination('https://10.1.1.1/x.git'), { cidr: '10.1.1.1/32', port: 443 });
    assert.deepEqual(repoDestination('ssh://git@host.example:2222/x.git'), { cidr: undefined, port: 2222 });
    assert.deepEqual(repoDestination('git@github.com:acme/app.git'), { cidr: undefined, port: 22 });
    assert.equal(repoDestination('file:///srv/repo'), undefined);
    assert.equal(repoDestination('--upload-pack=x'), undefined);
  });

  it('a realtime run admits the controller pods of its namespace on the prompt port, and nothing else in', () => {
    const live = definition([], { execution: 'realtime', model: 'claude-opus-5-5' });
    const p = buildRunNetworkPolicy({
      agent: agent(),
      station: station(),
      definition: live,
      controllerNamespace: 'ai-agents',
    });
    assert.deepEqual(p.spec.ingress, [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ai-agents' } },
            podSelector: { matchLabels: { 'agents.re-cinq.com/component': 'controller' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8090 }],
      },
    ]);
    const job = buildRunNetworkPolicy({
      agent: agent(),
      station: station(),
      definition: definition([]),
      controllerNamespace: 'ai-agents',
    });
    assert.deepEqual(job.spec.ingress, [], 'a job run has no way in');
  });

  it('the two rules every run has: kube-dns on 53, public IPv4 on 443 without private ranges', () => {
    assert.deepEqual(DNS_RULE.ports, [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ]);
    assert.deepEqual(PUBLIC_HTTPS_RULE, {
      to: [
        {
          ipBlock: {
            cidr: '0.0.0.0/0',
            except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
          },
        },
      ],
      ports: [{ protocol: 'TCP', port: 443 }],
    });
  });
});

describe('buildRunNetworkPolicy: the OTLP endpoint of a traced run (issue 10 §5)', () => {
  const egressWith = (tracesUrl: string | undefined, sinks: readonly Record<string, unknown>[] = []) =>
    buildRunNetworkPolicy({
      agent: agent(),
      station: station(),
      definition: definition(sinks),
      tracesUrl,
    }).spec.egress.slice(2);

  it('admits the traces URL like a sink: an address alone, a hostname anywhere, on its port', () => {
    assert.deepEqual(egressWith('http://10.0.0.7:4318/v1/traces'), [exact('10.0.0.7/32', 4318)]);
    assert.deepEqual(egressWith('http://otel-collector.observability:4318/v1/traces'), [anywhere(4318)]);
    // A hostname may resolve to a private address, which the public 443 rule leaves out.
    assert.deepEqual(egressWith('https://otlp.example.com/v1/traces'), [anywhere(443)]);
    assert.deepEqual(egressWith(undefined), []);
  });

  it('after the definition endpoints, without repeating one', () => {
    assert.deepEqual(egressWith('http://10.0.0.7:4318/v1/traces', [http('http://10.0.0.7:4318/hook')]), [
      exact('10.0.0.7/32', 4318),
    ]);
    assert.deepEqual(egressWith('http://10.0.0.8:4318/v1/traces', [http('http://10.0.0.7:8080/hook')]), [
      exact('10.0.0.7/32', 8080),
      exact('10.0.0.8/32', 4318),
    ]);
  });
});

describe('buildRunNetworkPolicy: behind the model gateway (issue 28)', () => {
  it('admits the gateway pods on 8080 in place of public 443; what the recipe names still follows', () => {
    const d = definition([http('https://hooks.example.com/y')]);
    const egress = buildRunNetworkPolicy({
      agent: agent(),
      station: station(),
      definition: d,
      gatewayNamespace: 'agents',
    }).spec.egress;
    assert.deepEqual(egress, [
      DNS_RULE,
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agents' } },
            podSelector: { matchLabels: { 'agents.re-cinq.com/component': 'gateway' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
      anywhere(443),
    ]);
    assert.ok(!egress.includes(PUBLIC_HTTPS_RULE));
  });
});
