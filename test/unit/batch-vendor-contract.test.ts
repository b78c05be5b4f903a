// One behavioural contract for every `BatchVendor` adapter (src/vendors/batch/port.ts), run against its loopback fake
// (test/support/fake-vendors). The same cases run for Anthropic, OpenAI and Gemini; where the vendors differ by design
// (docs/reference/vendor-apis.md#common-rules, docs/reference/vendor-apis.md#finding-an-earlier-submission), the
// difference is a field of the table below, not a branch inside a test.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Result } from '../../src/shared/result.ts';
import { anthropicBatches } from '../../src/vendors/batch/anthropic.ts';
import { geminiBatches } from '../../src/vendors/batch/gemini.ts';
import { openaiBatches } from '../../src/vendors/batch/openai.ts';
import {
  type BatchError,
  type BatchOutcome,
  type BatchProvider,
  type BatchRequest,
  type BatchState,
  type BatchVendor,
  type FindOutcome,
  LIST_PAGE_SIZE,
  type RenderContext,
  runCustomId,
  type VendorCall,
} from '../../src/vendors/batch/port.ts';
import { startFakeAnthropic } from '../support/fake-vendors/anthropic.ts';
import { startFakeGemini } from '../support/fake-vendors/gemini.ts';
import { startFakeOpenAI } from '../support/fake-vendors/openai.ts';
import type {
  FakeBatch,
  FakeOutcome,
  FakeVendorOptions,
  FakeVendorServer,
} from '../support/fake-vendors/types.ts';

type Json = Record<string, unknown>;
type AuthHeader = 'x-api-key' | 'authorization' | 'x-goog-api-key';
const AUTH_HEADERS: readonly AuthHeader[] = ['x-api-key', 'authorization', 'x-goog-api-key'];

/**
 * What differs between the vendors, as docs/reference/vendor-apis.md describes them. Everything else is one contract.
 */
interface VendorCase {
  readonly provider: BatchProvider;
  readonly start: (options?: FakeVendorOptions) => Promise<FakeVendorServer>;
  readonly vendor: BatchVendor;
  readonly model: string;
  /**
   * The one key header the adapter sends (docs/reference/vendor-apis.md#anthropic-headers,
   * docs/reference/vendor-apis.md#openai-auth, docs/reference/vendor-apis.md#gemini-auth).
   */
  readonly authHeader: AuthHeader;
  /** Path (with query) of the batch create request, as the fake records it. */
  readonly createPath: RegExp;
  /** Path of the poll of batch `id`. */
  readonly pollPath: (id: string) => string;
  /** The CLI's success terminal line (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines). */
  readonly isSuccessTerminal: (line: Json) => boolean;
  /** The CLI's error terminal line (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines). */
  readonly isErrorTerminal: (line: Json) => boolean;
  /**
   * Asserts the vendor's structured-output field in the params the fake recorded
   * (docs/reference/vendor-apis.md#structured-output).
   */
  readonly assertStructuredParams: (params: unknown, schema: unknown) => void;
  /** Statuses a wrong key may come back as (Gemini answers 400 API_KEY_INVALID, mapped to 401; or 403). */
  readonly wrongKeyStatuses: readonly number[];
  /** What `find` answers while the matching batch has not ended (Anthropic cannot read a custom id yet). */
  readonly findWhilePending: 'found' | 'undecided';
  /** What `cleanup` answers for a batch that has not ended (Anthropic/OpenAI cancel first; Gemini deletes). */
  readonly cleanupWhilePending: 'pending' | 'done';
}

const at = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, key) => (isJson(v) ? v[key] : undefined), value);

