import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps } from './fake-cluster.ts';
import { parseRerunRequest, rerunBody, rerunPrefix, rerunSpec } from './rerun.ts';
import { agentOf, rawAgent } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

/** A finished batch run as the API server returns it: every kind of metadata a copy must not carry. */
function finishedSource(): Obj {
  const raw = rawAgent('nightly-4kq9z', {
    phase: 'Succeeded',
    jobName: 'agent-job-nightly-4kq9z',
    exitCode: 0,
    parameters: { topic: 'flaky tests', prompt: 'look again' },
    status: { batchId: 'msgbatch_1', sessionId: 'sess-1', result: 'done' },
  }) as Obj;
  return {
    ...raw,
    metadata: {
      ...raw.metadata,
      labels: {
        team: 'infra',
        'app.kubernetes.io/part-of': 'nightly',
        'agents.re-cinq.com/station': 'nightly',
      },
      annotations: {
        'example.com/ticket': 'OPS-12',
        'agents.re-cinq.com/session-id': 'sess-1',
        'agents.re-cinq.com/gateway-usage': '{}',
        'agents.re-cinq.com/rerun-of': 'nightly-older',
        'agents.re-cinq.com/rerun-of-uid': 'uid-nightly-older',
        'kubectl.kubernetes.io/last-applied-configuration': '{"metadata":{"name":"nightly-4kq9z"}}',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
      finalizers: ['agents.re-cinq.com/batch-cleanup', 'agents.re-cinq.com/spend'],
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'uid-owner' }],
      deletionTimestamp: '2026-12-01T13:00:00Z',
      deletionGracePeriodSeconds: 0,
      generation: 3,
      selfLink: '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/agents/nightly-4kq9z',
    },
    spec: {
      stationRef: 'nightly',
      taskId: 'T-9',
      targetRepo: 're-cinq/demo',
      branch: 'main',
      parameters: { topic: 'flaky tests', prompt: 'look again' },
      model: 'claude-sonnet-5-5',
      resumeSession: 'sess-0',
      // A field this CLI does not know (a newer CRD): carried as the API server sent it.
      futureField: { nested: [1, 2] },
    },
  };
}

describe('rerun: the new Agent built from the source', () => {
  it('copies the whole spec, user labels and annotations; annotates the source; drops everything else', () => {
    const source = finishedSource();
    const body = rerunBody(source);
    assert.deepEqual(body, {
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: {
        generateName: 'nightly-4kq9z-rerun-',
        labels: { team: 'infra', 'app.kubernetes.io/part-of': 'nightly' },
        annotations: {
          'example.com/ticket': 'OPS-12',
          'agents.re-cinq.com/rerun-of': 'nightly-4kq9z',
          'agents.re-cinq.com/rerun-of-uid': 'uid-nightly-4kq9z',
        },
      },
      spec: {
        stationRef: 'nightly',
        taskId: 'T-9',
        targetRepo: 're-cinq/demo',
        branch: 'main',
        parameters: { topic: 'flaky tests', prompt: 'look again' },
        model: 'claude-sonnet-5-5',
        resumeSession: 'sess-0',
        futureField: { nested: [1, 2] },
      },
    });
    assert.ok(!('status' in body), 'no status');
  });

  it('the spec is a copy: changing the body leaves the source alone', () => {
    const source = finishedSource();
    const body = rerunBody(source) as { spec: { parameters: Record<string, string> } };
    body.spec.parameters.topic = 'changed';
    assert.equal((source.spec as { parameters: Record<string, string> }).parameters.topic, 'flaky tests');
  });

  it('--name names it instead of generateName', () => {
    const body = rerunBody(finishedSource(), 'again') as { metadata: Record<string, unknown> };
    assert.equal(body.metadata.name, 'again');
    assert.ok(!('generateName' in body.metadata));
  });

  it('a parsed Agent (as the console reads it) gives the same metadata and the spec it knows', () => {
    const source = agentOf('hello-abcde', { station: 'hello', parameters: { a: '1' } });
    assert.deepEqual(rerunBody(source), {
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: {
        generateName: 'hello-abcde-rerun-',
        annotations: {
          'agents.re-cinq.com/rerun-of': 'hello-abcde',
          'agents.re-cinq.com/rerun-of-uid': 'uid-hello-abcde',
        },
      },
      spec: { stationRef: 'hello', parameters: { a: '1' } },
    });
  });

  it('a rerun of a rerun is named from the original, not ever longer; other names are kept whole', () => {
    assert.equal(rerunPrefix('hello-x7k2p'), 'hello-x7k2p-rerun-');
    assert.equal(rerunPrefix('hello-x7k2p-rerun-b9zq4'), 'hello-x7k2p-rerun-');
    assert.equal(rerunPrefix('my-rerun'), 'my-rerun-rerun-');
    assert.equal(rerunPrefix('a-rerun-toolong'), 'a-rerun-toolong-rerun-');
  });

  it('a label or annotation key like __proto__ stays an own key', () => {
    const source = {
      metadata: { name: 'x', uid: 'u', labels: JSON.parse('{"__proto__":"v"}') as Record<string, string> },
      spec: { stationRef: 's' },
    };
    const body = rerunBody(source) as { metadata: { labels: Record<string, string> } };
    assert.ok(Object.hasOwn(body.metadata.labels, '__proto__'));
    assert.equal(Object.getPrototypeOf(body.metadata.labels), Object.prototype);
  });
});

