// Property tests of `parseSinkConfig` (issue 13 §2): whatever `AGENT_SINKS` and `AGENT_NOTIFY_URL` hold, it never
// throws, every sink it returns is usable, and every entry of the array is accounted for: one sink or one problem.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { EnvProblem } from './env.ts';
import { isHttpUrl, parseSinkConfig, RESERVED_ENV_NAMES, type SinkConfig } from './sink-config.ts';

const padded = (arb: fc.Arbitrary<string>) =>
  fc
    .tuple(fc.constantFrom('', ' ', '\t', '\n '), arb, fc.constantFrom('', ' ', '\r\n'))
    .map((p) => p.join(''));
const text = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 }));
const urlText = fc.oneof(
  fc.webUrl(),
  padded(fc.webUrl()),
  fc.constantFrom('ftp://x', 'http://', 'https://sink.example:9000/e', 'not a url', '', '   '),
  text,
);
const secretName = fc.oneof(
  fc.constantFrom('', ' ', 'SINK_HEADERS', ' sink-headers ', ...RESERVED_ENV_NAMES),
  text,
);

/** One AGENT_SINKS entry: a usable-looking sink or anything else JSON can hold. */
const entry: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ type: fc.constant('stdout') }),
  fc.record(
    { type: fc.constant('http'), url: fc.oneof(urlText, fc.constant(null)), headers_secret: secretName },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    { type: fc.constant('file'), path: fc.oneof(text, padded(text), fc.constant(null)) },
    { requiredKeys: ['type'] },
  ),
  fc.record({ type: fc.jsonValue(), url: fc.jsonValue(), path: fc.jsonValue() }, { requiredKeys: [] }),
  fc.jsonValue(),
);

const sinksValue = fc.oneof(
  { weight: 5, arbitrary: fc.array(entry, { maxLength: 8 }).map((a) => JSON.stringify(a)) },
  { weight: 1, arbitrary: fc.json() },
  { weight: 1, arbitrary: text },
  { weight: 1, arbitrary: fc.array(entry, { maxLength: 8 }).map((a) => JSON.stringify(a).slice(0, -1)) },
);

function checkSink(s: SinkConfig): void {
  switch (s.type) {
    case 'stdout':
      assert.deepEqual(Object.keys(s), ['type']);
      return;
    case 'http':
      assert.ok(isHttpUrl(s.url), `http sink with url ${JSON.stringify(s.url)}`);
      assert.equal(s.url, s.url.trim());
      if (s.headersSecret !== undefined) {
        assert.notEqual(s.headersSecret, '');
        assert.equal(s.headersSecret, s.headersSecret.trim());
        assert.ok(!RESERVED_ENV_NAMES.has(s.headersSecret), 'a reserved name is never a headers secret');
      }
      return;
    case 'file':
      assert.notEqual(s.path, '');
      assert.equal(s.path, s.path.trim());
      return;
    default:
      assert.fail(`unknown sink ${JSON.stringify(s)}`);
  }
}

describe('parseSinkConfig (properties)', () => {
  it('never throws; returns usable sinks; each array entry gives one sink or one problem', () => {
    fc.assert(
      fc.property(
        fc.option(sinksValue, { nil: undefined }),
        fc.option(urlText, { nil: undefined }),
        (sinks, notify) => {
          const env = { AGENT_SINKS: sinks, AGENT_NOTIFY_URL: notify };
          const problems: EnvProblem[] = [];
          const out = parseSinkConfig(env, problems);
          for (const s of out) checkSink(s);
          for (const p of problems) assert.ok(p.name === 'AGENT_SINKS' || p.name === 'AGENT_NOTIFY_URL');
          // AGENT_NOTIFY_URL: one http sink (last) or one problem, when set.
          const notifyText = (notify ?? '').trim();
          const notifyProblems = problems.filter((p) => p.name === 'AGENT_NOTIFY_URL').length;
          let fromSinks = out.length;
          if (notifyText !== '') {
            if (isHttpUrl(notifyText)) {
              assert.deepEqual(out.at(-1), { type: 'http', url: notifyText });
              assert.equal(notifyProblems, 0);
              fromSinks--;
            } else assert.equal(notifyProblems, 1);
          } else assert.equal(notifyProblems, 0);
          // AGENT_SINKS: an array accounts for every entry; anything else is one problem and no sinks.
          const sinkProblems = problems.filter((p) => p.name === 'AGENT_SINKS').length;
          const raw = (sinks ?? '').trim();
          let parsed: unknown;
          try {
            parsed = raw === '' ? [] : JSON.parse(raw);
          } catch {
            parsed = undefined;
          }
          if (Array.isArray(parsed)) assert.equal(fromSinks + sinkProblems, parsed.length);
          else {
            assert.equal(fromSinks, 0);
            assert.equal(sinkProblems, 1);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('keeps well-formed entries, in order, with their values trimmed', () => {
    const good = fc.oneof(
      fc.constant({ entry: { type: 'stdout' }, want: { type: 'stdout' } as SinkConfig }),
      fc.record({ url: fc.webUrl(), pad: fc.constantFrom('', ' ') }).map(({ url, pad }) => ({
        entry: { type: 'http', url: `${pad}${url}${pad}`, headers_secret: ` H${pad}` },
        want: { type: 'http', url, headersSecret: 'H' } as SinkConfig,
      })),
      fc
        .string({ minLength: 1, maxLength: 20 })
        .filter((p) => p.trim() !== '')
        .map((p) => ({
          entry: { type: 'file', path: p },
          want: { type: 'file', path: p.trim() } as SinkConfig,
        })),
    );
    fc.assert(
      fc.property(fc.array(good, { maxLength: 6 }), (goods) => {
        const problems: EnvProblem[] = [];
        const out = parseSinkConfig({ AGENT_SINKS: JSON.stringify(goods.map((g) => g.entry)) }, problems);
        assert.deepEqual(problems, []);
        assert.deepEqual(
          out,
          goods.map((g) => g.want),
        );
      }),
      { numRuns: 300 },
    );
  });
});
