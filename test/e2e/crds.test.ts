// The generated CRDs against a real API server: deploy/crds/*.yaml is applied as YAML text (so the API server's
// YAML reader checks our emitter), must become Established, must read back equal to the generated objects, must
// default and prune objects as the schemas say, and must reject invalid objects with 422.
// Runtime-independent (no controller involved): skipped on the Deno pass.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { buildCrd, CRD_FILE_PATHS, CRD_KINDS } from '../../src/api/crd/index.ts';
import {
  API_VERSION,
  GROUP,
  parseAgent,
  parseAgentDefinition,
  parseStation,
  RESOURCE_NAMES,
  VERSION,
} from '../../src/api/index.ts';
import { toYaml } from '../../src/shared/yaml.ts';
import {
  apiPath,
  e2eCluster,
  freshNamespace,
  type KubeClient,
  loadKubeconfig,
  pollUntil,
  type TestNamespace,
} from '../support/index.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

const cluster = e2eCluster();
const skip =
  process.env.AGENT_E2E_RUNTIME === 'deno'
    ? 'runtime-independent: runs on the Node pass only'
    : typeof cluster === 'string'
      ? cluster
      : false;

const CrdSchema = v.looseObject({
  metadata: v.looseObject({ resourceVersion: v.string() }),
  spec: v.looseObject({
    names: v.looseObject({ shortNames: v.optional(v.array(v.string())) }),
    versions: v.array(
      v.looseObject({
        schema: v.unknown(),
        additionalPrinterColumns: v.optional(v.unknown()),
        subresources: v.optional(v.unknown()),
      }),
    ),
  }),
  status: v.optional(
    v.looseObject({
      conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
    }),
    {},
  ),
});

/** POSTs the YAML file, or PUTs it over an existing CRD (resourceVersion spliced into its metadata). */
async function applyYaml(client: KubeClient, name: string, yaml: string): Promise<void> {
  const created = await client.request('POST', CRD_PATH, { body: yaml, contentType: 'application/yaml' });
  if (created.status === 201) return;
  assert.equal(created.status, 409, `POST ${name}: ${created.status} ${created.body.slice(0, 500)}`);
  const current = await client.get(`${CRD_PATH}/${name}`, CrdSchema);
  const withRv = yaml.replace(
    /^metadata:\n/m,
    `metadata:\n  resourceVersion: '${current.metadata.resourceVersion}'\n`,
  );
  assert.notEqual(withRv, yaml, 'metadata line not found');
  const replaced = await client.request('PUT', `${CRD_PATH}/${name}`, {
    body: withRv,
    contentType: 'application/yaml',
  });
  assert.equal(replaced.status, 200, `PUT ${name}: ${replaced.status} ${replaced.body.slice(0, 500)}`);
}

function path(plural: string, namespace: string, name?: string, subresource?: string): string {
  return apiPath(API_VERSION, plural, {
    namespace,
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
  });
}