describe('rerun: flags', () => {
  it('takes one Agent as NAME, agent NAME or agent/NAME; --name; -o name|yaml|json', () => {
    assert.deepEqual(parseRerunRequest({}, ['a']), { source: 'a', name: undefined, output: 'text' });
    assert.equal(parseRerunRequest({}, ['agent', 'a']).source, 'a');
    assert.equal(parseRerunRequest({}, ['agent/a']).source, 'a');
    assert.equal(parseRerunRequest({}, ['agent.agents.re-cinq.com/a']).source, 'a');
    assert.equal(parseRerunRequest({ name: 'b' }, ['a']).name, 'b');
    assert.equal(parseRerunRequest({ output: 'yaml' }, ['a']).output, 'yaml');
  });

  it('refuses no Agent, two, another kind, a bad --name or -o', () => {
    assert.throws(() => parseRerunRequest({}, []), /missing the Agent/);
    assert.throws(() => parseRerunRequest({}, ['agent']), /missing the Agent/);
    assert.throws(() => parseRerunRequest({}, ['a', 'b']), /one Agent at a time/);
    assert.throws(() => parseRerunRequest({}, ['station', 'a']), /not stations/);
    assert.throws(() => parseRerunRequest({ name: '' }, ['a']), /--name must not be empty/);
    assert.throws(() => parseRerunRequest({ name: '../x' }, ['a']), UsageError);
    assert.throws(() => parseRerunRequest({ output: 'wide' }, ['a']), /-o must be one of name, yaml, json/);
  });

  it('--help shows the usage and the exit codes', async () => {
    const io = captureIo(['--help']);
    assert.equal(await guarded(rerunSpec, io, fakeDeps(new FakeCluster())), 0);
    assert.match(io.stdoutText(), /^Usage: agent-controller rerun \[agent\] NAME/);
    assert.match(io.stdoutText(), /agents\.re-cinq\.com\/rerun-of/);
    assert.match(io.stdoutText(), /4 not found/);
  });
});

describe('rerun: against a cluster', () => {
  it('creates the copy and prints it as a sentence; the source is untouched', async () => {
    const c = new FakeCluster();
    const source = finishedSource();
    c.put(AGENTS_PATH, source);
    const io = captureIo(['nightly-4kq9z', '-n', 'team']);
    assert.equal(await guarded(rerunSpec, io, fakeDeps(c)), 0, io.stderrText());
    const posted = c.calls('POST', AGENTS_PATH);
    assert.equal(posted.length, 1);
    const body = posted[0]?.body as { metadata: Record<string, unknown>; spec: unknown };
    assert.equal(body.metadata.generateName, 'nightly-4kq9z-rerun-');
    assert.deepEqual(body.spec, source.spec);
    const name = /^agent\/(\S+) created \(rerun of nightly-4kq9z\)\n$/.exec(io.stdoutText())?.[1];
    assert.ok(name?.startsWith('nightly-4kq9z-rerun-'), io.stdoutText());
    for (const method of ['PUT', 'PATCH', 'DELETE'])
      assert.equal(c.calls(method, '/').length, 0, `no ${method}: the source is left as it is`);
  });

  it('-o name, -o json and -o yaml print the created Agent', async () => {
    for (const [format, check] of [
      ['name', (out: string) => assert.equal(out, 'agent.agents.re-cinq.com/again\n')],
      [
        'json',
        (out: string) =>
          assert.equal((JSON.parse(out) as { metadata: { name: string } }).metadata.name, 'again'),
      ],
      [
        'yaml',
        (out: string) => {
          const doc = load(out) as { kind: string; metadata: { annotations: Record<string, string> } };
          assert.equal(doc.kind, 'Agent');
          assert.equal(doc.metadata.annotations['agents.re-cinq.com/rerun-of'], 'hello');
        },
      ],
    ] as const) {
      const c = new FakeCluster();
      c.put(AGENTS_PATH, rawAgent('hello') as Obj);
      const io = captureIo(['hello', '--name', 'again', '-o', format]);
      assert.equal(await guarded(rerunSpec, io, fakeDeps(c)), 0, io.stderrText());
      check(io.stdoutText());
    }
  });

  it('no such Agent: exit 4 and one line, nothing created; refused: exit 3; name taken: exit 1', async () => {
    const c = new FakeCluster();
    const io = captureIo(['nope', '-n', 'team']);
    assert.equal(await guarded(rerunSpec, io, fakeDeps(c)), 4);
    assert.equal(io.stderrText(), 'error: agent "nope" in namespace "team" not found\n');
    assert.equal(io.stdoutText(), '');
    assert.equal(c.calls('POST', AGENTS_PATH).length, 0);

    c.put(AGENTS_PATH, rawAgent('hello') as Obj);
    c.put(AGENTS_PATH, rawAgent('taken') as Obj);
    const taken = captureIo(['hello', '--name', 'taken']);
    assert.equal(await guarded(rerunSpec, taken, fakeDeps(c)), 1);
    assert.equal(taken.stderrText(), 'error: agent "taken" in namespace "team" already exists\n');

    c.override = (req) =>
      req.method === 'POST'
        ? { status: 403, body: { kind: 'Status', code: 403, message: 'cannot create agents' } }
        : undefined;
    const refused = captureIo(['hello']);
    assert.equal(await guarded(rerunSpec, refused, fakeDeps(c)), 3);
    assert.equal(refused.stderrText(), 'error: not allowed (403): cannot create agents\n');
  });

  it('usage mistakes: exit 2, one line, no request', async () => {
    const c = new FakeCluster();
    const io = captureIo([]);
    assert.equal(await guarded(rerunSpec, io, fakeDeps(c)), 2);
    assert.match(
      io.stderrText(),
      /^error: missing the Agent to run again \(see 'agent-controller rerun --help'\)\n$/,
    );
    assert.equal(c.calls('GET', '/').length, 0);
  });
});
