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
  buildSinkNetworkPolicy,
  type NetworkPolicyEgressRule,
  type SinkDestination,
  sinkDestination,
} from './sink-network-policy.ts';

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
/** A definition with these `output.sinks` (wire shape). */
function definition(sinks: readonly Record<string, unknown>[]): AgentDefinition {
  return must(
    parseAgentDefinition({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'AgentDefinition',
      metadata: meta('recipe', 'uid-def'),
      spec: { prompt: 'go', output: { sinks } },
    }),
  );
}
const http = (url: string) => ({ type: 'http', url });
const rulesFor = (
  sinks: readonly Record<string, unknown>[],
): readonly NetworkPolicyEgressRule[] | undefined =>
  buildSinkNetworkPolicy({ agent: agent(), station: station(), definition: definition(sinks) })?.spec.egress;

const exact = (cidr: string, port: number): NetworkPolicyEgressRule => ({
  to: [{ ipBlock: { cidr } }],
  ports: [{ protocol: 'TCP', port }],
});
const anywhere = (port: number): NetworkPolicyEgressRule => ({
  to: [{ ipBlock: { cidr: ANY_IPV4 } }, { ipBlock: { cidr: ANY_IPV6 } }],
  ports: [{ protocol: 'TCP', port }],
});

describe('sinkDestination', () => {
  const rows: [string, SinkDestination | undefined][] = [
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
      assert.deepEqual(sinkDestination(url), expected);
    });
  }
});

describe('buildSinkNetworkPolicy: egress rules', () => {
  const rows: [string, readonly Record<string, unknown>[], readonly NetworkPolicyEgressRule[] | undefined][] =
    [
      ['no sinks → no policy', [], undefined],
      [
        'only stdout and file sinks → no policy',
        [{ type: 'stdout' }, { type: 'file', path: '/workspace/e.jsonl' }],
        undefined,
      ],
      ['an http sink without a url → no policy', [{ type: 'http' }], undefined],
      [
        'only unusable urls → no policy',
        [http('not a url'), http('ftp://10.1.2.3/'), http('http://1.2.3.4:0/')],
        undefined,
      ],
      [
        'a url on a non-http sink type adds nothing',
        [{ type: 'file', url: 'http://10.1.2.3/', path: '/x' }],
        undefined,
      ],
      [
        'an unknown sink type (read as stdout) adds nothing',
        [{ type: 'kafka', url: 'http://10.1.2.3/' }],
        undefined,
      ],
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

describe('buildSinkNetworkPolicy: the object', () => {
  const a = agent();
  const s = station();
  const d = definition([http('http://10.1.2.3:8080/x'), http('https://hooks.example.com/y')]);
  const policy = buildSinkNetworkPolicy({ agent: a, station: s, definition: d });

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

  it("selects exactly the run's pods by the labels the Job's pod template carries, egress only", () => {
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
    assert.deepEqual(policy.spec.policyTypes, ['Egress']);
    assert.equal('ingress' in policy.spec, false, 'ingress is left to the static policy');
  });

  it('uses the hash-truncated Job name and label value for a long Agent name', () => {
    const long = agent('an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit');
    const p = buildSinkNetworkPolicy({ agent: long, station: s, definition: d });
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
    assert.deepEqual(buildSinkNetworkPolicy({ agent: a, station: s, definition: d }), policy);
  });
});
