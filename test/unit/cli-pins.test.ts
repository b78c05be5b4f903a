// The versions the init installs by default are the versions the tests run: the product's npm pins
// (src/vendors/cli/info.ts) equal test/clis/package.json (docs/reference/vendor-clis.md#installing-in-the-init).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { VENDOR_INFO } from '../../src/vendors/cli/info.ts';

const CLIS = join(dirname(fileURLToPath(import.meta.url)), '..', 'clis', 'package.json');
const PackageSchema = v.object({
  dependencies: v.record(v.string(), v.string()),
  optionalDependencies: v.record(v.string(), v.string()),
});

describe('the npm pins of the vendor CLIs', () => {
  const tested = v.parse(PackageSchema, JSON.parse(readFileSync(CLIS, 'utf8')));

  it('equal the versions test/clis/package.json pins', () => {
    const pins = Object.fromEntries(
      Object.values(VENDOR_INFO).flatMap((i) =>
        i.npmPackage ? [[i.npmPackage.name, i.npmPackage.version]] : [],
      ),
    );
    assert.deepEqual(pins, {
      '@anthropic-ai/claude-code': tested.dependencies['@anthropic-ai/claude-code'],
      '@google/gemini-cli': tested.dependencies['@google/gemini-cli'],
      '@openai/codex': tested.dependencies['@openai/codex'],
      // The tests pin OpenCode's binary package (test/clis/package.json "//"); the launcher has its version.
      'opencode-ai': tested.optionalDependencies['opencode-linux-x64'],
    });
  });

  it('allow the install scripts of the launchers whose bin is a stub until their postinstall runs', () => {
    // docs/reference/vendor-clis.md#installing: Claude Code's and OpenCode's `bin` print an error until then.
    const stubs = Object.values(VENDOR_INFO).flatMap((i) =>
      i.npmPackage?.binaryFromPostinstall === true ? [i.npmPackage.name] : [],
    );
    assert.deepEqual(stubs, ['@anthropic-ai/claude-code', 'opencode-ai']);
  });

  it('name every vendor with an executable of its own', () => {
    for (const [vendor, info] of Object.entries(VENDOR_INFO))
      assert.equal(info.npmPackage !== undefined, info.binary !== undefined, vendor);
  });
});
