import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createServerMetrics, REQUEST_DURATION_BUCKETS } from './server-metrics.ts';

/** The value of one series in the exposition text (undefined when absent). */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('server metrics', () => {
  it('starts with the limit and nothing in flight, and no request series', async () => {
    const { body, contentType } = await createServerMetrics(3).render();
    assert.match(contentType, /^text\/plain/);
    assert.equal(value(body, 'agent_server_concurrency_limit'), 3);
    assert.equal(value(body, 'agent_server_requests_in_flight'), 0);
    assert.equal(value(body, 'agent_server_request_duration_seconds_count'), 0);
    assert.ok(!body.includes('agent_server_requests_total{'));
  });

  it('counts requests by code and their durations, and tracks turns in flight', async () => {
    const m = createServerMetrics(4);
    m.requestDone(200, 0.2);
    m.requestDone(200, 7);
    m.requestDone(429, 0.001);
    m.requestDone(504, 301);
    m.setInFlight(2);
    const { body } = await m.render();
    assert.equal(value(body, 'agent_server_requests_total{code="200"}'), 2);
    assert.equal(value(body, 'agent_server_requests_total{code="429"}'), 1);
    assert.equal(value(body, 'agent_server_requests_total{code="504"}'), 1);
    assert.equal(value(body, 'agent_server_request_duration_seconds_count'), 4);
    assert.equal(value(body, 'agent_server_request_duration_seconds_bucket{le="1"}'), 2);
    assert.equal(value(body, 'agent_server_request_duration_seconds_bucket{le="300"}'), 3);
    assert.equal(value(body, 'agent_server_request_duration_seconds_bucket{le="600"}'), 4);
    assert.equal(value(body, 'agent_server_requests_in_flight'), 2);
    assert.equal(REQUEST_DURATION_BUCKETS.at(-1), 600);
  });

  it('says in its help that a request is counted by how it ended, a stream too', async () => {
    const m = createServerMetrics(1);
    m.requestDone(499, 3);
    const { body } = await m.render();
    assert.equal(value(body, 'agent_server_requests_total{code="499"}'), 1);
    const help = body.split('\n').find((l) => l.startsWith('# HELP agent_server_requests_total '));
    assert.match(help ?? '', /ended as/);
    assert.match(help ?? '', /stream/);
    assert.match(help ?? '', /499/);
  });

  it('keeps each server on a registry of its own', async () => {
    const a = createServerMetrics(1);
    const b = createServerMetrics(2);
    a.requestDone(200, 1);
    assert.equal(value((await b.render()).body, 'agent_server_request_duration_seconds_count'), 0);
    assert.equal(value((await b.render()).body, 'agent_server_concurrency_limit'), 2);
  });
});
