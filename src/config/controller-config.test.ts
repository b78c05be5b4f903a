import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALL_NAMESPACES, DEFAULT_AGENT_IMAGE, parseControllerConfig } from './controller-config.ts';

const parse = (
  flags: Parameters<typeof parseControllerConfig>[0],
  env: Record<string, string>,
  inCluster?: string,
) => parseControllerConfig(flags, env, inCluster);

describe('controller configuration', () => {
  it('uses the reference defaults when nothing is set', () => {
    const r = parse({}, {});
    assert.ok(r.ok);
    assert.equal(r.value.namespace, 'ai-agents');
    assert.equal(r.value.leaseNamespace, 'ai-agents');
    assert.equal(r.value.port, 8081);
    assert.equal(r.value.maxOutputBytes, 262144);
    assert.equal(r.value.identity, 'agent-controller');
    assert.equal(r.value.agentImage, DEFAULT_AGENT_IMAGE);
    assert.equal(r.value.pollIntervalMs, 15000);
    assert.equal(r.value.leaderElection, true);
    assert.ok(Object.isFrozen(r.value));
  });

  it('prefers the flag, then WATCH_NAMESPACE, then the in-cluster namespace', () => {
    assert.equal(
      parse({ namespace: 'a' }, { WATCH_NAMESPACE: 'b' }, 'c').ok && parse({ namespace: 'a' }, {}).ok,
      true,
    );
    const flag = parse({ namespace: 'a' }, { WATCH_NAMESPACE: 'b' }, 'c');
    const env = parse({}, { WATCH_NAMESPACE: 'b' }, 'c');
    const pod = parse({}, { NAMESPACE: 'x' }, 'c\n');
    assert.ok(flag.ok && env.ok && pod.ok);
    assert.equal(flag.value.namespace, 'a');
    assert.equal(env.value.namespace, 'b');
    assert.equal(pod.value.namespace, 'c');
    assert.equal(flag.value.leaseNamespace, 'c', 'the Lease stays in the controller namespace');
  });

  it('keeps the Lease in the watched namespace out of cluster, and in default when watching all', () => {
    const one = parse({ namespace: 'team' }, {});
    const all = parse({ allNamespaces: true }, {});
    const pod = parse({ allNamespaces: true }, { POD_NAMESPACE: 'ops' });
    assert.ok(one.ok && all.ok && pod.ok);
    assert.equal(one.value.leaseNamespace, 'team');
    assert.equal(all.value.leaseNamespace, 'default');
    assert.equal(pod.value.leaseNamespace, 'ops');
  });

  it('gives a replica without POD_NAME or HOSTNAME a unique identity', () => {
    const r = parseControllerConfig({}, {}, undefined, 'x7k2');
    assert.ok(r.ok);
    assert.equal(r.value.identity, 'agent-controller-x7k2');
  });

  it('watches all namespaces on --all-namespaces or WATCH_NAMESPACE=*', () => {
    const a = parse({ allNamespaces: true }, {});
    const b = parse({}, { WATCH_NAMESPACE: '*' });
    assert.ok(a.ok && b.ok);
    assert.equal(a.value.namespace, ALL_NAMESPACES);
    assert.equal(b.value.namespace, ALL_NAMESPACES);
  });

  it('takes the identity from POD_NAME, then HOSTNAME', () => {
    const a = parse({}, { POD_NAME: 'p', HOSTNAME: 'h' });
    const b = parse({}, { HOSTNAME: 'h' });
    assert.ok(a.ok && b.ok);
    assert.equal(a.value.identity, 'p');
    assert.equal(b.value.identity, 'h');
  });

  for (const [name, flags, env, message] of [
    [
      'a non-numeric MAX_OUTPUT_BYTES',
      {},
      { MAX_OUTPUT_BYTES: '12k' },
      'MAX_OUTPUT_BYTES must be a non-negative integer, got: "12k"',
    ],
    [
      'a negative MAX_OUTPUT_BYTES',
      {},
      { MAX_OUTPUT_BYTES: '-1' },
      'MAX_OUTPUT_BYTES must be a non-negative integer, got: "-1"',
    ],
    ['a port out of range', { port: '70000' }, {}, '--port must be a port number (0-65535)'],
    [
      'a bad HEALTH_PORT',
      {},
      { HEALTH_PORT: 'http' },
      'HEALTH_PORT must be a non-negative integer, got: "http"',
    ],
    [
      'a bad namespace flag',
      { namespace: 'Bad_NS' },
      {},
      '--namespace is not a valid namespace name: "Bad_NS"',
    ],
    [
      'an unknown log level',
      { logLevel: 'loud' },
      {},
      'log level must be debug, info, warn or error, got: "loud"',
    ],
    ['an empty AGENT_IMAGE', {}, { AGENT_IMAGE: '' }, 'AGENT_IMAGE must not be empty'],
  ] as const) {
    it(`rejects ${name} with one clear line`, () => {
      const r = parse(flags, env);
      assert.equal(r.ok, false);
      assert.equal(!r.ok && r.error, message);
    });
  }

  it('accepts overrides for image, output cap, port, poll interval and leader election', () => {
    const r = parse(
      { port: '9090', logLevel: 'debug' },
      {
        AGENT_IMAGE: 'img:1',
        MAX_OUTPUT_BYTES: '0',
        AGENT_POLL_INTERVAL_MS: '500',
        AGENT_LEADER_ELECTION: 'false',
      },
    );
    assert.ok(r.ok);
    assert.deepEqual(
      [
        r.value.agentImage,
        r.value.maxOutputBytes,
        r.value.port,
        r.value.pollIntervalMs,
        r.value.leaderElection,
        r.value.logLevel,
      ],
      ['img:1', 0, 9090, 500, false, 'debug'],
    );
  });
});

