import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { vendorCommand } from './argv.ts';
import { claudeMcpConfig } from './claude.ts';
import { EXEC_ERRORS } from './exec.ts';
import type { VendorRunInput } from './input.ts';
import { opencodeModel } from './opencode.ts';
import { DEFAULT_MODEL, type Vendor, vendorForModel } from './route.ts';

describe('vendorForModel', () => {
  const cases: ReadonlyArray<readonly [string, Vendor]> = [
    ['', 'claude'],
    ['claude-opus-5-5', 'claude'],
    ['claude-sonnet-4-6', 'claude'],
    ['exec', 'exec'],
    ['EXEC', 'exec'],
    ['exec-model', 'claude'],
    ['opencode', 'opencode'],
    ['opencode/anthropic/claude-opus-5-5', 'opencode'],
    ['OpenCode/openai/gpt-6-sol', 'opencode'],
    ['codex', 'codex'],
    ['gpt-5-codex', 'codex'],
    ['gpt-6-sol', 'codex'],
    ['GPT-6.2-astra', 'codex'],
    ['o1-mini', 'codex'],
    ['o3', 'codex'],
    ['o4-mini', 'codex'],
    ['o2', 'claude'],
    ['gemini-3.8-flash', 'gemini'],
    ['gemini-3.1-pro-preview', 'gemini'],
    ['Gemini-Flash-Latest', 'gemini'],
    ['mistral-large', 'claude'],
  ];
  for (const [model, vendor] of cases) {
    it(`routes ${JSON.stringify(model)} to ${vendor}`, () => assert.equal(vendorForModel(model), vendor));
  }
});

describe('DEFAULT_MODEL', () => {
  it('is claude-opus-5-5 and routes to claude', () => {
    assert.equal(DEFAULT_MODEL, 'claude-opus-5-5');
    assert.equal(vendorForModel(DEFAULT_MODEL), 'claude');
  });
});

const base: VendorRunInput = { model: DEFAULT_MODEL, prompt: 'Fix it' };
const CLAUDE_HEAD = ['claude', '--print', '--verbose', '--output-format', 'stream-json'];

