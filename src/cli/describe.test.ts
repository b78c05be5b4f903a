import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, parseJob, parsePod } from '../api/index.ts';
import type { EventRead } from './api.ts';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { describeNames, describeSpec } from './describe.ts';
import { describeAgent, eventAge, jobSummary, podSummary } from './describe-text.ts';
import {
  AGENTS_PATH,
  captureIo,
  EVENTS_PATH,
  FakeCluster,
  fakeDeps,
  JOBS_PATH,
  PODS_PATH,
} from './fake-cluster.ts';
import { painter } from './style.ts';
import { agentOf, iso, NS, rawAgent, T0 } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };
const doneAgent = (): Record<string, unknown> =>
  rawAgent('hello-x', {
    phase: 'Succeeded',
    jobName: 'agent-job-hello-x',
    exitCode: 0,
    parameters: { name: 'world', prompt: 'review\nthe diff' },
    ready: { status: 'True', reason: 'Succeeded', message: 'Job agent-job-hello-x completed' },
    status: {
      startedAt: iso(2),
      completedAt: iso(67),
      sessionId: 's-1',
      session: { turns: 3, savedTurn: 3, restarts: 1, lastPromptTime: '2026-12-01T12:00:50Z' },
      traceID: 'abc',
      result: 'all tests pass',
      tokenUsage: { input: 1200, output: 340, cacheRead: 200, cacheWrite: 50, total: 1790 },
      costEstimate: { usd: '0.25', source: 'cli', model: 'claude-opus-5-5' },
    },
  });

const job = (name: string) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, namespace: NS, uid: 'uid-job', resourceVersion: '1', creationTimestamp: iso(2) },
  status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
});
const pod = (name: string, jobName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: NS,
    uid: 'uid-pod',
    resourceVersion: '1',
    creationTimestamp: iso(3),
    labels: { 'job-name': jobName },
  },
  spec: { containers: [{ name: 'agent' }], nodeName: 'node-1' },
  status: {
    phase: 'Succeeded',
    containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 0, reason: 'Completed' } } }],
  },
});
const event = (name: string, reason: string, message: string, o: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: NS, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: iso(2) },
  involvedObject: { kind: 'Agent', name: 'hello-x', uid: 'uid-hello-x' },
  reason,
  message,
  type: 'Normal',
  source: { component: 'agent-controller' },
  lastTimestamp: iso(2),
  ...o,
});