/** GETs `path` as a server-side Table (the test client always asks for plain JSON). */
function getTable(kubeconfig: string, apiPathname: string): Promise<{ status: number; body: string }> {
  const access = loadKubeconfig(kubeconfig);
  const url = new URL(apiPathname, access.server);
  return new Promise((resolvePromise, reject) => {
    const req = httpsRequest(url, {
      method: 'GET',
      headers: {
        accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
        ...(access.token !== undefined ? { authorization: `Bearer ${access.token}` } : {}),
      },
      ...(access.ca !== undefined ? { ca: access.ca } : {}),
      ...(access.cert !== undefined ? { cert: access.cert } : {}),
      ...(access.key !== undefined ? { key: access.key } : {}),
      rejectUnauthorized: !access.insecure,
      timeout: 30_000,
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${apiPathname}: timed out`)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** POSTs `body` and expects 422 Invalid whose message mentions `field`. */
async function expectInvalid(
  client: KubeClient,
  collection: string,
  body: unknown,
  field: string,
): Promise<void> {
  const res = await client.request('POST', collection, { body });
  assert.equal(
    res.status,
    422,
    `expected 422 for ${JSON.stringify(body)}, got ${res.status} ${res.body.slice(0, 300)}`,
  );
  assert.ok(res.body.includes(field), `422 body should name ${field}: ${res.body.slice(0, 500)}`);
}

describe('CRDs on a real API server', { skip }, () => {
  let client: KubeClient;
  let ns: TestNamespace;

  before(async () => {
    if (typeof cluster === 'string') return;
    client = cluster.client;
    for (const kind of CRD_KINDS) {
      const yaml = readFileSync(join(root, CRD_FILE_PATHS[kind]), 'utf8');
      await applyYaml(client, buildCrd(kind).metadata.name, yaml);
    }
    for (const kind of CRD_KINDS) {
      const name = buildCrd(kind).metadata.name;
      await pollUntil(
        async (observe) => {
          const crd = await client.get(`${CRD_PATH}/${name}`, CrdSchema);
          observe(crd.status.conditions);
          const established = crd.status.conditions?.find((c) => c.type === 'Established');
          return established?.status === 'True' ? true : undefined;
        },
        { timeoutMs: 30_000, description: `${name} Established` },
      );
    }
    // A freshly established resource can take a moment to be served for writes.
    ns = await freshNamespace(client, 'crds');
    await pollUntil(
      async () => {
        const res = await client.request('GET', path('agents', ns.name));
        return res.status === 200 ? true : undefined;
      },
      { timeoutMs: 30_000, description: 'agents served' },
    );
  });

  after(async () => {
    await ns?.cleanup();
    client?.close();
  });

  it('reads back each CRD equal to the generated object (the YAML survived the server YAML reader)', async () => {
    for (const kind of CRD_KINDS) {
      const want = buildCrd(kind);
      const got = await client.get(`${CRD_PATH}/${want.metadata.name}`, CrdSchema);
      const wantVersion = want.spec.versions[0];
      const gotVersion = got.spec.versions[0];
      assert.ok(wantVersion && gotVersion);
      assert.deepEqual(gotVersion.schema, JSON.parse(JSON.stringify(wantVersion.schema)), `${kind} schema`);
      assert.deepEqual(
        gotVersion.additionalPrinterColumns,
        wantVersion.additionalPrinterColumns,
        `${kind} columns`,
      );
      assert.deepEqual(gotVersion.subresources, wantVersion.subresources, `${kind} subresources`);
      assert.deepEqual(got.spec.names.shortNames, want.spec.names.shortNames);
    }
  });

  it('the emitter quotes tricky strings so the server YAML reader keeps them strings', async () => {
    const tricky = [
      'yes',
      'No',
      'on',
      'OFF',
      'y',
      'n',
      'true',
      'null',
      '~',
      '',
      ' lead',
      'trail ',
      '123',
      '0x1F',
      '1e3',
      '.inf',
      '1:20',
      '2001-12-14',
      'a: b',
      'a #b',
      '#c',
      '- d',
      '@e',
      "it's",
      '"q"',
      'multi\nline',
      '<<',
      '{x}',
      '[y]',
      '\u00e9\u2014',
      'tab\there',
    ];
    const data: Record<string, string> = {};
    tricky.forEach((s, i) => {
      data[`k${i}`] = s;
    });
    const yaml = toYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tricky' }, data });
    const res = await client.request('POST', apiPath('v1', 'configmaps', { namespace: ns.name }), {
      body: yaml,
      contentType: 'application/yaml',
    });
    assert.equal(res.status, 201, res.body.slice(0, 500));
    const got = v.parse(v.looseObject({ data: v.record(v.string(), v.string()) }), JSON.parse(res.body));
    assert.deepEqual(got.data, data);
  });

  it('serves the short names and status subresource through discovery', async () => {
    const Discovery = v.looseObject({
      resources: v.array(v.looseObject({ name: v.string(), shortNames: v.optional(v.array(v.string())) })),
    });
    const d = await client.get(`/apis/${GROUP}/${VERSION}`, Discovery);
    const byName = new Map(d.resources.map((r) => [r.name, r]));
    for (const kind of CRD_KINDS) {
      const names = RESOURCE_NAMES[kind];
      assert.deepEqual(byName.get(names.plural)?.shortNames, [...names.shortNames]);
    }
    assert.ok(byName.has('agents/status'));
    assert.equal(byName.has('stations/status'), false);
  });

  it('defaults a minimal Station as the reference CRD does and keeps its pod template', async () => {
    const template = {
      metadata: { labels: { a: 'b' } },
      spec: { containers: [{ name: 'agent', image: 'x', futureField: 1 }] },
    };
    const created = await client.create(path('stations', ns.name), {
      apiVersion: API_VERSION,
      kind: 'Station',
      metadata: { name: 'st1' },
      spec: { agentDefRef: 'def1', template, unknownField: 'pruned' },
    });
    const spec = (created as { spec?: Record<string, unknown> }).spec ?? {};
    assert.equal(spec.deadlineMinutes, 30);
    assert.equal(spec.successfulRunsHistoryLimit, 3);
    assert.equal(spec.failedRunsHistoryLimit, 3);
    assert.equal('maxConcurrentRuns' in spec, false);
    assert.equal('concurrencyPolicy' in spec, false);
    assert.equal('unknownField' in spec, false, 'unknown spec fields are pruned');
    assert.deepEqual(spec.template, template);
    const parsed = parseStation(created);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
    assert.equal(parsed.value.spec.concurrencyPolicy, 'Allow');
    assert.equal(parsed.value.spec.maxConcurrentRuns, 0);
  });

  it('defaults execution and batch settings on an AgentDefinition', async () => {
    const created = await client.create(path('agentdefinitions', ns.name), {
      apiVersion: API_VERSION,
      kind: 'AgentDefinition',
      metadata: { name: 'def1' },
      spec: {
        prompt: 'Write about {topic}',
        batch: {},
        tool_config: { command: ['sh', '-c', 'echo hi'], nested: { any: [1, 'two'] } },
        output: { select: [{ event: 'result' }], sinks: [{ type: 'http', url: 'https://h.example' }] },
        resources: { mcp_servers: [{ name: 'm', transport: 'sse', url: 'https://m.example' }] },
      },
    });
    const spec = (created as { spec?: Record<string, unknown> }).spec ?? {};
    assert.equal(spec.execution, 'job');
    assert.deepEqual(spec.batch, { maxTokens: 16000, timeoutMinutes: 1440, onTimeout: 'fail' });
    assert.equal('permission_mode' in spec, false);
    assert.deepEqual(spec.tool_config, { command: ['sh', '-c', 'echo hi'], nested: { any: [1, 'two'] } });
    const parsed = parseAgentDefinition(created);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
    assert.equal(parsed.value.spec.permission_mode, 'auto');
    assert.equal(parsed.value.spec.execution, 'job');
    assert.equal(parsed.value.spec.resources.mcp_servers[0]?.transport, 'sse');
  });

  it('keeps Agent spec fields, ignores status on create, and accepts every status field through /status', async () => {
    const created = await client.create(path('agents', ns.name), {
      apiVersion: API_VERSION,
      kind: 'Agent',
      metadata: { name: 'a1' },
      spec: { stationRef: 'st1', parameters: { topic: 'otters' }, model: 'gpt-5', resumeSession: 'sess-0' },
      status: { phase: 'Succeeded' },
    });
    const first = parseAgent(created);
    assert.ok(first.ok, first.ok ? '' : first.error);
    assert.equal(first.value.spec.model, 'gpt-5');
    assert.equal(first.value.spec.resumeSession, 'sess-0');
    assert.equal(
      first.value.status.phase,
      'Pending',
      'status on create is dropped by the status subresource',
    );

    const status = {
      phase: 'Failed',
      jobName: 'a1-job',
      startedAt: '2026-01-02T03:04:05Z',
      completedAt: '2026-01-02T03:05:05Z',
      exitCode: 7,
      output: 'line\n',
      failureReason: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
      conditions: [
        {
          type: 'Succeeded',
          status: 'False',
          reason: 'JobFailed',
          message: 'exit 7',
          lastTransitionTime: '2026-01-02T03:05:05Z',
          observedGeneration: 1,
        },
        {
          type: 'Ready',
          status: 'True',
          reason: 'Finished',
          message: '',
          lastTransitionTime: '2026-01-02T03:05:05Z',
        },
      ],
      observedGeneration: 1,
      batchId: 'msgbatch_1',
      batchProvider: 'anthropic',
      batchFallback: true,
      batchCleanupAttempts: 1,
      sessionId: 'sess-1',
    };
    const patched = await client.patch(path('agents', ns.name, 'a1', 'status'), { status }, 'merge');
    const after = parseAgent(patched);
    assert.ok(after.ok, after.ok ? '' : after.error);
    assert.deepEqual(after.value.status, status);
  });

  it('prints the reference columns for Agents (server-side Table)', async () => {
    if (typeof cluster === 'string') return;
    await client.create(path('agents', ns.name), {
      apiVersion: API_VERSION,
      kind: 'Agent',
      metadata: { name: 'cols' },
      spec: { stationRef: 'st-cols' },
    });
    await client.patch(path('agents', ns.name, 'cols', 'status'), {
      status: {
        phase: 'Succeeded',
        jobName: 'cols-job',
        tokenUsage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 },
        costEstimate: { usd: '0.0012', source: 'priceTable', model: 'claude-opus-5-5' },
      },
    });
    const res = await getTable(cluster.kubeconfig, path('agents', ns.name));
    assert.equal(res.status, 200, res.body.slice(0, 300));
    const Table = v.looseObject({
      kind: v.literal('Table'),
      columnDefinitions: v.array(v.looseObject({ name: v.string(), type: v.string() })),
      rows: v.array(v.looseObject({ cells: v.array(v.unknown()) })),
    });
    const table = v.parse(Table, JSON.parse(res.body));
    assert.deepEqual(
      table.columnDefinitions.map((c) => [c.name, c.type]),
      [
        ['Name', 'string'],
        ['Phase', 'string'],
        ['Station', 'string'],
        ['Job', 'string'],
        ['Age', 'date'],
        ['Session', 'string'],
        ['Batch', 'string'],
        ['Tokens', 'integer'],
        ['Cost', 'string'],
        ['URL', 'string'],
      ],
    );
    const row = table.rows.find((r) => r.cells[0] === 'cols');
    assert.ok(row, 'row for cols');
    assert.deepEqual(row.cells.slice(0, 4), ['cols', 'Succeeded', 'st-cols', 'cols-job']);
    assert.deepEqual(row.cells.slice(7, 9), [15, '0.0012'], 'tokens and cost (-o wide)');
  });

  it('rejects invalid objects with 422', async () => {
    const agents = path('agents', ns.name);
    const stations = path('stations', ns.name);
    const defs = path('agentdefinitions', ns.name);
    const obj = (kind: string, name: string, spec: unknown) => ({
      apiVersion: API_VERSION,
      kind,
      metadata: { name },
      spec,
    });
    const template = { spec: { containers: [{ name: 'agent' }] } };
    await expectInvalid(client, agents, obj('Agent', 'bad1', {}), 'spec.stationRef');
    await expectInvalid(client, agents, obj('Agent', 'bad2', { stationRef: 'Not_DNS' }), 'spec.stationRef');
    await expectInvalid(
      client,
      agents,
      { apiVersion: API_VERSION, kind: 'Agent', metadata: { name: 'bad3' } },
      'spec',
    );
    await expectInvalid(
      client,
      agents,
      obj('Agent', 'bad4', { stationRef: 's', parameters: { n: 3 } }),
      'spec.parameters.n',
    );
    await expectInvalid(
      client,
      stations,
      obj('Station', 'bad1', { agentDefRef: 'd', template, deadlineMinutes: 0 }),
      'spec.deadlineMinutes',
    );
    await expectInvalid(
      client,
      stations,
      obj('Station', 'bad2', { agentDefRef: 'd', template, concurrencyPolicy: 'Sometimes' }),
      'spec.concurrencyPolicy',
    );
    await expectInvalid(client, stations, obj('Station', 'bad3', { agentDefRef: 'd' }), 'spec.template');
    await expectInvalid(
      client,
      stations,
      obj('Station', 'bad4', { agentDefRef: 'd', template, failedRunsHistoryLimit: -1 }),
      'spec.failedRunsHistoryLimit',
    );
    await expectInvalid(client, defs, obj('AgentDefinition', 'bad1', {}), 'spec.prompt');
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad2', { prompt: 'p', permission_mode: 'yolo' }),
      'spec.permission_mode',
    );
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad3', { prompt: 'p', execution: 'warp' }),
      'spec.execution',
    );
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad4', { prompt: 'p', max_turns: 0 }),
      'spec.max_turns',
    );
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad5', { prompt: 'p', output: { select: [{ event: 'bogus' }] } }),
      'spec.output.select[0].event',
    );
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad6', { prompt: 'p', batch: { onTimeout: 'retry' } }),
      'spec.batch.onTimeout',
    );
    await expectInvalid(
      client,
      defs,
      obj('AgentDefinition', 'bad7', { prompt: 'p', resources: { env: [{ name: 'A' }] } }),
      'spec.resources.env[0].value',
    );
  });

  it('rejects an invalid status write with 422', async () => {
    await client.create(path('agents', ns.name), {
      apiVersion: API_VERSION,
      kind: 'Agent',
      metadata: { name: 'a2' },
      spec: { stationRef: 'st1' },
    });
    const statusPath = path('agents', ns.name, 'a2', 'status');
    const bad = async (status: unknown, field: string) => {
      const res = await client.request('PATCH', statusPath, {
        body: { status },
        contentType: 'application/merge-patch+json',
      });
      assert.equal(
        res.status,
        422,
        `status ${JSON.stringify(status)}: ${res.status} ${res.body.slice(0, 300)}`,
      );
      assert.ok(res.body.includes(field), res.body.slice(0, 500));
    };
    await bad({ phase: 'Exploded' }, 'status.phase');
    await bad({ exitCode: 'boom' }, 'status.exitCode');
    await bad(
      {
        conditions: [
          {
            type: 'Ready',
            status: 'Maybe',
            reason: 'R',
            message: '',
            lastTransitionTime: '2026-01-02T03:04:05Z',
          },
        ],
      },
      'status.conditions[0].status',
    );
    await bad({ conditions: [{ type: 'Ready', status: 'True' }] }, 'status.conditions[0].reason');
  });
});
