import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import { freeForm, lenientEnum, openapi, parseDefault } from '../schema-kit.ts';
import { CrdSchemaError, toOpenApi } from './openapi.ts';

const field = (schema: v.GenericSchema) => toOpenApi(v.object({ f: schema })).properties?.f;

describe('toOpenApi', () => {
  it('maps scalar types', () => {
    assert.deepEqual(field(v.string()), { type: 'string' });
    assert.deepEqual(field(v.number()), { type: 'number' });
    assert.deepEqual(field(v.pipe(v.number(), v.integer())), { type: 'integer' });
    assert.deepEqual(field(v.boolean()), { type: 'boolean' });
  });

  it('lists non-optional keys as required, in entry order', () => {
    const s = toOpenApi(v.object({ b: v.string(), a: v.optional(v.string()), c: v.number() }));
    assert.deepEqual(s.required, ['b', 'c']);
    assert.equal(toOpenApi(v.object({ a: v.optional(v.string()) })).required, undefined);
    assert.equal(toOpenApi(v.object({ a: v.nullish(v.string()) })).required, undefined);
  });

  it('emits keys and properties in alphabetical order', () => {
    const s = toOpenApi(v.pipe(v.object({ zeta: v.string(), alpha: v.string() }), v.description('d')));
    assert.deepEqual(Object.keys(s), ['description', 'properties', 'required', 'type']);
    assert.deepEqual(Object.keys(s.properties ?? {}), ['alpha', 'zeta']);
  });

  it('puts v.optional defaults into the schema, evaluating default functions', () => {
    assert.deepEqual(field(v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 30)), {
      default: 30,
      minimum: 1,
      type: 'integer',
    });
    assert.deepEqual(field(v.optional(v.string(), () => 'x')), { default: 'x', type: 'string' });
    assert.deepEqual(field(v.optional(v.array(v.string()), ['a'])), {
      default: ['a'],
      items: { type: 'string' },
      type: 'array',
    });
  });

  it('leaves parse-only defaults out of the schema', () => {
    assert.deepEqual(field(parseDefault(v.string(), 'x')), { type: 'string' });
    const s = toOpenApi(v.object({ f: parseDefault(v.string(), 'x') }));
    assert.equal(s.required, undefined, 'a parse-defaulted field is optional on the wire');
  });

  it('maps descriptions, bounds, lengths and patterns', () => {
    assert.deepEqual(
      field(
        v.pipe(v.string(), v.minLength(1), v.maxLength(63), v.regex(/^[a-z]+$/), v.description('A name.')),
      ),
      { description: 'A name.', maxLength: 63, minLength: 1, pattern: '^[a-z]+$', type: 'string' },
    );
    assert.deepEqual(field(v.pipe(v.number(), v.minValue(0), v.maxValue(10))), {
      maximum: 10,
      minimum: 0,
      type: 'number',
    });
    assert.deepEqual(field(v.pipe(v.array(v.string()), v.minLength(1), v.maxLength(3))), {
      items: { type: 'string' },
      maxItems: 3,
      minItems: 1,
      type: 'array',
    });
    assert.deepEqual(field(v.pipe(v.string(), v.length(4))), { maxLength: 4, minLength: 4, type: 'string' });
    assert.deepEqual(field(v.pipe(v.string(), v.nonEmpty())), { minLength: 1, type: 'string' });
  });

  it('refuses regex flags OpenAPI cannot express', () => {
    assert.throws(() => field(v.pipe(v.string(), v.regex(/^a$/i))), CrdSchemaError);
  });

  it('maps picklists, literals and lenient enums to enum', () => {
    assert.deepEqual(field(v.picklist(['a', 'b'])), { enum: ['a', 'b'], type: 'string' });
    assert.deepEqual(field(v.picklist([1, 2])), { enum: [1, 2], type: 'integer' });
    assert.deepEqual(field(v.literal(true)), { enum: [true], type: 'boolean' });
    assert.deepEqual(field(lenientEnum(['x', 'y'])), { enum: ['x', 'y'], type: 'string' });
    assert.deepEqual(field(v.optional(lenientEnum(['x', 'y']), 'y')), {
      default: 'y',
      enum: ['x', 'y'],
      type: 'string',
    });
    assert.throws(() => field(v.picklist(['a', 1])), CrdSchemaError);
  });

  it('maps arrays, nested objects and string maps', () => {
    assert.deepEqual(field(v.array(v.object({ n: v.string() }))), {
      items: { properties: { n: { type: 'string' } }, required: ['n'], type: 'object' },
      type: 'array',
    });
    assert.deepEqual(field(v.record(v.string(), v.string())), {
      additionalProperties: { type: 'string' },
      type: 'object',
    });
  });

  it('marks free-form objects and loose objects with x-kubernetes-preserve-unknown-fields', () => {
    assert.deepEqual(field(freeForm('Anything.')), {
      description: 'Anything.',
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    assert.deepEqual(field(v.looseObject({ a: v.string() })), {
      properties: { a: { type: 'string' } },
      required: ['a'],
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
  });

  it('emits formats and nullable', () => {
    assert.deepEqual(field(v.pipe(v.string(), openapi({ format: 'date-time' }))), {
      format: 'date-time',
      type: 'string',
    });
    assert.deepEqual(field(v.nullable(v.string())), { nullable: true, type: 'string' });
  });

  it('emits map-type lists and checks their keys are required', () => {
    const item = v.object({ type: v.string(), x: v.optional(v.string()) });
    assert.deepEqual(field(v.pipe(v.array(item), openapi({ listType: 'map', listMapKeys: ['type'] }))), {
      items: {
        properties: { type: { type: 'string' }, x: { type: 'string' } },
        required: ['type'],
        type: 'object',
      },
      type: 'array',
      'x-kubernetes-list-map-keys': ['type'],
      'x-kubernetes-list-type': 'map',
    });
    assert.throws(
      () => field(v.pipe(v.array(item), openapi({ listType: 'map', listMapKeys: ['x'] }))),
      /list map key 'x'/,
    );
    assert.throws(() => field(v.pipe(v.string(), openapi({ listType: 'set' }))), CrdSchemaError);
  });

  it('refuses non-structural constructs, naming the path', () => {
    assert.throws(() => toOpenApi(v.object({ a: v.object({ b: v.unknown() }) })), /a\.b: no type/);
    assert.throws(() => field(v.record(v.string(), v.unknown())), /free-form object/);
    assert.throws(() => field(v.union([v.string(), v.number()])), /'union'/);
    assert.throws(() => field(v.pipe(v.string(), v.email())), /'email'/);
  });

  it('ignores parse-side transforms', () => {
    assert.deepEqual(
      field(
        v.pipe(
          v.string(),
          v.transform((s) => s.length),
        ),
      ),
      { type: 'string' },
    );
  });
});
