// The real node's product image (test/support/real-node/product-image.ts) against Dockerfile.distroless: its last
// stage's WORKDIR, COPY destination of the bundle, USER, EXPOSE, ENTRYPOINT and CMD are what the assembler writes,
// the entrypoint's Node is in the image with every library `ldd` names, and, as on the distroless base, no shell.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { imageConfig, type Layer } from '../support/real-node/images.ts';
import {
  DISTROLESS,
  hostNodeBinary,
  MOCK_CLI_IMAGE,
  PRODUCT_IMAGE,
  parseLdd,
  productImageSpecs,
} from '../support/real-node/product-image.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Stage {
  readonly from: string;
  readonly instructions: ReadonlyArray<readonly [string, string]>;
}

/** The stages of a Dockerfile: each FROM and the instructions under it (continuation lines joined, comments out). */
function dockerStages(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: { from: string; instructions: [string, string][] }[] = [];
  for (const line of lines) {
    const m = /^(\S+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, keyword = '', rest = ''] = m;
    if (keyword.toUpperCase() === 'FROM') stages.push({ from: rest, instructions: [] });
    else stages.at(-1)?.instructions.push([keyword.toUpperCase(), rest]);
  }
  return stages;
}

/** The one value of `keyword` in a stage. */
function only(stage: Stage, keyword: string): string {
  const found = stage.instructions.filter(([k]) => k === keyword);
  assert.equal(found.length, 1, `one ${keyword} in the stage`);
  return found[0]?.[1] ?? '';
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'zsh', 'busybox', 'toybox']);

describe('the real node product image matches Dockerfile.distroless', () => {
  const stages = dockerStages(readFileSync(join(ROOT, 'Dockerfile.distroless'), 'utf8'));
  const last = stages.at(-1);
  assert.ok(last, 'the Dockerfile has stages');
  const dir = mkdtempSync(join(tmpdir(), 'product-image-'));
  const bundle = join(dir, 'agent-controller.mjs');
  writeFileSync(bundle, 'console.log("bundle")\n');
  const node = hostNodeBinary();
  const specs = productImageSpecs(node, bundle);
  rmSync(dir, { recursive: true, force: true });
  const product = specs.find((s) => s.ref === PRODUCT_IMAGE);
  const mock = specs.find((s) => s.ref === MOCK_CLI_IMAGE);
  assert.ok(product && mock);
  const files = (layers: readonly Layer[] | undefined): string[] =>
    (layers ?? []).flatMap((l) => Object.keys(l));

  it('the last stage is distroless (no shell) and the image has none either', () => {
    assert.match(last.from, /^gcr\.io\/distroless\/nodejs\d+-debian\d+:nonroot\b/);
    for (const spec of [product, mock]) {
      const shells = files(spec.layers).filter((f) => SHELLS.has(basename(f)));
      assert.deepEqual(shells, [], `${spec.ref} has no shell`);
    }
  });

  it('WORKDIR, USER, EXPOSE, ENTRYPOINT and CMD are the image config', () => {
    const config = imageConfig(product, []).config as Record<string, unknown>;
    assert.equal(only(last, 'WORKDIR'), config.WorkingDir);
    assert.equal(only(last, 'USER'), config.User);
    const exposed = only(last, 'EXPOSE')
      .split(/\s+/)
      .map((p) => (p.includes('/') ? p : `${p}/tcp`));
    assert.deepEqual(Object.keys(config.ExposedPorts as object), exposed);
    assert.deepEqual(JSON.parse(only(last, 'ENTRYPOINT')), config.Entrypoint);
    assert.deepEqual(JSON.parse(only(last, 'CMD')), config.Cmd);
    assert.deepEqual(imageConfig(mock, []).config, config, 'the mock-CLI image starts the same way');
  });

  it('the bundle is where COPY puts it, and the entrypoint runs a Node of the image with its libraries', () => {
    const copy = only(last, 'COPY').split(/\s+/);
    const dest = copy.at(-1) ?? '';
    assert.match(copy.at(-2) ?? '', /agent-controller\.mjs$/);
    assert.equal(dest, DISTROLESS.bundle);
    const present = new Set(files(product.layers).map((f) => `/${f}`));
    assert.ok(present.has(dest), 'the bundle');
    const entry = (JSON.parse(only(last, 'ENTRYPOINT')) as string[])[0] ?? '';
    assert.ok(present.has(entry), `the entrypoint's ${entry}`);
    const entryFile = product.layers?.[0]?.[entry.slice(1)];
    assert.ok(entryFile && !(entryFile instanceof Uint8Array) && (entryFile.mode ?? 0) & 0o111);
    const ldd = spawnSync('ldd', [node], { encoding: 'utf8' });
    for (const lib of parseLdd(ldd.stdout)) assert.ok(present.has(lib), `${lib} is in the image`);
    assert.ok(present.has('/etc/passwd'), 'the nonroot user is in /etc/passwd');
  });

  it('the mock-CLI image adds only the CLI on PATH over the same layers', () => {
    assert.deepEqual(mock.layers?.slice(0, 2), product.layers);
    assert.deepEqual(Object.keys(mock.layers?.[2] ?? {}).sort(), [
      'usr/local/bin/claude',
      'usr/local/bin/codex',
      'usr/local/bin/gemini',
      'usr/local/bin/mock-agent',
      'usr/local/bin/opencode',
    ]);
    const cli = mock.layers?.[2]?.['usr/local/bin/claude'];
    assert.ok(cli && !(cli instanceof Uint8Array));
    assert.ok(new TextDecoder().decode(cli.data).startsWith(`#!${DISTROLESS.node}\n`));
  });
});

describe('parseLdd', () => {
  it('takes resolved paths and the loader, leaves out the vDSO, refuses a missing library', () => {
    const out = [
      '\tlinux-vdso.so.1 (0x00007ffc)',
      '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007fd08e400000)',
      '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fd08e21e000)',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007fd08e75d000)',
      '',
    ].join('\n');
    assert.deepEqual(parseLdd(out), [
      '/lib/x86_64-linux-gnu/libstdc++.so.6',
      '/lib/x86_64-linux-gnu/libc.so.6',
      '/lib64/ld-linux-x86-64.so.2',
    ]);
    assert.throws(() => parseLdd('\tlibfoo.so.1 => not found\n'), /missing: libfoo/);
    assert.throws(() => parseLdd('\tstatically linked\n'), /does not know/);
  });
});
