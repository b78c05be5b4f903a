// Contract: the vendors' official SDKs drive the batch fakes of this folder (create, poll, results, cancel, delete,
// files) and read what the fakes scripted. A fake the vendor's own client rejects or misreads fails here; the
// adapter-level contract (test/unit/batch-vendor-contract.test.ts) checks our own clients against the same fakes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI, { toFile } from 'openai';
import { startFakeAnthropic } from './anthropic.ts';
import { startFakeGemini } from './gemini.ts';
import { startFakeOpenAI } from './openai.ts';

test('Anthropic batches with @anthropic-ai/sdk: create, retrieve, results, cancel, delete', async (t) => {
  const fake = await startFakeAnthropic();
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const params = {
    model: 'claude-sonnet-5-5',
    max_tokens: 64,
    messages: [{ role: 'user' as const, content: 'hello' }],
  };

  const created = await client.messages.batches.create({ requests: [{ custom_id: 'run-1', params }] });
  assert.match(created.id, /^msgbatch_/);
  assert.equal(created.processing_status, 'in_progress');
  assert.deepEqual(created.request_counts, {
    processing: 1,
    succeeded: 0,
    errored: 0,
    canceled: 0,
    expired: 0,
  });
  assert.equal(created.results_url, null);

  fake.finish(created.id, { kind: 'succeeded', text: 'the answer' });
  const ended = await client.messages.batches.retrieve(created.id);
  assert.equal(ended.processing_status, 'ended');
  assert.equal(ended.request_counts.succeeded, 1);
  assert.ok(ended.ended_at !== null && !Number.isNaN(Date.parse(ended.ended_at)));

  const results = [];
  for await (const line of await client.messages.batches.results(created.id)) results.push(line);
  assert.equal(results.length, 1);
  const [only] = results;
  assert.equal(only?.custom_id, 'run-1');
  assert.ok(only?.result.type === 'succeeded');
  assert.deepEqual(
    only.result.message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])),
    ['the answer'],
  );
  assert.equal(only.result.message.stop_reason, 'end_turn');

  const deleted = await client.messages.batches.delete(created.id);
  assert.deepEqual(deleted, { id: created.id, type: 'message_batch_deleted' });
  await assert.rejects(client.messages.batches.retrieve(created.id), Anthropic.NotFoundError);

  const second = await client.messages.batches.create({ requests: [{ custom_id: 'run-2', params }] });
  const cancelling = await client.messages.batches.cancel(second.id);
  assert.equal(cancelling.processing_status, 'canceling');
  assert.ok(cancelling.cancel_initiated_at !== null);
  fake.finish(second.id, { kind: 'cancelled' });
  const cancelledResults = [];
  for await (const line of await client.messages.batches.results(second.id))
    cancelledResults.push(line.result.type);
  assert.deepEqual(cancelledResults, ['canceled']);
  const listed = [];
  for await (const b of client.messages.batches.list()) listed.push(b.id);
  assert.deepEqual(listed, [second.id]);
});