describe('vendorCommand argv', () => {
  const cases: ReadonlyArray<readonly [string, VendorRunInput, Vendor, string[]]> = [
    [
      'claude minimal (auto mode, no tools)',
      base,
      'claude',
      [...CLAUDE_HEAD, '--model', 'claude-opus-5-5', '--', 'Fix it'],
    ],
    [
      'claude auto with allow and deny lists, max turns',
      {
        ...base,
        permissionMode: 'auto',
        allowedTools: ['Read', 'Bash(git:*)', ''],
        disallowedTools: ['WebFetch'],
        maxTurns: 7,
      },
      'claude',
      [
        ...CLAUDE_HEAD,
        '--model',
        'claude-opus-5-5',
        '--allowedTools',
        'Read',
        '--allowedTools',
        'Bash(git:*)',
        '--disallowedTools',
        'WebFetch',

        '--max-turns',
        '7',
        '--',
        'Fix it',
      ],
    ],
    [
      'claude bypass skips permissions but keeps the deny list',
      { ...base, permissionMode: 'bypass', allowedTools: ['Read'], disallowedTools: ['Bash'], maxTurns: 0 },
      'claude',
      [
        ...CLAUDE_HEAD,
        '--model',
        'claude-opus-5-5',
        '--dangerously-skip-permissions',
        '--disallowedTools',
        'Bash',

        '--',
        'Fix it',
      ],
    ],
    [
      'claude unknown permission mode reads as auto',
      { ...base, permissionMode: 'yolo', allowedTools: ['Read'] },
      'claude',
      [...CLAUDE_HEAD, '--model', 'claude-opus-5-5', '--allowedTools', 'Read', '--', 'Fix it'],
    ],
    [
      'claude resume alone',
      { ...base, resumeSession: 'sess-1' },
      'claude',
      [...CLAUDE_HEAD, '--model', 'claude-opus-5-5', '--resume', 'sess-1', '--', 'Fix it'],
    ],
    [
      'claude pin alone',
      { ...base, conversationPin: 'pin-1' },
      'claude',
      [...CLAUDE_HEAD, '--model', 'claude-opus-5-5', '--session-id', 'pin-1', '--', 'Fix it'],
    ],
    [
      'claude resume and pin fork the session',
      { ...base, model: 'claude-haiku-5-5', resumeSession: 'sess-1', conversationPin: 'pin-1', maxTurns: 3 },
      'claude',
      [
        ...CLAUDE_HEAD,
        '--model',
        'claude-haiku-5-5',

        '--max-turns',
        '3',
        '--resume',
        'sess-1',
        '--fork-session',
        '--session-id',
        'pin-1',
        '--',
        'Fix it',
      ],
    ],
    [
      'claude prompt starting with a dash stays fenced',
      { ...base, prompt: '--help me' },
      'claude',
      [...CLAUDE_HEAD, '--model', 'claude-opus-5-5', '--', '--help me'],
    ],
    [
      'codex fresh, auto (lists of empty names are no lists)',
      { ...base, model: 'gpt-6-sol', allowedTools: [''], disallowedTools: [''], maxTurns: 4 },
      'codex',
      [
        'codex',
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--model',
        'gpt-6-sol',
        '-c',
        'sandbox_mode="danger-full-access"',
        '-c',
        'approval_policy="never"',
        '--',
        'Fix it',
      ],
    ],
    [
      'codex fresh, bypass (an allow list means nothing there, as for every CLI)',
      { ...base, model: 'gpt-5-codex', permissionMode: 'bypass', allowedTools: ['Read'] },
      'codex',
      [
        'codex',
        'exec',
        '--json',
        '--skip-git-repo-check',
        '--model',
        'gpt-5-codex',
        '--dangerously-bypass-approvals-and-sandbox',
        '--',
        'Fix it',
      ],
    ],
    [
      'codex alone uses the CLI default model',
      { ...base, model: 'codex' },
      'codex',
      [
        'codex',
        'exec',
        '--json',
        '--skip-git-repo-check',
        '-c',
        'sandbox_mode="danger-full-access"',
        '-c',
        'approval_policy="never"',
        '--',
        'Fix it',
      ],
    ],
    [
      'codex resume fences the id and the prompt',
      {
        ...base,
        model: 'o3',
        permissionMode: 'bypass',
        resumeSession: '0199-thread',
        conversationPin: 'ignored',
      },
      'codex',
      [
        'codex',
        'exec',
        'resume',
        '--json',
        '--skip-git-repo-check',
        '--model',
        'o3',
        '--dangerously-bypass-approvals-and-sandbox',
        '--',
        '0199-thread',
        'Fix it',
      ],
    ],
    [
      'codex resume, auto: no sandbox of its own, as config overrides (exec resume refuses -s)',
      { ...base, model: 'codex', resumeSession: '0199-thread' },
      'codex',
      [
        'codex',
        'exec',
        'resume',
        '--json',
        '--skip-git-repo-check',
        '-c',
        'sandbox_mode="danger-full-access"',
        '-c',
        'approval_policy="never"',
        '--',
        '0199-thread',
        'Fix it',
      ],
    ],
    [
      'opencode with provider/model',
      { ...base, model: 'opencode/anthropic/claude-opus-5-5', permissionMode: 'bypass', allowedTools: ['a'] },
      'opencode',
      ['opencode', 'run', '--format', 'json', '--model', 'anthropic/claude-opus-5-5', '--', 'Fix it'],
    ],
    [
      'opencode alone, resumed',
      { ...base, model: 'opencode', resumeSession: 'ses_1' },
      'opencode',
      ['opencode', 'run', '--format', 'json', '--session', 'ses_1', '--', 'Fix it'],
    ],
    [
      'gemini auto with allowed tools',
      {
        ...base,
        model: 'gemini-3.8-flash',
        allowedTools: ['read_file', 'run_shell_command(git)'],
        maxTurns: 9,
      },
      'gemini',
      [
        'gemini',
        '--output-format',
        'stream-json',
        '--model',
        'gemini-3.8-flash',
        '--skip-trust',
        '--allowed-tools=read_file',
        '--allowed-tools=run_shell_command(git)',
        '--prompt=Fix it',
      ],
    ],
    [
      'gemini bypass, resumed (resume wins over the pin)',
      {
        ...base,
        model: 'gemini-3.1-pro-preview',
        permissionMode: 'bypass',
        allowedTools: ['x'],
        resumeSession: 'latest',
        conversationPin: 'p',
      },
      'gemini',
      [
        'gemini',
        '--output-format',
        'stream-json',
        '--model',
        'gemini-3.1-pro-preview',
        '--skip-trust',
        '--approval-mode=yolo',
        '--resume',
        'latest',
        '--prompt=Fix it',
      ],
    ],
    [
      'gemini pinned, prompt starting with a dash',
      { ...base, model: 'gemini-3.8-flash', conversationPin: 'p-1', prompt: '-x' },
      'gemini',
      [
        'gemini',
        '--output-format',
        'stream-json',
        '--model',
        'gemini-3.8-flash',
        '--skip-trust',
        '--session-id',
        'p-1',
        '--prompt=-x',
      ],
    ],
    [
      'exec appends the prompt to tool_config.command',
      {
        ...base,
        model: 'exec',
        toolConfig: { command: ['/bin/sh', '-c', 'echo "$0"'] },
        permissionMode: 'bypass',
      },
      'exec',
      ['/bin/sh', '-c', 'echo "$0"', 'Fix it'],
    ],
    [
      'exec with an empty prompt still passes it',
      { ...base, model: 'exec', prompt: '', toolConfig: { command: ['true'] } },
      'exec',
      ['true', ''],
    ],
  ];
  for (const [name, input, vendor, argv] of cases) {
    it(name, () => {
      assert.deepEqual(vendorCommand(input), { ok: true, value: { vendor, argv } });
    });
  }
});

