// The web console in a real browser (issue 11 §2): headless Chromium from Debian (/usr/bin/chromium, or $CHROMIUM)
// driven by playwright-core, against a controller started with CONSOLE_ENABLED on the local control plane, running as
// the deploy/ ServiceAccount with deploy/components/console and realtime. A person (a ServiceAccount bound to the
// console's agent-console-user Role) signs in with a token, sees the Agents by Station, starts a run from its Station
// and watches its output arrive live, runs it again with the Rerun button, then talks to a realtime run. Someone
// without the grants is refused; the one-time link of a local run signs in once. Screenshots go to
// test-results/console/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  type ControllerProcess,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  fakeClaudeImages,
  GROUP_VERSION,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const skip =
  controllerSkipReason(cluster) ||
  (existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium)`);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const SHOTS = join(import.meta.dirname, '..', '..', 'test-results', 'console');

/** A ServiceAccount `name` bound to `role` (a Role of this namespace), and its token. */
async function personWith(s: Scenario, name: string, role: string | undefined): Promise<string> {
  await s.client.create(apiPath('v1', 'serviceaccounts', { namespace: s.ns }), {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name },
  });
  if (role !== undefined)
    await s.client.create(apiPath('rbac.authorization.k8s.io/v1', 'rolebindings', { namespace: s.ns }), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name, namespace: s.ns }],
    });
  return s.serviceAccountToken(name);
}

async function consoleUrl(ctl: ControllerProcess): Promise<string> {
  const line = await ctl.waitForLog('Serving the web console');
  return `http://127.0.0.1:${String(line.port)}`;
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${runtime}-${name}.png`), fullPage: true });
}

async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/agents`);
  assert.match(page.url(), /\/login$/, 'a page without a session goes to the sign-in page');
  await page.fill('#token', token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  if (!/\/agents$/.test(page.url()))
    assert.fail(
      `signing in failed at ${page.url()}: ${(await page.locator('[role=alert]').allTextContents()).join(' ')}`,
    );
}