describe('controller configuration: workers', () => {
  it('batch runs: off by default, poll every 60 s with list sweeps; BATCH_* and vendor URLs override', () => {
    const d = parse({}, {});
    assert.ok(d.ok);
    assert.deepEqual(
      [d.value.batchEnabled, d.value.batchPollMs, d.value.batchPollList],
      [false, 60_000, true],
    );
    assert.equal(d.value.vendorBaseUrls.anthropic, 'https://api.anthropic.com');
    const r = parse(
      {},
      {
        BATCH_ENABLED: 'true',
        BATCH_POLL_SECONDS: '5',
        BATCH_POLL_LIST: 'false',
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      },
    );
    assert.ok(r.ok);
    assert.deepEqual([r.value.batchEnabled, r.value.batchPollMs, r.value.batchPollList], [true, 5000, false]);
    assert.equal(r.value.vendorBaseUrls.openai, 'http://127.0.0.1:9/v1');
    for (const [env, message] of [
      [{ BATCH_POLL_SECONDS: '0' }, /BATCH_POLL_SECONDS/],
      [{ BATCH_POLL_LIST: 'yes' }, /^BATCH_POLL_LIST must be true or false$/],
      [{ BATCH_ENABLED: '1' }, /^BATCH_ENABLED must be true or false$/],
    ] as const) {
      const bad = parse({}, env);
      assert.equal(bad.ok, false);
      assert.match(bad.ok ? '' : bad.error, message);
    }
  });

  it('the model gateway: off unless AGENT_GATEWAY_URL names an http(s) URL', () => {
    const off = parse({}, {});
    assert.ok(off.ok);
    assert.equal(off.value.gatewayUrl, undefined);
    const on = parse({}, { AGENT_GATEWAY_URL: 'http://agent-gateway.agents.svc:8080' });
    assert.ok(on.ok);
    assert.equal(on.value.gatewayUrl, 'http://agent-gateway.agents.svc:8080');
    const bad = parse({}, { AGENT_GATEWAY_URL: 'agent-gateway:8080' });
    assert.ok(!bad.ok);
    assert.match(bad.error, /AGENT_GATEWAY_URL/);
  });

  it('defaults to 48 reconcile workers and accepts AGENT_WORKERS in 1..256', () => {
    const d = parseControllerConfig({}, {}, undefined);
    const w = parseControllerConfig({}, { AGENT_WORKERS: '64' }, undefined);
    assert.ok(d.ok && w.ok);
    assert.equal(d.value.workers, 48);
    assert.equal(w.value.workers, 64);
    const bad = parseControllerConfig({}, { AGENT_WORKERS: '0' }, undefined);
    assert.equal(!bad.ok && bad.error, 'AGENT_WORKERS must be between 1 and 256');
  });
});