describe('vendorCommand errors', () => {
  const cases: ReadonlyArray<readonly [string, VendorRunInput, string]> = [
    ['exec without tool_config', { ...base, model: 'exec' }, EXEC_ERRORS.missing],
    ['exec with tool_config null', { ...base, model: 'exec', toolConfig: null }, EXEC_ERRORS.missing],
    ['exec with tool_config an array', { ...base, model: 'exec', toolConfig: ['x'] }, EXEC_ERRORS.missing],
    ['exec without command', { ...base, model: 'exec', toolConfig: { other: 1 } }, EXEC_ERRORS.missing],
    [
      'exec with a string command',
      { ...base, model: 'exec', toolConfig: { command: 'ls' } },
      EXEC_ERRORS.notArray,
    ],
    [
      'exec with an empty command',
      { ...base, model: 'exec', toolConfig: { command: [] } },
      EXEC_ERRORS.notArray,
    ],
    [
      'exec with a non-string entry',
      { ...base, model: 'exec', toolConfig: { command: ['ls', 3] } },
      EXEC_ERRORS.notStrings,
    ],
    [
      'exec with an empty program',
      { ...base, model: 'exec', toolConfig: { command: ['', 'x'] } },
      EXEC_ERRORS.emptyProgram,
    ],
    [
      'a resume id shaped like a flag',
      { ...base, resumeSession: '--dangerously-skip-permissions' },
      `spec.resumeSession "--dangerously-skip-permissions" must not start with '-'`,
    ],
    [
      'a deny list routed to codex, which cannot enforce one',
      { ...base, model: 'gpt-6-sol', disallowedTools: ['Bash', 'WebFetch'] },
      'disallowed_tools (Bash, WebFetch): the codex CLI cannot enforce a tool deny list; remove it or use a model routed to Claude Code',
    ],
    [
      'an allow list routed to codex in auto mode, which it cannot enforce',
      { ...base, model: 'gpt-6-sol', allowedTools: ['Read', 'Grep'] },
      'allowed_tools (Read, Grep): the codex CLI cannot enforce a tool allow list, so the run would get every tool; remove it (or set permission_mode: bypass to allow every tool) or use a model routed to Claude Code or Gemini CLI',
    ],
    [
      'an allow list routed to opencode (an unknown permission mode reads as auto)',
      { ...base, model: 'opencode/anthropic/claude-opus-5-5', permissionMode: 'ask', allowedTools: ['read'] },
      'allowed_tools (read): the opencode CLI cannot enforce a tool allow list, so the run would get every tool; remove it (or set permission_mode: bypass to allow every tool) or use a model routed to Claude Code or Gemini CLI',
    ],
    [
      'a deny list on codex is named before its allow list',
      { ...base, model: 'codex', allowedTools: ['Read'], disallowedTools: ['Bash'] },
      'disallowed_tools (Bash): the codex CLI cannot enforce a tool deny list; remove it or use a model routed to Claude Code',
    ],
    [
      'a pin with a newline',
      { ...base, conversationPin: 'a\nb' },
      'resources.conversation.pin must not contain control characters',
    ],
  ];
  for (const [name, input, error] of cases) {
    it(name, () => assert.deepEqual(vendorCommand(input), { ok: false, error }));
  }
  it('spells the exec errors as the reference does', () => {
    assert.equal(EXEC_ERRORS.missing, 'exec recipe needs tool_config.command (the argv to spawn)');
    assert.match(EXEC_ERRORS.notArray, /must be a non-empty array of strings$/);
    assert.match(EXEC_ERRORS.notStrings, /entries must be strings$/);
  });
});

