import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps, STATIONS_PATH, until } from './fake-cluster.ts';
import { getSpec, parseGetRequest } from './get.ts';
import { AGENTS_KIND } from './kinds.ts';
import { formatObjects, forOutput, listOf } from './output.ts';
import { rawAgent, rawStation } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

function cluster() {
  const c = new FakeCluster();
  c.put(
    AGENTS_PATH,
    rawAgent('hello-a', { phase: 'Succeeded', jobName: 'agent-job-hello-a', exitCode: 0 }) as Obj,
  );
  c.put(AGENTS_PATH, rawAgent('hello-b', { created: 30 }) as Obj);
  c.put(STATIONS_PATH, rawStation('hello', { deadlineMinutes: 5 }) as Obj);
  c.put(
    '/apis/agents.re-cinq.com/v1alpha1/namespaces/other/agents',
    rawAgent('far', { namespace: 'other', phase: 'Running' }) as Obj,
  );
  return c;
}

const run = async (c: FakeCluster, argv: string[], o: Parameters<typeof fakeDeps>[1] = {}) => {
  const io = captureIo(argv);
  const deps = fakeDeps(c, o);
  await deps.clock.advance(90_000);
  const code = await guarded(getSpec, io, deps);
  return { code, out: io.stdoutText(), err: io.stderrText() };
};

describe('get: arguments (pure)', () => {
  it('a kind word, then names; without one, Agent names', () => {
    const r = parseGetRequest({ output: 'wide' }, ['stn', 'a', 'b']);
    assert.equal(r.kind.name, 'stations');
    assert.deepEqual(r.names, ['a', 'b']);
    assert.equal(r.format, 'wide');
    assert.equal(parseGetRequest({}, ['hello-a']).kind.name, 'agents');
    assert.deepEqual(parseGetRequest({}, ['hello-a']).names, ['hello-a']);
    assert.equal(parseGetRequest({}, ['AgentDefinitions']).kind.name, 'definitions');
    assert.equal(parseGetRequest({}, ['ad']).kind.name, 'definitions');
    assert.equal(parseGetRequest({}, []).kind.name, 'agents');
  });
  it('refuses what kubectl refuses', () => {
    for (const [values, pos, msg] of [
      [{ 'all-namespaces': true }, ['agents', 'x'], /across all namespaces/],
      [{ watch: true }, ['a', 'b'], /--watch follows one name/],
      [{ output: 'xml' }, [], /-o must be one of wide, json, yaml, name/],
      [{ selector: 'a=b' }, ['x'], /names or a --selector/],
    ] as const)
      assert.throws(
        () => parseGetRequest(values, pos),
        (e) => e instanceof UsageError && msg.test(e.message),
      );
  });
});

