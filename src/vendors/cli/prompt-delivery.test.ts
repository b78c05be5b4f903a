import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { vendorCommand } from './argv.ts';
import {
  argvWithoutPrompt,
  deliverPrompt,
  MAX_ARG_BYTES,
  MAX_PROMPT_BYTES,
  utf8Bytes,
} from './prompt-delivery.ts';
import type { Vendor } from './route.ts';

const MODELS: Readonly<Record<Vendor, string>> = {
  claude: 'claude-opus-5-5',
  codex: 'gpt-6-astra',
  gemini: 'gemini-3-pro',
  opencode: 'opencode/anthropic/claude-opus-5-5',
  exec: 'exec',
};

/** The vendor argv of `vendor` for `prompt` (optionally resuming a session). */
function argvOf(vendor: Vendor, prompt: string, resumeSession?: string): readonly string[] {
  const r = vendorCommand({
    model: MODELS[vendor],
    prompt,
    toolConfig: { command: ['/bin/cat'] },
    ...(resumeSession !== undefined ? { resumeSession } : {}),
  });
  assert.ok(r.ok);
  assert.equal(r.value.vendor, vendor);
  return r.value.argv;
}

describe('deliverPrompt', () => {
  it('refuses a prompt or system prompt with a NUL character (no argument or prompt text carries one)', () => {
    for (const vendor of Object.keys(MODELS) as Vendor[]) {
      const r = deliverPrompt(vendor, argvWithoutPrompt(argvOf(vendor, 'x')), 'a\u0000b');
      assert.ok(!r.ok && /NUL character/.test(r.error), vendor);
      const s = deliverPrompt(vendor, argvWithoutPrompt(argvOf(vendor, 'x')), 'ok', 'sys\u0000tem');
      assert.ok(!s.ok && /NUL character/.test(s.error), vendor);
    }
  });

  it('a prompt that fits in one argument: the vendor argv exactly as built with it, stdin closed', () => {
    for (const vendor of (Object.keys(MODELS) as Vendor[]).filter((v) => v !== 'opencode')) {
      for (const prompt of ['fix it', '', '-starts-with-a-dash', 'multi\nline ünïcödé 😀']) {
        for (const resume of [undefined, 'sess-1']) {
          const full = argvOf(vendor, prompt, resume);
          const r = deliverPrompt(vendor, argvWithoutPrompt(full), prompt);
          assert.deepEqual(r, { ok: true, value: { argv: full } }, `${vendor} ${JSON.stringify(prompt)}`);
        }
      }
    }
  });

  it('the argument limit counts UTF-8 bytes, and Gemini counts its --prompt= prefix', () => {
    const exactly = 'a'.repeat(MAX_ARG_BYTES);
    assert.equal(deliverPrompt('claude', ['claude', '--'], exactly).ok, true);
    const r = deliverPrompt('claude', ['claude', '--'], exactly);
    assert.ok(r.ok && r.value.stdin === undefined);
    const wide = 'é'.repeat(MAX_ARG_BYTES / 2 + 1); // 2 bytes each: over the limit in bytes, not in characters
    const w = deliverPrompt('claude', ['claude', '--'], wide);
    assert.ok(w.ok && w.value.stdin === wide);
    const g = deliverPrompt('gemini', ['gemini'], exactly);
    assert.ok(g.ok && g.value.stdin === exactly, 'the --prompt= prefix makes it one argument too many bytes');
  });

  it('a longer prompt goes to stdin in each CLI form: Claude without the fence, Codex "-", Gemini and exec bare', () => {
    const long = `${'p'.repeat(MAX_ARG_BYTES)}\nend`;
    const cases: ReadonlyArray<readonly [Vendor, string | undefined, (full: readonly string[]) => string[]]> =
      [
        ['claude', undefined, (full) => full.slice(0, -2)],
        ['claude', 'sess-1', (full) => full.slice(0, -2)],
        ['codex', undefined, (full) => [...full.slice(0, -1), '-']],
        ['codex', 'sess-1', (full) => [...full.slice(0, -1), '-']],
        ['gemini', undefined, (full) => full.slice(0, -1)],
        ['exec', undefined, (full) => full.slice(0, -1)],
      ];
    for (const [vendor, resume, expected] of cases) {
      const full = argvOf(vendor, long, resume);
      const r = deliverPrompt(vendor, argvWithoutPrompt(full), long);
      assert.deepEqual(r, { ok: true, value: { argv: expected(full), stdin: long } }, `${vendor} ${resume}`);
      assert.ok(r.ok && !r.value.argv.includes(long));
    }
    assert.equal(argvOf('codex', long, 'sess-1').at(-2), 'sess-1', 'the session id stays before the prompt');
  });

  it('OpenCode: the prompt on stdin always, short or long, fresh or resumed (as an argument it arrives quoted)', () => {
    for (const prompt of ['say hi', '', 'q'.repeat(MAX_ARG_BYTES + 1)]) {
      for (const resume of [undefined, 'ses_1']) {
        const full = argvOf('opencode', prompt, resume);
        const r = deliverPrompt('opencode', argvWithoutPrompt(full), prompt);
        assert.deepEqual(r, { ok: true, value: { argv: full.slice(0, -1), stdin: prompt } });
        assert.equal(r.ok && r.value.argv.at(-1), '--', 'nothing after the fence');
      }
    }
  });

  it('refuses what a CLI cannot take: a resumed Gemini session past the argument limit', () => {
    const long = 'q'.repeat(MAX_ARG_BYTES + 1);
    const g = deliverPrompt('gemini', argvWithoutPrompt(argvOf('gemini', long, 'sess-1')), long);
    assert.ok(!g.ok);
    assert.match(g.error, /Gemini CLI takes a resumed session's prompt only as an argument$/);
  });

  it('refuses a prompt over 900 KiB, for every vendor, with its size', () => {
    const over = 'o'.repeat(MAX_PROMPT_BYTES + 1);
    for (const vendor of Object.keys(MODELS) as Vendor[]) {
      assert.deepEqual(deliverPrompt(vendor, ['x'], over), {
        ok: false,
        error: `the prompt is ${MAX_PROMPT_BYTES + 1} bytes: a run's prompt holds at most ${MAX_PROMPT_BYTES} bytes (900 KiB)`,
      });
    }
    assert.equal(deliverPrompt('claude', ['claude', '--'], 'o'.repeat(MAX_PROMPT_BYTES)).ok, true);
  });

  it('utf8Bytes counts encoded bytes', () => {
    assert.equal(utf8Bytes(''), 0);
    assert.equal(utf8Bytes('abc'), 3);
    assert.equal(utf8Bytes('é'), 2);
    assert.equal(utf8Bytes('😀'), 4);
  });
});

describe('deliverPrompt with a system prompt', () => {
  it('Claude: --append-system-prompt before the fence; the prompt unchanged', () => {
    const full = argvOf('claude', 'fix it');
    const r = deliverPrompt('claude', argvWithoutPrompt(full), 'fix it', 'You review code.');
    assert.deepEqual(r, {
      ok: true,
      value: { argv: [...full.slice(0, -2), '--append-system-prompt', 'You review code.', '--', 'fix it'] },
    });
    // With a long prompt on stdin, the option stays.
    const long = 'l'.repeat(MAX_ARG_BYTES + 1);
    const s = deliverPrompt('claude', argvWithoutPrompt(argvOf('claude', long)), long, 'sys');
    assert.ok(s.ok && s.value.stdin === long && s.value.argv.at(-1) === 'sys');
  });

  it('the other CLIs read it before the prompt, after a blank line; a blank one is none', () => {
    for (const vendor of ['codex', 'gemini', 'exec'] as const) {
      const combined = 'You review code.\n\nfix it';
      const r = deliverPrompt(
        vendor,
        argvWithoutPrompt(argvOf(vendor, 'fix it')),
        'fix it',
        'You review code.',
      );
      assert.deepEqual(r, { ok: true, value: { argv: argvOf(vendor, combined) } }, vendor);
    }
    const oc = deliverPrompt('opencode', ['opencode', 'run', '--'], 'fix it', 'You review code.');
    assert.deepEqual(oc, {
      ok: true,
      value: { argv: ['opencode', 'run', '--'], stdin: 'You review code.\n\nfix it' },
    });
    assert.deepEqual(deliverPrompt('codex', ['codex', 'exec', '--json', '--'], 'p', '  \n'), {
      ok: true,
      value: { argv: ['codex', 'exec', '--json', '--', 'p'] },
    });
  });

  it('refuses a system prompt over 64 KiB, and counts it in the 900 KiB of the others', () => {
    assert.deepEqual(deliverPrompt('claude', ['claude', '--'], 'p', 's'.repeat(65537)), {
      ok: false,
      error: 'the system prompt is 65537 bytes: at most 65536 bytes (64 KiB)',
    });
    const r = deliverPrompt('codex', ['codex', '--'], 'p'.repeat(MAX_PROMPT_BYTES - 10), 's'.repeat(20));
    assert.ok(!r.ok);
    assert.match(r.error, /^the prompt is 921612 bytes/);
  });
});