describe('controller configuration: bind address', () => {
  it('binds every interface by default (probes) and takes --bind-address or HEALTH_HOST', () => {
    const d = parseControllerConfig({}, {}, undefined);
    const f = parseControllerConfig({ bindAddress: '127.0.0.1' }, { HEALTH_HOST: '::' }, undefined);
    const e = parseControllerConfig({}, { HEALTH_HOST: '::1' }, undefined);
    assert.ok(d.ok && f.ok && e.ok);
    assert.deepEqual(
      [d.value.bindAddress, f.value.bindAddress, e.value.bindAddress],
      ['0.0.0.0', '127.0.0.1', '::1'],
    );
    const bad = parseControllerConfig({ bindAddress: 'example.com' }, {}, undefined);
    assert.equal(!bad.ok && bad.error, 'bind address must be an IP address or localhost, got: "example.com"');
  });

  it('the console is off by default; on, it listens on 127.0.0.1:8082 unless told otherwise', () => {
    const off = parse({}, {});
    assert.ok(off.ok);
    assert.equal(off.value.console, undefined);
    const on = parse({ console: true }, {});
    assert.ok(on.ok);
    assert.deepEqual(on.value.console, { port: 8082, bindAddress: '127.0.0.1', traceUrl: undefined });
    const env = parse(
      {},
      {
        CONSOLE_ENABLED: 'true',
        CONSOLE_PORT: '9000',
        CONSOLE_TRACE_URL: 'https://jaeger.example/trace/{traceID}',
      },
    );
    assert.ok(env.ok);
    assert.deepEqual(env.value.console, {
      port: 9000,
      bindAddress: '127.0.0.1',
      traceUrl: 'https://jaeger.example/trace/{traceID}',
    });
    const flag = parse({ console: true, consolePort: '0' }, { CONSOLE_PORT: '9000' });
    assert.ok(flag.ok);
    assert.equal(flag.value.console?.port, 0);
  });

  it('the console serves plain HTTP only on a loopback address; its flags need --console', () => {
    const open = parse({ console: true, consoleBindAddress: '0.0.0.0' }, {});
    assert.equal(open.ok, false);
    assert.match(open.ok ? '' : open.error, /plain HTTP only on a loopback address, not 0\.0\.0\.0/);
    const tls = parse(
      { console: true, consoleBindAddress: '0.0.0.0', tlsCertFile: '/c', tlsPrivateKeyFile: '/k' },
      {},
    );
    assert.ok(tls.ok);
    assert.equal(tls.value.console?.bindAddress, '0.0.0.0');
    const noFlag = parse({ consolePort: '9000' }, {});
    assert.equal(noFlag.ok, false);
    assert.match(noFlag.ok ? '' : noFlag.error, /need --console/);
    const badEnv = parse({}, { CONSOLE_ENABLED: 'yes' });
    assert.equal(badEnv.ok, false);
    const badUrl = parse({}, { CONSOLE_ENABLED: 'true', CONSOLE_TRACE_URL: 'javascript:alert(1)' });
    assert.equal(badUrl.ok, false);
    const badAddress = parse({ console: true, consoleBindAddress: 'example.com' }, {});
    assert.equal(badAddress.ok, false);
  });

  it('the session store: off unless AGENT_SESSION_STORE_URL is set; then bucket and credentials are required', () => {
    const off = parse({}, {});
    assert.ok(off.ok);
    assert.equal(off.value.sessionStore, undefined);
    const full = {
      AGENT_SESSION_STORE_URL: 'http://store.storage.svc:7070',
      AGENT_SESSION_STORE_BUCKET: 'agent-sessions',
      AGENT_SESSION_STORE_ACCESS_KEY_ID: 'AKID',
      AGENT_SESSION_STORE_SECRET_ACCESS_KEY: 'secret',
    };
    const on = parse({}, full);
    assert.ok(on.ok);
    assert.deepEqual(on.value.sessionStore, {
      endpoint: 'http://store.storage.svc:7070',
      bucket: 'agent-sessions',
      region: 'us-east-1',
      prefix: '',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    });
    const regional = parse(
      {},
      { ...full, AGENT_SESSION_STORE_REGION: 'eu-west-1', AGENT_SESSION_STORE_PREFIX: 'prod/' },
    );
    assert.ok(regional.ok);
    assert.equal(regional.value.sessionStore?.region, 'eu-west-1');
    assert.equal(regional.value.sessionStore?.prefix, 'prod/');
    const cases: [Record<string, string>, RegExp][] = [
      [
        { AGENT_SESSION_STORE_BUCKET: 'agent-sessions' },
        /AGENT_SESSION_STORE_BUCKET is set but AGENT_SESSION_STORE_URL is not/,
      ],
      [{ ...full, AGENT_SESSION_STORE_BUCKET: '' }, /needs AGENT_SESSION_STORE_BUCKET/],
      [{ ...full, AGENT_SESSION_STORE_SECRET_ACCESS_KEY: '' }, /needs AGENT_SESSION_STORE_ACCESS_KEY_ID and/],
      [{ ...full, AGENT_SESSION_STORE_URL: 'ftp://x' }, /AGENT_SESSION_STORE_URL must be an http\(s\) URL/],
      [{ ...full, AGENT_SESSION_STORE_URL: 'http://u:p@x' }, /no query, fragment or user info/],
      [{ ...full, AGENT_SESSION_STORE_BUCKET: 'Bad_Bucket' }, /must be an S3 bucket name/],
      [{ ...full, AGENT_SESSION_STORE_PREFIX: 'prod' }, /AGENT_SESSION_STORE_PREFIX: .*end with \//],
      [{ ...full, AGENT_SESSION_STORE_PREFIX: '/prod/' }, /must not start with \//],
      [
        { ...full, AGENT_SESSION_STORE_REGION: 'EU WEST' },
        /AGENT_SESSION_STORE_REGION must be a region name/,
      ],
    ];
    for (const [env, message] of cases) {
      const r = parse({}, env);
      assert.equal(r.ok, false, JSON.stringify(env));
      assert.match(r.ok ? '' : r.error, message);
    }
  });
});
