import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { RESOURCE_NAMES } from '../group.ts';
import { lenientEnum, openapi, parseDefault } from '../schema-kit.ts';
import {
  API_DOC_KINDS,
  API_DOCS_HEADER,
  API_DOCS_PATH,
  cellText,
  fieldRows,
  renderApiDocs,
  renderColumnTable,
  renderFieldTable,
  renderKindSection,
} from './api-docs.ts';
import { buildCrd } from './build-crd.ts';
import { type JsonSchemaProps, toOpenApi } from './openapi.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const Small = v.object({
  name: v.pipe(v.string(), v.maxLength(63), v.description('Name | with a pipe.')),
  size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description('How many.')), 3),
  mode: parseDefault(v.pipe(lenientEnum(['fast', 'slow']), v.description('Mode.')), 'fast'),
  tags: parseDefault(v.pipe(v.array(v.string()), v.description('Tags.')), []),
  items: v.optional(
    v.pipe(
      v.array(v.object({ key: v.pipe(v.string(), v.description('Key.')), note: v.optional(v.string()) })),
      openapi({ listType: 'map', listMapKeys: ['key'] }),
      v.description('Items.'),
    ),
  ),
  labels: v.optional(v.record(v.string(), v.string())),
  when: v.optional(v.pipe(v.string(), openapi({ format: 'date-time' }))),
});

const smallRows = () => fieldRows(toOpenApi(Small), 'spec', toOpenApi(Small, { keepParseDefaults: true }));

describe('toOpenApi keepParseDefaults', () => {
  it('keeps parse-only defaults for docs and leaves them out of CRDs', () => {
    const field = v.object({ f: parseDefault(v.string(), 'x') });
    assert.equal(toOpenApi(field).properties?.f?.default, undefined);
    assert.equal(toOpenApi(field, { keepParseDefaults: true }).properties?.f?.default, 'x');
    assert.equal(toOpenApi(field, { keepParseDefaults: true }).required, undefined);
  });
});

describe('fieldRows', () => {
  it('turns a small schema into rows: paths, types, required, defaults, values, descriptions', () => {
    assert.deepEqual(smallRows(), [
      {
        path: 'spec.items',
        type: '[]object',
        required: false,
        values: 'one item per `key`',
        description: 'Items.',
      },
      { path: 'spec.items[].key', type: 'string', required: true, description: 'Key.' },
      { path: 'spec.items[].note', type: 'string', required: false },
      { path: 'spec.labels', type: 'map[string]string', required: false },
      {
        path: 'spec.mode',
        type: 'string',
        required: false,
        readDefault: 'fast',
        values: '`fast`, `slow`',
        description: 'Mode.',
      },
      {
        path: 'spec.name',
        type: 'string',
        required: true,
        values: 'length ≤ 63',
        description: 'Name | with a pipe.',
      },
      {
        path: 'spec.size',
        type: 'integer',
        required: false,
        default: '3',
        values: '≥ 1',
        description: 'How many.',
      },
      { path: 'spec.tags', type: '[]string', required: false, description: 'Tags.' },
      { path: 'spec.when', type: 'string (date-time)', required: false },
    ]);
  });

  it('names free-form objects, any-JSON values and map values', () => {
    const props: JsonSchemaProps = {
      type: 'object',
      properties: {
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        json: { 'x-kubernetes-preserve-unknown-fields': true },
        byName: {
          type: 'object',
          additionalProperties: { type: 'object', properties: { n: { type: 'integer', maximum: 9 } } },
        },
      },
    };
    assert.deepEqual(
      fieldRows(props, 'status').map((r) => [r.path, r.type, r.values]),
      [
        ['status.free', 'object (free-form)', undefined],
        ['status.json', 'any JSON', undefined],
        ['status.byName', 'map[string]object', undefined],
        ['status.byName.*.n', 'integer', '≤ 9'],
      ],
    );
  });
});

