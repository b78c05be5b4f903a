import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  addTurnResult,
  extractRunResult,
  extractRunResultFromText,
  MAX_RESULT_TEXT_BYTES,
  resultAccumulator,
} from './result.ts';
import type { Vendor } from './route.ts';
import { MAX_COST_USD, MAX_TOKENS, type RunResult, type TokenUsage } from './run-report.ts';

const bytes = (s: string): number => new TextEncoder().encode(s).length;
const lines = (...ls: string[]): unknown[] => ls.map((l) => JSON.parse(l) as unknown);
const usage = (input: number, output: number, cacheRead: number, cacheWrite: number, total?: number) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  total: total ?? input + output + cacheRead + cacheWrite,
});

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: real line shapes (docs/reference/vendor-cli-events.md), one line each as the CLI prints it.

const CLAUDE_INIT =
  '{"type":"system","subtype":"init","session_id":"5f0c","uuid":"a1","cwd":"/workspace","model":"claude-opus-5-5","tools":["Bash","Read"],"mcp_servers":[],"permissionMode":"default","slash_commands":[],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.3","output_style":"default"}';
const CLAUDE_ASSISTANT =
  '{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"Looking at it."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}},"parent_tool_use_id":null,"session_id":"5f0c","uuid":"a2"}';
const CLAUDE_TOOL_RESULT =
  '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"parent_tool_use_id":null,"session_id":"5f0c","uuid":"a3"}';
const CLAUDE_SUCCESS =
  '{"type":"result","subtype":"success","is_error":false,"duration_ms":1234,"duration_api_ms":1200,"num_turns":3,"result":"Fixed the bug in parser.ts.","stop_reason":"end_turn","session_id":"5f0c","total_cost_usd":0.0123,"usage":{"input_tokens":120,"cache_creation_input_tokens":300,"cache_read_input_tokens":1000,"output_tokens":45,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{"claude-opus-5-5":{"inputTokens":120,"outputTokens":45,"cacheReadInputTokens":1000,"cacheCreationInputTokens":300,"costUSD":0.0123}},"permission_denials":[],"uuid":"a4"}';
const CLAUDE_ERROR =
  '{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":9000,"duration_api_ms":8800,"num_turns":12,"stop_reason":null,"session_id":"5f0c","total_cost_usd":0.5,"usage":{"input_tokens":900,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":800},"modelUsage":{"claude-haiku-5":{"inputTokens":900,"outputTokens":800,"cacheReadInputTokens":4000,"cacheCreationInputTokens":0,"costUSD":0.5}},"permission_denials":[],"errors":["Reached maximum number of turns (12)"],"uuid":"a5"}';
const CLAUDE_API_ERROR =
  '{"type":"result","subtype":"success","is_error":true,"duration_ms":300,"num_turns":1,"result":"API Error: 529 overloaded","session_id":"5f0c","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}';
// A batch result mapped onto Claude lines (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines).
const CLAUDE_BATCH = [
  '{"type":"system","subtype":"init","session_id":"0b6d8f1e-6c1c-4a57-9d38-5c9d0f2b7e11","model":"claude-sonnet-5","tools":[],"mcp_servers":[]}',
  '{"type":"assistant","message":{"id":"msg_b","type":"message","role":"assistant","model":"claude-sonnet-5","content":[{"type":"text","text":"{\\"ok\\":true}"}],"stop_reason":"end_turn","usage":{"input_tokens":40,"output_tokens":6}},"parent_tool_use_id":null,"session_id":"0b6d8f1e-6c1c-4a57-9d38-5c9d0f2b7e11"}',
  '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"{\\"ok\\":true}","session_id":"0b6d8f1e-6c1c-4a57-9d38-5c9d0f2b7e11","total_cost_usd":0,"usage":{"input_tokens":40,"output_tokens":6},"structured_output":{"ok":true}}',
];

const CODEX = [
  '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
  '{"type":"turn.started"}',
  '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Scanning the repo**"}}',
  '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
  '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"src\\n","exit_code":0,"status":"completed"}}',
  '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Let me look."}}',
  '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done: renamed the flag."}}',
  '{"type":"turn.completed","usage":{"input_tokens":123,"cached_input_tokens":100,"output_tokens":45}}',
];

