// The pure parts of `npm run release` (scripts/release/release.ts): flags, sha256sum lines, IMAGE.md.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { imageMarkdown, parseReleaseArgs, sha256sumLine } from '../../scripts/release/release.ts';

const HEX = 'ab'.repeat(32);

describe('release', () => {
  it('flags: defaults, --out/--image in both forms, --no-chart, help; a bad one is refused by name', () => {
    assert.deepEqual(parseReleaseArgs([]), { out: 'dist/release', image: undefined, chart: true });
    assert.deepEqual(parseReleaseArgs(['--out', '/tmp/r', '--image=registry:5000/team/ac', '--no-chart']), {
      out: '/tmp/r',
      image: 'registry:5000/team/ac',
      chart: false,
    });
    assert.equal(parseReleaseArgs(['-h']), 'help');
    assert.throws(() => parseReleaseArgs(['--out']), /--out needs a value/);
    assert.throws(() => parseReleaseArgs(['--tag', '1']), /unknown argument --tag/);
    assert.throws(
      () => parseReleaseArgs(['--image', 'ghcr.io/x/ac:1.0@sha256:ab']),
      /not an image repository/,
    );
  });

  it('writes sha256sum lines that sha256sum -c accepts', (t) => {
    assert.equal(sha256sumLine(HEX, 'agent-controller.mjs'), `${HEX}  agent-controller.mjs\n`);
    assert.throws(() => sha256sumLine('abc', 'x'), /not a SHA-256/);
    assert.throws(() => sha256sumLine(HEX, 'a\nb'), /would escape/);
    const check = spawnSync('sha256sum', ['--version'], { stdio: 'ignore' });
    if (check.error !== undefined) {
      t.skip('no sha256sum here');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'release-'));
    try {
      writeFileSync(join(dir, 'f.mjs'), 'hello\n');
      const hex = '5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03';
      writeFileSync(join(dir, 'f.mjs.sha256'), sha256sumLine(hex, 'f.mjs'));
      const r = spawnSync('sha256sum', ['-c', 'f.mjs.sha256'], { cwd: dir, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('IMAGE.md: both stages, push, the digests, a check of the bundle by its SHA-256, pinned installs', () => {
    const md = imageMarkdown({
      version: '1.2.3',
      repository: 'ghcr.io/re-cinq/agent-controller',
      bundleSha256: HEX,
      commit: { sha: 'c0ffee', dirty: false },
      chartFile: 'agent-controller-1.2.3.tgz',
    });
    assert.match(md, /^# agent-controller 1\.2\.3: images/);
    assert.match(md, /commit c0ffee,/);
    assert.doesNotMatch(md, /uncommitted/);
    for (const line of [
      'docker build -f Dockerfile.distroless -t ghcr.io/re-cinq/agent-controller:1.2.3 .',
      'docker build -f Dockerfile.distroless --target init -t ghcr.io/re-cinq/agent-controller-init:1.2.3 .',
      'docker push ghcr.io/re-cinq/agent-controller:1.2.3',
      'docker pull ghcr.io/re-cinq/agent-controller@$DIGEST',
      `echo "${HEX}  agent-controller.mjs.from-image" | sha256sum -c -`,
      'helm install agent-controller agent-controller-1.2.3.tgz -n ai-agents \\',
      '  --set image.digest=$DIGEST',
      '                  - { name: AGENT_IMAGE, value: "ghcr.io/re-cinq/agent-controller@sha256:…" }',
    ])
      assert.ok(md.split('\n').includes(line), `IMAGE.md has the line: ${line}`);
    const dirty = imageMarkdown({
      version: '1',
      repository: 'r/a',
      bundleSha256: HEX,
      commit: { sha: 'x', dirty: true },
    });
    assert.match(dirty, /uncommitted changes/);
    assert.match(dirty, /helm install agent-controller agent-controller-1\.tgz/);
  });
});
