import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { completeSpec, completionSpec } from './completion.ts';
import { completionAnswer, completionScript, planCompletion, typedConnection } from './completion-scripts.ts';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps, STATIONS_PATH } from './fake-cluster.ts';
import { rawAgent, rawStation } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

describe('planCompletion', () => {
  const words = (args: string[]) => {
    const p = planCompletion(args);
    return p.kind === 'words' ? p.words : p;
  };

  it('subcommands first, global flags after a dash', () => {
    assert.deepEqual(words(['']), [
      'run',
      'rerun',
      'get',
      'describe',
      'logs',
      'delete',
      'prompt',
      'close',
      'suspend',
      'resume',
      'version',
      'completion',
    ]);
    assert.deepEqual(words(['-']), ['--kubeconfig', '--context', '--namespace', '-n', '--help']);
    assert.deepEqual(planCompletion(['rerun', '']), { kind: 'names', resource: 'agents' });
    assert.deepEqual(planCompletion(['rerun', 'a', '']), { kind: 'none' });
    assert.deepEqual(words(['rerun', 'a', '-o', '']), ['name', 'yaml', 'json']);
    assert.deepEqual(words(['get', '-o', '']), ['wide', 'json', 'yaml', 'name']);
    assert.ok((words(['rerun', '--']) as string[]).includes('--name'));
    assert.deepEqual(planCompletion(['-n', '']), { kind: 'names', resource: 'namespaces' });
    assert.deepEqual(
      (words(['-n', 'team', '']) as string[]).slice(0, 2),
      ['run', 'rerun'],
      'flags may come before the command',
    );
  });

  it('positionals of each command', () => {
    assert.deepEqual(planCompletion(['run', '']), { kind: 'names', resource: 'stations' });
    assert.deepEqual(planCompletion(['run', 'hello', '']), { kind: 'none' });
    assert.deepEqual(words(['get', '']), ['agents', 'stations', 'definitions']);
    assert.deepEqual(planCompletion(['get', 'stations', '']), { kind: 'names', resource: 'stations' });
    assert.deepEqual(planCompletion(['get', 'ad', '']), { kind: 'names', resource: 'definitions' });
    assert.deepEqual(planCompletion(['get', 'hello-x', '']), { kind: 'names', resource: 'agents' });
    assert.deepEqual(words(['describe', '']), ['agent']);
    assert.deepEqual(planCompletion(['describe', 'agent', '']), { kind: 'names', resource: 'agents' });
    assert.deepEqual(planCompletion(['logs', '-f', '']), { kind: 'names', resource: 'agents' });
    assert.deepEqual(words(['delete', '']), ['agent', 'station', 'definition']);
    assert.deepEqual(planCompletion(['delete', 'station', 'a', '']), { kind: 'names', resource: 'stations' });
    assert.deepEqual(planCompletion(['delete', 'nonsense', '']), { kind: 'none' });
    assert.deepEqual(planCompletion(['prompt', '']), { kind: 'names', resource: 'agents' });
    assert.deepEqual(words(['completion', '']), ['bash', 'zsh', 'fish']);
    assert.deepEqual(planCompletion(['controller', '']), { kind: 'none' });
  });

  it('flags of the command, and their values', () => {
    const runFlags = words(['run', 'hello', '--']) as string[];
    for (const f of [
      '--prompt',
      '-p',
      '--prompt-file',
      '--set',
      '--model',
      '--name',
      '--wait',
      '--follow',
      '--json',
      '--timeout',
      '--namespace',
      '--help',
    ])
      assert.ok(runFlags.includes(f), f);
    assert.deepEqual(words(['get', '-o', '']), ['wide', 'json', 'yaml', 'name']);
    assert.deepEqual(words(['get', '--output', '']), ['wide', 'json', 'yaml', 'name']);
    assert.deepEqual(planCompletion(['run', 'x', '--prompt-file', '']), { kind: 'files' });
    assert.deepEqual(planCompletion(['get', '--kubeconfig', '']), { kind: 'files' });
    assert.deepEqual(planCompletion(['run', 'x', '--timeout', '']), { kind: 'none' });
    assert.deepEqual(planCompletion(['get', '-n', '']), { kind: 'names', resource: 'namespaces' });
    assert.deepEqual(planCompletion(['run', '--output=json', '--x=']), { kind: 'none' });
  });

  it('skips flag values when counting positionals', () => {
    assert.deepEqual(planCompletion(['get', '-o', 'wide', 'stations', '']), {
      kind: 'names',
      resource: 'stations',
    });
    assert.deepEqual(planCompletion(['run', '--model', 'm', '']), { kind: 'names', resource: 'stations' });
  });

  it('typedConnection reads the connection flags typed so far', () => {
    assert.deepEqual(typedConnection(['get', '-n', 'team', '--context=dev', '--kubeconfig', '/k']), {
      namespace: 'team',
      context: 'dev',
      kubeconfig: '/k',
    });
    assert.deepEqual(typedConnection(['get', '-n']), {});
  });

  it('answers in the cobra format: matching candidates, then the directive', () => {
    assert.equal(completionAnswer(['agents', 'stations', 'agents'], 'a', false), 'agents\n:4\n');
    assert.equal(completionAnswer([], '', true), ':0\n');
  });
});

