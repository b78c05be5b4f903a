// The test OpenTelemetry Collector's output, parsed (the collector itself runs in the e2e tier: test/e2e/tracing).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSpansJsonl } from './otelcol.ts';

describe('parseSpansJsonl', () => {
  it('flattens resourceSpans/scopeSpans/spans with resource attributes and scope name', () => {
    const line = JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
          scopeSpans: [
            {
              scope: { name: 'lib' },
              spans: [
                {
                  traceId: 'ab',
                  spanId: 'cd',
                  name: 'one',
                  attributes: [{ key: 'n', value: { intValue: '3' } }],
                },
                { traceId: 'ab', spanId: 'ef', name: 'two' },
              ],
            },
          ],
        },
      ],
    });
    // The unterminated last line is still being written and is left out.
    const spans = parseSpansJsonl(`${line}\n${line.slice(0, 20)}`);
    assert.deepEqual(
      spans.map((s) => [s.name, s.traceId, s.spanId, s.scope, s.resource['service.name'], s.attrs]),
      [
        ['one', 'ab', 'cd', 'lib', 'svc', { n: '3' }],
        ['two', 'ab', 'ef', 'lib', 'svc', {}],
      ],
    );
  });
});