const VENDORS: readonly VendorCase[] = [
  {
    provider: 'anthropic',
    start: startFakeAnthropic,
    vendor: anthropicBatches,
    model: 'claude-opus-5-5',
    authHeader: 'x-api-key',
    createPath: /^\/v1\/messages\/batches$/,
    pollPath: (id) => `/v1/messages/batches/${id}`,
    isSuccessTerminal: (l) => l.type === 'result' && l.is_error === false,
    isErrorTerminal: (l) => l.type === 'result' && l.is_error === true,
    assertStructuredParams: (params, schema) => {
      assert.equal(at(params, 'output_config', 'format', 'type'), 'json_schema');
      assert.deepEqual(at(params, 'output_config', 'format', 'schema'), schema);
    },
    wrongKeyStatuses: [401],
    findWhilePending: 'undecided',
    cleanupWhilePending: 'pending',
  },
  {
    provider: 'openai',
    start: startFakeOpenAI,
    vendor: openaiBatches,
    model: 'gpt-6.1-sol',
    authHeader: 'authorization',
    createPath: /^\/v1\/batches$/,
    pollPath: (id) => `/v1/batches/${id}`,
    isSuccessTerminal: (l) => l.type === 'turn.completed',
    isErrorTerminal: (l) => l.type === 'turn.failed',
    assertStructuredParams: (params, schema) => {
      assert.equal(at(params, 'text', 'format', 'type'), 'json_schema');
      assert.deepEqual(at(params, 'text', 'format', 'schema'), schema);
    },
    wrongKeyStatuses: [401],
    findWhilePending: 'found',
    cleanupWhilePending: 'pending',
  },
  {
    provider: 'gemini',
    start: startFakeGemini,
    vendor: geminiBatches,
    model: 'gemini-3.8-flash',
    authHeader: 'x-goog-api-key',
    createPath: /^\/v1beta\/models\/[^/]+:batchGenerateContent$/,
    pollPath: (id) => `/v1beta/${id}`,
    isSuccessTerminal: (l) => l.type === 'result' && l.status === 'success',
    isErrorTerminal: (l) => l.type === 'result' && l.status === 'error',
    assertStructuredParams: (params, schema) => {
      assert.deepEqual(at(params, 'generationConfig', 'responseJsonSchema'), schema);
      assert.equal(at(params, 'generationConfig', 'responseMimeType'), 'application/json');
    },
    wrongKeyStatuses: [401, 403],
    findWhilePending: 'found',
    cleanupWhilePending: 'done',
  },
];

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' } },
  required: ['answer'],
  additionalProperties: false,
} as const;
const SAMPLING = /"(temperature|top_p|top_k|topP|topK)"/;
const TEXT = 'hello from the contract suite';
const DEADLINE_MS = 2_000;

/** The failure outcomes every vendor maps to `failed`, with what the message must say. */
const FAILURES: readonly {
  readonly name: string;
  readonly outcome: FakeOutcome;
  readonly message: RegExp;
}[] = [
  {
    name: 'errored',
    outcome: { kind: 'errored', message: 'prompt is too long' },
    message: /prompt is too long/,
  },
  { name: 'expired', outcome: { kind: 'expired' }, message: /expired/i },
  { name: 'cancelled', outcome: { kind: 'cancelled' }, message: /cancel/i },
  { name: 'refused', outcome: { kind: 'refused' }, message: /refus|blocked/i },
  {
    name: 'batchFailed',
    outcome: { kind: 'batchFailed', message: 'input file is malformed' },
    message: /input file is malformed/,
  },
];

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every string and object anywhere inside `value`. */
function* walk(value: unknown): Generator<unknown> {
  yield value;
  if (Array.isArray(value)) for (const v of value) yield* walk(v);
  else if (isJson(value)) for (const v of Object.values(value)) yield* walk(v);
}

function parseLines(lines: readonly string[]): Json[] {
  return lines.map((line, i) => {
    assert.ok(!line.includes('\n'), `line ${i} holds a newline`);
    const parsed: unknown = JSON.parse(line);
    assert.ok(isJson(parsed), `line ${i} is not a JSON object: ${line}`);
    return parsed;
  });
}