test('OpenAI batches with the openai SDK: files.create, batches.create/retrieve/cancel, files.content, files.delete', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const line = {
    custom_id: 'run-1',
    method: 'POST',
    url: '/v1/responses',
    body: { model: 'gpt-5.5', input: [{ role: 'user', content: 'hello' }], max_output_tokens: 64 },
  };
  const file = await client.files.create({
    file: await toFile(Buffer.from(`${JSON.stringify(line)}\n`), 'input.jsonl'),
    purpose: 'batch',
  });
  assert.match(file.id, /^file-/);
  assert.equal(file.purpose, 'batch');
  assert.equal(file.filename, 'input.jsonl');

  const batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/responses',
    completion_window: '24h',
  });
  assert.match(batch.id, /^batch_/);
  assert.equal(batch.input_file_id, file.id);
  assert.ok(['validating', 'in_progress'].includes(batch.status));

  fake.finish(batch.id, { kind: 'succeeded', text: 'the answer' });
  const done = await client.batches.retrieve(batch.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.request_counts, { total: 1, completed: 1, failed: 0 });
  assert.ok(typeof done.output_file_id === 'string');

  const content = await (await client.files.content(done.output_file_id)).text();
  const out = JSON.parse(content.trim()) as {
    custom_id: string;
    response: { status_code: number; body: OpenAI.Responses.Response };
  };
  assert.equal(out.custom_id, 'run-1');
  assert.equal(out.response.status_code, 200);
  const texts = out.response.body.output.flatMap((o) =>
    o.type === 'message' ? o.content.flatMap((c) => (c.type === 'output_text' ? [c.text] : [])) : [],
  );
  assert.deepEqual(texts, ['the answer']);

  const removed = await client.files.delete(done.output_file_id);
  assert.deepEqual([removed.id, removed.deleted], [done.output_file_id, true]);
  const removedInput = await client.files.delete(file.id);
  assert.equal(removedInput.deleted, true);

  const file2 = await client.files.create({
    file: await toFile(Buffer.from(`${JSON.stringify({ ...line, custom_id: 'run-2' })}\n`), 'input.jsonl'),
    purpose: 'batch',
  });
  const b2 = await client.batches.create({
    input_file_id: file2.id,
    endpoint: '/v1/responses',
    completion_window: '24h',
  });
  const cancelling = await client.batches.cancel(b2.id);
  assert.equal(cancelling.status, 'cancelling');
  fake.finish(b2.id, { kind: 'cancelled' });
  assert.equal((await client.batches.retrieve(b2.id)).status, 'cancelled');
  const ids = [];
  for await (const b of client.batches.list()) ids.push(b.id);
  assert.deepEqual(ids.sort(), [batch.id, b2.id].sort());
});

test('Gemini batches with @google/genai (inline requests): create, get, cancel, delete, list', async (t) => {
  const fake = await startFakeGemini();
  t.after(() => fake.close());
  // v1beta: where the batch API and our adapter live (the SDK's own default API version is v1).
  const ai = new GoogleGenAI({
    apiKey: fake.apiKey,
    httpOptions: { baseUrl: fake.baseUrl, apiVersion: 'v1beta' },
  });
  const job = await ai.batches.create({
    model: 'gemini-3.5-pro',
    src: [{ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }],
    config: { displayName: 'run-1' },
  });
  assert.match(String(job.name), /^batches\//);
  assert.equal(job.displayName, 'run-1');
  assert.ok(['JOB_STATE_PENDING', 'JOB_STATE_RUNNING'].includes(String(job.state)), String(job.state));

  fake.finish(String(job.name), { kind: 'succeeded', text: 'the answer' });
  const done = await ai.batches.get({ name: String(job.name) });
  assert.equal(done.state, 'JOB_STATE_SUCCEEDED');
  const inlined = done.dest?.inlinedResponses ?? [];
  assert.equal(inlined.length, 1);
  const parts = inlined[0]?.response?.candidates?.[0]?.content?.parts ?? [];
  assert.deepEqual(
    parts.flatMap((p) => (p.thought === true ? [] : [p.text])),
    ['the answer'],
  );

  await ai.batches.delete({ name: String(job.name) });
  await assert.rejects(ai.batches.get({ name: String(job.name) }), /404|NOT_FOUND/);

  const second = await ai.batches.create({
    model: 'gemini-3.5-pro',
    src: [{ contents: [{ role: 'user', parts: [{ text: 'again' }] }] }],
    config: { displayName: 'run-2' },
  });
  await ai.batches.cancel({ name: String(second.name) });
  const cancelled = await ai.batches.get({ name: String(second.name) });
  assert.equal(cancelled.state, 'JOB_STATE_CANCELLED');
  const names: string[] = [];
  for await (const b of await ai.batches.list()) names.push(String(b.name));
  assert.deepEqual(names, [String(second.name)]);
});