describe('get: output', () => {
  it('the Agents of the namespace as a table (a Pending Agent reads as Pending)', async () => {
    const r = await run(cluster(), []);
    assert.equal(r.code, 0);
    assert.equal(
      r.out,
      [
        'NAME      PHASE       STATION   JOB                 AGE',
        'hello-a   Succeeded   hello     agent-job-hello-a   90s',
        'hello-b   Pending     hello                         60s',
        '',
      ].join('\n'),
    );
    assert.equal(r.err, '');
  });

  it('-A adds NAMESPACE and lists every namespace; -o wide the wide columns', async () => {
    const r = await run(cluster(), ['agents', '-A', '-o', 'wide']);
    assert.equal(r.code, 0);
    const lines = r.out.trimEnd().split('\n');
    assert.match(
      lines[0] ?? '',
      /^NAMESPACE\s+NAME\s+PHASE\s+STATION\s+JOB\s+AGE\s+SESSION\s+BATCH\s+TOKENS\s+COST\s+URL$/,
    );
    assert.equal(lines.length, 4);
    assert.ok(lines.some((l) => /^other\s+far\s+Running/.test(l)));
  });

  it('stations with their printer columns', async () => {
    const r = await run(cluster(), ['stations']);
    assert.equal(r.out, 'NAME    RECIPE   DEADLINE   AGE\nhello   hello    5          11m\n');
  });

  it('-o json of one name is the object (managedFields hidden); of a list, a kubectl List', async () => {
    const one = await run(cluster(), ['agent', 'hello-a', '-o', 'json']);
    assert.equal(one.code, 0);
    const obj = JSON.parse(one.out) as { metadata: Record<string, unknown>; status: { phase: string } };
    assert.equal(obj.metadata.name, 'hello-a');
    assert.equal(obj.status.phase, 'Succeeded');
    assert.ok(!('managedFields' in obj.metadata));
    assert.match(one.out, /^{\n {4}"apiVersion"/, 'kubectl indents JSON by four');
    const all = JSON.parse((await run(cluster(), ['-o', 'json'])).out) as { kind: string; items: unknown[] };
    assert.equal(all.kind, 'List');
    assert.equal(all.items.length, 2);
  });

  it('-o yaml reads back as the same objects', async () => {
    const r = await run(cluster(), ['agents', '-o', 'yaml']);
    const doc = load(r.out) as { kind: string; items: { metadata: { name: string } }[] };
    assert.equal(doc.kind, 'List');
    assert.deepEqual(
      doc.items.map((i) => i.metadata.name),
      ['hello-a', 'hello-b'],
    );
  });

  it('-o name prints kind.group/name, for completion and scripts', async () => {
    const r = await run(cluster(), ['-o', 'name']);
    assert.equal(r.out, 'agent.agents.re-cinq.com/hello-a\nagent.agents.re-cinq.com/hello-b\n');
  });

  it('an empty namespace says so on stderr, as kubectl does', async () => {
    const r = await run(cluster(), ['definitions']);
    assert.equal(r.code, 0);
    assert.equal(r.out, '');
    assert.equal(r.err, 'No resources found in team namespace.\n');
  });

  it('a missing name is exit 4 after printing the ones found', async () => {
    const r = await run(cluster(), ['agents', 'hello-a', 'nope']);
    assert.equal(r.code, 4);
    assert.match(r.out, /^NAME\s+PHASE.*\nhello-a\s+Succeeded/);
    assert.equal(r.err, 'error: agent "nope" in namespace "team" not found\n');
  });

  it('a refused list is exit 3 with the server message', async () => {
    const c = cluster();
    c.override = (req) =>
      req.path === AGENTS_PATH
        ? {
            status: 403,
            body: {
              kind: 'Status',
              code: 403,
              reason: 'Forbidden',
              message: 'User "x" cannot list resource "agents"',
            },
          }
        : undefined;
    const r = await run(c, []);
    assert.equal(r.code, 3);
    assert.equal(r.err, 'error: not allowed (403): User "x" cannot list resource "agents"\n');
  });

  it('a refused GET of a name is said once (exit 3)', async () => {
    const c = cluster();
    c.override = (req) =>
      req.path === `${AGENTS_PATH}/hello-a`
        ? { status: 403, body: { kind: 'Status', code: 403, message: 'User "x" cannot get agents' } }
        : undefined;
    const r = await run(c, ['agent', 'hello-a']);
    assert.equal(r.code, 3);
    assert.equal(r.err, 'error: not allowed (403): User "x" cannot get agents\n');
  });

  it('takes KIND/NAME (and the -o name form)', async () => {
    const r = await run(cluster(), ['agent.agents.re-cinq.com/hello-a', 'agt/hello-b', '-o', 'name']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'agent.agents.re-cinq.com/hello-a\nagent.agents.re-cinq.com/hello-b\n');
  });

  it('refuses names that are no names (empty, ., .., / or %) in get, describe, logs and run: exit 2, no request', async () => {
    const { describeSpec } = await import('./describe.ts');
    const { logsSpec } = await import('./logs.ts');
    const { runSpec } = await import('./run.ts');
    for (const [spec, argv] of [
      [getSpec, ['agent', '']],
      [getSpec, ['']],
      [getSpec, ['agents', '..']],
      [describeSpec, ['agent', '']],
      [describeSpec, ['.']],
      [logsSpec, ['']],
      [logsSpec, ['agent/']],
      [logsSpec, ['a%2f']],
      [runSpec, ['hello', '--name', '']],
      [runSpec, ['hello', '--name', '..']],
      [runSpec, ['..']],
    ] as const) {
      const c = cluster();
      const before = c.transport.requests.length;
      const io = captureIo(argv);
      assert.equal(await guarded(spec, io, fakeDeps(c)), 2, `${spec.name} ${JSON.stringify(argv)}`);
      assert.equal(c.transport.requests.length, before, `${spec.name} ${JSON.stringify(argv)}: no request`);
    }
  });

  it('objects that do not read as their kind are skipped with a warning', async () => {
    const c = cluster();
    c.put(AGENTS_PATH, { ...rawAgent('broken'), spec: { stationRef: 42 } } as unknown as Obj);
    const r = await run(c, []);
    assert.equal(r.code, 0);
    assert.ok(!r.out.includes('broken'));
    assert.match(
      r.err,
      /^warning: skipped agent "broken" in namespace "team": it does not read as a valid Agent/,
    );
  });

  it('colours the phase on a terminal only', async () => {
    assert.ok((await run(cluster(), [], { stdoutTty: true })).out.includes('\x1b[32mSucceeded\x1b[0m'));
    assert.ok(!(await run(cluster(), [])).out.includes('\x1b['));
  });
});

describe('get --watch', () => {
  it('prints the table, then a row per change, until Ctrl-C (exit 0)', async () => {
    const c = cluster();
    const io = captureIo(['agents', '--watch']);
    const deps = fakeDeps(c);
    await deps.clock.advance(60_000);
    const done = guarded(getSpec, io, deps);
    await until(() => c.watching(AGENTS_PATH) > 0 && io.stdoutText() !== '', 'the table and the watch');
    c.put(AGENTS_PATH, {
      ...c.get(AGENTS_PATH, 'hello-b')!,
      status: { phase: 'Running', jobName: 'agent-job-hello-b' },
    });
    await until(() => io.stdoutText().includes('Running'), 'the changed row');
    deps.fireInterrupt();
    assert.equal(await done, 0);
    assert.equal(
      io.stdoutText(),
      [
        'NAME      PHASE       STATION   JOB                 AGE',
        'hello-a   Succeeded   hello     agent-job-hello-a   60s',
        'hello-b   Pending     hello                         30s',
        'hello-b   Running     hello     agent-job-hello-b   30s',
        '',
      ].join('\n'),
    );
    assert.equal(c.watching(AGENTS_PATH), 0, 'the watch is closed');
    assert.equal(
      c.calls('GET', AGENTS_PATH).filter((r) => r.query.watch === 1).length,
      1,
      'one watch, no polling',
    );
  });

  it('one name: a field selector; -o name prints each change', async () => {
    const c = cluster();
    const io = captureIo(['agent', 'hello-b', '-w', '-o', 'name']);
    const deps = fakeDeps(c);
    const done = guarded(getSpec, io, deps);
    await until(() => c.watching(AGENTS_PATH) > 0 && io.stdoutText() !== '', 'the watch');
    c.put(AGENTS_PATH, { ...c.get(AGENTS_PATH, 'hello-a')!, status: { phase: 'Failed' } });
    c.put(AGENTS_PATH, { ...c.get(AGENTS_PATH, 'hello-b')!, status: { phase: 'Running' } });
    await until(() => io.stdoutText().split('\n').length > 2, 'the change');
    deps.fireInterrupt();
    assert.equal(await done, 0);
    assert.equal(io.stdoutText(), 'agent.agents.re-cinq.com/hello-b\nagent.agents.re-cinq.com/hello-b\n');
    const w = c.calls('GET', AGENTS_PATH).find((r) => r.query.watch === 1);
    assert.equal(w?.query.fieldSelector, 'metadata.name=hello-b');
  });

  it('an empty list prints the header with the first row that appears', async () => {
    const c = new FakeCluster();
    const io = captureIo(['--watch']);
    const deps = fakeDeps(c);
    const done = guarded(getSpec, io, deps);
    await until(() => c.watching(AGENTS_PATH) > 0 && io.stderrText() !== '', 'the watch');
    assert.equal(io.stderrText(), 'No resources found in team namespace.\n');
    c.put(AGENTS_PATH, rawAgent('new') as Obj);
    await until(() => io.stdoutText() !== '', 'the row');
    deps.fireInterrupt();
    assert.equal(await done, 0);
    assert.match(io.stdoutText(), /^NAME\s+PHASE\s+STATION\s+JOB\s+AGE\nnew\s+Pending\s+hello/);
  });

  it('watching one name that does not exist is exit 4, as kubectl', async () => {
    const io = captureIo(['agent', 'nope', '-w']);
    assert.equal(await guarded(getSpec, io, fakeDeps(cluster())), 4);
    assert.equal(io.stderrText(), 'error: agent "nope" in namespace "team" not found\n');
  });

  it('a refused watch is exit 3', async () => {
    const c = cluster();
    c.override = (req) =>
      req.path === AGENTS_PATH
        ? { status: 403, body: { kind: 'Status', code: 403, message: 'no' } }
        : undefined;
    const io = captureIo(['-w']);
    assert.equal(await guarded(getSpec, io, fakeDeps(c)), 3);
    assert.equal(io.stderrText(), 'error: not allowed (403): no\n');
  });
});

describe('output helpers', () => {
  it('forOutput hides managedFields only', () => {
    const o = { metadata: { name: 'x', managedFields: [] }, spec: {} };
    assert.deepEqual(forOutput(o), { metadata: { name: 'x' }, spec: {} });
    const clean = { metadata: { name: 'x' } };
    assert.equal(forOutput(clean), clean);
  });
  it('formatObjects: an empty list is an empty List', () => {
    assert.deepEqual(JSON.parse(formatObjects(AGENTS_KIND, [], 'json', false)), listOf([]));
    assert.equal(formatObjects(AGENTS_KIND, [], 'name', false), '');
  });
});