const GEMINI = [
  '{"type":"init","timestamp":"2026-11-30T12:00:00.000Z","session_id":"c6b9","model":"gemini-3.8-flash"}',
  '{"type":"message","timestamp":"2026-11-30T12:00:00.010Z","role":"user","content":"Fix the tests"}',
  '{"type":"message","timestamp":"2026-11-30T12:00:01.000Z","role":"assistant","content":"I will ","delta":true}',
  '{"type":"tool_use","timestamp":"2026-11-30T12:00:01.100Z","tool_name":"read_file","tool_id":"t1","parameters":{"path":"a.ts"}}',
  '{"type":"tool_result","timestamp":"2026-11-30T12:00:01.200Z","tool_id":"t1","status":"success","output":"…"}',
  '{"type":"message","timestamp":"2026-11-30T12:00:02.000Z","role":"assistant","content":"fix ","delta":true}',
  '{"type":"message","timestamp":"2026-11-30T12:00:02.100Z","role":"assistant","content":"them.","delta":true}',
  '{"type":"error","timestamp":"2026-11-30T12:00:02.200Z","severity":"warning","message":"slow"}',
  '{"type":"result","timestamp":"2026-11-30T12:00:03.000Z","status":"success","stats":{"total_tokens":47,"input_tokens":12,"output_tokens":5,"cached":4,"input":8,"duration_ms":3000,"tool_calls":1,"models":{"gemini-3.8-flash":{"total_tokens":47,"input_tokens":12,"output_tokens":5,"cached":4,"input":8}}}}',
];

const OPENCODE = [
  '{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"type":"step-start"}}',
  '{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Checking the file."}}',
  '{"type":"tool_use","sessionID":"ses_1","part":{"tool":"bash","state":{"status":"completed"}}}',
  '{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"total":130,"input":100,"output":10,"reasoning":0,"cache":{"write":20,"read":0}},"cost":0.0006}}',
  '{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}',
  '{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"All green now."}}',
  // As OpenCode 1.18.33 printed it (docs/reference/vendor-clis.md#stdout-lines---format-json).
  '{"type":"step_finish","timestamp":1796538176648,"sessionID":"ses_1","part":{"id":"prt_2","reason":"stop","messageID":"msg_2","sessionID":"ses_1","type":"step-finish","tokens":{"total":167,"input":100,"output":7,"reasoning":0,"cache":{"write":20,"read":40}},"cost":0.000492}}',
];

// ---------------------------------------------------------------------------------------------------------------

