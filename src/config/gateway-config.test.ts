import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGatewayConfig } from './gateway-config.ts';

describe('gateway configuration', () => {
  it('defaults: ports 8080 and 9090, the vendors’ APIs, namespace ai-agents', () => {
    const r = parseGatewayConfig({}, {}, undefined);
    assert.ok(r.ok);
    assert.deepEqual(r.value, {
      kubeconfig: undefined,
      namespace: 'ai-agents',
      port: 8080,
      metricsPort: 9090,
      bindAddress: '0.0.0.0',
      logLevel: 'info',
      rateLimits: { replicas: 1, maxWaitMs: 30_000 },
      upstreams: {
        anthropic: 'https://api.anthropic.com',
        openai: 'https://api.openai.com',
        gemini: 'https://generativelanguage.googleapis.com',
      },
    });
    assert.ok(Object.isFrozen(r.value));
  });

  it('reads the environment, flags first; the namespace from the flag, the pod, then POD_NAMESPACE', () => {
    const env = {
      AGENT_GATEWAY_PORT: '18080',
      AGENT_GATEWAY_METRICS_PORT: '19090',
      AGENT_GATEWAY_ANTHROPIC_URL: 'http://127.0.0.1:7001/',
      AGENT_GATEWAY_OPENAI_URL: 'http://127.0.0.1:7002',
      AGENT_GATEWAY_GEMINI_URL: 'https://proxy.example/gemini//',
      POD_NAMESPACE: 'from-env',
      LOG_LEVEL: 'debug',
    };
    const r = parseGatewayConfig({}, env, 'from-pod\n');
    assert.ok(r.ok);
    assert.equal(r.value.port, 18080);
    assert.equal(r.value.metricsPort, 19090);
    assert.equal(r.value.namespace, 'from-pod');
    assert.equal(r.value.logLevel, 'debug');
    assert.deepEqual(r.value.upstreams, {
      anthropic: 'http://127.0.0.1:7001',
      openai: 'http://127.0.0.1:7002',
      gemini: 'https://proxy.example/gemini',
    });
    const flags = parseGatewayConfig(
      { port: '0', metricsPort: '0', namespace: 'flag-ns', bindAddress: '127.0.0.1' },
      env,
      'pod',
    );
    assert.ok(flags.ok);
    assert.deepEqual(
      [flags.value.port, flags.value.metricsPort, flags.value.namespace, flags.value.bindAddress],
      [0, 0, 'flag-ns', '127.0.0.1'],
    );
    const envOnly = parseGatewayConfig({}, env, undefined);
    assert.equal(envOnly.ok && envOnly.value.namespace, 'from-env');
  });

  it('refuses bad input with one line naming it', () => {
    const cases: [Parameters<typeof parseGatewayConfig>[0], Record<string, string>, RegExp][] = [
      [{}, { AGENT_GATEWAY_PORT: 'eighty' }, /AGENT_GATEWAY_PORT must be a non-negative integer/],
      [{}, { AGENT_GATEWAY_OPENAI_URL: 'ftp://x' }, /AGENT_GATEWAY_OPENAI_URL must be an http\(s\) URL/],
      [{ port: '70000' }, {}, /--port must be a port number/],
      [{ metricsPort: 'x' }, {}, /--metrics-port must be a non-negative integer/],
      [{ namespace: 'Bad_NS' }, {}, /--namespace is not a valid namespace name/],
      [{ bindAddress: 'example.com' }, {}, /bind address must be an IP address/],
      [{ logLevel: 'loud' }, {}, /log level must be debug, info, warn or error/],
    ];
    for (const [flags, env, message] of cases) {
      const r = parseGatewayConfig(flags, env, undefined);
      assert.equal(r.ok, false);
      assert.match(!r.ok ? r.error : '', message);
    }
  });
});