describe(`web console in a browser (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  let browser: Browser;
  before(async () => {
    await applyCrds(cluster.client);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    cluster.client.close();
  });

  it(
    'sign in with a token, Agents by Station, start a run and watch its output live, prompt a realtime run; refusals',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'console', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/realtime/realtime-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/console/console-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/console/console-user-rbac.yaml');
        const images = fakeClaudeImages(s, runtime, { MOCK_ECHO_PROMPT: '1' });
        const ctl = await s.startReplica({
          kubeconfig: await s.kubeconfigAs('agent-controller'),
          env: {
            CONSOLE_ENABLED: 'true',
            CONSOLE_PORT: '0',
            REALTIME_ENABLED: 'true',
            API_PORT: '0',
            AGENT_IMAGE: images.init,
          },
        });
        const base = await consoleUrl(ctl);
        await s.create(
          execDefinition('steps', ['sh', '-c', 'echo "step one"; sleep 3; echo "step two <done>"']),
          stationManifest('steps', 'steps'),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'chat' },
            spec: { model: 'claude-opus-5-5', prompt: 'hello {topic}', execution: 'realtime' },
          },
          stationManifest('chat', 'chat', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('earlier', 'steps'),
        );
        await s.waitTerminal('earlier', 90_000);
        const person = await personWith(s, 'console-person', 'agent-console-user');

        const context = await browser.newContext();
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        page.on('console', (m) => {
          // A prompt sent before the run pod listens (503) or while its first turn still runs (409) is refused; the
          // page shows why and the test sends again.
          if (
            m.type() === 'error' &&
            !/status of (503|409) .*\/prompt$/.test(`${m.text()} ${m.location().url}`)
          )
            errors.push(`${m.text()} (${m.location().url})`);
        });

        // Sign in; the list shows the namespace's Stations, with the earlier run under its Station.
        await signIn(page, base, person);
        await page.goto(`${base}/agents?namespace=${s.ns}`);
        const steps = page.locator('section[data-station="steps"]');
        await steps.locator('tr[data-agent="earlier"]').waitFor();
        assert.match((await steps.textContent()) ?? '', /Succeeded\s*1/);
        assert.equal(
          await page.locator('section[data-station="chat"]').count(),
          1,
          'a Station without runs is listed',
        );
        await shot(page, 'list');

        // A new run from its Station: the detail page shows the output as it is written, then the final phase.
        await Promise.all([page.waitForURL(/\/stations\//), steps.locator('a.button').click()]);
        await page.fill('#prompt', 'count the steps');
        await page.fill('#parameters', 'topic=console');
        await Promise.all([
          page.waitForURL(new RegExp(`/agents/${s.ns}/steps-[a-z0-9]+$`)),
          page.click('form.run button[type=submit]'),
        ]);
        const name = page.url().split('/').at(-1) ?? '';
        const created = await s.agent(name);
        assert.equal(created?.spec.stationRef, 'steps');
        assert.deepEqual(created?.spec.parameters, { prompt: 'count the steps', topic: 'console' });
        // "step one" shows while the run is still going: streamed, not read at the end.
        await page.locator('#output', { hasText: 'step one' }).waitFor({ timeout: 90_000 });
        const during = await s.agent(name);
        const outputWhileRunning = (await page.locator('#output').textContent()) ?? '';
        if (during?.status.phase === 'Running')
          assert.doesNotMatch(
            outputWhileRunning,
            /step two/,
            'the second line is not there before it is written',
          );
        await page.locator('h1 .badge.succeeded').waitFor({ timeout: 90_000 });
        await page.locator('#output', { hasText: 'step two <done>' }).waitFor({ timeout: 30_000 });
        const events = (await page.locator('table.events').textContent()) ?? '';
        assert.match(events, /Started/);
        await shot(page, 'detail');

        // Rerun: the run page's button creates a new Agent with the same spec, annotated with the run it repeats,
        // and goes to it; it runs to Succeeded and links back to its source.
        await Promise.all([
          page.waitForURL(new RegExp(`/agents/${s.ns}/${name}-rerun-[a-z0-9]{5}$`)),
          page.click('form.rerun button[type=submit]'),
        ]);
        const rerunName = page.url().split('/').at(-1) ?? '';
        const rerun = await s.agent(rerunName);
        assert.equal(rerun?.metadata.annotations?.['agents.re-cinq.com/rerun-of'], name);
        assert.equal(rerun?.metadata.annotations?.['agents.re-cinq.com/rerun-of-uid'], created?.metadata.uid);
        assert.deepEqual(rerun?.spec, created?.spec);
        await page.locator('h1 .badge.succeeded').waitFor({ timeout: 90_000 });
        assert.equal(
          await page.locator(`table.fields a[href="/agents/${s.ns}/${name}"]`).textContent(),
          name,
        );
        await shot(page, 'rerun');

        // A realtime run: the prompt box sends as the signed-in person and shows the answer.
        await s.create(agentManifest('live', 'chat', { parameters: { topic: 'world' } }));
        await pollUntil(
          async () => {
            await page.goto(`${base}/agents/${s.ns}/live`);
            return (await page.locator('#prompt-form').count()) > 0 ? true : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 1000, description: 'the prompt box of the Running realtime run' },
        );
        const reply = await pollUntil(
          async (observe) => {
            await page.fill('#prompt-form textarea', 'hello from the console');
            await page.click('#prompt-form button');
            await page
              .locator('#reply[data-state=done], #reply[data-state=error]')
              .waitFor({ timeout: 60_000 });
            const text = (await page.locator('#reply').textContent()) ?? '';
            observe(text);
            return /echo: hello from the console/.test(text) ? text : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 1000, description: 'an answer in the prompt box' },
        );
        assert.doesNotMatch(reply, /^Error/);
        await shot(page, 'prompt');
        assert.deepEqual(errors, [], 'no script errors in the pages');
        await context.close();

        // Someone without the grants: signed in, but refused the list.
        const strangerToken = await personWith(s, 'console-stranger', undefined);
        const other = await browser.newContext();
        const strangerPage = await other.newPage();
        await signIn(strangerPage, base, strangerToken);
        const refused = await strangerPage.goto(`${base}/agents?namespace=${s.ns}`);
        assert.equal(refused?.status(), 403);
        assert.match((await strangerPage.locator('[role=alert]').textContent()) ?? '', /may not list Agents/);
        // A token the API server does not know is refused at sign-in.
        await strangerPage.goto(`${base}/login`);
        await strangerPage.fill('#token', 'not-a-token');
        await strangerPage.click('button[type=submit]');
        assert.match(
          (await strangerPage.locator('[role=alert]').textContent()) ?? '',
          /does not accept that token/,
        );
        await other.close();

        // The one-time link of a local run (the controller runs from a kubeconfig): once, then refused.
        const link = await ctl.waitForLog('Open the console (one-time sign-in link)');
        const viaLink = await browser.newContext();
        const linkPage = await viaLink.newPage();
        await linkPage.goto(String(link.url));
        assert.match(linkPage.url(), /\/agents$/);
        assert.match((await linkPage.locator('nav .user').textContent()) ?? '', /agent-controller/);
        const again = await (await browser.newContext()).newPage();
        const second = await again.goto(String(link.url));
        assert.equal(second?.status(), 401);
        await viaLink.close();
        // The link is in the log; nothing secret is: the person's token never reached it.
        assert.ok(!ctl.lines.some((l) => JSON.stringify(l).includes(person)), 'the token is not logged');
      }),
  );
});
