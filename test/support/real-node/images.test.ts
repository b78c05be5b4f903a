import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { layout } from '../../../scripts/real-node.ts';
import { dockerArchive } from './images.ts';

interface Member {
  readonly name: string;
  readonly mode: number;
  readonly type: string;
  readonly data: Buffer;
}

/** The members of a ustar archive (names without a prefix field are all these archives hold). */
function untar(bytes: Uint8Array): Member[] {
  const buf = Buffer.from(bytes);
  const out: Member[] = [];
  for (let off = 0; off + 512 <= buf.length; ) {
    const header = buf.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, len: number): string =>
      header
        .subarray(start, start + len)
        .toString('latin1')
        .replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12), 8);
    out.push({
      name: field(0, 100),
      mode: Number.parseInt(field(100, 8), 8),
      type: field(156, 1),
      data: buf.subarray(off + 512, off + 512 + size),
    });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

describe('real node images: docker archives assembled from files', () => {
  const archive = untar(
    dockerArchive({
      ref: 'acrn.invalid/t:1',
      files: { 'bin/t': new TextEncoder().encode('#!x\n') },
      entrypoint: ['/bin/t'],
    }),
  );
  const member = (name: string): Member => {
    const m = archive.find((x) => x.name === name);
    assert.ok(m, `no ${name} in ${archive.map((x) => x.name).join(', ')}`);
    return m;
  };

  it('has the docker save layout: manifest naming the config and the one layer, with the tag', () => {
    const manifest = JSON.parse(member('manifest.json').data.toString()) as {
      Config: string;
      RepoTags: string[];
      Layers: string[];
    }[];
    assert.equal(manifest.length, 1);
    const [entry] = manifest;
    assert.deepEqual(entry?.RepoTags, ['acrn.invalid/t:1']);
    assert.equal(entry?.Layers.length, 1);
    const config = member(entry?.Config ?? '');
    // The config's name is its digest, as docker writes it.
    assert.equal(entry?.Config, `${sha256(config.data)}.json`);
    const layer = member(entry?.Layers[0] ?? '');
    const parsed = JSON.parse(config.data.toString()) as {
      os: string;
      architecture: string;
      config: { Entrypoint: string[] };
      rootfs: { type: string; diff_ids: string[] };
    };
    assert.equal(parsed.os, 'linux');
    assert.ok(parsed.architecture.length > 0);
    assert.deepEqual(parsed.config.Entrypoint, ['/bin/t']);
    assert.deepEqual(parsed.rootfs, { type: 'layers', diff_ids: [`sha256:${sha256(layer.data)}`] });
  });

  it('the layer holds the files (0755) and the folders a runtime mounts over (/tmp sticky)', () => {
    const manifest = JSON.parse(member('manifest.json').data.toString()) as { Layers: string[] }[];
    const layer = untar(member(manifest[0]?.Layers[0] ?? '').data);
    const file = layer.find((m) => m.name === 'bin/t');
    assert.equal(file?.mode, 0o755);
    assert.equal(file?.data.toString(), '#!x\n');
    for (const dir of ['dev/', 'etc/', 'proc/', 'sys/', 'tmp/'])
      assert.equal(layer.find((m) => m.name === dir)?.type, '5', dir);
    assert.equal(layer.find((m) => m.name === 'tmp/')?.mode, 0o1777);
  });

  it('is the same bytes every time (fixed times), so an import of an unchanged image is a no-op', () => {
    const spec = { ref: 'acrn.invalid/t:1', files: { t: new Uint8Array([1, 2, 3]) }, entrypoint: ['/t'] };
    assert.deepEqual(dockerArchive(spec), dockerArchive(spec));
  });
});

describe('real node layout: names and addresses from the state folder', () => {
  it('interface names fit the kernel (15 bytes), addresses are private, two folders differ', () => {
    const a = layout('/work/a/.testbed');
    const b = layout('/work/b/.testbed');
    for (const l of [a, b]) {
      for (const name of [l.vethHost, l.vethNode, l.netns]) assert.ok(name.length <= 15, name);
      assert.match(l.hostIP, /^10\.213\.\d+\.1$/);
      assert.match(l.nodeIP, /^10\.213\.\d+\.2$/);
      assert.match(l.podCIDR, /^10\.214\.\d+\.0\/24$/);
      assert.ok(l.vethHost.startsWith('acrn-') && l.chain.startsWith('ACRN-'));
    }
    assert.notEqual(a.netns, b.netns);
  });
});
