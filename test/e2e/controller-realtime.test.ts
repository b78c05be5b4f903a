// Realtime runs end to end on the control plane, on the runtime named by AGENT_E2E_RUNTIME: a realtime Agent gets a
// Job whose pod's supervisor serves prompts (a fake `claude` from a test image: the mock agent CLI echoing each
// prompt); people and programs prompt it through the controller's prompt API, authenticated by a TokenReview and
// authorised by a SubjectAccessReview on agents/prompt and agents/close. Three prompts by a ServiceAccount with the
// grant (refused for one without, and without a token), `status.sessionId` and its Event, the prompt API answering
// on a standby replica, a leader SIGKILLed mid-session (the session goes on), close → Succeeded; a second Agent with
// `resumeSession` restoring the first one's conversation from a loopback conversation store and sending no initial
// prompt; the admission reasons. The controller runs as the deploy/ ServiceAccount plus deploy/components/realtime.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  addTestImages,
  agentCondition,
  agentManifest,
  applyCrds,
  applyRbacManifests,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import {
  agentPath,
  apiUrl,
  applyRealtimeRbac,
  bindPromptForwarder,
  call,
  promptWhenReady,
  realtimeDefinition,
  runCli,
  startConversationStore,
  startRealtimeReplica,
} from '../support/realtime.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const SESSION = 'e2e-session-0001';

/**
 * A pod labelled like the controller's, with a container port named `api`, that relays TCP to `targetPort` on the
 * host (where the test's controller replica serves the prompt API), and the Service `agent-controller-api` in front
 * of it, as the realtime component installs it. Resolves once the relay accepts connections.
 */
async function startApiRelayPod(s: Scenario, targetPort: number): Promise<void> {
  const script = join(s.tempDir(), 'relay.mjs');
  writeFileSync(
    script,
    [
      "import { connect, createServer } from 'node:net';",
      'createServer((c) => {',
      `  const u = connect(${targetPort}, '127.0.0.1');`,
      "  c.pipe(u); u.pipe(c); c.on('error', () => u.destroy()); u.on('error', () => c.destroy());",
      "}).listen(8443, process.env.POD_IP, () => console.log('relay listening'));",
    ].join('\n'),
  );
  const image = `prompt-relay:${s.ns}`;
  s.defer(
    addTestImages(s.cluster, `relay-${s.ns}`, {
      [image]: { entrypoint: ['node', '/opt/relay.mjs'], files: { '/opt/relay.mjs': script } },
    }),
  );
  const labels = { 'agents.re-cinq.com/component': 'controller' };
  await s.create(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'agent-controller-relay', labels },
      spec: {
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'relay',
            image,
            ports: [{ name: 'api', containerPort: 8443 }],
            env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'agent-controller-api', labels },
      spec: { selector: labels, ports: [{ name: 'api', port: 443, targetPort: 'api' }] },
    },
  );
  // The test node has no readiness probes: wait until the relay accepts connections at the pod's IP.
  await pollUntil(
    async (observe) => {
      const pod = await s.client.get(`${collectionPath('Pod', s.ns)}/agent-controller-relay`);
      const ip = (pod as { status?: { podIP?: string } }).status?.podIP;
      observe(ip);
      if (ip === undefined) return undefined;
      return new Promise<true | undefined>((resolve) => {
        const socket = netConnect(8443, ip);
        socket.on('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.on('error', () => resolve(undefined));
      });
    },
    { timeoutMs: 30_000, description: 'the relay pod listening' },
  );
}

