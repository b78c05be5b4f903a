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
import { rootSpanIdFromUid, traceIdFromUid } from '../shared/trace-context.ts';
import {
  type BuildJobInput,
  buildJob,
  buildRunInput,
  cappedInitResources,
  type JobManifest,
  runPrompt,
} from './build-job.ts';
import { MEMORY_INSTRUCTION } from './memory.ts';
import { TEMPLATE_ERRORS } from './pod-template.ts';
import { ANNOTATION_SESSION_RESTORE } from './realtime.ts';

const NOW = new Date('2026-11-30T12:00:00Z');
const NOW_MS = NOW.getTime();
const IMAGE = 'ghcr.io/example/agent-controller:1.2.3';
const PATH = '/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin:/agent/bin';

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

// The objects as the API server returns them (wire JSON), parsed the way the controller parses them.
const agentJson = {
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Agent',
  metadata: meta('bug-fixer-run-6ltzm', 'uid-agent-1'),
  spec: {
    stationRef: 'bug-fixer',
    taskId: 'JIRA-7',
    targetRepo: 'acme/app',
    branch: 'fix/login',
    parameters: { ticket: 'JIRA-7', repo: 'acme/app' },
  },
};
const stationJson = {
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Station',
  metadata: meta('bug-fixer', 'uid-station-1'),
  spec: {
    agentDefRef: 'fixer',
    deadlineMinutes: 20,
    // Today's pods: the golden object below is the baseline profile's; the restricted one is tested apart.
    podSecurityProfile: 'baseline',
    template: {
      metadata: {
        labels: { team: 'a', 'agents.re-cinq.com/component': 'spoofed' },
        annotations: { note: 'x' },
      },
      spec: {
        serviceAccountName: 'runner',
        nodeSelector: { pool: 'agents' },
        tolerations: [{ key: 'agents', operator: 'Exists' }],
        initContainers: [{ name: 'old-init', image: 'busybox', securityContext: { privileged: false } }],
        containers: [
          {
            name: 'agent',
            image: 'ghcr.io/example/agent-base:bookworm',
            workingDir: '/workspace/app',
            command: ['/bin/false'],
            env: [{ name: 'LOST', value: 'station env on the agent container is replaced' }],
            volumeMounts: [
              { name: 'cache', mountPath: '/cache' },
              { name: 'agent', mountPath: '/elsewhere' },
            ],
            securityContext: { runAsUser: 0 },
          },
          { name: 'proxy', image: 'envoy:1', ports: [{ containerPort: 8080 }] },
        ],
        volumes: [
          { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
          { name: 'workspace', persistentVolumeClaim: { claimName: 'ws' } },
        ],
        restartPolicy: 'Always',
        securityContext: { runAsUser: 0 },
        automountServiceAccountToken: true,
      },
    },
  },
};
const definitionJson = {
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'AgentDefinition',
  metadata: meta('fixer', 'uid-def-1'),
  spec: {
    prompt: 'Fix {ticket} in {repo}; keep {unknown}',
    allowed_tools: ['Read', 'Edit'],
    disallowed_tools: ['WebFetch'],
    max_turns: 12,
    resources: {
      env: [{ name: 'LOG_LEVEL', value: 'debug' }],
      secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic-key' }],
      repos: [{ name: 'app', url: 'acme/app', ref: 'main', token_secret: 'GITHUB_TOKEN' }],
    },
    output: { sinks: [{ type: 'http', url: 'https://hooks.example/run', headers_secret: 'HOOK_AUTH' }] },
  },
};

const agent = must(parseAgent(agentJson));
const station = must(parseStation(stationJson));
const definition = must(parseAgentDefinition(definitionJson));
const input: BuildJobInput = { agent, station, definition, agentImage: IMAGE, now: NOW };

const secretRef = (name: string, key: string) => ({
  name,
  valueFrom: { secretKeyRef: { name: 'agent-secrets', key, optional: false } },
});

const expectedEnv = [
  {
    name: 'AGENT_SINKS',
    value: '[{"type":"http","url":"https://hooks.example/run","headers_secret":"HOOK_AUTH"}]',
  },
  secretRef('HOOK_AUTH', 'HOOK_AUTH'),
  {
    name: 'AGENT_REPOS',
    value: '[{"name":"app","url":"acme/app","ref":"main","token_secret":"GITHUB_TOKEN"}]',
  },
  { name: 'AGENT_SKILLS', value: '[]' },
  { name: 'AGENT_SKILLS_SOURCE', value: '' },
  { name: 'AGENT_CONVERSATION_AUTH', value: '' },
  { name: 'AGENT_CONVERSATION_SOURCE', value: '' },
  { name: 'AGENT_CONVERSATION_ID', value: '' },
  { name: 'AGENT_CONVERSATION_PIN', value: '' },
  { name: 'AGENT_DEADLINE_MS', value: '1190000' },
  { name: 'AGENT_DEADLINE_AT', value: String(NOW_MS + 1190000) },
  secretRef('GITHUB_TOKEN', 'GITHUB_TOKEN'),
  secretRef('GH_TOKEN', 'GITHUB_TOKEN'),
  { name: 'WORKSPACE_DIR', value: '/workspace' },
  { name: 'AGENT_PARAMETERS', value: '{"ticket":"JIRA-7","repo":"acme/app"}' },
  { name: 'TARGET_REPO', value: 'acme/app' },
  { name: 'BRANCH_NAME', value: 'fix/login' },
  { name: 'AGENT_MODEL', value: 'claude-opus-5-5' },
  { name: 'AGENT_NAME', value: 'bug-fixer-run-6ltzm' },
  { name: 'STATION_NAME', value: 'bug-fixer' },
  { name: 'TASK_ID', value: 'JIRA-7' },
  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  { name: 'LOG_LEVEL', value: 'debug' },
  secretRef('ANTHROPIC_API_KEY', 'anthropic-key'),
  { name: 'HOME', value: '/agent' },
  { name: 'PATH', value: PATH },
];

const runMounts = [
  { name: 'agent', mountPath: '/agent' },
  { name: 'workspace', mountPath: '/workspace' },
];

const expectedJob = {
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: {
    name: 'agent-job-bug-fixer-run-6ltzm',
    namespace: 'team-a',
    labels: {
      'agents.re-cinq.com/component': 'job',
      'agents.re-cinq.com/agent': 'bug-fixer-run-6ltzm',
      'agents.re-cinq.com/station': 'bug-fixer',
    },
    annotations: { 'agents.re-cinq.com/agent-uid': 'uid-agent-1' },
    ownerReferences: [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'bug-fixer-run-6ltzm',
        uid: 'uid-agent-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  },
  spec: {
    ttlSecondsAfterFinished: 3600,
    activeDeadlineSeconds: 1200,
    backoffLimit: 0,
    template: {
      metadata: {
        labels: {
          team: 'a',
          'agents.re-cinq.com/component': 'job',
          'agents.re-cinq.com/agent': 'bug-fixer-run-6ltzm',
          'agents.re-cinq.com/station': 'bug-fixer',
        },
        annotations: { note: 'x', 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' },
      },
      spec: {
        // The run's own ServiceAccount replaces the Station's (issue 9 §2).
        serviceAccountName: 'agent-job-bug-fixer-run-6ltzm',
        nodeSelector: { pool: 'agents' },
        tolerations: [{ key: 'agents', operator: 'Exists' }],
        initContainers: [
          {
            name: 'init',
            image: IMAGE,
            args: ['init'],
            env: expectedEnv,
            volumeMounts: runMounts,
            securityContext: {
              runAsUser: 0,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'], add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '2Gi' } },
          },
        ],
        containers: [
          {
            name: 'agent',
            image: 'ghcr.io/example/agent-base:bookworm',
            workingDir: '/workspace/app',
            command: [
              '/agent/bin/node',
              '/agent/bin/agent-controller.mjs',
              'supervisor',
              '--',
              'claude',
              '--print',
              '--verbose',
              '--output-format',
              'stream-json',
              '--model',
              'claude-opus-5-5',
              '--allowedTools',
              'Read',
              '--allowedTools',
              'Edit',
              '--disallowedTools',
              'WebFetch',
              '--max-turns',
              '12',
              '--',
              // The prompt is not in the Job: the supervisor reads it from the run's input ConfigMap (issue 10 §1).
            ],
            env: [...expectedEnv, { name: 'AGENT_PROMPT_FILE', value: '/agent/input/prompt' }],
            volumeMounts: [
              { name: 'cache', mountPath: '/cache' },
              ...runMounts,
              { name: 'run-input', mountPath: '/agent/input', readOnly: true },
            ],
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1000,
              runAsGroup: 1000,
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '2Gi' } },
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
          },
          { name: 'proxy', image: 'envoy:1', ports: [{ containerPort: 8080 }] },
        ],
        volumes: [
          { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
          { name: 'agent', emptyDir: {} },
          { name: 'workspace', emptyDir: {} },
          {
            name: 'run-input',
            configMap: {
              name: 'agent-job-bug-fixer-run-6ltzm-input',
              defaultMode: 0o444,
              items: [
                { key: 'prompt', path: 'prompt' },
                { key: 'run.json', path: 'run.json' },
              ],
            },
          },
        ],
        restartPolicy: 'Never',
        securityContext: { fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        automountServiceAccountToken: false,
      },
    },
  },
};

const built = (i: BuildJobInput = input): JobManifest => must(buildJob(i));
const podSpec = (job: JobManifest) => job.spec.template.spec as Record<string, unknown>;
const agentContainer = (job: JobManifest) =>
  (podSpec(job).containers as Record<string, unknown>[]).find((c) => c.name === 'agent') as Record<
    string,
    unknown
  >;
const withTemplate = (template: unknown): Station => ({
  ...station,
  spec: { ...station.spec, template: template as Record<string, unknown> },
});
const withDefinition = (spec: Record<string, unknown>): AgentDefinition =>
  must(parseAgentDefinition({ ...definitionJson, spec: { ...definitionJson.spec, ...spec } }));
const withAgent = (patch: { name?: string; spec?: Record<string, unknown> }): Agent =>
  must(
    parseAgent({
      ...agentJson,
      metadata: { ...agentJson.metadata, name: patch.name ?? agentJson.metadata.name },
      spec: { ...agentJson.spec, ...patch.spec },
    }),
  );

describe('buildJob golden object', () => {
  const job = built();
  it('matches the expected Job field by field', () => {
    assert.equal(job.apiVersion, expectedJob.apiVersion);
    assert.equal(job.kind, expectedJob.kind);
    assert.deepEqual(job.metadata, expectedJob.metadata);
    const { template, ...rest } = job.spec;
    const { template: wantTemplate, ...wantRest } = expectedJob.spec;
    assert.deepEqual(rest, wantRest);
    assert.deepEqual(template.metadata, wantTemplate.metadata);
    const spec = template.spec as Record<string, unknown>;
    for (const key of Object.keys(wantTemplate.spec) as (keyof typeof wantTemplate.spec)[]) {
      assert.deepEqual(spec[key], wantTemplate.spec[key], `spec.template.spec.${key}`);
    }
  });
  it('matches the expected Job as a whole (nothing extra)', () => {
    assert.deepEqual(job, expectedJob);
  });
  it('is JSON-clean (survives a JSON round trip unchanged)', () => {
    assert.deepEqual(JSON.parse(JSON.stringify(job)), job);
  });
  it('does not modify the Station template', () => {
    assert.deepEqual(station.spec.template, stationJson.spec.template);
  });
  it('is deterministic', () => {
    assert.deepEqual(built(), job);
  });
});

describe('buildJob template validation', () => {
  const agentC = { name: 'agent', image: 'img' };
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ['null template', null, 'Station template must be an object'],
    ['array template', [agentC], 'Station template must be an object'],
    ['string template', 'pod', 'Station template must be an object'],
    ['no spec', { metadata: {} }, 'Station template needs a spec'],
    ['null spec', { spec: null }, 'Station template needs a spec'],
    ['no containers', { spec: {} }, 'Station template.spec.containers is required'],
    ['null containers', { spec: { containers: null } }, 'Station template.spec.containers is required'],
    [
      'hostNetwork',
      { spec: { hostNetwork: true, containers: [agentC] } },
      'Station template must not enable hostNetwork on an agent run pod',
    ],
    [
      'hostPID',
      { spec: { hostPID: true, containers: [agentC] } },
      'Station template must not enable hostPID on an agent run pod',
    ],
    [
      'hostIPC',
      { spec: { hostIPC: true, containers: [agentC] } },
      'Station template must not enable hostIPC on an agent run pod',
    ],
    [
      'hostPath volume',
      { spec: { containers: [agentC], volumes: [{ name: 'h', hostPath: { path: '/' } }] } },
      'Station template must not mount a hostPath volume into an agent run pod',
    ],
    [
      'hostPath key even when null',
      { spec: { containers: [agentC], volumes: [{ name: 'h', hostPath: null }] } },
      'Station template must not mount a hostPath volume into an agent run pod',
    ],
    [
      'projected service-account token',
      {
        spec: {
          containers: [agentC],
          volumes: [
            {
              name: 't',
              projected: { sources: [{ configMap: { name: 'c' } }, { serviceAccountToken: { path: 't' } }] },
            },
          ],
        },
      },
      'Station template must not mount a service-account token into an agent run pod',
    ],
    [
      'privileged sidecar',
      { spec: { containers: [agentC, { name: 's', securityContext: { privileged: true } }] } },
      'Station template container must not be privileged',
    ],
    [
      'privileged agent',
      { spec: { containers: [{ ...agentC, securityContext: { privileged: true } }] } },
      'Station template container must not be privileged',
    ],
    [
      'no agent container',
      { spec: { containers: [{ name: 'main' }] } },
      "Station template has no container named 'agent'",
    ],
    ['empty containers', { spec: { containers: [] } }, "Station template has no container named 'agent'"],
    // Our additions.
    ['containers not a list', { spec: { containers: { agent: {} } } }, TEMPLATE_ERRORS.containersNotList],
    ['container not an object', { spec: { containers: [agentC, 'x'] } }, TEMPLATE_ERRORS.containerNotObject],
    ['volumes not a list', { spec: { containers: [agentC], volumes: {} } }, TEMPLATE_ERRORS.volumesNotList],
    [
      'volume not an object',
      { spec: { containers: [agentC], volumes: [7] } },
      TEMPLATE_ERRORS.volumeNotObject,
    ],
    [
      'hostPort on a sidecar',
      { spec: { containers: [agentC, { name: 's', ports: [{ containerPort: 80, hostPort: 80 }] }] } },
      'Station template container must not use a hostPort on an agent run pod',
    ],
    [
      'SYS_ADMIN on a sidecar',
      {
        spec: {
          containers: [
            agentC,
            { name: 's', securityContext: { capabilities: { add: ['NET_BIND_SERVICE', 'SYS_ADMIN'] } } },
          ],
        },
      },
      'Station template container must not add capability SYS_ADMIN on an agent run pod',
    ],
    [
      'CAP_SYS_PTRACE on a sidecar',
      {
        spec: {
          containers: [agentC, { name: 's', securityContext: { capabilities: { add: ['CAP_SYS_PTRACE'] } } }],
        },
      },
      'Station template container must not add capability CAP_SYS_PTRACE on an agent run pod',
    ],
    [
      'Windows host process',
      {
        spec: {
          containers: [agentC, { name: 's', securityContext: { windowsOptions: { hostProcess: true } } }],
        },
      },
      TEMPLATE_ERRORS.hostProcess,
    ],
    [
      'unmasked proc',
      { spec: { containers: [agentC, { name: 's', securityContext: { procMount: 'Unmasked' } }] } },
      TEMPLATE_ERRORS.procMount,
    ],
    [
      'args on the agent container',
      { spec: { containers: [{ ...agentC, args: ['--extra'] }] } },
      TEMPLATE_ERRORS.agentArgs,
    ],
    [
      'agent volumeMounts not a list',
      { spec: { containers: [{ ...agentC, volumeMounts: { name: 'x' } }] } },
      TEMPLATE_ERRORS.mountsNotList,
    ],
    [
      'privileged wins over our additions (reference order)',
      {
        spec: {
          containers: [
            { name: 'a', ports: [{ hostPort: 1 }] },
            { name: 'b', securityContext: { privileged: true } },
          ],
        },
      },
      'Station template container must not be privileged',
    ],
  ];
  for (const [name, template, error] of cases) {
    it(`${name} → ${error}`, () => {
      assert.deepEqual(buildJob({ ...input, station: withTemplate(template) }), { ok: false, error });
    });
  }

  it('spells the reference error strings exactly', () => {
    assert.equal(TEMPLATE_ERRORS.notObject, 'Station template must be an object');
    assert.equal(TEMPLATE_ERRORS.noSpec, 'Station template needs a spec');
    assert.equal(TEMPLATE_ERRORS.noContainers, 'Station template.spec.containers is required');
    assert.equal(
      TEMPLATE_ERRORS.hostPath,
      'Station template must not mount a hostPath volume into an agent run pod',
    );
    assert.equal(TEMPLATE_ERRORS.privileged, 'Station template container must not be privileged');
    assert.equal(TEMPLATE_ERRORS.noAgent, "Station template has no container named 'agent'");
  });

  it('refuses what Pod Security baseline forbids too: Unconfined seccomp or AppArmor, custom SELinux', () => {
    const side = (securityContext: Record<string, unknown>) => ({
      spec: { containers: [agentC, { name: 's', securityContext }] },
    });
    const rows: [unknown, string][] = [
      [side({ seccompProfile: { type: 'Unconfined' } }), TEMPLATE_ERRORS.unconfined('seccomp')],
      [side({ appArmorProfile: { type: 'Unconfined' } }), TEMPLATE_ERRORS.unconfined('AppArmor')],
      [
        {
          metadata: { annotations: { 'container.apparmor.security.beta.kubernetes.io/s': 'unconfined' } },
          spec: { containers: [agentC, { name: 's' }] },
        },
        TEMPLATE_ERRORS.unconfined('AppArmor'),
      ],
      [side({ seLinuxOptions: { type: 'spc_t' } }), TEMPLATE_ERRORS.seLinux],
      [side({ seLinuxOptions: { user: 'system_u' } }), TEMPLATE_ERRORS.seLinux],
    ];
    for (const [template, reason] of rows) {
      for (const podSecurityProfile of ['restricted', 'baseline'] as const) {
        const job = buildJob({
          ...input,
          station: { ...station, spec: { ...station.spec, podSecurityProfile, template } } as Station,
        });
        assert.deepEqual(job, { ok: false, error: reason }, `${podSecurityProfile}: ${reason}`);
      }
    }
    const fine = buildJob({
      ...input,
      station: withTemplate(side({ seLinuxOptions: { type: 'container_t', level: 's0:c1,c2' } })),
    });
    assert.ok(fine.ok, fine.ok ? '' : fine.error);
  });

  it('accepts allowed shapes: hostPort 0, baseline capabilities, empty args, false host flags', () => {
    const job = buildJob({
      ...input,
      station: withTemplate({
        spec: {
          hostNetwork: false,
          hostPID: false,
          containers: [
            { ...agentC, args: [], volumeMounts: null },
            {
              name: 's',
              ports: [{ containerPort: 80, hostPort: 0 }],
              securityContext: {
                privileged: false,
                capabilities: { add: ['NET_BIND_SERVICE'] },
                procMount: 'Default',
              },
            },
          ],
          volumes: null,
        },
      }),
    });
    assert.ok(job.ok, job.ok ? '' : job.error);
    const agentSpec = agentContainer(job.value);
    assert.equal('args' in agentSpec, false);
    assert.deepEqual(agentSpec.volumeMounts, [
      ...runMounts,
      { name: 'run-input', mountPath: '/agent/input', readOnly: true },
    ]);
    assert.deepEqual(
      (podSpec(job.value).volumes as { name: string }[]).map((v) => v.name),
      ['agent', 'workspace', 'run-input'],
    );
  });
});

describe('buildJob rewrite details', () => {
  it('keeps resources: {} and explicit resources as they are, defaults null', () => {
    const cases: ReadonlyArray<readonly [unknown, unknown]> = [
      [{}, {}],
      [{ limits: { cpu: '2' } }, { limits: { cpu: '2' } }],
      [null, { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '2Gi' } }],
    ];
    for (const [resources, want] of cases) {
      const job = built({
        ...input,
        station: withTemplate({ spec: { containers: [{ name: 'agent', resources }] } }),
      });
      assert.deepEqual(agentContainer(job).resources, want);
    }
  });

  it('starts the agent in the workspace unless the Station names a working directory', () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [undefined, '/workspace'],
      ['', '/workspace'],
      ['/workspace/app', '/workspace/app'],
      ['/srv', '/srv'],
    ];
    for (const [workingDir, want] of cases) {
      const container = workingDir === undefined ? { name: 'agent' } : { name: 'agent', workingDir };
      const job = built({ ...input, station: withTemplate({ spec: { containers: [container] } }) });
      assert.equal(agentContainer(job).workingDir, want, `Station workingDir ${JSON.stringify(workingDir)}`);
    }
  });

  it('never names a Claude Code settings file in the argv (the CLI exits 1 when it is missing)', () => {
    const job = built({ ...input, station: withTemplate({ spec: { containers: [{ name: 'agent' }] } }) });
    const argv = agentContainer(job).command as string[];
    assert.ok(argv.includes('claude'), 'a claude run');
    assert.ok(!argv.includes('--settings'), argv.join(' '));
  });

  it('tolerates null or non-object metadata and labels; our labels win', () => {
    for (const metadata of [null, 'x', { labels: null, annotations: 7 }, { labels: ['a'] }]) {
      const job = built({
        ...input,
        station: withTemplate({ metadata, spec: { containers: [{ name: 'agent' }] } }),
      });
      assert.deepEqual(job.spec.template.metadata, {
        labels: expectedJob.metadata.labels,
        annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' },
      });
    }
    const job = built({
      ...input,
      station: withTemplate({
        metadata: {
          name: 'kept',
          labels: { 'agents.re-cinq.com/agent': 'other' },
          annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'true' },
        },
        spec: { containers: [{ name: 'agent' }] },
      }),
    });
    assert.deepEqual(job.spec.template.metadata, {
      name: 'kept',
      labels: expectedJob.metadata.labels,
      annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' },
    });
  });

  it('hash-truncates a long Agent name in the Job name and the agent label', () => {
    const name = 'an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit';
    const job = built({ ...input, agent: withAgent({ name }) });
    assert.equal(job.metadata.name, 'agent-job-an-extremely-long-agent-name-that-runs-well-1a4440fa');
    assert.equal(
      job.metadata.labels['agents.re-cinq.com/agent'],
      'an-extremely-long-agent-name-that-runs-well-past-the-s-7ae605e8',
    );
    assert.equal(job.metadata.ownerReferences[0].name, name);
    const env = agentContainer(job).env as { name: string; value?: string }[];
    assert.equal(env.find((e) => e.name === 'AGENT_NAME')?.value, name);
  });

  it('derives the deadlines from the Station, clamped to at least a minute', () => {
    for (const [minutes, seconds] of [
      [1, 60],
      [30, 1800],
      [0, 60],
      [-3, 60],
    ] as const) {
      const s: Station = { ...station, spec: { ...station.spec, deadlineMinutes: minutes } };
      const job = built({ ...input, station: s });
      assert.equal(job.spec.activeDeadlineSeconds, seconds);
      const env = agentContainer(job).env as { name: string; value?: string }[];
      assert.equal(env.find((e) => e.name === 'AGENT_DEADLINE_MS')?.value, String(seconds * 1000 - 10000));
      assert.equal(
        env.find((e) => e.name === 'AGENT_DEADLINE_AT')?.value,
        String(NOW_MS + seconds * 1000 - 10000),
      );
    }
  });

  it('resolves the model: Agent, else definition, else claude-opus-5-5, and routes on it', () => {
    const cases: ReadonlyArray<readonly [string | undefined, string | undefined, string, string]> = [
      [undefined, undefined, 'claude-opus-5-5', 'claude'],
      [undefined, 'gpt-6-sol', 'gpt-6-sol', 'codex'],
      ['gemini-3.8-flash', 'gpt-6-sol', 'gemini-3.8-flash', 'gemini'],
      ['', 'opencode/anthropic/claude-opus-5-5', 'opencode/anthropic/claude-opus-5-5', 'opencode'],
    ];
    for (const [agentModel, defModel, model, program] of cases) {
      const job = built({
        ...input,
        agent: withAgent({ spec: agentModel === undefined ? {} : { model: agentModel } }),
        // No tool lists: the fixture's would refuse a codex or opencode run (they cannot enforce them).
        definition: withDefinition(
          defModel === undefined
            ? { allowed_tools: [], disallowed_tools: [] }
            : { model: defModel, allowed_tools: [], disallowed_tools: [] },
        ),
      });
      const c = agentContainer(job);
      const env = c.env as { name: string; value?: string }[];
      assert.equal(env.find((e) => e.name === 'AGENT_MODEL')?.value, model);
      assert.equal((c.command as string[])[4], program);
    }
  });

  it('passes resumeSession and the conversation pin to the vendor argv', () => {
    const job = built({
      ...input,
      agent: withAgent({ spec: { resumeSession: 'sess-9' } }),
      definition: withDefinition({
        resources: { ...definitionJson.spec.resources, conversation: { source: 'https://c', pin: 'pin-9' } },
      }),
    });
    const argv = agentContainer(job).command as string[];
    assert.deepEqual(argv.slice(-6), ['--resume', 'sess-9', '--fork-session', '--session-id', 'pin-9', '--']);
    const env = agentContainer(job).env as { name: string; value?: string }[];
    assert.equal(env.find((e) => e.name === 'AGENT_CONVERSATION_PIN')?.value, 'pin-9');
  });

  it('runs an exec recipe and fails one without a command (D-b)', () => {
    const ok = built({
      ...input,
      definition: withDefinition({ model: 'exec', tool_config: { command: ['/bin/echo', 'hi'] } }),
    });
    assert.deepEqual(agentContainer(ok).command, [
      '/agent/bin/node',
      '/agent/bin/agent-controller.mjs',
      'supervisor',
      '--',
      '/bin/echo',
      'hi',
    ]);
    assert.deepEqual(buildJob({ ...input, definition: withDefinition({ model: 'exec' }) }), {
      ok: false,
      error: 'exec recipe needs tool_config.command (the argv to spawn)',
    });
    assert.deepEqual(
      buildJob({ ...input, definition: withDefinition({ model: 'exec', tool_config: { command: [1] } }) }),
      {
        ok: false,
        error: 'exec recipe tool_config.command entries must be strings',
      },
    );
  });

  it('never puts a reserved MCP header env into the MCP config', () => {
    const job = built({
      ...input,
      definition: withDefinition({
        resources: {
          mcp_servers: [
            { name: 'good', transport: 'http', url: 'https://g', headers_secret: 'good-auth' },
            { name: 'bad', transport: 'http', url: 'https://b', headers_secret: 'home' },
          ],
        },
      }),
    });
    const argv = agentContainer(job).command as string[];
    const config = argv[argv.indexOf('--mcp-config') + 1];
    assert.equal(
      config,
      '{"mcpServers":{"good":{"type":"http","url":"https://g","headers":{"Authorization":"$' +
        '{GOOD_AUTH}"}},"bad":{"type":"http","url":"https://b"}}}',
    );
    const env = agentContainer(job).env as { name: string }[];
    assert.ok(env.some((e) => e.name === 'GOOD_AUTH'));
    assert.equal(env.filter((e) => e.name === 'HOME').length, 1);
  });

  it('gives the init and agent containers equal run env arrays that are not shared objects', () => {
    const job = built();
    const init = (podSpec(job).initContainers as Record<string, unknown>[])[0] as Record<string, unknown>;
    const agentEnv = agentContainer(job).env as { name: string }[];
    // The agent container alone has the prompt file (its input ConfigMap is mounted there only).
    assert.deepEqual(init.env, agentEnv.slice(0, -1));
    assert.deepEqual(agentEnv.at(-1), { name: 'AGENT_PROMPT_FILE', value: '/agent/input/prompt' });
    assert.notEqual(init.env, agentContainer(job).env);
  });

  it('fails a flag-shaped resume id, an invalid time and an empty image', () => {
    assert.deepEqual(buildJob({ ...input, agent: withAgent({ spec: { resumeSession: '-x' } }) }), {
      ok: false,
      error: `spec.resumeSession "-x" must not start with '-'`,
    });
    assert.deepEqual(buildJob({ ...input, now: new Date(Number.NaN) }), {
      ok: false,
      error: 'the Job creation time is not a valid date',
    });
    assert.deepEqual(buildJob({ ...input, agentImage: ' ' }), {
      ok: false,
      error: 'the controller has no AGENT_IMAGE for the init container',
    });
  });
});