describe('claudeMcpConfig', () => {
  it('renders http, sse and stdio servers with header env references', () => {
    const json = claudeMcpConfig([
      { name: 'lore', transport: 'http', url: 'https://lore.example/mcp', headers_secret: 'lore-mcp-auth' },
      { name: 'events', transport: 'sse', url: 'https://ev.example/sse' },
      { name: 'fs', transport: 'stdio', command: 'npx', args: ['-y', '@x/fs', '/workspace'] },
      { name: 'bare', transport: 'stdio' },
      { name: 'blank', transport: 'http', url: 'https://b', headers_secret: '' },
    ]);
    assert.equal(
      json,
      '{"mcpServers":{' +
        '"lore":{"type":"http","url":"https://lore.example/mcp","headers":{"Authorization":"$' +
        '{LORE_MCP_AUTH}"}},' +
        '"events":{"type":"sse","url":"https://ev.example/sse"},' +
        '"fs":{"type":"stdio","command":"npx","args":["-y","@x/fs","/workspace"]},' +
        '"bare":{"type":"stdio","args":[]},' +
        '"blank":{"type":"http","url":"https://b"}}}',
    );
  });

  it('goes into the claude argv with --strict-mcp-config', () => {
    const res = vendorCommand({
      ...base,
      mcpServers: [{ name: 'fs', transport: 'stdio', command: 'fs-mcp' }],
    });
    assert.ok(res.ok);
    const argv = res.value.argv;
    const at = argv.indexOf('--mcp-config');
    assert.deepEqual(argv.slice(at, at + 3), [
      '--mcp-config',
      '{"mcpServers":{"fs":{"type":"stdio","command":"fs-mcp","args":[]}}}',
      '--strict-mcp-config',
    ]);
    assert.equal(argv.at(-2), '--', 'the MCP config comes before the prompt fence');
  });
});

describe('codex MCP servers', () => {
  it('become -c overrides before the prompt fence, approved, the header read from its env var', () => {
    const res = vendorCommand({
      ...base,
      model: 'gpt-6-sol',
      mcpServers: [
        {
          name: 'lore',
          transport: 'http',
          url: 'http://localhost:8080/mcp',
          headers_secret: 'lore-mcp-auth',
        },
        { name: 'fs', transport: 'stdio', command: 'fs-mcp', args: ['/workspace', 'a"b'] },
        { name: 'a.b', transport: 'sse', url: 'http://x/sse', headers_secret: '' },
      ],
    });
    assert.ok(res.ok);
    const argv = res.value.argv;
    const first = argv.indexOf('-c', argv.indexOf('approval_policy="never"'));
    assert.deepEqual(argv.slice(first), [
      '-c',
      'mcp_servers.lore.url="http://localhost:8080/mcp"',
      '-c',
      'mcp_servers.lore.env_http_headers={ Authorization = "LORE_MCP_AUTH" }',
      '-c',
      'mcp_servers.lore.default_tools_approval_mode="approve"',
      '-c',
      'mcp_servers.fs.command="fs-mcp"',
      '-c',
      'mcp_servers.fs.args=["/workspace", "a\\"b"]',
      '-c',
      'mcp_servers.fs.default_tools_approval_mode="approve"',
      '-c',
      'mcp_servers."a.b".url="http://x/sse"',
      '-c',
      'mcp_servers."a.b".default_tools_approval_mode="approve"',
      '--',
      'Fix it',
    ]);
  });
});

describe('opencodeModel', () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ['opencode/anthropic/claude-opus-5-5', 'anthropic/claude-opus-5-5'],
    ['OpenCode/openai/gpt-6-sol', 'openai/gpt-6-sol'],
    ['opencode', undefined],
    ['opencode/', undefined],
    ['my-opencode-model', 'my-opencode-model'],
  ];
  for (const [model, want] of cases) {
    it(`${model} → ${String(want)}`, () => assert.equal(opencodeModel(model), want));
  }
});
