import assert from 'node:assert/strict';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ApiServer,
  DEFAULT_SERVER_CONCURRENCY,
  DEFAULT_SERVER_MAX_BODY_BYTES,
  DEFAULT_SERVER_PORT,
  DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS,
  parseServerConfig,
  serverContext,
} from './server.ts';
import { API_KEY_RELOAD_MS, ApiKeyFile, type ApiKeyState, apiKeyOfText } from './server-key.ts';
import { prepare, type SupervisorIo } from './supervise.ts';

const KEY = 'k'.repeat(16);
const KEY_FILE = '/var/run/agent-server/api-key';
const RECIPE = JSON.stringify({ model: 'claude-opus-5-5', permissionMode: 'bypass', allowedTools: ['Bash'] });
const base = { AGENT_SERVER_API_KEY_FILE: KEY_FILE, AGENT_RUN_RECIPE: RECIPE };

/** The error of settings that must be refused. */
function refused(env: Record<string, string>): string {
  const r = parseServerConfig(env);
  if (r.ok) assert.fail(`accepted: ${JSON.stringify(env)}`);
  return r.error;
}

describe('server settings', () => {
  it('defaults everything but the key file and the recipe', () => {
    const r = parseServerConfig(base);
    assert.ok(r.ok);
    assert.deepEqual(r.value, {
      apiKeyFile: KEY_FILE,
      port: DEFAULT_SERVER_PORT,
      host: '0.0.0.0',
      concurrency: DEFAULT_SERVER_CONCURRENCY,
      requestTimeoutMs: DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS * 1000,
      maxBodyBytes: DEFAULT_SERVER_MAX_BODY_BYTES,
      recipe: { model: 'claude-opus-5-5', permissionMode: 'bypass', allowedTools: ['Bash'] },
    });
    assert.equal(DEFAULT_SERVER_PORT, 8080);
    assert.equal(DEFAULT_SERVER_CONCURRENCY, 4);
    assert.equal(DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS, 300);
    assert.equal(DEFAULT_SERVER_MAX_BODY_BYTES, 1048576);
  });

  it('reads every setting; blank means the default', () => {
    const r = parseServerConfig({
      ...base,
      AGENT_SERVER_PORT: '9000',
      AGENT_POD_IP: '10.0.0.7',
      AGENT_SERVER_CONCURRENCY: ' 1 ',
      AGENT_SERVER_REQUEST_TIMEOUT_SECONDS: '2',
      AGENT_SERVER_MAX_BODY_BYTES: '',
    });
    assert.ok(r.ok);
    assert.equal(r.value.port, 9000);
    assert.equal(r.value.host, '10.0.0.7');
    assert.equal(r.value.concurrency, 1);
    assert.equal(r.value.requestTimeoutMs, 2000);
    assert.equal(r.value.maxBodyBytes, DEFAULT_SERVER_MAX_BODY_BYTES);
  });

  it('needs AGENT_SERVER_API_KEY_FILE, not a key in the environment', () => {
    for (const file of [undefined, '', '  ']) {
      const env: Record<string, string> = { AGENT_RUN_RECIPE: RECIPE, AGENT_SERVER_API_KEY: KEY };
      if (file !== undefined) env.AGENT_SERVER_API_KEY_FILE = file;
      const error = refused(env);
      assert.equal(
        error,
        'AGENT_SERVER_API_KEY_FILE is not set: the server reads its API key from the file it names',
      );
      assert.ok(!error.includes(KEY));
    }
  });
});

