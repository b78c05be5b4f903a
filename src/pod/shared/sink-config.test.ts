import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EnvProblem } from './env.ts';
import { parseSinkConfig } from './sink-config.ts';

const parse = (env: Record<string, string>) => {
  const problems: EnvProblem[] = [];
  return { sinks: parseSinkConfig(env, problems), problems: problems.map((p) => p.message) };
};

describe('sink configuration', () => {
  it('is empty when nothing is configured', () => {
    assert.deepEqual(parse({}), { sinks: [], problems: [] });
    assert.deepEqual(parse({ AGENT_SINKS: '[]' }), { sinks: [], problems: [] });
  });

  it('parses every sink type in order and appends AGENT_NOTIFY_URL last', () => {
    const r = parse({
      AGENT_SINKS: JSON.stringify([
        { type: 'stdout' },
        { type: 'http', url: 'https://hooks.example.com/x', headers_secret: 'SINK_AUTH' },
        { type: 'file', path: '/tmp/events.jsonl' },
        { type: 'http', url: 'http://127.0.0.1:9/y', headers_secret: '' },
      ]),
      AGENT_NOTIFY_URL: 'http://127.0.0.1:18099/notify',
    });
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.sinks, [
      { type: 'stdout' },
      { type: 'http', url: 'https://hooks.example.com/x', headersSecret: 'SINK_AUTH' },
      { type: 'file', path: '/tmp/events.jsonl' },
      { type: 'http', url: 'http://127.0.0.1:9/y' },
      { type: 'http', url: 'http://127.0.0.1:18099/notify' },
    ]);
  });

  it('ignores a headers_secret that names a reserved variable', () => {
    const r = parse({ AGENT_SINKS: '[{"type":"http","url":"http://h/x","headers_secret":"AGENT_SINKS"}]' });
    assert.deepEqual(r.sinks, [{ type: 'http', url: 'http://h/x' }]);
  });

  it('skips and reports unusable entries, keeping the rest', () => {
    const r = parse({
      AGENT_SINKS: JSON.stringify([
        'nope',
        { type: 'smtp' },
        { type: 'http' },
        { type: 'http', url: 'ftp://x/y' },
        { type: 'file', path: ' ' },
        { type: 'http', url: 42 },
        { type: 'file', path: '/ok' },
      ]),
    });
    assert.deepEqual(r.sinks, [{ type: 'file', path: '/ok' }]);
    assert.equal(r.problems.length, 6);
    assert.match(r.problems[1] ?? '', /AGENT_SINKS\[1\] has an unknown type/);
  });

  it('reports malformed JSON and non-arrays without crashing', () => {
    assert.deepEqual(parse({ AGENT_SINKS: '[{' }).sinks, []);
    assert.match(parse({ AGENT_SINKS: '[{' }).problems[0] ?? '', /not valid JSON/);
    assert.match(parse({ AGENT_SINKS: '{"type":"stdout"}' }).problems[0] ?? '', /must be a JSON array/);
    assert.deepEqual(parse({ AGENT_NOTIFY_URL: 'not a url' }).sinks, []);
  });
});