describe('Markdown rendering', () => {
  it('renders the rows as a table, escaping pipes, HTML and emphasis', () => {
    assert.equal(
      renderFieldTable(smallRows().filter((r) => ['spec.mode', 'spec.name', 'spec.size'].includes(r.path))),
      [
        '| field | type | required | default | values | description |',
        '|---|---|---|---|---|---|',
        '| `spec.mode` | string |  | `fast` (on read) | `fast`, `slow` | Mode. |',
        '| `spec.name` | string | yes |  | length ≤ 63 | Name \\| with a pipe. |',
        '| `spec.size` | integer |  | `3` | ≥ 1 | How many. |',
        '',
      ].join('\n'),
    );
    assert.equal(cellText('a <memory> block, claude-*\nnext'), 'a &lt;memory> block, claude-\\* next');
    const [row] = fieldRows(toOpenApi(v.object({ p: v.pipe(v.string(), v.regex(/^(a|b)$/)) })), 'spec');
    assert.match(renderFieldTable(row === undefined ? [] : [row]), /pattern `\^\(a\\\|b\)\$`/);
  });

  it('renders printer columns with where they are shown', () => {
    assert.equal(
      renderColumnTable([
        { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
        { name: 'Cost', type: 'string', jsonPath: '.status.costEstimate.usd', priority: 1 },
      ]),
      [
        '| column | type | JSON path | shown |',
        '|---|---|---|---|',
        '| Phase | string | `.status.phase` | always |',
        '| Cost | string | `.status.costEstimate.usd` | with `-o wide` |',
        '',
      ].join('\n'),
    );
  });
});

/** Every field path of a CRD's spec and status schema. */
function crdPaths(props: JsonSchemaProps | undefined, path: string, out: string[] = []): string[] {
  for (const [key, child] of Object.entries(props?.properties ?? {})) {
    out.push(`${path}.${key}`);
    crdPaths(child, `${path}.${key}`, out);
    if (child.items !== undefined) crdPaths(child.items, `${path}.${key}[]`, out);
  }
  return out;
}

describe('the API reference', () => {
  it('is committed exactly as generated (run npm run gen:api-docs after changing src/api)', () => {
    const committed = readFileSync(join(root, API_DOCS_PATH), 'utf8');
    assert.equal(committed, renderApiDocs(), `${API_DOCS_PATH} drifted from the schemas`);
  });

  it('documents every kind with its short names, printer columns and every CRD field, each described', () => {
    const text = renderApiDocs();
    assert.equal(text.split('\n')[0], API_DOCS_HEADER);
    assert.deepEqual(API_DOC_KINDS, ['AgentDefinition', 'Station', 'Agent', 'AgentPolicy']);
    for (const kind of API_DOC_KINDS) {
      const section = renderKindSection(kind);
      assert.ok(text.includes(section.trimEnd()), kind);
      for (const short of RESOURCE_NAMES[kind].shortNames) assert.ok(section.includes(`\`${short}\``));
      const version = buildCrd(kind).spec.versions[0];
      for (const c of version?.additionalPrinterColumns ?? [])
        assert.ok(section.includes(`| ${c.name} | ${c.type} |`), `${kind} column ${c.name}`);
      const schema = version?.schema.openAPIV3Schema.properties;
      for (const part of ['spec', 'status'] as const) {
        for (const path of crdPaths(schema?.[part], part)) {
          const line = section.split('\n').find((l) => l.startsWith(`| \`${path}\` |`));
          assert.ok(line !== undefined, `${kind} ${path} has a row`);
          assert.doesNotMatch(line, /\|\s*\|$/, `${kind} ${path} has a description`);
        }
      }
    }
  });
});

describe('scripts/gen-api-docs.mjs', () => {
  it('--check names a drifted or missing file and exits 1; a plain run repairs it', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'gen-api-docs-'));
    try {
      mkdirSync(join(tmp, 'scripts'));
      copyFileSync(join(root, 'scripts', 'gen-api-docs.mjs'), join(tmp, 'scripts', 'gen-api-docs.mjs'));
      copyFileSync(join(root, 'scripts', 'generated-files.mjs'), join(tmp, 'scripts', 'generated-files.mjs'));
      symlinkSync(join(root, 'src'), join(tmp, 'src'));
      symlinkSync(join(root, 'node_modules'), join(tmp, 'node_modules'));
      const run = (...args: string[]) =>
        spawnSync(process.execPath, [join(tmp, 'scripts', 'gen-api-docs.mjs'), ...args], {
          encoding: 'utf8',
        });
      const expected = renderApiDocs();

      const missing = run('--check');
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /docs\/reference\/api\.md is missing/);

      assert.equal(run().status, 0);
      assert.equal(readFileSync(join(tmp, API_DOCS_PATH), 'utf8'), expected);
      const clean = run('--check');
      assert.equal(clean.status, 0, clean.stderr);

      writeFileSync(join(tmp, API_DOCS_PATH), `${expected}hand edit\n`);
      const drift = run('--check');
      assert.equal(drift.status, 1);
      assert.match(drift.stderr, /docs\/reference\/api\.md is out of date/);
      assert.equal(readFileSync(join(tmp, API_DOCS_PATH), 'utf8'), `${expected}hand edit\n`);
      assert.equal(run().status, 0);
      assert.equal(run('--check').status, 0);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