describe('describe agent', () => {
  it('shows status, usage and cost, the Job and pod, conditions and Events', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, doneAgent() as Obj);
    c.put(JOBS_PATH, job('agent-job-hello-x') as Obj);
    c.put(PODS_PATH, pod('agent-job-hello-x-abcde', 'agent-job-hello-x') as Obj);
    c.put(PODS_PATH, pod('unrelated', 'other-job') as Obj);
    c.put(EVENTS_PATH, event('e1', 'Started', 'Job agent-job-hello-x created') as Obj);
    c.put(EVENTS_PATH, event('e2', 'Succeeded', 'exit code 0', { lastTimestamp: iso(67) }) as Obj);
    c.put(EVENTS_PATH, {
      ...event('e3', 'Other', 'about another object'),
      involvedObject: { uid: 'someone-else' },
    } as Obj);
    const io = captureIo(['agent', 'hello-x']);
    const deps = fakeDeps(c);
    await deps.clock.advance(300_000);
    assert.equal(await guarded(describeSpec, io, deps), 0);
    assert.equal(
      io.stdoutText(),
      [
        'Name:         hello-x',
        'Namespace:    team',
        'Station:      hello',
        'Parameters:   name=world',
        '              prompt=review the diff',
        'Created:      2026-12-01T12:00:00Z (5m ago)',
        'Phase:        Succeeded',
        'Exit Code:    0',
        'Started:      2026-12-01T12:00:02Z (4m58s ago)',
        'Completed:    2026-12-01T12:01:07Z (took 1m05s)',
        'Job:          agent-job-hello-x (Complete; 1 succeeded)',
        'Pods:         agent-job-hello-x-abcde (Succeeded; agent terminated, exit 0 (Completed), node node-1)',
        'Session:      s-1',
        'Turns:        3 (saved 3, restored after pod loss 1×, last prompt 2026-12-01T12:00:50Z)',
        'Trace:        abc',
        'Tokens:       1790 (input 1200, output 340, cache read 200, cache write 50)',
        'Cost:         $0.25 (reported by the CLI, claude-opus-5-5)',
        'Result:       all tests pass',
        'Conditions:',
        '  Type    Status   Reason      Age     Message',
        '  Ready   True     Succeeded   4m59s   Job agent-job-hello-x completed',
        'Events:',
        '  Type     Reason      Age     From               Message',
        '  Normal   Started     4m58s   agent-controller   Job agent-job-hello-x created',
        '  Normal   Succeeded   3m53s   agent-controller   exit code 0',
        '',
      ].join('\n'),
    );
    const ev = c.calls('GET', EVENTS_PATH)[0];
    assert.equal(ev?.query.fieldSelector, 'involvedObject.uid=uid-hello-x');
    assert.equal(c.calls('GET', PODS_PATH)[0]?.query.labelSelector, 'job-name=agent-job-hello-x');
  });

  it('makes every piece of cluster text safe: names, parameters, refs, ids, conditions, Events, pods, errors', () => {
    const E = '\x1b]0;x\x07\x1b[2J\u202e\x9b1A';
    const base = agentOf('a', {
      phase: 'Failed',
      jobName: 'j',
      failureReason: `boom${E}`,
      ready: { status: 'False', reason: 'Failed', message: 'm' },
    });
    const agent = {
      ...base,
      metadata: { ...base.metadata, name: `n${E}`, namespace: `ns${E}` },
      spec: {
        ...base.spec,
        stationRef: `st${E}`,
        model: `mo${E}`,
        parameters: { [`k${E}`]: `v${E}` },
        taskId: `t${E}`,
        targetRepo: `r${E}`,
        branch: `b${E}`,
        resumeSession: `rs${E}`,
      },
      status: {
        ...base.status,
        phase: `Failed${E}`,
        sessionId: `s${E}`,
        traceID: `tr${E}`,
        costEstimate: { usd: `1${E}`, source: 'table', model: `cm${E}` },
        result: `res${E}`,
        conditions: [
          {
            type: `Ty${E}`,
            status: `St${E}`,
            reason: `Re${E}`,
            message: `Me${E}`,
            lastTransitionTime: iso(1),
          },
        ],
      },
    } as unknown as Agent;
    const podRaw = pod(`p${E}`, 'j');
    const podValue = parsePod({
      ...podRaw,
      status: {
        phase: 'Failed',
        containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 1, reason: `Oom${E}` } } }],
      },
    });
    const jobValue = parseJob(job(`j${E}`));
    assert.ok(podValue.ok && jobValue.ok);
    const ev = {
      ...event('e', `Rsn${E}`, `Msg${E}`, { type: `Ty${E}`, source: { component: `src${E}` } }),
    } as unknown as EventRead;
    const text = describeAgent(
      {
        agent,
        job: { kind: 'ok', value: jobValue.value },
        pods: { kind: 'ok', value: [podValue.value] },
        events: { kind: 'ok', value: [ev] },
      },
      T0 + 60_000,
      painter(true),
    );
    const shown = text.replace(/\x1b\[\d+m/g, '');
    assert.doesNotMatch(shown, /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    const safe = '^[]0;x^G^[[2J<U+202E>^[[1A';
    for (const part of ['n', 'ns', 'st', 'mo', 'k', 'v', 't', 'r', 'b', 'rs', 's', 'tr', 'cm', 'res', 'boom'])
      assert.ok(shown.includes(`${part}${safe}`), `${part} shown safely:\n${shown}`);
    for (const part of ['Ty', 'St', 'Re', 'Me', 'Rsn', 'Msg', 'src', 'p', 'j', 'Oom', 'Failed'])
      assert.ok(shown.includes(`${part}${safe}`), `${part} shown safely:\n${shown}`);
    const errors = describeAgent(
      {
        agent: base,
        job: { kind: 'error', error: { kind: 'api', code: 500, reason: '', message: `db${E}` } as never },
        pods: undefined,
        events: { kind: 'error', error: { kind: 'network', message: `net${E}` } },
      },
      T0,
      painter(false),
    );
    assert.ok(errors.includes(`db${safe}`) && errors.includes(`net${safe}`), errors);
  });

  it('says what could not be read instead of failing', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('r', { phase: 'Running', jobName: 'agent-job-r' }) as Obj);
    c.override = (req) =>
      req.path.startsWith(EVENTS_PATH) || req.path.startsWith(PODS_PATH)
        ? { status: 403, body: { kind: 'Status', code: 403 } }
        : undefined;
    const io = captureIo(['r']);
    assert.equal(await guarded(describeSpec, io, fakeDeps(c)), 0);
    const out = io.stdoutText();
    assert.match(out, /^Job: {10}agent-job-r <none: gone>$/m);
    assert.match(out, /^Pods: {9}<not allowed to read pods>$/m);
    assert.match(out, /^Conditions:\n {2}<none>$/m);
    assert.match(out, /^Events: {7}<not allowed to read events>$/m);
  });

  it('a queued Agent has no Job yet', async () => {
    const c = new FakeCluster();
    c.put(
      AGENTS_PATH,
      rawAgent('q', { ready: { reason: 'Queued', message: 'Waiting for a free run slot' } }) as Obj,
    );
    const io = captureIo(['q']);
    assert.equal(await guarded(describeSpec, io, fakeDeps(c)), 0);
    assert.match(io.stdoutText(), /^Phase: {8}Pending$/m);
    assert.match(io.stdoutText(), /^Job: {10}<none yet>$/m);
    assert.match(io.stdoutText(), /^ {2}Ready +False +Queued .*Waiting for a free run slot$/m);
    assert.match(io.stdoutText(), /^Events: {7}<none>$/m);
  });

  it('a rerun names the Agent it repeats; another Agent has no such line', async () => {
    const c = new FakeCluster();
    const raw = rawAgent('hello-x-rerun-b9zq4') as Obj;
    c.put(AGENTS_PATH, {
      ...raw,
      metadata: {
        ...raw.metadata,
        annotations: { 'agents.re-cinq.com/rerun-of': 'hello-x', 'agents.re-cinq.com/rerun-of-uid': 'u-1' },
      },
    });
    c.put(AGENTS_PATH, rawAgent('plain') as Obj);
    const io = captureIo(['hello-x-rerun-b9zq4']);
    assert.equal(await guarded(describeSpec, io, fakeDeps(c)), 0);
    assert.match(
      io.stdoutText(),
      /^Station: {6}hello\nParameters: {3}<none>\nRerun Of: {5}hello-x\nCreated: /m,
    );
    const plain = captureIo(['plain']);
    assert.equal(await guarded(describeSpec, plain, fakeDeps(c)), 0);
    assert.doesNotMatch(plain.stdoutText(), /Rerun Of/);
  });

  it('a missing Agent is exit 4; a refused one exit 3', async () => {
    const c = new FakeCluster();
    const io = captureIo(['agent', 'nope']);
    assert.equal(await guarded(describeSpec, io, fakeDeps(c)), 4);
    assert.equal(io.stderrText(), 'error: agent "nope" in namespace "team" not found\n');
    c.override = () => ({ status: 403, body: { kind: 'Status', code: 403, message: 'forbidden: no' } });
    const io2 = captureIo(['agent', 'nope']);
    assert.equal(await guarded(describeSpec, io2, fakeDeps(c)), 3);
  });

  it('names: describe [agent] NAME...; other kinds point to get -o yaml', () => {
    assert.deepEqual(describeNames(['agent', 'a', 'b']), ['a', 'b']);
    assert.deepEqual(describeNames(['a']), ['a']);
    assert.throws(() => describeNames([]), UsageError);
    assert.throws(() => describeNames(['agents']), /missing the Agent name/);
    assert.throws(() => describeNames(['station', 'x']), /for stations use: get stations NAME -o yaml/);
  });
});