describe('resultAccumulator: Claude', () => {
  it('a successful run: the result text, usage by kind, total_cost_usd and the init model', () => {
    const r = extractRunResult(
      'claude',
      lines(CLAUDE_INIT, CLAUDE_ASSISTANT, CLAUDE_TOOL_RESULT, CLAUDE_ASSISTANT, CLAUDE_SUCCESS),
    );
    assert.deepEqual(r, {
      result: 'Fixed the bug in parser.ts.',
      usage: usage(120, 45, 1000, 300),
      costUsd: 0.0123,
      model: 'claude-opus-5-5',
    });
  });

  it('an error result has no result text but still its usage and cost; the model from modelUsage without init', () => {
    const r = extractRunResult('claude', lines(CLAUDE_ASSISTANT, CLAUDE_ERROR));
    assert.deepEqual(r, { usage: usage(900, 800, 4000, 0), costUsd: 0.5, model: 'claude-haiku-5' });
  });

  it('an API error arriving as subtype success with is_error keeps its message as the text; cost 0 is kept', () => {
    const r = extractRunResult('claude', lines(CLAUDE_INIT, CLAUDE_API_ERROR));
    assert.equal(r.result, 'API Error: 529 overloaded');
    assert.equal(r.costUsd, 0);
    assert.deepEqual(r.usage, usage(0, 0, 0, 0));
  });

  it('the init model wins over modelUsage', () => {
    assert.equal(extractRunResult('claude', lines(CLAUDE_INIT, CLAUDE_ERROR)).model, 'claude-opus-5-5');
  });

  it('the last result line counts: a later error result without text drops the earlier text', () => {
    assert.equal(extractRunResult('claude', lines(CLAUDE_SUCCESS, CLAUDE_ERROR)).result, undefined);
    assert.equal(
      extractRunResult('claude', lines(CLAUDE_ERROR, CLAUDE_SUCCESS)).result,
      'Fixed the bug in parser.ts.',
    );
  });

  it('a batch result mapped onto Claude lines (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines)', () => {
    assert.deepEqual(extractRunResult('claude', lines(...CLAUDE_BATCH)), {
      result: '{"ok":true}',
      usage: usage(40, 6, 0, 0),
      costUsd: 0,
      model: 'claude-sonnet-5',
    });
  });

  it('a run cut before its result line: only the model', () => {
    assert.deepEqual(extractRunResult('claude', lines(CLAUDE_INIT, CLAUDE_ASSISTANT)), {
      model: 'claude-opus-5-5',
    });
  });

  it('missing usage and cost stay absent; a non-string result is no text', () => {
    assert.deepEqual(extractRunResult('claude', [{ type: 'result', subtype: 'success', result: 42 }]), {});
    assert.deepEqual(
      extractRunResult('claude', [
        { type: 'result', result: { text: 'x' }, usage: 'lots', total_cost_usd: null },
      ]),
      {},
    );
  });

  it('hostile numbers never throw and never count: -5, 1e300, "12", NaN-like, fractions', () => {
    const r = extractRunResult('claude', [
      {
        type: 'result',
        result: 'ok',
        usage: {
          input_tokens: -5,
          output_tokens: 1e300,
          cache_read_input_tokens: '12',
          cache_creation_input_tokens: 7.9,
        },
        total_cost_usd: -0.5,
      },
    ]);
    assert.deepEqual(r, { result: 'ok', usage: usage(0, 0, 0, 7) });
    for (const cost of [1e300, '0.5', 'NaN', null, Number.NaN, Number.POSITIVE_INFINITY, MAX_COST_USD + 1]) {
      assert.equal(extractRunResult('claude', [{ type: 'result', total_cost_usd: cost }]).costUsd, undefined);
    }
    assert.equal(
      extractRunResult('claude', [{ type: 'result', usage: { input_tokens: Number.NaN } }]).usage?.input,
      0,
    );
  });

  it('a blank or non-string model is no model; a long one is bounded', () => {
    assert.equal(
      extractRunResult('claude', [{ type: 'system', subtype: 'init', model: '  ' }]).model,
      undefined,
    );
    assert.equal(
      extractRunResult('claude', [{ type: 'system', subtype: 'init', model: 7 }]).model,
      undefined,
    );
    assert.equal(
      extractRunResult('claude', [{ type: 'system', subtype: 'init', model: 'm'.repeat(1000) }]).model
        ?.length,
      253,
    );
    assert.equal(
      extractRunResult('claude', [{ type: 'result', modelUsage: { '': {}, second: {} } }]).model,
      undefined,
      'only the first modelUsage key is looked at',
    );
  });
});