describe('__complete and completion', () => {
  it('looks names up in the namespace typed', async () => {
    const c = new FakeCluster();
    c.put(STATIONS_PATH, rawStation('hello') as Obj);
    c.put(STATIONS_PATH, rawStation('nightly') as Obj);
    c.put(AGENTS_PATH, rawAgent('hello-1') as Obj);
    const io = captureIo(['-n', 'team', 'run', 'h']);
    const deps = fakeDeps(c);
    assert.equal(await guarded(completeSpec, io, deps), 0);
    assert.equal(io.stdoutText(), 'hello\n:4\n');
    assert.deepEqual(deps.connected[0], { namespace: 'team' });
    const logs = captureIo(['logs', '']);
    await guarded(completeSpec, logs, fakeDeps(c));
    assert.equal(logs.stdoutText(), 'hello-1\n:4\n');
  });

  it('completes the value of --flag= and -o=, answered as whole words', async () => {
    const io = captureIo(['get', '--output=y']);
    assert.equal(await guarded(completeSpec, io, fakeDeps(new FakeCluster())), 0);
    assert.equal(io.stdoutText(), '--output=yaml\n:4\n');
    const short = captureIo(['get', '-o=']);
    await guarded(completeSpec, short, fakeDeps(new FakeCluster()));
    assert.equal(short.stdoutText(), '-o=wide\n-o=json\n-o=yaml\n-o=name\n:4\n');
  });

  it('offers nothing (never an error) when the cluster cannot answer', async () => {
    const c = new FakeCluster();
    c.override = () => ({ status: 403, body: {} });
    const io = captureIo(['get', 'agents', '']);
    assert.equal(await guarded(completeSpec, io, fakeDeps(c)), 0);
    assert.equal(io.stdoutText(), ':4\n');
    assert.equal(io.stderrText(), '');
  });

  it('completion prints the script of a shell; anything else is a usage error', async () => {
    const c = new FakeCluster();
    for (const shell of ['bash', 'zsh', 'fish']) {
      const io = captureIo([shell]);
      assert.equal(await guarded(completionSpec, io, fakeDeps(c)), 0);
      assert.equal(io.stdoutText(), completionScript(shell as 'bash'));
    }
    const bad = captureIo(['tcsh']);
    assert.equal(await guarded(completionSpec, bad, fakeDeps(c)), 2);
    assert.match(bad.stderrText(), /unknown shell "tcsh"/);
    assert.equal(await guarded(completionSpec, captureIo([]), fakeDeps(c)), 2);
  });

  it('the scripts ask the program itself and cover both names', () => {
    assert.match(completionScript('zsh'), /^#compdef agent-controller kubectl-agent\n/);
    assert.match(
      completionScript('zsh'),
      /\$\{words\[1\]\} __complete "\$\{\(@\)words\[2,CURRENT-1\]\}" "\$\{words\[CURRENT\]\}"/,
    );
    assert.match(completionScript('zsh'), /compdef _agent_controller agent-controller kubectl-agent/);
    assert.match(completionScript('fish'), /\$prog __complete \$args "\$cur"/);
    assert.match(
      completionScript('fish'),
      /complete -c kubectl-agent -f -a '\(__agent_controller_complete\)'/,
    );
  });

  it('the bash script completes through a real bash', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ac-completion-'));
    try {
      // A stand-in program: answers like __complete, recording the words it was given.
      const prog = join(dir, 'agent-controller');
      writeFileSync(
        prog,
        [
          '#!/bin/sh',
          `printf '%s|' "$@" > "${join(dir, 'args')}"`,
          'case " $* " in',
          '  *" --prompt-file "*) printf ":0\\n" ;;',
          '  *) printf "hello\\nhello-2\\n:4\\n" ;;',
          'esac',
          '',
        ].join('\n'),
      );
      chmodSync(prog, 0o755);
      const script = join(dir, 'completion.bash');
      writeFileSync(script, completionScript('bash'));
      writeFileSync(join(dir, 'task.md'), '');
      const complete = (line: string[]) =>
        execFileSync(
          'bash',
          [
            '-c',
            `source ${script}; cd ${dir}; COMP_WORDS=(${line.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${line.length - 1}; _agent_controller; printf '%s\\n' "\${COMPREPLY[@]}"; printf 'args=%s\\n' "$(cat ${join(dir, 'args')})"`,
          ],
          { env: { PATH: `${dir}:/usr/bin:/bin` }, encoding: 'utf8' },
        );
      assert.equal(complete([prog, 'run', 'he']), `hello\nhello-2\nargs=__complete|run|he|\n`);
      assert.equal(
        complete([prog, '-n', 'team', 'logs', '']),
        `hello\nhello-2\nargs=__complete|-n|team|logs||\n`,
      );
      assert.equal(
        complete([prog, 'run', 'x', '--prompt-file', 'ta']),
        'task.md\nargs=__complete|run|x|--prompt-file|ta|\n',
      );
      // --namespace=<TAB> and --namespace=te<TAB>: bash splits the word at "="; the script joins it again and
      // offers the values (bash replaces what follows the "=").
      writeFileSync(
        prog,
        [
          '#!/bin/sh',
          `printf '%s|' "$@" > "${join(dir, 'args')}"`,
          'printf -- "--namespace=team\\n--namespace=test\\n:4\\n"',
          '',
        ].join('\n'),
      );
      assert.equal(
        complete([prog, 'get', '--namespace', '=']),
        'team\ntest\nargs=__complete|get|--namespace=|\n',
      );
      assert.equal(
        complete([prog, 'get', '--namespace', '=', 'te']),
        'team\ntest\nargs=__complete|get|--namespace=te|\n',
      );
      assert.equal(
        complete([prog, '--namespace', '=', 'team', 'get', '']),
        '--namespace=team\n--namespace=test\nargs=__complete|--namespace=team|get||\n',
      );
      const syntax = execFileSync('bash', ['-n', script], { encoding: 'utf8' });
      assert.equal(syntax, '');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** A stand-in `agent-controller` in a fresh folder that answers like `__complete`: Stations, or nothing (files). */
  function standIn(): string {
    const dir = mkdtempSync(join(tmpdir(), 'ac-completion-'));
    const prog = join(dir, 'agent-controller');
    writeFileSync(
      prog,
      [
        '#!/bin/sh',
        'case " $* " in',
        '  *" --prompt-file "*) printf ":0\\n" ;;',
        '  *) printf "hello\\nhello-2\\n:4\\n" ;;',
        'esac',
        '',
      ].join('\n'),
    );
    chmodSync(prog, 0o755);
    symlinkSync(prog, join(dir, 'kubectl-agent'));
    writeFileSync(join(dir, 'task.md'), '');
    return dir;
  }

  const has = (shell: string) => existsSync(`/usr/bin/${shell}`) || existsSync(`/bin/${shell}`);

  it('the fish script completes through a real fish', {
    skip: has('fish') ? false : 'no fish (apt-get install fish)',
  }, () => {
    const dir = standIn();
    try {
      const script = join(dir, 'completion.fish');
      writeFileSync(script, completionScript('fish'));
      const complete = (line: string) =>
        execFileSync('fish', ['--no-config', '-c', `source ${script}; cd ${dir}; complete -C '${line}'`], {
          env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir },
          encoding: 'utf8',
        });
      assert.deepEqual(complete('agent-controller run he').trim().split('\n'), ['hello', 'hello-2']);
      assert.deepEqual(complete('kubectl-agent run he').trim().split('\n'), ['hello', 'hello-2']);
      // No names and no "no files" directive: the shell's own file completion.
      assert.match(complete('agent-controller run x --prompt-file ta'), /^task\.md/m);
      assert.equal(execFileSync('fish', ['--no-execute', script], { encoding: 'utf8' }), '');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the zsh script loads under compinit and offers what __complete answers', {
    skip: has('zsh') ? false : 'no zsh (apt-get install zsh)',
  }, () => {
    const dir = standIn();
    try {
      const script = join(dir, '_agent_controller');
      writeFileSync(script, completionScript('zsh'));
      assert.equal(execFileSync('zsh', ['-n', script], { encoding: 'utf8' }), '');
      // compadd and _files exist only inside a completion widget: stand-ins print what the function hands them.
      const run = (words: string[]) =>
        execFileSync(
          'zsh',
          [
            '-f',
            '-c',
            [
              'autoload -U compinit; compinit -u -d ' + join(dir, 'zcompdump'),
              `source ${script}`,
              'print -r -- "registered=$_comps[agent-controller],$_comps[kubectl-agent]"',
              // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh parameter expansion, not a template
              'compadd() { [[ $1 == -a ]] && print -rl -- "${(@P)2}" }',
              '_files() { print -r -- FILES }',
              `cd ${dir}`,
              `words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}`,
              '_agent_controller',
            ].join('\n'),
          ],
          { env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir }, encoding: 'utf8' },
        );
      assert.equal(
        run(['agent-controller', 'run', 'he']),
        'registered=_agent_controller,_agent_controller\nhello\nhello-2\n',
      );
      assert.equal(
        run(['agent-controller', 'run', 'x', '--prompt-file', 'ta']),
        'registered=_agent_controller,_agent_controller\nFILES\n',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