describe('describe pieces', () => {
  it('failure, batch, JSON result cut after 20 lines, Warning events coloured, repeats', () => {
    const agent = agentOf('f', {
      phase: 'Failed',
      exitCode: 7,
      failureReason: 'Job failed',
      status: {
        batchId: 'b-1',
        batchProvider: 'anthropic',
        result: { lines: Array.from({ length: 30 }, (_, i) => i) },
      },
    });
    const text = describeAgent(
      {
        agent,
        job: undefined,
        pods: undefined,
        events: {
          kind: 'ok',
          value: [
            {
              metadata: {
                name: 'w',
                namespace: NS,
                uid: 'u',
                resourceVersion: '1',
                creationTimestamp: iso(0),
                labels: {},
                annotations: {},
                ownerReferences: [],
                finalizers: [],
              },
              involvedObject: {},
              type: 'Warning',
              reason: 'ImagePullFailed',
              message: 'no\nimage',
              count: 3,
              firstTimestamp: iso(0),
              lastTimestamp: iso(50),
            },
          ],
        },
      },
      T0 + 60_000,
      painter(true),
    );
    assert.match(text, /^Failure: {6}Job failed$/m);
    assert.match(text, /^Batch: {8}anthropic b-1$/m);
    assert.match(text, /^Phase: {8}\x1b\[31mFailed\x1b\[0m$/m);
    assert.match(text, /… \(14 more lines: -o yaml shows it all\)/);
    assert.match(text, /\x1b\[33mWarning\x1b\[0m +ImagePullFailed +10s \(x3 over 60s\) +no image/);
  });

  it('job and pod summaries', () => {
    const j = parseJob({ metadata: job('j').metadata, status: { active: 1 } });
    assert.ok(j.ok);
    if (j.ok) assert.equal(jobSummary(j.value), 'j (Active; 1 active)');
    const p = parsePod({
      ...pod('p', 'j'),
      status: {
        phase: 'Pending',
        containerStatuses: [{ name: 'agent', state: { waiting: { reason: 'ImagePullBackOff' } } }],
      },
    });
    assert.ok(p.ok);
    if (p.ok) assert.equal(podSummary(p.value), 'p (Pending; agent waiting: ImagePullBackOff, node node-1)');
  });

  it('eventAge without a first time is the age alone', () => {
    const e = {
      metadata: {
        name: 'e',
        namespace: NS,
        uid: 'u',
        resourceVersion: '1',
        creationTimestamp: iso(0),
        labels: {},
        annotations: {},
        ownerReferences: [],
        finalizers: [],
      },
      involvedObject: {},
      count: 2,
      eventTime: iso(30),
    };
    assert.equal(eventAge(e, T0 + 60_000), '30s');
  });
});
