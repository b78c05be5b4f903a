import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grafanaVariableQueryNames, PromqlReadError, promqlNames } from './promql.ts';

describe('promqlNames', () => {
  it('finds metric names and functions, not label names, keywords, strings, durations or numbers', () => {
    const got = promqlNames(
      'sum by (namespace, le) (rate(http_requests_total{job="api", code=~"5.."}[5m] offset 1h)) ' +
        '/ on (namespace) group_left (team) max without (instance) (up == bool 1) > 0.25e1 ' +
        'unless ignoring (pod) absent(other:recorded:rate5m) or vector(0) and time() > 1',
    );
    assert.deepEqual(got.metrics, ['http_requests_total', 'up', 'other:recorded:rate5m']);
    assert.deepEqual(got.functions, ['sum', 'rate', 'max', 'absent', 'vector', 'time']);
  });

  it('reads each name once, in order of first use', () => {
    assert.deepEqual(promqlNames('a + b - a * c').metrics, ['a', 'b', 'c']);
  });

  it('skips Grafana variables in selectors, ranges and as values', () => {
    const got = promqlNames(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a Grafana variable reference, not a template
      'histogram_quantile(0.99, sum by (le) (rate(x_bucket{namespace=~"$namespace"}[$__rate_interval]))) * ${factor} + $scale',
    );
    assert.deepEqual(got.metrics, ['x_bucket']);
    assert.deepEqual(got.functions, ['histogram_quantile', 'sum', 'rate']);
  });

  it('skips quotes inside strings, subqueries and the @ modifier', () => {
    const got = promqlNames(
      'label_replace(max_over_time(m[1h:5m] @ end()), "dst", "a\\"}b", "src", \'(.*)\') + `raw "x"` ',
    );
    assert.deepEqual(got.metrics, ['m']);
    assert.deepEqual(got.functions, ['label_replace', 'max_over_time', 'end']);
  });

  it('reads a metric name written across lines', () => {
    assert.deepEqual(promqlNames('sum(a)\n  / on (x)\n  sum(b)').metrics, ['a', 'b']);
  });

  it('throws on unbalanced text it cannot follow', () => {
    assert.throws(() => promqlNames('a{job="x"'), PromqlReadError);
    assert.throws(() => promqlNames('rate(a[5m)'), PromqlReadError);
    assert.throws(() => promqlNames('a{job="x}'), PromqlReadError);
  });
});

describe('grafanaVariableQueryNames', () => {
  it('reads the selector of label_values and the expression of query_result', () => {
    assert.deepEqual(
      grafanaVariableQueryNames('label_values(controller_is_leader{job="x"}, namespace)').metrics,
      ['controller_is_leader'],
    );
    assert.deepEqual(grafanaVariableQueryNames('label_values(namespace)').metrics, []);
    assert.deepEqual(grafanaVariableQueryNames('query_result(topk(3, up))').metrics, ['up']);
    assert.deepEqual(grafanaVariableQueryNames('metrics(controller_.*)').metrics, []);
    assert.deepEqual(grafanaVariableQueryNames('up').metrics, ['up']);
  });
});