describe('the API key file', () => {
  it('trims whitespace and newlines around the key (a Secret made --from-file ends in a newline)', () => {
    for (const raw of [`${KEY}\n`, `  ${KEY}\r\n`, `\t${KEY} `])
      assert.deepEqual(apiKeyOfText(raw), { kind: 'usable', key: KEY }, JSON.stringify(raw));
  });

  it('counts the length of the trimmed key; empty or short is unusable, saying why but never the content', () => {
    assert.deepEqual(apiKeyOfText(''), { kind: 'unusable', why: 'the API key file is empty' });
    assert.deepEqual(apiKeyOfText('\n'.repeat(20)), { kind: 'unusable', why: 'the API key file is empty' });
    for (const raw of [`${'k'.repeat(15)}\n`, ` ${'k'.repeat(15)} `]) {
      const state = apiKeyOfText(raw);
      assert.equal(state.kind, 'unusable');
      assert.ok(state.kind === 'unusable' && !state.why.includes('k'.repeat(15)));
      assert.match(state.kind === 'unusable' ? state.why : '', /shorter than 16 characters/);
    }
  });

  it('is read again only once the last read is a second old, then sees a new key, a missing and a restored file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'srv-key-'));
    const file = join(dir, 'api-key');
    let now = 1_000_000;
    const changes: [ApiKeyState, ApiKeyState | undefined][] = [];
    const key = new ApiKeyFile(file, {
      now: () => now,
      onChange: (state, previous) => changes.push([state, previous]),
    });
    try {
      assert.deepEqual(await key.current(), { kind: 'unusable', why: 'the API key file is missing' });
      await writeFile(file, `${KEY}\n`);
      now += API_KEY_RELOAD_MS - 1;
      assert.equal((await key.current()).kind, 'unusable', 'not read again within the second');
      now += 1;
      assert.deepEqual(await key.current(), { kind: 'usable', key: KEY });
      const other = 'o'.repeat(20);
      await writeFile(file, other);
      assert.deepEqual(await key.current(), { kind: 'usable', key: KEY }, 'the old key within the second');
      now += API_KEY_RELOAD_MS;
      assert.deepEqual(await key.current(), { kind: 'usable', key: other });
      now += API_KEY_RELOAD_MS;
      assert.deepEqual(await key.current(), { kind: 'usable', key: other });
      await unlink(file);
      now += API_KEY_RELOAD_MS;
      assert.equal((await key.current()).kind, 'unusable');
      // Each new state heard once, with the one before; an unchanged read is not a change.
      assert.deepEqual(
        changes.map(([state, previous]) => [state.kind, previous?.kind]),
        [
          ['unusable', undefined],
          ['usable', 'unusable'],
          ['usable', 'usable'],
          ['unusable', 'usable'],
        ],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads once for callers that ask at the same time; not again within the second, then once more', async () => {
    let now = 5_000;
    const reads: ((text: string) => void)[] = [];
    const key = new ApiKeyFile(KEY_FILE, {
      now: () => now,
      readFile: (path) => {
        assert.equal(path, KEY_FILE);
        return new Promise((resolve) => reads.push(resolve));
      },
    });
    const asked = [key.current(), key.current(), key.current()];
    assert.equal(reads.length, 1, 'one read while it is under way');
    reads[0]?.(KEY);
    assert.deepEqual(
      await Promise.all(asked),
      [0, 1, 2].map(() => ({ kind: 'usable', key: KEY })),
    );
    assert.deepEqual(await key.current(), { kind: 'usable', key: KEY });
    assert.equal(reads.length, 1, 'the read is reused within the second');
    now += API_KEY_RELOAD_MS;
    const again = [key.current(), key.current()];
    assert.equal(reads.length, 2, 'one more read once the second is over, shared again');
    reads[1]?.(`${'n'.repeat(16)}\n`);
    assert.deepEqual(
      await Promise.all(again),
      [0, 1].map(() => ({ kind: 'usable', key: 'n'.repeat(16) })),
    );
  });

  it('reads the file by default, and says why it cannot: missing, or the errno of another failure', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'srv-key-'));
    try {
      const file = join(dir, 'api-key');
      await writeFile(file, ` ${KEY}\n`);
      assert.deepEqual(await new ApiKeyFile(file).current(), { kind: 'usable', key: KEY });
      assert.deepEqual(await new ApiKeyFile(join(dir, 'none')).current(), {
        kind: 'unusable',
        why: 'the API key file is missing',
      });
      assert.deepEqual(await new ApiKeyFile(dir).current(), {
        kind: 'unusable',
        why: 'the API key file cannot be read (EISDIR)',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is read again at once when its clock runs backwards', async () => {
    let now = 1_000_000;
    let text = KEY;
    let reads = 0;
    const key = new ApiKeyFile(KEY_FILE, {
      now: () => now,
      readFile: async () => {
        reads++;
        return text;
      },
    });
    assert.deepEqual(await key.current(), { kind: 'usable', key: KEY });
    text = '';
    now -= 3_600_000;
    assert.deepEqual(await key.current(), { kind: 'unusable', why: 'the API key file is empty' });
    assert.equal(reads, 2);
  });

  it('an API server times its re-reads on the monotonic clock: a wall clock stepped back does not stop them', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'srv-key-'));
    const file = join(dir, 'api-key');
    // Both clocks move only when the test says so; the wall clock is stepped an hour back once.
    let wall = Date.parse('2025-06-01T12:00:00Z');
    let mono = 1_000;
    t.mock.method(performance, 'now', () => mono);
    const quiet = { write: () => true, once: () => undefined, on: () => undefined };
    const io: SupervisorIo = {
      argv: ['claude'],
      env: { ...base, AGENT_SERVER_API_KEY_FILE: file },
      stdout: quiet,
      stderr: quiet,
      now: () => wall,
      onSignal: () => () => undefined,
    };
    const readyz = async (server: ApiServer): Promise<number> => (await server.app.request('/readyz')).status;
    try {
      const config = parseServerConfig(io.env);
      assert.ok(config.ok);
      const server = new ApiServer(serverContext(prepare(io), config.value), config.value);
      assert.equal(await readyz(server), 503, 'no key file yet');
      await writeFile(file, KEY);
      assert.equal(await readyz(server), 503, 'not read again within the second');
      wall -= 3_600_000;
      mono += API_KEY_RELOAD_MS;
      assert.equal(await readyz(server), 200, 'read again a second later');
      await unlink(file);
      mono += API_KEY_RELOAD_MS;
      assert.equal(
        await readyz(server),
        503,
        'a revoked key stops working a second later, though the wall clock is an hour behind the last read',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('server settings: unusable values', () => {
  const bad: [string, string, RegExp][] = [
    ['AGENT_SERVER_PORT', '0', /AGENT_SERVER_PORT must be an integer from 1 to 65535, got "0"/],
    ['AGENT_SERVER_PORT', '70000', /AGENT_SERVER_PORT/],
    ['AGENT_SERVER_CONCURRENCY', '0', /AGENT_SERVER_CONCURRENCY must be an integer from 1/],
    ['AGENT_SERVER_CONCURRENCY', '2.5', /AGENT_SERVER_CONCURRENCY/],
    ['AGENT_SERVER_CONCURRENCY', '-1', /AGENT_SERVER_CONCURRENCY/],
    [
      'AGENT_SERVER_REQUEST_TIMEOUT_SECONDS',
      '0',
      /AGENT_SERVER_REQUEST_TIMEOUT_SECONDS must be an integer from 1/,
    ],
    ['AGENT_SERVER_REQUEST_TIMEOUT_SECONDS', '5m', /AGENT_SERVER_REQUEST_TIMEOUT_SECONDS/],
    ['AGENT_SERVER_MAX_BODY_BYTES', 'lots', /AGENT_SERVER_MAX_BODY_BYTES/],
    ['AGENT_RUN_RECIPE', '', /AGENT_RUN_RECIPE is not JSON/],
    ['AGENT_RUN_RECIPE', '{"permissionMode":"bypass"}', /AGENT_RUN_RECIPE: .*model/],
  ];
  for (const [name, value, message] of bad) {
    it(`refuses ${name}=${JSON.stringify(value)}`, () => {
      const error = refused({ ...base, [name]: value });
      assert.match(error, message);
      assert.ok(!error.includes(KEY));
    });
  }

  it('quotes at most 40 characters of an unusable value', () => {
    const error = refused({ ...base, AGENT_SERVER_CONCURRENCY: 'x'.repeat(100) });
    assert.ok(error.includes(`"${'x'.repeat(40)}"`), error);
    assert.ok(!error.includes('x'.repeat(41)));
  });
});
