import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  lastMemoryBlock,
  MEMORY_INSTRUCTION,
  memoryAnnotations,
  memoryOfJob,
  promptWithMemory,
  utf8Length,
  utf8Prefix,
} from './memory.ts';

describe('lastMemoryBlock', () => {
  it('is the trimmed content of the last complete block', () => {
    assert.equal(
      lastMemoryBlock('Done.\n<memory>\n- the build needs make\n</memory>\n'),
      '- the build needs make',
    );
    assert.equal(lastMemoryBlock('inline <memory> a b </memory> here'), 'a b');
    assert.equal(
      lastMemoryBlock('<memory>\nfirst\n</memory>\nthen\n<memory>\nsecond\nline\n</memory>\nbye'),
      'second\nline',
      'several blocks: the last one',
    );
    assert.equal(lastMemoryBlock('<memory></memory>'), '', 'an empty block clears the memory');
  });

  it('is undefined without a block', () => {
    for (const text of ['', 'no markers at all', 'a </memory> alone', '<memory', 'memory>']) {
      assert.equal(lastMemoryBlock(text), undefined, JSON.stringify(text));
    }
  });

  it('ignores an unterminated block and a stray closing marker', () => {
    assert.equal(lastMemoryBlock('<memory>\nnever closed'), undefined);
    assert.equal(lastMemoryBlock('<memory>\nkept\n</memory>\nlater <memory> unclosed'), 'kept');
    assert.equal(lastMemoryBlock('</memory>\n<memory>x</memory>\n</memory>'), 'x');
    // An opening marker before another starts afresh at the later one.
    assert.equal(lastMemoryBlock('see the <memory> block:\n<memory>\nreal\n</memory>'), 'real');
  });

  it('does not count markers inside Markdown code: fenced blocks and backtick spans', () => {
    const fenced = [
      '<memory>',
      'real',
      '</memory>',
      '',
      '```html',
      '<memory>',
      'quoted',
      '</memory>',
      '```',
    ].join('\n');
    assert.equal(lastMemoryBlock(fenced), 'real');
    assert.equal(
      lastMemoryBlock('~~~~\n<memory>q</memory>\n~~~\n</memory>\n~~~~\n'),
      undefined,
      'fence length',
    );
    assert.equal(lastMemoryBlock('Use `<memory>` and `</memory>` to save.'), undefined);
    assert.equal(lastMemoryBlock('Use ``a ` <memory>x</memory> ``, then <memory>y</memory>'), 'y');
    // An unmatched backtick is literal, so the markers after it count.
    assert.equal(lastMemoryBlock('one ` tick <memory>z</memory>'), 'z');
    // A code fence inside a block is content; a marker inside that fence does not close it.
    assert.equal(
      lastMemoryBlock('<memory>\nnotes:\n```\necho </memory>\n```\nend\n</memory>'),
      'notes:\n```\necho </memory>\n```\nend',
    );
    // An unclosed fence hides everything after it.
    assert.equal(lastMemoryBlock('```\n<memory>x</memory>'), undefined);
  });

  it('never takes the prompt of a run that echoes it for a block: the instruction quotes the markers', () => {
    const prompt = promptWithMemory('run it', '', 64);
    assert.equal(lastMemoryBlock(prompt), undefined);
    const withOld = promptWithMemory('run it', 'old notes', 64);
    assert.equal(lastMemoryBlock(`${withOld}\n<memory>\nnew notes\n</memory>\n`), 'new notes');
  });

  it('is linear on hostile input (many backtick runs, many markers)', () => {
    const ticks = Array.from({ length: 2000 }, (_, i) => '`'.repeat((i % 60) + 1)).join(' <memory> ');
    const start = performance.now();
    lastMemoryBlock(`${ticks}\n${'<memory>'.repeat(50_000)}`);
    assert.ok(performance.now() - start < 2000);
  });
});

describe('promptWithMemory', () => {
  it('adds the memory between the markers, then the instruction', () => {
    assert.equal(
      promptWithMemory('Fix it', '\n- notes\n', 64),
      `Fix it\n\n<memory>\n- notes\n</memory>\n${MEMORY_INSTRUCTION}\n`,
    );
  });

  it('adds the instruction alone when the memory is blank', () => {
    assert.equal(promptWithMemory('Fix it', ' \n', 64), `Fix it\n\n${MEMORY_INSTRUCTION}\n`);
  });

  it('uses a stored memory over the cap only up to maxSizeKB, cut on a character boundary', () => {
    const memory = `${'a'.repeat(1023)}é and more`;
    const prompt = promptWithMemory('p', memory, 1);
    assert.ok(
      prompt.includes(`<memory>\n${'a'.repeat(1023)}\n</memory>`),
      'é (2 bytes) does not fit in 1024',
    );
  });

  it('the instruction names the mount and quotes the markers', () => {
    assert.match(MEMORY_INSTRUCTION, /\/agent\/memory\/MEMORY\.md/);
    assert.match(MEMORY_INSTRUCTION, /`<memory>`.*`<\/memory>`/);
  });
});

describe('UTF-8 helpers', () => {
  it('measures and cuts without splitting a character', () => {
    assert.equal(utf8Length('aé€😀'), 1 + 2 + 3 + 4);
    assert.equal(utf8Prefix('aé€😀', 6), 'aé€');
    assert.equal(utf8Prefix('aé€😀', 9), 'aé€');
    assert.equal(utf8Prefix('aé€😀', 10), 'aé€😀');
    assert.equal(utf8Prefix('😀', 3), '');
    assert.equal(utf8Prefix('abc', 0), '');
  });
});

describe('memory on the Job', () => {
  it('round-trips through the annotations', () => {
    const a = memoryAnnotations('notes', 8, { content: 'x', resourceVersion: '12' });
    assert.deepEqual(memoryOfJob(a, 64), { configMap: 'notes', maxSizeKB: 8, readVersion: '12' });
    assert.deepEqual(memoryOfJob(memoryAnnotations('notes', 8, { content: '' }), 64)?.readVersion, '');
    assert.deepEqual(memoryOfJob(memoryAnnotations('notes', 8, undefined), 64), {
      configMap: 'notes',
      maxSizeKB: 8,
      readVersion: undefined,
    });
  });

  it('is absent without the annotation; a bad size reads as the default', () => {
    assert.equal(memoryOfJob({}, 64), undefined);
    assert.equal(memoryOfJob({ 'agents.re-cinq.com/memory-configmap': '' }, 64), undefined);
    assert.equal(
      memoryOfJob(
        {
          'agents.re-cinq.com/memory-configmap': 'n',
          'agents.re-cinq.com/memory-max-size-kb': 'lots',
        },
        64,
      )?.maxSizeKB,
      64,
    );
  });
});