describe(`controller: realtime runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'three prompts through the prompt API, the session id recorded, refused without the grant, close → Succeeded; a standby answers too',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rt-session', async (s) => {
        await applyRealtimeRbac(s);
        const images = fakeClaudeImages(s, runtime, { MOCK_ECHO_PROMPT: '1', MOCK_SESSION: SESSION });
        const leader = await startRealtimeReplica(s, { identity: 'rt-leader', agentImage: images.init });
        await leader.waitForMetric('controller_is_leader', {}, 1, 30_000);
        const standby = await startRealtimeReplica(s, { identity: 'rt-standby', agentImage: images.init });
        await s.create(
          realtimeDefinition('def'),
          stationManifest('st', 'def', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('live', 'st', { parameters: { topic: 'world' } }),
        );
        const launcher = await s.serviceAccountToken('agent-launcher');
        const base = await apiUrl(leader);
        const promptPath = agentPath(s, 'live', 'prompt');

        const first = await promptWhenReady(base, promptPath, launcher, 'what is one plus one');
        assert.equal(first.status, 200, first.text);
        assert.match(JSON.stringify(first.lines), /echo: what is one plus one/);
        assert.equal(first.lines.at(-1)?.type, 'result', 'a turn ends with its result line');

        const second = await call(base, promptPath, launcher, { prompt: 'and two plus two' });
        assert.equal(second.status, 200, second.text);
        assert.match(JSON.stringify(second.lines), /echo: and two plus two/);
        // The standby replica serves the API as well (stateless forwarding).
        const third = await call(await apiUrl(standby), promptPath, launcher, {
          prompt: 'third, via the standby',
        });
        assert.equal(third.status, 200, third.text);
        assert.match(JSON.stringify(third.lines), /echo: third, via the standby/);

        await leader.waitForMetric('controller_realtime_sessions', {}, 1, 20_000);
        // The leader dies mid-session: the session lives in the pod, the standby takes over and still answers.
        await leader.kill();
        await standby.waitForMetric('controller_is_leader', {}, 1, 60_000);
        const live = await apiUrl(standby);
        const afterKill = await call(live, promptPath, launcher, { prompt: 'still there?' });
        assert.equal(afterKill.status, 200, afterKill.text);
        assert.match(JSON.stringify(afterKill.lines), /echo: still there\?/);

        const recorded = await s.waitForAgent(
          'live',
          (a) => a.status.sessionId === SESSION,
          'status.sessionId',
          30_000,
        );
        assert.equal(recorded.status.phase, 'Running');
        await s.waitForEvents('live', recorded.metadata.uid, ['Normal/SessionStarted']);

        // No token, a token without the grant, an unknown Agent.
        assert.equal((await call(live, promptPath, undefined, { prompt: 'x' })).status, 401);
        await s.client.create(`/api/v1/namespaces/${s.ns}/serviceaccounts`, {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'no-prompt' },
        });
        const stranger = await s.serviceAccountToken('no-prompt');
        const refused = await call(live, promptPath, stranger, { prompt: 'x' });
        assert.equal(refused.status, 403, refused.text);
        const status = JSON.parse(refused.text) as Record<string, unknown>;
        assert.equal(status.kind, 'Status');
        assert.equal(status.reason, 'Forbidden');
        assert.match(String(status.message), /cannot create resource "agents\/prompt"/);
        assert.equal(
          (await call(live, agentPath(s, 'nobody', 'prompt'), launcher, { prompt: 'x' })).status,
          404,
        );

        const closed = await call(live, agentPath(s, 'live', 'close'), launcher, {});
        assert.equal(closed.status, 200, closed.text);
        const done = await s.waitTerminal('live', 60_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assert.equal(done.status.sessionId, SESSION);
        assert.equal(agentCondition(done, 'Complete')?.status, 'True');
        assert.match(done.status.output ?? '', /echo: hello world/, 'the first turn ran the rendered prompt');
        assert.match(done.status.output ?? '', /echo: third, via the standby/);
        const again = await call(live, agentPath(s, 'live', 'close'), launcher, {});
        assert.equal(again.status, 409, 'closing an ended session answers 409, harmlessly');
        const late = await call(live, promptPath, launcher, { prompt: 'too late' });
        assert.equal(late.status, 409);
        const job = await s.job(done.status.jobName ?? '');
        assert.equal(job?.metadata.labels?.['agents.re-cinq.com/execution'], 'realtime');
        await standby.waitForMetric(
          'controller_prompts_total',
          { action: 'prompt', result: 'ok' },
          2,
          10_000,
        );
        await standby.waitForMetric('controller_realtime_sessions', {}, 0, 20_000);
      }),
  );

  it(
    "resumeSession: the second run restores the first one's conversation from the store and sends no initial prompt",
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rt-resume', async (s) => {
        const store = await startConversationStore();
        s.defer(() => store.close());
        await applyRealtimeRbac(s);
        const images = fakeClaudeImages(s, runtime, { MOCK_ECHO_PROMPT: '1', MOCK_SESSION: SESSION });
        const ctl = await startRealtimeReplica(s, { agentImage: images.init });
        const projects = '/agent/.claude/projects/-workspace';
        const template = {
          template: {
            spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
          },
        };
        const conversation = { source: store.url };
        await s.create(
          realtimeDefinition('def-first', {
            resources: {
              conversation,
              env: [
                { name: 'MOCK_WRITE_FILE', value: `${projects}/${SESSION}.jsonl` },
                { name: 'MOCK_WRITE_BODY', value: 'the first conversation' },
              ],
            },
          }),
          stationManifest('st-first', 'def-first', template),
          realtimeDefinition('def-second', {
            resources: { conversation, env: [{ name: 'MOCK_LIST_DIR', value: projects }] },
          }),
          stationManifest('st-second', 'def-second', template),
          agentManifest('first', 'st-first', { parameters: { topic: 'one' } }),
        );
        const launcher = await s.serviceAccountToken('agent-launcher');
        const base = await apiUrl(ctl);
        const one = await promptWhenReady(base, agentPath(s, 'first', 'prompt'), launcher, 'remember this');
        assert.equal(one.status, 200, one.text);
        // The CLI, with a kubeconfig holding the launcher's token: a readable turn, then close (twice).
        const kubeconfig = await s.kubeconfigAs('agent-launcher');
        const cli = (...args: string[]) =>
          runCli(runtime, [...args, '--kubeconfig', kubeconfig, '-n', s.ns, '--endpoint', base]);
        const said = await cli('prompt', 'first', 'say', 'something');
        assert.equal(said.code, 0, said.stderr);
        assert.equal(said.stdout.trim(), 'echo: say something', 'the assistant text, readable');
        const closed = await cli('close', 'first');
        assert.equal(closed.code, 0, closed.stderr);
        assert.equal(closed.stdout.trim(), 'closed first');
        const first = await s.waitTerminal('first', 60_000);
        assert.equal(first.status.phase, 'Succeeded', JSON.stringify(first.status));
        assert.equal(first.status.sessionId, SESSION);
        const twice = await cli('close', 'first');
        assert.equal(twice.code, 5, 'a second close: 409, exit 5');
        assert.match(twice.stderr, /not a Running realtime run/);
        const saved = await pollUntil(async () => store.saved.get(`/${SESSION}`), {
          timeoutMs: 30_000,
          description: 'the session to be saved to the store',
        });
        assert.ok(saved.length > 0, 'a non-empty archive');

        await s.create({
          ...agentManifest('second', 'st-second'),
          spec: { stationRef: 'st-second', resumeSession: SESSION },
        });
        const two = await promptWhenReady(
          base,
          agentPath(s, 'second', 'prompt'),
          launcher,
          'what did I say?',
        );
        assert.equal(two.status, 200, two.text);
        const listing = two.lines.find((l) => l.dir === projects);
        assert.deepEqual(
          listing?.entries,
          [`${SESSION}.jsonl`],
          'the conversation was restored before the turn',
        );
        assert.ok(
          store.fetched.includes(`/${SESSION}`),
          'the init container fetched the session from the store',
        );
        assert.equal((await call(base, agentPath(s, 'second', 'close'), launcher, {})).status, 200);
        const second = await s.waitTerminal('second', 60_000);
        assert.equal(second.status.phase, 'Succeeded', JSON.stringify(second.status));
        assert.equal(second.status.sessionId, SESSION);
        assert.doesNotMatch(
          second.status.output ?? '',
          /echo: hello/,
          'no initial prompt on a resumed session',
        );
        assert.match(second.status.output ?? '', /echo: what did I say\?/);
      }),
  );

  it(
    'over TLS: bearer tokens, and client certificates the cluster client CA signed (user = CN, groups = O)',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'rt-tls', async (s) => {
        await applyRealtimeRbac(s);
        const dir = s.tempDir();
        const certs = join(dirname(s.cluster.kubeconfig), 'certs');
        const ossl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
        /** A P-256 key `<name>.key` with a request (`-x509`: a self-signed certificate) `<name>.<csr|crt>`. */
        const newKey = (name: string, subject: string, selfSigned: boolean, ...extra: string[]) =>
          ossl(
            'req',
            ...(selfSigned ? ['-x509', '-days', '1'] : []),
            '-newkey',
            'ec',
            '-pkeyopt',
            'ec_paramgen_curve:P-256',
            '-nodes',
            '-subj',
            subject,
            ...extra,
            '-keyout',
            `${name}.key`,
            '-out',
            `${name}.${selfSigned ? 'crt' : 'csr'}`,
          );
        // The prompt API's own certificate (self-signed, for 127.0.0.1).
        newKey(
          'api',
          '/CN=prompt-api',
          true,
          '-addext',
          `subjectAltName=IP:127.0.0.1,DNS:agent-controller-api.${s.ns}.svc`,
        );
        // alice: signed by the cluster's client CA, no grants; mallory: signed by nobody the cluster trusts.
        newKey('alice', '/O=devs/CN=alice', false);
        ossl(
          'x509',
          '-req',
          '-in',
          'alice.csr',
          '-CA',
          join(certs, 'ca.crt'),
          '-CAkey',
          join(certs, 'ca.key'),
          '-CAcreateserial',
          '-days',
          '1',
          '-out',
          'alice.crt',
        );
        newKey('mallory', '/O=system:masters/CN=mallory', true);
        const ctl = await s.startReplica({
          kubeconfig: await s.kubeconfigAs('agent-controller'),
          env: {
            REALTIME_ENABLED: 'true',
            API_PORT: '0',
            TLS_CERT_FILE: join(dir, 'api.crt'),
            TLS_PRIVATE_KEY_FILE: join(dir, 'api.key'),
          },
        });
        const line = await ctl.waitForLog('Serving the realtime prompt API');
        assert.equal(line.tls, true);
        const url = `https://127.0.0.1:${String(line.port)}${agentPath(s, 'nobody', 'prompt')}`;
        const ca = readFileSync(join(dir, 'api.crt'));
        /** POSTs a prompt with a client certificate (`<path>.crt` and `.key`) or a bearer token; the status. */
        const post = (opts: { cert?: string; token?: string }) =>
          new Promise<number>((resolve, reject) => {
            const req = httpsRequest(
              url,
              {
                method: 'POST',
                ca,
                ...(opts.cert !== undefined
                  ? { cert: readFileSync(`${opts.cert}.crt`), key: readFileSync(`${opts.cert}.key`) }
                  : {}),
                headers: {
                  'content-type': 'application/json',
                  ...(opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {}),
                },
              },
              (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode ?? 0));
              },
            );
            req.on('error', reject);
            req.end(JSON.stringify({ prompt: 'x' }));
          });
        // A bearer token over TLS: authenticated and allowed, so the unknown Agent answers 404.
        assert.equal(await post({ token: await s.serviceAccountToken('agent-launcher') }), 404);
        assert.equal(await post({}), 401, 'no credentials');
        // The CLI over TLS: a bearer token from AGENT_API_TOKEN, the API's CA from --certificate-authority.
        const base = `https://127.0.0.1:${String(line.port)}`;
        const tlsFlags = ['-n', s.ns, '--endpoint', base, '--certificate-authority', join(dir, 'api.crt')];
        const byToken = await runCli(
          runtime,
          ['prompt', 'nobody', 'hi', '--kubeconfig', s.cluster.kubeconfig, ...tlsFlags],
          {
            AGENT_API_TOKEN: await s.serviceAccountToken('agent-launcher'),
          },
        );
        assert.equal(byToken.code, 4, `authenticated and allowed, no such Agent: ${byToken.stderr}`);

        // No --endpoint: the CLI finds the Service agent-controller-api in the controller namespace and port-forwards
        // (through the API server and the node) to a ready pod behind it. Here that pod relays to the replica above.
        await startApiRelayPod(s, Number(line.port));
        const viaService = ['-n', s.ns, '--controller-namespace', s.ns];
        // As the launcher ServiceAccount (its own kubeconfig, a bearer token for both the port-forward and the
        // prompt API): refused until it is bound to the component's agent-prompt-forwarder Role, then through.
        const launcher = await s.kubeconfigAs('agent-launcher');
        const asLauncher = () =>
          runCli(runtime, [
            'prompt',
            'nobody',
            'hi',
            '--kubeconfig',
            launcher,
            ...viaService,
            '--certificate-authority',
            join(dir, 'api.crt'),
          ]);
        const unbound = await asLauncher();
        assert.equal(unbound.code, 6, unbound.stderr);
        assert.match(
          unbound.stderr,
          /^error: cannot find the prompt API: cannot look up service .*agent-controller-api: api 403 Forbidden/,
        );
        await applyRbacManifests(s, 'deploy/components/realtime/realtime-cli-rbac.yaml');
        await bindPromptForwarder(s, 'agent-launcher');
        const forwarded = await pollUntil(
          async (observe) => {
            const r = await asLauncher();
            observe(r);
            return r.code === 4 ? r : undefined; // RBAC caches converge within a moment
          },
          { timeoutMs: 20_000, intervalMs: 500, description: 'the prompt API through the port-forward' },
        );
        assert.match(forwarded.stderr, /nobody/);
        // The certificate is checked against the Service's name: a CA that did not issue it is refused.
        const wrongCa = await runCli(
          runtime,
          ['close', 'nobody', '--kubeconfig', s.cluster.kubeconfig, ...viaService],
          { AGENT_API_TOKEN: await s.serviceAccountToken('agent-launcher') },
        );
        assert.equal(wrongCa.code, 6, wrongCa.stderr);
        assert.match(wrongCa.stderr, /cannot reach the prompt API: .*(certificate|self.signed)/i);
        // Without the Service (a controller run locally), the local default endpoint.
        const local = await runCli(
          runtime,
          ['close', 'nobody', '--kubeconfig', s.cluster.kubeconfig, '--controller-namespace', `${s.ns}-none`],
          { AGENT_API_TOKEN: 'x' },
        );
        assert.equal(local.code, 6, local.stderr);
        assert.match(local.stderr, /cannot reach the prompt API: .*127\.0\.0\.1:8443/);
        if (runtime === 'node') {
          // The admin kubeconfig's client certificate, sent by the CLI itself.
          const byCert = await runCli(runtime, [
            'prompt',
            'nobody',
            'hi',
            '--kubeconfig',
            s.cluster.kubeconfig,
            ...tlsFlags,
          ]);
          assert.equal(byCert.code, 4, byCert.stderr);
          assert.equal(ctl.logged('Serving the realtime prompt API')[0]?.clientCertificates, true);
          assert.equal(await post({ cert: join(certs, 'admin') }), 404, 'the admin certificate: allowed');
          assert.equal(await post({ cert: join(dir, 'alice') }), 403, 'alice is known but has no grant');
          assert.equal(
            await post({ cert: join(dir, 'mallory') }),
            401,
            'a certificate the cluster does not trust',
          );
        }
      }),
  );

  it(
    'admission reasons: REALTIME_ENABLED unset, conversation id or pin, resumeSession without a source or on a CLI that cannot resume',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'rt-reasons', async (s) => {
        await applyRealtimeRbac(s);
        await s.create(
          realtimeDefinition('def-plain'),
          stationManifest('st-plain', 'def-plain'),
          agentManifest('disabled', 'st-plain'),
        );
        const off = await startRealtimeReplica(s, { enabled: false, identity: 'rt-off' });
        const d = await s.waitTerminal('disabled', 60_000);
        assert.equal(d.status.failureReason, 'realtime execution is disabled on this controller');
        await off.stop();

        const source = { resources: { conversation: { source: 'http://127.0.0.1:9/store' } } };
        await s.create(
          realtimeDefinition('def-id', { resources: { conversation: { id: 'c-1' } } }),
          stationManifest('st-id', 'def-id'),
          agentManifest('with-id', 'st-id'),
          realtimeDefinition('def-pin', { resources: { conversation: { pin: 'p-1' } } }),
          stationManifest('st-pin', 'def-pin'),
          agentManifest('with-pin', 'st-pin'),
          stationManifest('st-plain-2', 'def-plain'),
          {
            ...agentManifest('resume-no-source', 'st-plain-2'),
            spec: { stationRef: 'st-plain-2', resumeSession: 's-1' },
          },
          realtimeDefinition('def-exec', { ...source, model: 'exec', tool_config: { command: ['true'] } }),
          stationManifest('st-exec', 'def-exec'),
          {
            ...agentManifest('resume-exec', 'st-exec'),
            spec: { stationRef: 'st-exec', resumeSession: 's-1' },
          },
        );
        await startRealtimeReplica(s, { identity: 'rt-on' });
        const want: [string, string][] = [
          ['with-id', 'realtime execution cannot use resources.conversation.id'],
          ['with-pin', 'realtime execution cannot use resources.conversation.pin'],
          ['resume-no-source', 'resumeSession needs resources.conversation.source'],
          ['resume-exec', 'exec cannot resume a session'],
        ];
        for (const [name, reason] of want) {
          const a = await s.waitTerminal(name, 60_000);
          assert.equal(a.status.phase, 'Failed', name);
          assert.equal(a.status.failureReason, reason, name);
          assert.equal(a.status.jobName, undefined, `${name}: no Job`);
          await s.waitForEvents(name, a.metadata.uid, ['Warning/RealtimeRefused']);
        }
      }),
  );
});