describe('buildJob under the restricted Pod Security profile (the default)', () => {
  const restricted = (template: unknown): Station => ({
    ...station,
    spec: {
      ...station.spec,
      podSecurityProfile: 'restricted',
      template: template as Record<string, unknown>,
    },
  });
  const agentC = { name: 'agent', image: 'img' };

  it('a Station without the field is restricted', () => {
    const parsed = must(parseStation({ ...stationJson, spec: { agentDefRef: 'fixer', template: {} } }));
    assert.equal(parsed.spec.podSecurityProfile, 'restricted');
  });

  it('runs the pod and the init as uid 1000 without capabilities; hardens sidecars where they leave it open', () => {
    const job = buildJob({
      ...input,
      station: restricted({
        spec: {
          containers: [
            agentC,
            { name: 'plain', image: 'envoy:1' },
            {
              name: 'bind',
              image: 'web:1',
              securityContext: {
                capabilities: { add: ['NET_BIND_SERVICE'], drop: ['NET_RAW'] },
                runAsUser: 2000,
              },
            },
          ],
          volumes: [{ name: 'cfg', configMap: { name: 'c' } }],
        },
      }),
    });
    assert.ok(job.ok, job.ok ? '' : job.error);
    const spec = podSpec(job.value);
    assert.deepEqual(spec.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const [init] = spec.initContainers as Record<string, unknown>[];
    assert.deepEqual(init?.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const containers = spec.containers as Record<string, unknown>[];
    assert.deepEqual(containers.find((c) => c.name === 'plain')?.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    assert.deepEqual(containers.find((c) => c.name === 'bind')?.securityContext, {
      capabilities: { add: ['NET_BIND_SERVICE'], drop: ['NET_RAW', 'ALL'] },
      runAsUser: 2000,
      allowPrivilegeEscalation: false,
    });
    assert.deepEqual(agentContainer(job.value).securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  const refusals: ReadonlyArray<readonly [string, unknown, string]> = [
    [
      'a sidecar as root',
      { spec: { containers: [agentC, { name: 's', securityContext: { runAsUser: 0 } }] } },
      'container s runs as root (runAsUser: 0)',
    ],
    [
      'runAsNonRoot false',
      { spec: { containers: [agentC, { name: 's', securityContext: { runAsNonRoot: false } }] } },
      'container s sets runAsNonRoot: false',
    ],
    [
      'privilege escalation',
      { spec: { containers: [agentC, { name: 's', securityContext: { allowPrivilegeEscalation: true } }] } },
      'container s allows privilege escalation',
    ],
    [
      'a baseline capability',
      {
        spec: { containers: [agentC, { name: 's', securityContext: { capabilities: { add: ['CHOWN'] } } }] },
      },
      'container s adds capability CHOWN',
    ],
    [
      'an nfs volume',
      { spec: { containers: [agentC], volumes: [{ name: 'n', nfs: { server: 'x', path: '/' } }] } },
      'volume n is of type nfs',
    ],
  ];
  for (const [name, template, detail] of refusals) {
    it(`refuses ${name}, naming it and the way out; baseline accepts it`, () => {
      const job = buildJob({ ...input, station: restricted(template) });
      assert.deepEqual(job, {
        ok: false,
        error: `Station template ${detail}, which the restricted Pod Security profile forbids (set spec.podSecurityProfile: baseline to allow it)`,
      });
      const baseline = buildJob({
        ...input,
        station: {
          ...station,
          spec: { ...station.spec, podSecurityProfile: 'baseline', template },
        } as Station,
      });
      assert.ok(baseline.ok, baseline.ok ? '' : baseline.error);
    });
  }

  it('ignores the security context the Station gives the agent container: ours replaces it', () => {
    const job = buildJob({
      ...input,
      station: restricted({ spec: { containers: [{ ...agentC, securityContext: { runAsUser: 0 } }] } }),
    });
    assert.ok(job.ok, job.ok ? '' : job.error);
    assert.equal((agentContainer(job.value).securityContext as Record<string, unknown>).runAsUser, 1000);
  });
});

describe('buildJob tool sidecars (native sidecars)', () => {
  const tool = {
    name: 'search',
    image: 'ghcr.io/acme/search-mcp:1',
    env: [{ name: 'MODE', value: 'fast' }],
    secrets: [{ name: 'SEARCH_TOKEN', ref: 'search-token' }],
    mcp: { port: 7070 },
  };

  it('starts each after the init container, restartPolicy Always, hardened, gated by a startup probe on its MCP port', () => {
    const job = buildJob({
      ...input,
      definition: withDefinition({ sidecars: [tool, { name: 'cache', image: 'redis:7' }] }),
    });
    assert.ok(job.ok, job.ok ? '' : job.error);
    const init = podSpec(job.value).initContainers as Record<string, unknown>[];
    assert.deepEqual(
      init.map((c) => c.name),
      ['init', 'search', 'cache'],
    );
    assert.deepEqual(init[1], {
      name: 'search',
      image: 'ghcr.io/acme/search-mcp:1',
      restartPolicy: 'Always',
      env: [
        { name: 'MODE', value: 'fast' },
        {
          name: 'SEARCH_TOKEN',
          valueFrom: { secretKeyRef: { name: 'agent-secrets', key: 'search-token', optional: false } },
        },
      ],
      ports: [{ name: 'mcp', containerPort: 7070 }],
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
      startupProbe: { tcpSocket: { port: 7070 }, periodSeconds: 1, failureThreshold: 120 },
    });
    assert.equal('startupProbe' in (init[2] ?? {}), false, 'no probe without mcp');
  });

  it('hands an mcp sidecar to the agent CLI as an http MCP server on localhost', () => {
    const job = buildJob({
      ...input,
      definition: withDefinition({ sidecars: [{ ...tool, mcp: { port: 7070, path: '/v1/mcp' } }] }),
    });
    assert.ok(job.ok, job.ok ? '' : job.error);
    const command = agentContainer(job.value).command as string[];
    const config = command[command.indexOf('--mcp-config') + 1];
    assert.deepEqual(JSON.parse(config ?? '{}').mcpServers.search, {
      type: 'http',
      url: 'http://127.0.0.1:7070/v1/mcp',
    });
  });

  const refusals: [string, Record<string, unknown>[], string][] = [
    [
      'a name that is not a DNS label',
      [{ name: 'Search_1', image: 'x' }],
      'sidecar name "Search_1" is not a DNS label',
    ],
    [
      'the name agent',
      [{ name: 'agent', image: 'x' }],
      'sidecar agent: the run pod already has a container of that name',
    ],
    [
      'the name init',
      [{ name: 'init', image: 'x' }],
      'sidecar init: the run pod already has a container of that name',
    ],
    [
      'a Station container name',
      [{ name: 'proxy', image: 'x' }],
      'sidecar proxy: the run pod already has a container of that name',
    ],
    [
      'two of one name',
      [
        { name: 'a', image: 'x' },
        { name: 'a', image: 'y' },
      ],
      'sidecar a: the run pod already has a container of that name',
    ],
    [
      'an mcp path without /',
      [{ name: 'a', image: 'x', mcp: { port: 1, path: 'mcp' } }],
      'sidecar a: mcp.path must start with /',
    ],
  ];
  it('refuses two sidecars on one port, and the realtime prompt port on a realtime run', () => {
    const two = buildJob({
      ...input,
      definition: withDefinition({
        sidecars: [
          { name: 'a', image: 'x', mcp: { port: 7000 } },
          { name: 'b', image: 'y', ports: [{ containerPort: 7000 }] },
        ],
      }),
    });
    assert.deepEqual(two, { ok: false, error: 'sidecar b: port 7000 is already used by sidecar a' });
    const live = buildJob({
      ...input,
      definition: withDefinition({
        execution: 'realtime',
        sidecars: [{ name: 'a', image: 'x', mcp: { port: 8090 } }],
      }),
    });
    assert.deepEqual(live, {
      ok: false,
      error: 'sidecar a: port 8090 is already used by the realtime prompt server',
    });
    const oneSidecarOnePort = buildJob({
      ...input,
      definition: withDefinition({
        sidecars: [{ name: 'a', image: 'x', ports: [{ containerPort: 7000 }], mcp: { port: 7000 } }],
      }),
    });
    assert.ok(oneSidecarOnePort.ok, 'its mcp port may be one of its own ports');
  });

  for (const [name, sidecars, reason] of refusals) {
    it(`refuses ${name}`, () => {
      assert.deepEqual(buildJob({ ...input, definition: withDefinition({ sidecars }) }), {
        ok: false,
        error: reason,
      });
    });
  }
});

describe('buildJob: the projected token of a run that asks for Kubernetes access (issue 9 §2)', () => {
  type Pod = {
    spec: {
      automountServiceAccountToken: boolean;
      serviceAccountName: string;
      volumes: Record<string, unknown>[];
      containers: { name: string; volumeMounts?: Record<string, unknown>[] }[];
      initContainers: { name: string; volumeMounts?: Record<string, unknown>[] }[];
    };
  };
  const withRbac = (rbac: Record<string, unknown>, execution = 'job'): AgentDefinition =>
    must(parseAgentDefinition({ ...definitionJson, spec: { ...definitionJson.spec, rbac, execution } }));
  const podOf = (j: JobManifest) => j.spec.template as unknown as Pod;
  const tokenVolumeOf = (p: Pod) => p.spec.volumes.find((v) => v.name === 'run-token');

  it('mounts token, ca.crt and namespace into the agent container only, where in-cluster clients look', () => {
    const job = must(buildJob({ ...input, definition: withRbac({ roles: ['pod-reader'] }) }));
    const pod = podOf(job);
    assert.equal(pod.spec.automountServiceAccountToken, false, 'never the automatic token');
    assert.equal(pod.spec.serviceAccountName, 'agent-job-bug-fixer-run-6ltzm');
    assert.deepEqual(tokenVolumeOf(pod), {
      name: 'run-token',
      projected: {
        defaultMode: 0o444,
        sources: [
          // The Station deadline is 20 minutes: the token lives as long as the run may.
          { serviceAccountToken: { path: 'token', expirationSeconds: 1200 } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    });
    const mounts = (c: { volumeMounts?: Record<string, unknown>[] }) =>
      (c.volumeMounts ?? []).filter((m) => m.name === 'run-token');
    const agentC = pod.spec.containers.find((c) => c.name === 'agent');
    assert.deepEqual(mounts(agentC ?? {}), [
      { name: 'run-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
    ]);
    for (const c of [...pod.spec.containers, ...pod.spec.initContainers]) {
      if (c.name !== 'agent') assert.deepEqual(mounts(c), [], `${c.name} gets no token`);
    }
  });

  it('never below the 10 minutes the API server requires; no token without a request or for batch recipes', () => {
    const short = { ...station, spec: { ...station.spec, deadlineMinutes: 3 } };
    const job = must(buildJob({ ...input, station: short, definition: withRbac({ clusterRoles: ['r'] }) }));
    const volume = tokenVolumeOf(podOf(job)) as
      | { projected: { sources: Record<string, unknown>[] } }
      | undefined;
    const source = volume?.projected.sources[0];
    assert.deepEqual(source, { serviceAccountToken: { path: 'token', expirationSeconds: 600 } });
    for (const d of [
      definition,
      withRbac({ roles: [], clusterRoles: [] }),
      withRbac({ roles: ['r'] }, 'batch'),
    ]) {
      const pod = podOf(must(buildJob({ ...input, definition: d })));
      assert.equal(tokenVolumeOf(pod), undefined);
      assert.ok(!JSON.stringify(pod).includes('serviceAccountToken'));
    }
  });

  it("replaces a Station mount at the token path on the agent container (the run's token wins)", () => {
    const tmpl = station.spec.template as { spec: { containers: Record<string, unknown>[] } };
    const s2 = {
      ...station,
      spec: {
        ...station.spec,
        template: {
          ...tmpl,
          spec: {
            ...tmpl.spec,
            containers: tmpl.spec.containers.map((c) =>
              c.name === 'agent'
                ? {
                    ...c,
                    volumeMounts: [
                      { name: 'cache', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
                    ],
                  }
                : c,
            ),
          },
        },
      },
    };
    const pod = podOf(must(buildJob({ ...input, station: s2, definition: withRbac({ roles: ['r'] }) })));
    const agentC = pod.spec.containers.find((c) => c.name === 'agent');
    const atPath = (agentC?.volumeMounts ?? []).filter(
      (m) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount',
    );
    assert.deepEqual(atPath, [
      { name: 'run-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
    ]);
  });
});

describe("buildJob under a policy's limits (issue 9 §1: seccomp profile, resource caps of our containers)", () => {
  type C = { name: string; securityContext?: Record<string, unknown>; resources?: Record<string, unknown> };
  type Pod = { spec: { securityContext: Record<string, unknown>; containers: C[]; initContainers: C[] } };
  const withSidecar = must(
    parseAgentDefinition({
      ...definitionJson,
      spec: { ...definitionJson.spec, sidecars: [{ name: 'tool', image: 'ghcr.io/acme/tool:1' }] },
    }),
  );
  const localhost = { type: 'Localhost', localhostProfile: 'profiles/agents.json' };

  it('gives the pod, the agent, the init and tool sidecars the policy seccomp profile; Station sidecars inherit it', () => {
    const job = must(buildJob({ ...input, definition: withSidecar, limits: { seccompProfile: localhost } }));
    const pod = job.spec.template as unknown as Pod;
    assert.deepEqual(pod.spec.securityContext.seccompProfile, localhost);
    const ours = [
      ...pod.spec.containers.filter((c) => c.name === 'agent'),
      ...pod.spec.initContainers, // init and the tool sidecar
    ];
    assert.deepEqual(
      ours.map((c) => c.name),
      ['agent', 'init', 'tool'],
    );
    for (const c of ours) assert.deepEqual(c.securityContext?.seccompProfile, localhost, c.name);
    const proxy = pod.spec.containers.find((c) => c.name === 'proxy');
    assert.equal(proxy?.securityContext?.seccompProfile, undefined, 'inherits the pod profile');
    const plain = must(buildJob(input)).spec.template as unknown as Pod;
    assert.deepEqual(plain.spec.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  });

  it("caps the init container's requests and limits, and limits a capped resource", () => {
    const resources = (limits: Parameters<typeof cappedInitResources>[0]) => cappedInitResources(limits);
    assert.deepEqual(resources(undefined), {
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '2Gi' },
    });
    assert.deepEqual(resources({ maxCpu: '1', maxMemory: '1Gi' }), {
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { cpu: '1', memory: '1Gi' },
    });
    assert.deepEqual(resources({ maxCpu: '20m', maxMemory: '64Mi' }), {
      requests: { cpu: '20m', memory: '64Mi' },
      limits: { cpu: '20m', memory: '64Mi' },
    });
    const job = must(buildJob({ ...input, limits: { maxMemory: '1Gi' } }));
    const init = (job.spec.template as unknown as Pod).spec.initContainers.find((c) => c.name === 'init');
    assert.deepEqual(init?.resources, {
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '1Gi' },
    });
  });
});

describe('buildJob: the token stays with the agent container', () => {
  const tmpl = station.spec.template as {
    spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
  };
  const withTemplate = (spec: Record<string, unknown>): Station => ({
    ...station,
    spec: { ...station.spec, template: { ...tmpl, spec: { ...tmpl.spec, ...spec } } },
  });
  const rbac = must(
    parseAgentDefinition({ ...definitionJson, spec: { ...definitionJson.spec, rbac: { roles: ['r'] } } }),
  );

  it('refuses a Station sidecar that mounts run-token, with or without a token', () => {
    const s = withTemplate({
      containers: tmpl.spec.containers.map((c) =>
        c.name === 'proxy' ? { ...c, volumeMounts: [{ name: 'run-token', mountPath: '/stolen' }] } : c,
      ),
    });
    for (const d of [definition, rbac]) {
      const r = buildJob({ ...input, station: s, definition: d });
      assert.deepEqual(r, {
        ok: false,
        error: TEMPLATE_ERRORS.tokenMount('proxy'),
      });
    }
  });

  it('refuses shareProcessNamespace only in a run that holds a token', () => {
    const s = withTemplate({ shareProcessNamespace: true });
    assert.deepEqual(buildJob({ ...input, station: s, definition: rbac }), {
      ok: false,
      error: TEMPLATE_ERRORS.sharedProcessesWithToken,
    });
    assert.ok(buildJob({ ...input, station: s }).ok);
  });
});

describe('buildJob: agent memory (issue 10 §3)', () => {
  type Mount = Record<string, unknown>;
  type C = { name: string; command?: string[]; volumeMounts?: Mount[] };
  type Pod = { spec: { volumes: Record<string, unknown>[]; containers: C[]; initContainers: C[] } };
  const withMemory = (memory: Record<string, unknown>): AgentDefinition =>
    must(parseAgentDefinition({ ...definitionJson, spec: { ...definitionJson.spec, memory } }));
  const podOf = (j: JobManifest) => j.spec.template as unknown as Pod;
  const tmpl = station.spec.template as {
    spec: Record<string, unknown> & { containers: Record<string, unknown>[]; volumes: unknown[] };
  };
  const withTemplate = (spec: Record<string, unknown>): Station => ({
    ...station,
    spec: { ...station.spec, template: { ...tmpl, spec: { ...tmpl.spec, ...spec } } },
  });
  const memoryMounts = (c: C) => (c.volumeMounts ?? []).filter((m) => m.name === 'agent-memory');

  it('mounts MEMORY.md of the ConfigMap into the agent container only, read-only at /agent/memory, optional', () => {
    const job = must(buildJob({ ...input, definition: withMemory({ configMap: 'fixer-notes' }) }));
    const pod = podOf(job);
    assert.deepEqual(
      pod.spec.volumes.find((v) => v.name === 'agent-memory'),
      {
        name: 'agent-memory',
        configMap: { name: 'fixer-notes', optional: true, items: [{ key: 'MEMORY.md', path: 'MEMORY.md' }] },
      },
    );
    const agentC = pod.spec.containers.find((c) => c.name === 'agent');
    assert.deepEqual(memoryMounts(agentC ?? { name: '' }), [
      { name: 'agent-memory', mountPath: '/agent/memory', readOnly: true },
    ]);
    for (const c of [...pod.spec.containers, ...pod.spec.initContainers]) {
      if (c.name !== 'agent') assert.deepEqual(memoryMounts(c), [], `${c.name} gets no memory`);
    }
    // Nothing of it without spec.memory.
    const plain = podOf(must(buildJob(input)));
    assert.ok(!JSON.stringify(plain).includes('agent-memory'));
    assert.equal(
      must(buildJob(input)).metadata.annotations['agents.re-cinq.com/memory-configmap'],
      undefined,
    );
  });

  it('replaces a Station volume named agent-memory, and a Station mount at /agent/memory on the agent', () => {
    const s = withTemplate({
      volumes: [...tmpl.spec.volumes, { name: 'agent-memory', emptyDir: {} }],
      containers: tmpl.spec.containers.map((c) =>
        c.name === 'agent'
          ? {
              ...c,
              volumeMounts: [
                { name: 'cache', mountPath: '/agent/memory' },
                { name: 'agent-memory', mountPath: '/elsewhere' },
              ],
            }
          : c,
      ),
    });
    const pod = podOf(must(buildJob({ ...input, station: s, definition: withMemory({ configMap: 'm' }) })));
    const named = pod.spec.volumes.filter((v) => v.name === 'agent-memory');
    assert.equal(named.length, 1);
    assert.ok('configMap' in (named[0] ?? {}), 'ours, not the emptyDir');
    const agentC = pod.spec.containers.find((c) => c.name === 'agent');
    assert.deepEqual(
      (agentC?.volumeMounts ?? []).filter(
        (m) => m.mountPath === '/agent/memory' || m.name === 'agent-memory',
      ),
      [{ name: 'agent-memory', mountPath: '/agent/memory', readOnly: true }],
    );
    // Without memory, the reserved name is still dropped (as agent, workspace and run-token are).
    const without = podOf(must(buildJob({ ...input, station: s })));
    assert.ok(!without.spec.volumes.some((v) => v.name === 'agent-memory'));
  });

  it('refuses a Station sidecar that mounts agent-memory, with or without memory', () => {
    const s = withTemplate({
      containers: tmpl.spec.containers.map((c) =>
        c.name === 'proxy' ? { ...c, volumeMounts: [{ name: 'agent-memory', mountPath: '/m' }] } : c,
      ),
    });
    for (const d of [definition, withMemory({ configMap: 'm' })]) {
      assert.deepEqual(buildJob({ ...input, station: s, definition: d }), {
        ok: false,
        error: TEMPLATE_ERRORS.memoryMount('proxy'),
      });
    }
  });

  it('adds the memory and the instruction to the prompt, and records the memory on the Job', () => {
    const d = withMemory({ configMap: 'fixer-notes', maxSizeKB: 8 });
    const job = must(
      buildJob({ ...input, definition: d, memory: { content: 'login is flaky\n', resourceVersion: '77' } }),
    );
    const memoryInput = { content: 'login is flaky\n', resourceVersion: '77' };
    const prompt = buildRunInput({ ...input, definition: d, memory: memoryInput }).data.prompt;
    const rendered = 'Fix JIRA-7 in acme/app; keep {unknown}';
    assert.equal(prompt, `${rendered}\n\n<memory>\nlogin is flaky\n</memory>\n${MEMORY_INSTRUCTION}\n`);
    assert.equal(runPrompt(agent, d, { content: 'login is flaky' }), prompt);
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(job.metadata.annotations).filter(([k]) => k.startsWith('agents.re-cinq.com/memory')),
      ),
      {
        'agents.re-cinq.com/memory-configmap': 'fixer-notes',
        'agents.re-cinq.com/memory-max-size-kb': '8',
        'agents.re-cinq.com/memory-version': '77',
      },
    );
    // An empty or missing memory: the instruction only; a ConfigMap that did not exist is recorded as "".
    const empty = must(buildJob({ ...input, definition: d, memory: { content: '  ' } }));
    assert.equal(
      buildRunInput({ ...input, definition: d, memory: { content: '  ' } }).data.prompt,
      `${rendered}\n\n${MEMORY_INSTRUCTION}\n`,
    );
    assert.equal(empty.metadata.annotations['agents.re-cinq.com/memory-version'], '');
    const unread = must(buildJob({ ...input, definition: d }));
    assert.equal(unread.metadata.annotations['agents.re-cinq.com/memory-version'], undefined);
    assert.equal(unread.metadata.annotations['agents.re-cinq.com/agent-uid'], 'uid-agent-1');
  });

  it('parses spec.memory: maxSizeKB defaults to 64, 1..96; configMap must be an object name', () => {
    assert.deepEqual(withMemory({ configMap: 'notes' }).spec.memory, { configMap: 'notes', maxSizeKB: 64 });
    for (const bad of [
      { configMap: 'Not_A_Name' },
      { configMap: 'ok', maxSizeKB: 0 },
      { configMap: 'ok', maxSizeKB: 97 },
      { configMap: 'ok', maxSizeKB: 1.5 },
      { maxSizeKB: 4 },
    ]) {
      const parsed = parseAgentDefinition({
        ...definitionJson,
        spec: { ...definitionJson.spec, memory: bad },
      });
      assert.equal(parsed.ok, false, JSON.stringify(bad));
    }
  });
});

describe('buildJob and buildRunInput: the prompt travels in the input ConfigMap (issue 10 §1)', () => {
  const withPrompt = (prompt: string, spec: Record<string, unknown> = {}) =>
    withDefinition({ prompt, ...spec });
  const jobJson = (i: BuildJobInput) => JSON.stringify(built(i));

  it('puts the rendered prompt and the run ids into an owned, immutable ConfigMap, never into the Job', () => {
    const cm = buildRunInput(input);
    assert.deepEqual(cm, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'agent-job-bug-fixer-run-6ltzm-input',
        namespace: 'team-a',
        labels: {
          'agents.re-cinq.com/component': 'job',
          'agents.re-cinq.com/agent': 'bug-fixer-run-6ltzm',
          'agents.re-cinq.com/station': 'bug-fixer',
        },
        annotations: { 'agents.re-cinq.com/agent-uid': 'uid-agent-1' },
        ownerReferences: [
          {
            apiVersion: 'agents.re-cinq.com/v1alpha1',
            kind: 'Agent',
            name: 'bug-fixer-run-6ltzm',
            uid: 'uid-agent-1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      immutable: true,
      data: {
        prompt: 'Fix JIRA-7 in acme/app; keep {unknown}',
        'run.json': `${JSON.stringify({
          namespace: 'team-a',
          agent: 'bug-fixer-run-6ltzm',
          uid: 'uid-agent-1',
          station: 'bug-fixer',
          definition: 'fixer',
          job: 'agent-job-bug-fixer-run-6ltzm',
          model: 'claude-opus-5-5',
          taskId: 'JIRA-7',
        })}\n`,
      },
    });
    assert.ok(!jobJson(input).includes('Fix JIRA-7 in acme/app'), 'the Job does not carry the prompt');
  });

  it('parameters too large for AGENT_PARAMETERS are read from the ConfigMap (AGENT_PARAMETERS_FILE)', () => {
    const envOf = (job: JobManifest) => agentContainer(job).env as { name: string; value?: string }[];
    const small = { ticket: 't'.repeat(32 * 1024 - 13) }; // {"ticket":"…"} is exactly 32 KiB
    const fits = built({ ...input, agent: withAgent({ spec: { parameters: small } }) });
    assert.ok(envOf(fits).find((e) => e.name === 'AGENT_PARAMETERS')?.value === JSON.stringify(small));
    assert.ok(envOf(fits).every((e) => e.name !== 'AGENT_PARAMETERS_FILE'));
    const large = { ticket: 't'.repeat(32 * 1024 - 12) };
    const agentLarge = withAgent({ spec: { parameters: large } });
    const job = built({ ...input, agent: agentLarge });
    assert.ok(envOf(job).every((e) => e.name !== 'AGENT_PARAMETERS'));
    assert.equal(
      envOf(job).find((e) => e.name === 'AGENT_PARAMETERS_FILE')?.value,
      '/agent/input/parameters.json',
    );
    assert.ok(
      buildRunInput({ ...input, agent: agentLarge }).data['parameters.json'] === JSON.stringify(large),
    );
    const volume = (
      podSpec(job).volumes as { name: string; configMap?: { items: { key: string }[] } }[]
    ).find((v) => v.name === 'run-input');
    assert.deepEqual(
      volume?.configMap?.items.map((i) => i.key),
      ['prompt', 'parameters.json', 'run.json'],
    );
    // Small parameters: in the env only (as in the reference), not in the ConfigMap.
    assert.equal(buildRunInput(input).data['parameters.json'], undefined);
    // Too large to sit beside a prompt that uses them: neither env nor file, the prompt carries them.
    const huge = { ticket: 'h'.repeat(600_000) };
    const both = withAgent({ spec: { parameters: huge } });
    const d = withDefinition({ prompt: 'Fix {ticket}' });
    const hugeJob = built({ ...input, agent: both, definition: d });
    assert.ok(envOf(hugeJob).every((e) => !e.name.startsWith('AGENT_PARAMETERS')));
    const cm = buildRunInput({ ...input, agent: both, definition: d });
    assert.equal(cm.data['parameters.json'], undefined);
    assert.equal(cm.data.prompt?.length, 'Fix '.length + 600_000);
  });

  it('a long name keeps the ConfigMap name a valid object name', () => {
    const name = `a${'b'.repeat(240)}`;
    const cm = buildRunInput({ ...input, agent: withAgent({ name }) });
    assert.ok(cm.metadata.name.length <= 253);
    assert.match(cm.metadata.name, /^agent-job-ab+-[0-9a-f]{8}-input$/);
  });

  it('a prompt longer than one argument builds for the CLIs that read stdin (OpenCode always reads it there)', () => {
    const long = 'x'.repeat(140_000);
    for (const model of [
      'claude-opus-5-5',
      'gpt-6-astra',
      'gemini-3-pro',
      'opencode/anthropic/claude-opus-5-5',
    ]) {
      const r = buildJob({
        ...input,
        definition: withPrompt(long, { model, allowed_tools: [], disallowed_tools: [] }),
      });
      assert.ok(r.ok, `${model}: ${r.ok ? '' : r.error}`);
      assert.ok(!JSON.stringify(r.value).includes(long.slice(0, 1000)));
    }
    const exec = buildJob({
      ...input,
      definition: withPrompt(long, { model: 'exec', tool_config: { command: ['/bin/cat'] } }),
    });
    assert.ok(exec.ok);
  });

  it('a resumed Gemini session takes its prompt only as an argument', () => {
    const r = buildJob({
      ...input,
      agent: withAgent({ spec: { resumeSession: 'sess-1' } }),
      definition: withPrompt('y'.repeat(140_000), { model: 'gemini-3-pro' }),
    });
    assert.ok(!r.ok);
    assert.match(r.error, /takes a resumed session's prompt only as an argument$/);
  });

  it('fails a prompt over 900 KiB with its size; 900 KiB exactly builds', () => {
    const max = 900 * 1024;
    assert.ok(buildJob({ ...input, definition: withPrompt('z'.repeat(max)) }).ok);
    assert.deepEqual(buildJob({ ...input, definition: withPrompt('z'.repeat(max + 1)) }), {
      ok: false,
      error: `the prompt is ${max + 1} bytes: a run's prompt holds at most ${max} bytes (900 KiB)`,
    });
    // Bytes, not characters: 4-byte characters count four times.
    const emoji = '\u{1F600}'.repeat(max / 4 + 1);
    const r = buildJob({ ...input, definition: withPrompt(emoji) });
    assert.ok(!r.ok);
    assert.match(r.error, new RegExp(`^the prompt is ${max + 4} bytes`));
  });

  it('another argument over the limit still fails the build (E2BIG)', () => {
    const r = buildJob({
      ...input,
      definition: withDefinition({
        model: 'exec',
        tool_config: { command: ['/bin/echo', 'q'.repeat(140_000)] },
      }),
    });
    assert.deepEqual(r, {
      ok: false,
      error: 'a CLI argument of 140000 bytes: one argument holds at most 131071 bytes',
    });
  });
});

describe('buildJob: tracing (issue 10 §5)', () => {
  it('a traced run: the agent container alone gets its trace context and where to export', () => {
    const job = built({ ...input, tracing: { tracesUrl: 'http://10.0.0.7:4318/v1/traces' } });
    const env = agentContainer(job).env as { name: string; value?: string }[];
    const traceparent = env.find((e) => e.name === 'TRACEPARENT')?.value ?? '';
    assert.equal(traceparent, `00-${traceIdFromUid('uid-agent-1')}-${rootSpanIdFromUid('uid-agent-1')}-01`);
    assert.equal(
      env.find((e) => e.name === 'AGENT_OTLP_TRACES_ENDPOINT')?.value,
      'http://10.0.0.7:4318/v1/traces',
    );
    // The OTel variables stay the recipe's (for its CLI's own telemetry).
    assert.ok(env.every((e) => !e.name.startsWith('OTEL_')));
    const init = (podSpec(job).initContainers as { env: { name: string }[] }[])[0];
    assert.ok(init?.env.every((e) => e.name !== 'TRACEPARENT'));
  });

  it('an Agent annotated traceparent: the pod continues that trace; without tracing: no OTel env at all', () => {
    const annotated = must(
      parseAgent({
        ...agentJson,
        metadata: {
          ...agentJson.metadata,
          annotations: { traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-00` },
        },
      }),
    );
    const job = built({ ...input, agent: annotated, tracing: { tracesUrl: 'http://c:4318/v1/traces' } });
    const env = agentContainer(job).env as { name: string; value?: string }[];
    assert.equal(
      env.find((e) => e.name === 'TRACEPARENT')?.value,
      `00-${'ab'.repeat(16)}-${rootSpanIdFromUid('uid-agent-1')}-00`,
    );
    const plain = agentContainer(built()).env as { name: string }[];
    assert.ok(plain.every((e) => !['TRACEPARENT', 'AGENT_OTLP_TRACES_ENDPOINT'].includes(e.name)));
  });
});

describe('buildJob and buildRunInput: the system prompt (issue 10 §1)', () => {
  const withSystem = withDefinition({ systemPrompt: 'You fix {ticket} with care.' });

  it('rendered into the input ConfigMap as system-prompt, mounted, named by AGENT_SYSTEM_PROMPT_FILE', () => {
    const cm = buildRunInput({ ...input, definition: withSystem });
    assert.equal(cm.data['system-prompt'], 'You fix JIRA-7 with care.');
    const job = built({ ...input, definition: withSystem });
    const env = agentContainer(job).env as { name: string; value?: string }[];
    assert.equal(env.find((e) => e.name === 'AGENT_SYSTEM_PROMPT_FILE')?.value, '/agent/input/system-prompt');
    const volume = (
      podSpec(job).volumes as { name: string; configMap?: { items: { key: string }[] } }[]
    ).find((v) => v.name === 'run-input');
    assert.deepEqual(
      volume?.configMap?.items.map((i) => i.key),
      ['prompt', 'system-prompt', 'run.json'],
    );
    assert.ok(!JSON.stringify(job).includes('with care'), 'not in the Job');
  });

  it('none, or a blank one: no key, no env; one over 64 KiB fails the build', () => {
    for (const d of [definition, withDefinition({ systemPrompt: '   ' })]) {
      assert.equal(buildRunInput({ ...input, definition: d }).data['system-prompt'], undefined);
      const env = agentContainer(built({ ...input, definition: d })).env as { name: string }[];
      assert.ok(env.every((e) => e.name !== 'AGENT_SYSTEM_PROMPT_FILE'));
    }
    // Bytes, not characters: 32,769 two-byte characters are 65,538 bytes.
    assert.ok(buildJob({ ...input, definition: withDefinition({ systemPrompt: 'é'.repeat(32768) }) }).ok);
    const big = withDefinition({ systemPrompt: 'é'.repeat(32769) });
    assert.deepEqual(buildJob({ ...input, definition: big }), {
      ok: false,
      error: 'the system prompt is 65538 bytes: at most 65536 bytes (64 KiB)',
    });
  });
});

describe('buildJob: NUL characters (issue 13 §3)', () => {
  it('a NUL in a field that becomes an environment variable fails the build naming the variable', () => {
    const r = buildJob({ ...input, agent: withAgent({ spec: { taskId: 'task\u0000id' } }) });
    assert.ok(!r.ok);
    assert.match(
      r.error,
      /^the run pod's spec\.(initContainers|containers)\[[a-z]+\]\.env\[TASK_ID\]\.value contains a NUL character \(U\+0000\)/,
    );
  });

  it('a NUL in the Station template (an env value, an annotation) fails the build naming where', () => {
    const template = {
      metadata: { annotations: { note: 'a\u0000b' } },
      spec: { containers: [{ name: 'agent', image: 'busybox' }] },
    };
    const r = buildJob({ ...input, station: withTemplate(template) });
    assert.ok(!r.ok);
    assert.match(r.error, /^the run pod's metadata\.annotations\.note contains a NUL character/);
  });

  it('a NUL in the prompt (from a parameter) fails the build with the prompt named', () => {
    const r = buildJob({ ...input, agent: withAgent({ spec: { parameters: { repo: 'x\u0000y' } } }) });
    assert.ok(!r.ok);
    assert.match(r.error, /NUL character/);
  });

  it('control characters other than NUL build fine', () => {
    const text = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('');
    assert.equal(
      buildJob({ ...input, agent: withAgent({ spec: { taskId: text, parameters: { repo: text } } }) }).ok,
      true,
    );
  });
});

describe('buildJob behind the model gateway (issue 28)', () => {
  it('no container of the pod reads a vendor key from agent-secrets; the agent gets the credential and the URL', () => {
    const job = built({ ...input, gateway: { url: 'http://agent-gateway.agents.svc:8080' } });
    const spec = podSpec(job);
    const containers = [
      ...((spec.initContainers as Record<string, unknown>[] | undefined) ?? []),
      ...(spec.containers as Record<string, unknown>[]),
    ];
    for (const c of containers) {
      for (const e of (c.env as { name: string; valueFrom?: { secretKeyRef?: { name: string } } }[]) ?? []) {
        if (e.name === 'ANTHROPIC_API_KEY') {
          assert.deepEqual(e.valueFrom?.secretKeyRef, {
            name: `agent-gateway-${agentJson.metadata.name}`,
            key: 'credential',
            optional: false,
          });
        }
      }
    }
    const env = agentContainer(job).env as { name: string; value?: string }[];
    assert.equal(
      env.find((e) => e.name === 'ANTHROPIC_BASE_URL')?.value,
      'http://agent-gateway.agents.svc:8080/anthropic',
    );
    assert.ok(
      env.some((e) => e.name === 'ANTHROPIC_API_KEY'),
      'the CLI still finds a key variable',
    );
    assert.ok(
      !JSON.stringify(job).includes('anthropic-key'),
      'the agent-secrets key is named nowhere in the Job',
    );
  });
});

describe('buildJob: a realtime run that restores a saved session (issue 29)', () => {
  const realtime = withDefinition({ execution: 'realtime' });
  const envOf = (r: Result<JobManifest, string>) =>
    (agentContainer(must(r)).env as { name: string; value?: string }[]).filter(
      (e) => e.name === 'AGENT_SESSION_RESTORE',
    );
  const annotated = (value: string): Agent =>
    must(
      parseAgent({
        ...agentJson,
        metadata: { ...agentJson.metadata, annotations: { [ANNOTATION_SESSION_RESTORE]: value } },
      }),
    );

  it('is off by default', () => {
    assert.deepEqual(envOf(buildJob({ ...input, definition: realtime })), []);
    assert.deepEqual(envOf(buildJob({ ...input, definition: realtime, sessionRestore: false })), []);
  });

  it('sets AGENT_SESSION_RESTORE=true when the build input asks, or the Agent is annotated "true"', () => {
    const want = [{ name: 'AGENT_SESSION_RESTORE', value: 'true' }];
    assert.deepEqual(envOf(buildJob({ ...input, definition: realtime, sessionRestore: true })), want);
    assert.deepEqual(envOf(buildJob({ ...input, definition: realtime, agent: annotated('true') })), want);
    for (const value of ['false', 'yes', 'True', '']) {
      assert.deepEqual(
        envOf(buildJob({ ...input, definition: realtime, agent: annotated(value) })),
        [],
        value,
      );
    }
  });

  it('is ignored for a Job run', () => {
    assert.deepEqual(envOf(buildJob({ ...input, sessionRestore: true, agent: annotated('true') })), []);
  });

  it('a recipe cannot set it: the name is reserved', () => {
    const r = buildJob({
      ...input,
      definition: withDefinition({ resources: { env: [{ name: 'AGENT_SESSION_RESTORE', value: 'true' }] } }),
    });
    assert.deepEqual(envOf(r), []);
  });
});