describe('resultAccumulator: Codex', () => {
  it('the last agent_message is the text; turn.completed usage with cached_input_tokens as cacheRead', () => {
    assert.deepEqual(extractRunResult('codex', lines(...CODEX)), {
      result: 'Done: renamed the flag.',
      usage: { input: 23, output: 45, cacheRead: 100, cacheWrite: 0, total: 168 },
    });
  });

  it('cache writes are part of input_tokens, like cache reads: both taken out of the input (Codex 0.171)', () => {
    const r = extractRunResult('codex', [
      {
        type: 'turn.completed',
        usage: {
          input_tokens: 110,
          cached_input_tokens: 40,
          cache_write_input_tokens: 20,
          output_tokens: 12,
          reasoning_output_tokens: 0,
        },
      },
    ]);
    assert.deepEqual(r.usage, { input: 50, output: 12, cacheRead: 40, cacheWrite: 20, total: 122 });
    const over = extractRunResult('codex', [
      {
        type: 'turn.completed',
        usage: { input_tokens: 10, cached_input_tokens: 8, cache_write_input_tokens: 50, output_tokens: 1 },
      },
    ]);
    assert.deepEqual(over.usage, { input: 0, output: 1, cacheRead: 8, cacheWrite: 2, total: 11 });
  });

  it('usage is summed over every turn.completed', () => {
    const r = extractRunResult(
      'codex',
      lines(
        ...CODEX,
        '{"type":"turn.started"}',
        '{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Second turn."}}',
        '{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":150,"output_tokens":10}}',
      ),
    );
    assert.equal(r.result, 'Second turn.');
    assert.deepEqual(r.usage, { input: 73, output: 55, cacheRead: 250, cacheWrite: 0, total: 378 });
  });

  it('a failed turn keeps the text so far and reports no usage', () => {
    const r = extractRunResult(
      'codex',
      lines(
        ...CODEX.slice(0, 6),
        '{"type":"error","message":"Reconnecting... 1/5"}',
        '{"type":"turn.failed","error":{"message":"stream disconnected"}}',
      ),
    );
    assert.deepEqual(r, { result: 'Let me look.' });
  });

  it('other items and agent_message shapes without text are no answer', () => {
    assert.deepEqual(
      extractRunResult('codex', [
        { type: 'item.started', item: { type: 'agent_message', text: 'early' } },
        { type: 'item.updated', item: { type: 'agent_message', text: 'partial' } },
        { type: 'item.completed', item: { type: 'reasoning', text: 'thinking' } },
        { type: 'item.completed', item: { type: 'agent_message', text: ['x'] } },
        { type: 'item.completed', item: 'agent_message' },
        { type: 'turn.completed' },
      ]),
      {},
    );
  });

  it('hostile usage counts are 0, and a sum past the believable maximum is capped', () => {
    const r = extractRunResult('codex', [
      {
        type: 'turn.completed',
        usage: { input_tokens: '12', cached_input_tokens: -5, output_tokens: 'NaN' },
      },
      {
        type: 'turn.completed',
        usage: { input_tokens: MAX_TOKENS, cached_input_tokens: 0, output_tokens: 1e300 },
      },
      {
        type: 'turn.completed',
        usage: { input_tokens: MAX_TOKENS, cached_input_tokens: 0, output_tokens: 2.5 },
      },
    ]);
    assert.deepEqual(r.usage, {
      input: MAX_TOKENS,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
      total: MAX_TOKENS,
    });
  });
});

