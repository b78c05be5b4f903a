import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps } from './fake-cluster.ts';
import {
  connectionFlags,
  isCompletionInvocation,
  isPluginInvocation,
  normalizeShortFlags,
  parseDuration,
  parseOutput,
  parseSets,
  programName,
  splitCommand,
  strings,
} from './flags.ts';
import { getSpec } from './get.ts';
import { rawAgent } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

describe('parseDuration', () => {
  it('reads kubectl durations and bare seconds', () => {
    const cases: [string, number][] = [
      ['90s', 90_000],
      ['10m', 600_000],
      ['1h30m', 5_400_000],
      ['1.5h', 5_400_000],
      ['500ms', 500],
      ['2m30s', 150_000],
      ['45', 45_000],
      [' 5s ', 5_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  });
  it('refuses anything else, zero included', () => {
    for (const bad of ['', '0', '0s', 'soon', '5 m', '-5s', '5d', 'm5', '1h-5m'])
      assert.throws(
        () => parseDuration(bad),
        (e) => e instanceof UsageError && /--timeout must be a duration/.test(e.message),
        bad,
      );
  });
});

describe('parseSets', () => {
  it('key=value pairs; values may hold = or be empty; a later key wins', () => {
    assert.deepEqual(parseSets(['a=1', 'b=x=y', 'c=', 'a=2']), { a: '2', b: 'x=y', c: '' });
    assert.deepEqual(parseSets([]), {});
  });
  it('refuses pairs without a key', () => {
    for (const bad of ['novalue', '=x', 'a b=c'])
      assert.throws(
        () => parseSets([bad]),
        (e) => e instanceof UsageError && /--set takes key=value/.test(e.message),
      );
  });
  it('a key named like an inherited property is an own parameter (found by the property test)', () => {
    const sets = parseSets(['__proto__=x', 'constructor=y']);
    assert.deepEqual(Object.keys(sets), ['__proto__', 'constructor']);
    assert.equal(JSON.stringify(sets), '{"__proto__":"x","constructor":"y"}');
    assert.equal(Object.getPrototypeOf(sets), Object.prototype);
  });
  it('every key=value round-trips', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((k) => !/[\s=]/.test(k)),
        fc.string(),
        (k, val) => {
          assert.equal(parseSets([`${k}=${val}`])[k], val);
        },
      ),
    );
  });
});

describe('other flag helpers', () => {
  it('parseOutput', () => {
    assert.equal(parseOutput(undefined), 'table');
    for (const f of ['wide', 'json', 'yaml', 'name']) assert.equal(parseOutput(f), f);
    assert.throws(() => parseOutput('jsonpath'), UsageError);
  });
  it('connectionFlags takes non-empty strings, refuses an empty namespace', () => {
    assert.deepEqual(connectionFlags({ kubeconfig: '/k', context: '', namespace: 'ns', other: 1 }), {
      kubeconfig: '/k',
      context: undefined,
      namespace: 'ns',
    });
    assert.throws(() => connectionFlags({ namespace: '' }), /--namespace must not be empty/);
  });
  it('strings', () => {
    assert.deepEqual(strings(['a', 1, 'b']), ['a', 'b']);
    assert.deepEqual(strings('a'), ['a']);
    assert.deepEqual(strings(undefined), []);
  });
});

describe('how the bundle was invoked', () => {
  it('as kubectl plugin: a file named kubectl-agent*', () => {
    for (const p of [
      '/usr/local/bin/kubectl-agent',
      'kubectl-agent',
      '/tmp/x/kubectl-agent.mjs',
      'C:\\bin\\kubectl-agent.cmd',
    ])
      assert.ok(isPluginInvocation(p), p);
    for (const p of [
      '/usr/bin/agent-controller',
      'dist/agent-controller.mjs',
      '/x/kubectl-agentless/y',
      undefined,
      '',
    ])
      assert.ok(!isPluginInvocation(p), String(p));
    assert.equal(programName('/bin/kubectl-agent'), 'kubectl agent');
    assert.equal(programName('/app/agent-controller.mjs'), 'agent-controller');
  });
  it("as kubectl's completion of the plugin: kubectl_complete-agent*", () => {
    assert.ok(isCompletionInvocation('/usr/local/bin/kubectl_complete-agent'));
    assert.ok(!isCompletionInvocation('/usr/local/bin/kubectl-agent'));
  });
});

describe('splitCommand (flags before the command, as kubectl allows)', () => {
  it('finds the first word that is neither a flag nor a connection flag value', () => {
    assert.deepEqual(splitCommand(['-n', 'team', 'get', 'agents']), {
      command: 'get',
      rest: ['-n', 'team', 'agents'],
    });
    assert.deepEqual(splitCommand(['--kubeconfig', '/k', '--context', 'c', 'run', 'x']), {
      command: 'run',
      rest: ['--kubeconfig', '/k', '--context', 'c', 'x'],
    });
    assert.deepEqual(splitCommand(['--namespace=team', 'logs', 'a']), {
      command: 'logs',
      rest: ['--namespace=team', 'a'],
    });
    assert.deepEqual(splitCommand(['-n', 'x']), { command: undefined, rest: ['-n', 'x'] });
    assert.deepEqual(splitCommand(['--', 'get']), { command: undefined, rest: ['--', 'get'] });
    assert.deepEqual(splitCommand([]), { command: undefined, rest: [] });
  });
});

describe('kubectl short-flag forms', () => {
  it('-X=value is -X value for short flags that take a value, and only for them', () => {
    const flags = {
      namespace: { type: 'string', short: 'n' },
      output: { type: 'string', short: 'o' },
      watch: { type: 'boolean', short: 'w' },
    } as const;
    assert.deepEqual(normalizeShortFlags(['-n=team', '-o=yaml', '-w', 'x', '-n=', '--', '-n=keep'], flags), [
      '-n',
      'team',
      '-o',
      'yaml',
      '-w',
      'x',
      '-n',
      '',
      '--',
      '-n=keep',
    ]);
    assert.deepEqual(normalizeShortFlags(['-w=true', '--namespace=x', '-nteam'], flags), [
      '-w=true',
      '--namespace=x',
      '-nteam',
    ]);
  });

  it('get -n=team -o=name: the namespace "team", the format name (not "=team", not a usage error)', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('a') as Obj);
    const io = captureIo(['agents', '-n=team', '-o=name']);
    const deps = fakeDeps(c);
    assert.equal(await guarded(getSpec, io, deps), 0, io.stderrText());
    assert.equal(deps.connected[0]?.namespace, 'team');
    assert.equal(io.stdoutText(), 'agent.agents.re-cinq.com/a\n');
  });
});