/** Whether some line carries `value`, as an object or as a JSON string of it. */
function carriesJson(lines: readonly Json[], value: unknown): boolean {
  for (const node of walk(lines)) {
    if (typeof node === 'string') {
      try {
        assert.deepEqual(JSON.parse(node), value);
        return true;
      } catch {}
    } else if (isJson(node)) {
      try {
        assert.deepEqual(node, value);
        return true;
      } catch {}
    }
  }
  return false;
}

function carriesText(lines: readonly Json[], text: string): boolean {
  for (const node of walk(lines)) if (typeof node === 'string' && node.includes(text)) return true;
  return false;
}

function value<T>(result: Result<T, BatchError>, what: string): T {
  if (!result.ok) assert.fail(`${what} failed: ${JSON.stringify(result.error)}`);
  return result.value;
}

function failure<T>(result: Result<T, BatchError>, what: string): BatchError {
  if (result.ok) assert.fail(`${what} should have failed, got ${JSON.stringify(result.value)}`);
  return result.error;
}

function ended(state: BatchState): BatchOutcome {
  assert.equal(state.kind, 'ended', `expected an ended batch, got ${JSON.stringify(state)}`);
  return (state as Extract<BatchState, { kind: 'ended' }>).outcome;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: readonly string[];
}

/** A call against `fake` whose `fetch` records what the adapter sent and whose `sleep` records the waits asked. */
function harness(fake: FakeVendorServer, overrides: Partial<VendorCall> = {}) {
  const sleeps: number[] = [];
  const sent: Sent[] = [];
  const call: VendorCall = {
    apiKey: fake.apiKey,
    baseUrl: fake.baseUrl,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const names = [...new Headers(init?.headers).keys()].map((n) => n.toLowerCase());
      sent.push({ method: init?.method ?? 'GET', url: String(input), headers: names });
      return globalThis.fetch(input, init);
    }) as typeof fetch,
    timeoutMs: 2_000,
    attempts: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
  };
  return { call, sleeps, sent };
}

