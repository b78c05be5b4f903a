// How the scripted model places a request in its script: by the model turns in the request's history, errors of a
// step served once each, retries of an answered step answered again, the end of the script refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAnthropicModel } from './anthropic.ts';
import { countModelTurns, Script, scriptsOf } from './script.ts';

test('a step serves its errors once each, then its answer to every request at that step', () => {
  const script = new Script([
    { error: { status: 429, retryAfter: 1 } },
    { error: { status: 500 } },
    { text: 'first' },
    { toolCall: { name: 'Bash', input: { command: 'ls' } } },
    { error: { status: 529 } },
  ]);
  assert.deepEqual(
    [0, 0, 0, 0, 1, 0, 1, 2, 2, 3].map((turns) => {
      const play = script.play(turns);
      return play.kind === 'error'
        ? play.turn.error.status
        : play.kind === 'answer'
          ? (play.turn.text ?? play.turn.toolCall?.name)
          : play.kind;
    }),
    [429, 500, 'first', 'first', 'Bash', 'first', 'Bash', 529, 'exhausted', 'exhausted'],
  );
});

test('an answer turn without text, thinking or a tool call is refused when the script is built', () => {
  assert.throws(() => new Script([{ usage: { input: 1, output: 1 } }]), /needs text, thinking or a toolCall/);
});

test('model turns are counted as runs of model items (a text and a tool call of one turn count once)', () => {
  assert.equal(countModelTurns([]), 0);
  assert.equal(countModelTurns(['other', 'model', 'model', 'other', 'model']), 2);
  assert.equal(countModelTurns(['model', 'other', 'other', 'model', 'other']), 2);
});

test('conversations: a side request matched to a conversation of its own leaves the main script in place', async (t) => {
  const fake = await startAnthropicModel({
    conversations: [
      {
        match: (body) => (body as { model?: string }).model === 'claude-haiku-5-5',
        turns: [{ text: 'a title' }],
      },
      { turns: [{ text: 'main answer' }] },
    ],
  });
  t.after(() => fake.close());
  const ask = async (model: string) => {
    const res = await fetch(`${fake.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': fake.apiKey,
        'anthropic-version': '2026-10-21',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return ((await res.json()) as { content: { text: string }[] }).content[0]?.text;
  };
  assert.equal(await ask('claude-haiku-5-5'), 'a title');
  assert.equal(await ask('claude-sonnet-5-5'), 'main answer');
  assert.deepEqual(
    fake.requests.map((r) => [r.model, r.step]),
    [
      ['claude-haiku-5-5', 0],
      ['claude-sonnet-5-5', 0],
    ],
  );
});

test('conversations: bodyIncludes picks the requests whose JSON body holds the text (a match that crosses a pipe)', () => {
  const [title, main] = scriptsOf({
    conversations: [
      { bodyIncludes: 'You are a title generator', turns: [{ text: 'a title' }] },
      { turns: [{ text: 'main answer' }] },
    ],
  });
  assert.ok(title && main);
  assert.equal(
    title.match({ system: [{ type: 'text', text: 'You are a title generator. Be brief.' }] }),
    true,
  );
  assert.equal(title.match({ system: 'You are a coding agent.', messages: [] }), false);
  assert.equal(title.match(undefined), false);
  assert.equal(main.match({ anything: 1 }), true, 'neither set: every request');
});