describe('resultAccumulator: Gemini', () => {
  it('assistant deltas after the last user message are joined; stats give usage; init the model', () => {
    assert.deepEqual(extractRunResult('gemini', lines(...GEMINI)), {
      result: 'I will fix them.',
      usage: { input: 8, output: 5, cacheRead: 4, cacheWrite: 0, total: 47 },
      model: 'gemini-3.8-flash',
    });
  });

  it('a later user message starts the answer over; a message without delta replaces', () => {
    const r = extractRunResult('gemini', [
      { type: 'message', role: 'assistant', content: 'old answer', delta: true },
      { type: 'message', role: 'user', content: 'again' },
      { type: 'message', role: 'assistant', content: 'draft', delta: true },
      { type: 'message', role: 'assistant', content: 'Whole ' },
      { type: 'message', role: 'assistant', content: 'answer.', delta: true },
      { type: 'message', role: 'assistant', content: 42, delta: true },
      { type: 'message', role: 'system', content: 'ignored', delta: true },
    ]);
    assert.equal(r.result, 'Whole answer.');
    assert.deepEqual(
      extractRunResult('gemini', [
        { type: 'message', role: 'assistant', content: 'x', delta: true },
        { type: 'message', role: 'user', content: 'next' },
      ]),
      {},
      'no answer after the last user message',
    );
  });

  it('an error result still gives its stats; total_tokens missing → input + output (cached is part of input)', () => {
    const r = extractRunResult(
      'gemini',
      lines(
        GEMINI[0]!,
        GEMINI[1]!,
        '{"type":"result","timestamp":"t","status":"error","error":{"type":"FatalTurnLimitedError","message":"turn limit"},"stats":{"input_tokens":30,"output_tokens":2,"cached":10,"input":20,"duration_ms":5,"tool_calls":0}}',
      ),
    );
    assert.deepEqual(r, {
      usage: { input: 20, output: 2, cacheRead: 10, cacheWrite: 0, total: 32 },
      model: 'gemini-3.8-flash',
    });
  });

  it("the model is the one the API answered as: stats.models' busiest key over init's", () => {
    // Gemini CLI 0.61 sent `--model gemini-3.5-flash` to the API as gemini-3.8-flash; its init line said 3.5.
    const init = '{"type":"init","session_id":"s","model":"gemini-3.5-flash"}';
    const result = (models: string) =>
      `{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"models":${models}}}`;
    assert.equal(
      extractRunResult('gemini', lines(init, result('{"gemini-3.8-flash":{"total_tokens":15}}'))).model,
      'gemini-3.8-flash',
    );
    // A routing call to a small model counts too: the model that answered used the most tokens.
    assert.equal(
      extractRunResult(
        'gemini',
        lines(
          init,
          result(
            '{"gemini-3.5-flash-lite":{"total_tokens":40},"gemini-3.1-pro-preview":{"total_tokens":900}}',
          ),
        ),
      ).model,
      'gemini-3.1-pro-preview',
    );
    assert.equal(extractRunResult('gemini', lines(init, result('{}'))).model, 'gemini-3.5-flash');
    assert.equal(extractRunResult('gemini', lines(init, result('"x"'))).model, 'gemini-3.5-flash');
  });

  it('the last result counts; one without stats has no usage', () => {
    assert.equal(
      extractRunResult('gemini', lines(GEMINI.at(-1)!, '{"type":"result","status":"success"}')).usage,
      undefined,
    );
  });

  it('hostile stats never throw and never count', () => {
    const r = extractRunResult('gemini', [
      { type: 'result', stats: { input_tokens: -5, output_tokens: '12', cached: 1e300, total_tokens: -1 } },
    ]);
    assert.deepEqual(r.usage, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });
  });
});

describe('resultAccumulator: OpenCode and exec', () => {
  it('OpenCode: the last text part is the answer; usage and cost summed over the step_finish lines', () => {
    const r = extractRunResult('opencode', lines(...OPENCODE));
    assert.equal(r.result, 'All green now.');
    assert.deepEqual(r.usage, { input: 200, output: 17, cacheRead: 40, cacheWrite: 40, total: 297 });
    assert.ok(Math.abs((r.costUsd ?? 0) - 0.001092) < 1e-12, String(r.costUsd));
    assert.deepEqual(extractRunResult('opencode', [{ type: 'text', part: 'weird' }, { type: 'text' }]), {});
  });

  it('OpenCode: steps without tokens or cost add nothing; hostile numbers never count', () => {
    const r = extractRunResult('opencode', [
      { type: 'step_finish', part: { reason: 'tool-calls' } },
      { type: 'step_finish', part: { tokens: { input: -1, output: '5', cache: 'x' }, cost: -2 } },
      { type: 'step_finish', part: { tokens: { input: 3, output: 4 }, cost: 1e300 } },
    ]);
    assert.deepEqual(r, { usage: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, total: 7 } });
  });

  it('exec: nothing is extracted, even from Claude-shaped lines', () => {
    assert.deepEqual(extractRunResult('exec', lines(CLAUDE_INIT, CLAUDE_SUCCESS)), {});
  });
});