for (const v of VENDORS) {
  describe(`BatchVendor contract: ${v.provider}`, () => {
    let fake: FakeVendorServer;

    before(async () => {
      fake = await v.start();
    });
    after(async () => {
      await fake.close();
    });
    beforeEach(() => {
      fake.reset();
    });

    /** A fresh run: its uid, request and render context. */
    function run(over: Partial<BatchRequest> = {}) {
      const uid = randomUUID();
      const request: BatchRequest = {
        customId: runCustomId(uid),
        label: `contract/${v.provider}`,
        model: v.model,
        prompt: `Say hello (${v.provider})`,
        maxTokens: 1024,
        ...over,
      };
      const ctx: RenderContext = {
        sessionId: uid,
        model: request.model,
        prompt: request.prompt,
        structured: request.schema !== undefined,
        durationMs: 1234,
      };
      return { uid, request, ctx };
    }

    function only(): FakeBatch {
      const all = fake.batches();
      assert.equal(all.length, 1, `the fake holds ${all.length} batches`);
      return all[0]!;
    }

    function batch(id: string): FakeBatch {
      const found = fake.batches().find((b) => b.id === id);
      assert.ok(found, `the fake has no batch ${id}`);
      return found;
    }

    const creates = () => fake.requests.filter((r) => r.method === 'POST' && v.createPath.test(r.path));

    async function submitted(over: Partial<BatchRequest> = {}) {
      const r = run(over);
      const h = harness(fake);
      const { id } = value(await v.vendor.submit(r.request, h.call), 'submit');
      return { ...r, ...h, id };
    }

    it('submit creates exactly one batch carrying the request, without sampling parameters, with one key header', async () => {
      const s = await submitted();
      const held = only();
      assert.equal(held.id, s.id);
      assert.equal(held.customId, s.request.customId);
      assert.equal(held.customId, runCustomId(s.uid));
      assert.equal(held.prompt, s.request.prompt);
      assert.equal(held.model, s.request.model);
      assert.equal(held.state, 'pending');
      assert.ok(fake.requests.length > 0);
      for (const r of fake.requests) {
        assert.equal(r.authorized, true, `${r.method} ${r.path} was not authorized`);
        assert.doesNotMatch(r.body, SAMPLING, `${r.method} ${r.path} sent a sampling parameter`);
        assert.ok(!r.path.includes(fake.apiKey), 'the key is in the path');
      }
      assert.ok(s.sent.length > 0);
      for (const req of s.sent) {
        const used = AUTH_HEADERS.filter((h) => req.headers.includes(h));
        assert.deepEqual(
          used,
          [v.authHeader],
          `${req.method} ${req.url} sent ${used.join(', ') || 'no key'}`,
        );
        assert.ok(!req.url.includes(fake.apiKey), 'the key is in the URL');
      }
    });

    it('check of a pending batch answers inProgress with the same id', async () => {
      const s = await submitted();
      const state = value(await v.vendor.check(s.id, s.ctx, s.call), 'check');
      assert.deepEqual(state, { kind: 'inProgress', id: s.id });
    });

    it('a succeeded batch renders the CLI lines ending with the success terminal line, the same every time', async () => {
      const s = await submitted();
      fake.finish(s.id, { kind: 'succeeded', text: TEXT });
      const first = value(await v.vendor.check(s.id, s.ctx, s.call), 'check');
      assert.equal(first.id, s.id);
      const outcome = ended(first);
      assert.equal(outcome.kind, 'succeeded', JSON.stringify(outcome));
      assert.ok(outcome.lines.length >= 2, 'fewer than two lines');
      const lines = parseLines(outcome.lines);
      assert.ok(
        v.isSuccessTerminal(lines.at(-1)!),
        `last line is not the success terminal: ${outcome.lines.at(-1)}`,
      );
      assert.ok(
        lines.slice(0, -1).every((l) => !v.isSuccessTerminal(l)),
        'a success terminal line before the end',
      );
      assert.ok(carriesText(lines, TEXT), 'no line carries the text');
      const again = ended(value(await v.vendor.check(s.id, s.ctx, s.call), 'second check'));
      assert.deepEqual(again.lines, outcome.lines);
    });

    it('a request with a schema sends the structured-output field and the success lines carry the JSON', async () => {
      const s = await submitted({ schema: SCHEMA });
      v.assertStructuredParams(only().params, SCHEMA);
      const answer = { answer: '42' };
      fake.finish(s.id, { kind: 'succeeded', text: JSON.stringify(answer) });
      const outcome = ended(value(await v.vendor.check(s.id, s.ctx, s.call), 'check'));
      assert.equal(outcome.kind, 'succeeded', JSON.stringify(outcome));
      const lines = parseLines(outcome.lines);
      assert.ok(v.isSuccessTerminal(lines.at(-1)!));
      assert.ok(carriesJson(lines, answer), `no line carries ${JSON.stringify(answer)}`);
    });

    for (const f of FAILURES) {
      it(`a batch finished ${f.name} ends failed with a message and the error terminal line`, async () => {
        const s = await submitted();
        fake.finish(s.id, f.outcome);
        const outcome = ended(value(await v.vendor.check(s.id, s.ctx, s.call), 'check'));
        assert.equal(outcome.kind, 'failed', JSON.stringify(outcome));
        const failed = outcome as Extract<BatchOutcome, { kind: 'failed' }>;
        assert.ok(failed.message.trim() !== '', 'empty message');
        assert.match(failed.message, f.message);
        const lines = parseLines(failed.lines);
        assert.ok(
          v.isErrorTerminal(lines.at(-1)!),
          `last line is not the error terminal: ${failed.lines.at(-1)}`,
        );
        assert.ok(
          lines.every((l) => !v.isSuccessTerminal(l)),
          'a failed run carries a success terminal line',
        );
      });
    }

    it('a wrong key is rejected as 401/403, creates nothing, and the key never shows in the error', async () => {
      const wrongKey = `wrong-key-${randomUUID()}`;
      const r = run();
      const h = harness(fake, { apiKey: wrongKey });
      const e = failure(await v.vendor.submit(r.request, h.call), 'submit');
      assert.equal(e.kind, 'rejected', JSON.stringify(e));
      const rejected = e as Extract<BatchError, { kind: 'rejected' }>;
      assert.ok(v.wrongKeyStatuses.includes(rejected.status), `status ${rejected.status}`);
      assert.ok(!JSON.stringify(e).includes(wrongKey), 'the wrong key is in the error');
      assert.equal(fake.batches().length, 0);
      assert.ok(fake.requests.every((q) => !q.authorized));
      assert.deepEqual(h.sleeps, [], 'a rejected key was retried');
    });

    it('a wrong key on check, cancel, cleanup and find is rejected too, and cleanup never counts it as done', async () => {
      const s = await submitted();
      const wrongKey = `wrong-key-${randomUUID()}`;
      const bad = harness(fake, { apiKey: wrongKey }).call;
      const errors = [
        failure(await v.vendor.check(s.id, s.ctx, bad), 'check'),
        failure(await v.vendor.cancel(s.id, bad), 'cancel'),
        failure(await v.vendor.cleanup(s.id, bad), 'cleanup'),
        failure(await v.vendor.find(s.request.customId, new Date(0), bad), 'find'),
      ];
      for (const e of errors) {
        assert.equal(e.kind, 'rejected', JSON.stringify(e));
        const rejected = e as Extract<BatchError, { kind: 'rejected' }>;
        assert.ok(v.wrongKeyStatuses.includes(rejected.status), `status ${rejected.status}`);
        assert.ok(!JSON.stringify(e).includes(wrongKey), 'the wrong key is in the error');
      }
      assert.equal(batch(s.id).state, 'pending');
      assert.equal(batch(s.id).deleted, false);
    });

    it('a 429 with retry-after 1 on the create is waited out (≈1000 ms) and retried', async () => {
      fake.inject({ method: 'POST', path: v.createPath, status: 429, retryAfterSeconds: 1 });
      const r = run();
      const h = harness(fake);
      assert.ok(h.call.attempts >= 2);
      const { id } = value(await v.vendor.submit(r.request, h.call), 'submit');
      assert.equal(creates().length, 2, 'the create was not retried exactly once');
      assert.equal(only().id, id);
      assert.equal(h.sleeps.length, 1, `sleeps: ${JSON.stringify(h.sleeps)}`);
      assert.ok(Math.abs(h.sleeps[0]! - 1000) <= 50, `slept ${h.sleeps[0]} ms`);
    });

    it('a 500 on the create is unavailable and not retried', async () => {
      fake.inject({ method: 'POST', path: v.createPath, status: 500, times: 3 });
      const r = run();
      const h = harness(fake);
      const e = failure(await v.vendor.submit(r.request, h.call), 'submit');
      assert.equal(e.kind, 'unavailable', JSON.stringify(e));
      assert.equal((e as Extract<BatchError, { kind: 'unavailable' }>).status, 500);
      assert.equal(creates().length, 1, 'the create was retried');
      assert.deepEqual(h.sleeps, []);
      assert.equal(fake.batches().length, 0);
    });

    it('a 500 on a poll is retried and the check succeeds', async () => {
      const s = await submitted();
      const poll = v.pollPath(s.id);
      fake.inject({ method: 'GET', path: exactPath(poll), status: 500 });
      const state = value(await v.vendor.check(s.id, s.ctx, s.call), 'check');
      assert.deepEqual(state, { kind: 'inProgress', id: s.id });
      const polls = fake.requests.filter((q) => q.method === 'GET' && q.path === poll);
      assert.equal(polls.length, 2, `polls: ${polls.length}`);
      assert.equal(s.sleeps.length, 1);
    });

    const lostAnswers = [
      {
        name: 'a 502 after the create landed',
        fault: { status: 502 },
        timeoutMs: 2_000,
        kinds: ['unavailable'],
      },
      {
        name: 'an answer slower than the call timeout',
        fault: { status: 502, delayMs: 400 },
        timeoutMs: 100,
        kinds: ['network'],
      },
    ] as const;
    for (const lost of lostAnswers) {
      it(`a lost create answer (${lost.name}) fails submit, yet find finds the batch`, async () => {
        const since = new Date();
        fake.inject({ method: 'POST', path: v.createPath, afterEffect: true, ...lost.fault });
        const r = run();
        const h = harness(fake, { timeoutMs: lost.timeoutMs });
        const e = failure(await v.vendor.submit(r.request, h.call), 'submit');
        assert.ok((lost.kinds as readonly string[]).includes(e.kind), JSON.stringify(e));
        assert.equal(creates().length, 1, 'the create was retried');
        await waitFor(() => fake.batches().length === 1, 'the batch to exist at the fake');
        const held = only();
        assert.equal(held.customId, r.request.customId);
        const call = harness(fake).call;
        const pending = value(await v.vendor.find(r.request.customId, since, call), 'find');
        assert.deepEqual(pending, expectFind(v.findWhilePending, held.id, [held.id]));
        fake.finish(held.id, { kind: 'succeeded', text: TEXT });
        const done = value(await v.vendor.find(r.request.customId, since, call), 'find after the end');
        assert.deepEqual(done, { kind: 'found', id: held.id, duplicates: [] });
      });
    }

    it('find of a custom id never submitted is absent', async () => {
      const since = new Date();
      const other = await submitted();
      fake.finish(other.id, { kind: 'succeeded', text: TEXT });
      const never = run();
      const found = value(await v.vendor.find(never.request.customId, since, harness(fake).call), 'find');
      assert.deepEqual(found, { kind: 'absent' });
    });

    it('cancel of a pending batch is ok and the fake shows it cancelling or ended', async () => {
      const s = await submitted();
      value(await v.vendor.cancel(s.id, s.call), 'cancel');
      assert.ok(['cancelling', 'ended'].includes(batch(s.id).state), batch(s.id).state);
      assert.ok(
        fake.requests.some((q) => q.method === 'POST' && q.path.includes('cancel')),
        'no cancel was sent',
      );
    });

    it('cancel of an ended batch is ok', async () => {
      const s = await submitted();
      fake.finish(s.id, { kind: 'succeeded', text: TEXT });
      value(await v.vendor.cancel(s.id, s.call), 'cancel');
      assert.equal(batch(s.id).state, 'ended');
      assert.equal(batch(s.id).deleted, false);
    });

    it('cleanup of an ended batch removes it (and its files) and is done; again is done too', async () => {
      const s = await submitted();
      fake.finish(s.id, { kind: 'succeeded', text: TEXT });
      ended(value(await v.vendor.check(s.id, s.ctx, s.call), 'check'));
      assert.deepEqual(value(await v.vendor.cleanup(s.id, s.call), 'cleanup'), { kind: 'done' });
      const held = batch(s.id);
      assert.equal(held.deleted, true);
      assert.ok(
        (held.files ?? []).every((f) => !f.exists),
        `files left: ${JSON.stringify(held.files)}`,
      );
      assert.deepEqual(value(await v.vendor.cleanup(s.id, s.call), 'second cleanup'), { kind: 'done' });
    });

    it(`cleanup of a pending batch answers ${v.cleanupWhilePending}, and done once the batch has ended`, async () => {
      const s = await submitted();
      const first = value(await v.vendor.cleanup(s.id, s.call), 'cleanup');
      assert.equal(first.kind, v.cleanupWhilePending, JSON.stringify(first));
      if (first.kind === 'pending') {
        // Cancel sent; the batch must end at the vendor before anything can be deleted.
        assert.equal(batch(s.id).state, 'cancelling', 'cleanup of a pending batch did not cancel it');
        assert.equal(batch(s.id).deleted, false);
        fake.finish(s.id, { kind: 'cancelled' });
      }
      const last = value(await v.vendor.cleanup(s.id, s.call), 'cleanup after the end');
      assert.deepEqual(last, { kind: 'done' });
      assert.equal(batch(s.id).deleted, true);
    });

    it('two submissions of the same request: find names one and lists the other as a duplicate', async () => {
      const since = new Date();
      const r = run();
      const h = harness(fake);
      const a = value(await v.vendor.submit(r.request, h.call), 'first submit').id;
      const b = value(await v.vendor.submit(r.request, h.call), 'second submit').id;
      assert.notEqual(a, b);
      assert.equal(fake.batches().length, 2);
      const pending = value(await v.vendor.find(r.request.customId, since, h.call), 'find');
      assertBoth(pending, v.findWhilePending, [a, b]);
      fake.finish(a, { kind: 'succeeded', text: TEXT });
      fake.finish(b, { kind: 'succeeded', text: TEXT });
      const done = value(await v.vendor.find(r.request.customId, since, h.call), 'find after the end');
      assertBoth(done, 'found', [a, b]);
    });

    it('listPage pages through every batch, newest first, telling the ended ones from the pending ones', async () => {
      const h = harness(fake);
      const ids: string[] = [];
      for (let i = 0; i < LIST_PAGE_SIZE + 5; i++)
        ids.push(value(await v.vendor.submit(run({ prompt: `p${i}` }).request, h.call), `submit ${i}`).id);
      const ended = new Set([ids[0]!, ids[50]!, ids.at(-1)!]);
      for (const id of ended) fake.finish(id, { kind: 'succeeded', text: TEXT });
      const seen = new Map<string, boolean>();
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = value(await v.vendor.listPage(cursor, h.call), `list page ${pages}`);
        assert.ok(page.batches.length <= LIST_PAGE_SIZE, `page ${pages} holds ${page.batches.length}`);
        for (const b of page.batches) {
          assert.ok(!seen.has(b.id), `${b.id} listed twice`);
          seen.set(b.id, b.ended);
        }
        cursor = page.next;
        pages++;
      } while (cursor !== undefined && pages < 10);
      assert.equal(pages, 2, 'two pages for 105 batches');
      assert.deepEqual([...seen.keys()].sort(), [...ids].sort());
      for (const id of ids) assert.equal(seen.get(id), ended.has(id), `${id} ended?`);
      const listCalls = fake.requests.filter(
        (r) => r.method === 'GET' && /[?&](limit|pageSize)=/.test(r.path),
      );
      assert.equal(listCalls.length, 2, 'one request per page');
    });

    it('listPage with a wrong key is rejected and the key never shows in the error', async () => {
      const h = harness(fake, { apiKey: 'not-the-key' });
      const e = failure(await v.vendor.listPage(undefined, h.call), 'list');
      assert.equal(e.kind, 'rejected');
      assert.ok(!JSON.stringify(e).includes(fake.apiKey));
    });
  });
}

/** The find answer expected for exactly one matching batch `id`. */
function expectFind(kind: 'found' | 'undecided', id: string, candidates: readonly string[]): FindOutcome {
  return kind === 'found' ? { kind, id, duplicates: [] } : { kind, candidates };
}

/** `find` names both batches: one as `id` and the other as its duplicate (or both as candidates). */
function assertBoth(outcome: FindOutcome, kind: 'found' | 'undecided', ids: readonly string[]): void {
  assert.equal(outcome.kind, kind, JSON.stringify(outcome));
  const named =
    outcome.kind === 'found'
      ? [outcome.id, ...outcome.duplicates]
      : outcome.kind === 'undecided'
        ? [...outcome.candidates]
        : [];
  if (outcome.kind === 'found') assert.equal(outcome.duplicates.length, 1);
  assert.deepEqual([...named].sort(), [...ids].sort());
}

/** A RegExp matching exactly `path` (as the fakes match faults against path and query). */
function exactPath(path: string): RegExp {
  return new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);
}
