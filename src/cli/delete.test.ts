import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { deleteSpec, parseDeleteRequest } from './delete.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps, STATIONS_PATH } from './fake-cluster.ts';
import { rawAgent, rawStation } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

describe('delete', () => {
  it('needs a kind and names', () => {
    assert.equal(parseDeleteRequest(['agents', 'a', 'b']).kind.name, 'agents');
    assert.deepEqual(parseDeleteRequest(['stn', 'a']).names, ['a']);
    assert.throws(() => parseDeleteRequest([]), UsageError);
    assert.throws(() => parseDeleteRequest(['agent']), /missing the name of the agent/);
    assert.throws(() => parseDeleteRequest(['pods', 'x']), /unknown kind "pods"/);
  });

  it('deletes each name in the background, as kubectl prints it', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('a') as Obj);
    c.put(AGENTS_PATH, rawAgent('b') as Obj);
    const io = captureIo(['agents', 'a', 'b', '-n', 'team']);
    assert.equal(await guarded(deleteSpec, io, fakeDeps(c)), 0);
    assert.equal(
      io.stdoutText(),
      'agent.agents.re-cinq.com "a" deleted\nagent.agents.re-cinq.com "b" deleted\n',
    );
    assert.equal(c.get(AGENTS_PATH, 'a'), undefined);
    assert.deepEqual(c.calls('DELETE', AGENTS_PATH)[0]?.body, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Background',
    });
  });

  it('tries every name; the exit code is that of the first failure (404 → 4, 403 → 3)', async () => {
    const c = new FakeCluster();
    c.put(STATIONS_PATH, rawStation('s') as Obj);
    const io = captureIo(['station', 'nope', 's']);
    assert.equal(await guarded(deleteSpec, io, fakeDeps(c)), 4);
    assert.equal(io.stderrText(), 'error: station "nope" in namespace "team" not found\n');
    assert.equal(io.stdoutText(), 'station.agents.re-cinq.com "s" deleted\n');
    c.override = (req) =>
      req.method === 'DELETE'
        ? { status: 403, body: { kind: 'Status', code: 403, message: 'cannot delete' } }
        : undefined;
    const refused = captureIo(['agent', 'x']);
    assert.equal(await guarded(deleteSpec, refused, fakeDeps(c)), 3);
    assert.equal(refused.stderrText(), 'error: not allowed (403): cannot delete\n');
  });

  it('refuses an empty name, ., .. and names with / or % (an empty name would delete them all): exit 2, no request', async () => {
    for (const bad of ['', '.', '..', 'a%2Fb', '../x'])
      for (const argv of [
        ['agent', bad],
        ['agents', 'ok', bad],
      ]) {
        const c = new FakeCluster();
        c.put(AGENTS_PATH, rawAgent('ok') as Obj);
        const io = captureIo(argv);
        assert.equal(await guarded(deleteSpec, io, fakeDeps(c)), 2, JSON.stringify(argv));
        assert.equal(c.calls('DELETE', '/').length, 0, 'nothing deleted');
        assert.ok(c.get(AGENTS_PATH, 'ok'), 'the Agents are all there');
        assert.match(io.stderrText(), /^error: .*\(see 'agent-controller delete --help'\)\n$/);
      }
  });

  it('takes KIND/NAME as kubectl does, also as -o name prints it', async () => {
    assert.deepEqual(parseDeleteRequest(['agent/a', 'agents/b']).names, ['a', 'b']);
    assert.equal(parseDeleteRequest(['agent.agents.re-cinq.com/a']).kind.name, 'agents');
    assert.equal(parseDeleteRequest(['stn/s']).kind.name, 'stations');
    assert.throws(() => parseDeleteRequest(['agent/']), /must not be empty/);
    assert.throws(() => parseDeleteRequest(['agent/a', 'station/b']), /one kind at a time/);
    assert.throws(() => parseDeleteRequest(['pod/a']), /unknown kind "pod"/);
    assert.throws(() => parseDeleteRequest(['agent', 'agent/a']), /no need to name the kind/);
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('a') as Obj);
    const io = captureIo(['agent.agents.re-cinq.com/a']);
    assert.equal(await guarded(deleteSpec, io, fakeDeps(c)), 0);
    assert.equal(c.get(AGENTS_PATH, 'a'), undefined);
  });
});