describe('resultAccumulator: anything', () => {
  it('non-objects are ignored for every vendor', () => {
    for (const vendor of ['claude', 'codex', 'gemini', 'opencode', 'exec'] as const) {
      const acc = resultAccumulator(vendor);
      for (const junk of [null, undefined, 5, 'result', true, [], [JSON.parse(CLAUDE_SUCCESS)], () => 1])
        acc.add(junk);
      assert.deepEqual(acc.result(), {}, vendor);
    }
  });

  it('result() can be asked along the way and again', () => {
    const acc = resultAccumulator('codex');
    for (const line of lines(...CODEX.slice(0, 6))) acc.add(line);
    assert.deepEqual(acc.result(), { result: 'Let me look.' });
    for (const line of lines(...CODEX.slice(6))) acc.add(line);
    assert.equal(acc.result().result, 'Done: renamed the flag.');
    assert.deepEqual(acc.result(), acc.result());
  });

  it('never throws, and every count and cost it reports is believable (random lines)', () => {
    const number = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.constantFrom(-5, 1e300, -0, MAX_TOKENS + 1, Number.NaN, Number.POSITIVE_INFINITY),
      fc.string(),
      fc.constant(null),
    );
    const counts = fc.record(
      {
        input_tokens: number,
        output_tokens: number,
        cache_read_input_tokens: number,
        cache_creation_input_tokens: number,
        cached_input_tokens: number,
        cached: number,
        total_tokens: number,
      },
      { requiredKeys: [] },
    );
    const line = fc.oneof(
      fc.anything(),
      fc.record({
        type: fc.constant('result'),
        result: fc.anything(),
        usage: counts,
        total_cost_usd: number,
      }),
      fc.record({ type: fc.constant('result'), stats: counts, modelUsage: fc.anything() }),
      fc.record({ type: fc.constant('turn.completed'), usage: counts }),
      fc.record({
        type: fc.constant('message'),
        role: fc.constantFrom('user', 'assistant'),
        content: fc.anything(),
        delta: fc.anything(),
      }),
      fc.record({
        type: fc.constantFrom('init', 'system'),
        subtype: fc.constant('init'),
        model: fc.anything(),
      }),
    );
    const vendor = fc.constantFrom<Vendor>('claude', 'codex', 'gemini', 'opencode', 'exec');
    const believable = (u: TokenUsage | undefined) =>
      u === undefined || Object.values(u).every((n) => Number.isInteger(n) && n >= 0 && n <= MAX_TOKENS);
    fc.assert(
      fc.property(vendor, fc.array(line, { maxLength: 30 }), (v, ls) => {
        const r = extractRunResult(v, ls);
        assert.ok(believable(r.usage), JSON.stringify(r.usage));
        if (r.costUsd !== undefined) assert.ok(r.costUsd >= 0 && r.costUsd <= MAX_COST_USD);
        if (r.result !== undefined) assert.equal(typeof r.result, 'string');
        if (r.model !== undefined) assert.ok(typeof r.model === 'string' && r.model.length <= 253);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the kept answer is bounded', () => {
  it(`a result over ${MAX_RESULT_TEXT_BYTES} bytes is kept cut to exactly that, marked truncated`, () => {
    const r = extractRunResult('claude', [
      { type: 'result', result: 'a'.repeat(MAX_RESULT_TEXT_BYTES + 5000) },
    ]);
    assert.equal(r.result?.length, MAX_RESULT_TEXT_BYTES);
    assert.equal(r.resultTruncated, true);
    const exact = extractRunResult('codex', [
      { type: 'item.completed', item: { type: 'agent_message', text: 'b'.repeat(MAX_RESULT_TEXT_BYTES) } },
    ]);
    assert.equal(exact.result?.length, MAX_RESULT_TEXT_BYTES);
    assert.equal(exact.resultTruncated, undefined, 'exactly the bound fits');
  });

  it('multi-byte text is cut on a character boundary (UTF-8 bytes, no half surrogate pair)', () => {
    for (const ch of ['é', '€', '😀']) {
      const text = `x${ch.repeat(MAX_RESULT_TEXT_BYTES)}`;
      const r = extractRunResult('claude', [{ type: 'result', result: text }]);
      const kept = r.result ?? '';
      assert.ok(bytes(kept) <= MAX_RESULT_TEXT_BYTES, ch);
      assert.ok(bytes(kept) > MAX_RESULT_TEXT_BYTES - 4, ch);
      assert.ok(text.startsWith(kept), `${ch}: a prefix`);
      assert.ok(!kept.includes('\ufffd'), `${ch}: no replacement character`);
      assert.equal(r.resultTruncated, true);
    }
  });

  it('streamed deltas stop growing at the bound; a new answer (user message) starts clean', () => {
    const acc = resultAccumulator('gemini');
    const chunk = 'z'.repeat(1000);
    for (let i = 0; i < 1000; i++)
      acc.add({ type: 'message', role: 'assistant', content: chunk, delta: true });
    const r = acc.result();
    assert.equal(r.result?.length, MAX_RESULT_TEXT_BYTES);
    assert.equal(r.resultTruncated, true);
    acc.add({ type: 'message', role: 'user', content: 'next' });
    acc.add({ type: 'message', role: 'assistant', content: 'short', delta: true });
    assert.deepEqual(acc.result(), { result: 'short' });
  });

  it('a truncated answer replaced by a short one is no longer marked truncated', () => {
    const acc = resultAccumulator('opencode');
    acc.add({ type: 'text', part: { text: 'q'.repeat(MAX_RESULT_TEXT_BYTES + 1) } });
    assert.equal(acc.result().resultTruncated, true);
    acc.add({ type: 'text', part: { text: 'done' } });
    assert.deepEqual(acc.result(), { result: 'done' });
  });
});

describe('extractRunResultFromText', () => {
  it('reads a log tail whose first line is cut, skipping plain text, blank and CRLF lines', () => {
    const full = [...GEMINI].join('\n');
    const tail = `${full.slice(40)}\r\nplain stderr-ish text\n\n{"broken":\n`;
    assert.deepEqual(extractRunResultFromText('gemini', tail), {
      result: 'I will fix them.',
      usage: { input: 8, output: 5, cacheRead: 4, cacheWrite: 0, total: 47 },
      // The init line is cut off; the result line's stats.models still name the model.
      model: 'gemini-3.8-flash',
    });
  });

  it('the same answer as the line-by-line accumulator for each vendor', () => {
    const cases: ReadonlyArray<readonly [Vendor, readonly string[]]> = [
      ['claude', [CLAUDE_INIT, CLAUDE_ASSISTANT, CLAUDE_SUCCESS]],
      ['codex', CODEX],
      ['gemini', GEMINI],
      ['opencode', OPENCODE],
      ['exec', [CLAUDE_SUCCESS]],
    ];
    for (const [vendor, ls] of cases) {
      assert.deepEqual(
        extractRunResultFromText(vendor, `${ls.join('\n')}\n`),
        extractRunResult(vendor, lines(...ls)),
      );
    }
  });

  it('garbage is no result', () => {
    assert.deepEqual(extractRunResultFromText('claude', ''), {});
    assert.deepEqual(extractRunResultFromText('claude', '\u0000\u0001 not json {{{\n]'), {});
  });
});

describe('addTurnResult', () => {
  const turn = (result: string, n: number, costUsd?: number, model?: string): RunResult => ({
    result,
    usage: usage(n, n, n, n),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(model !== undefined ? { model } : {}),
  });

  it('the last turn’s answer, usage and cost summed, the latest model named', () => {
    let s = addTurnResult(undefined, turn('one', 1, 0.5, 'claude-opus-5-5'));
    s = addTurnResult(s, turn('two', 2, 0.25));
    s = addTurnResult(s, turn('three', 3, undefined, 'claude-sonnet-5'));
    assert.deepEqual(s, {
      result: 'three',
      usage: usage(6, 6, 6, 6),
      costUsd: 0.75,
      model: 'claude-sonnet-5',
    });
  });

  it('a turn without an answer (a crash) leaves none; one without usage keeps the sum so far', () => {
    const s = addTurnResult(addTurnResult(undefined, { ...turn('one', 1), resultTruncated: true }), {});
    assert.deepEqual(s, { usage: usage(1, 1, 1, 1) });
    assert.deepEqual(addTurnResult(undefined, {}), {});
  });

  it('sums stay believable', () => {
    const big: RunResult = { usage: usage(MAX_TOKENS, 0, 0, 0, MAX_TOKENS), costUsd: MAX_COST_USD };
    assert.deepEqual(addTurnResult(big, big), big);
  });
});
