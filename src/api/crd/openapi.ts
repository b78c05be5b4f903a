import type * as v from 'valibot';
import { OPENAPI_HINTS_KEY, type OpenApiHints } from '../schema-kit.ts';

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps the generator emits. */
export interface JsonSchemaProps {
  type?: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  description?: string;
  format?: string;
  enum?: (string | number | boolean)[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  nullable?: boolean;
  properties?: Record<string, JsonSchemaProps>;
  required?: string[];
  items?: JsonSchemaProps;
  additionalProperties?: JsonSchemaProps;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

/** Raised when a schema uses a construct that has no structural OpenAPI form; names the field path. */
export class CrdSchemaError extends Error {
  override readonly name = 'CrdSchemaError';
}

// Structural views of valibot's public schema and action objects (valibot exposes these properties).
interface SchemaNode {
  readonly kind: 'schema';
  readonly type: string;
  readonly pipe?: readonly (SchemaNode | ActionNode)[];
  readonly wrapped?: SchemaNode;
  readonly default?: unknown;
  readonly entries?: Readonly<Record<string, SchemaNode>>;
  readonly item?: SchemaNode;
  readonly key?: SchemaNode;
  readonly value?: SchemaNode;
  readonly options?: readonly unknown[];
  readonly literal?: unknown;
}
interface ActionNode {
  readonly kind: 'validation' | 'transformation' | 'metadata';
  readonly type: string;
  readonly requirement?: unknown;
  readonly description?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** How `toOpenApi` converts. */
export interface ToOpenApiOptions {
  /**
   * Keep the defaults of `parseDefault` fields (hinted `omitDefault`) in the output: what the controller reads an
   * absent field as. For documentation only; a CRD must not declare them (the API server would store them).
   */
  readonly keepParseDefaults?: boolean;
}

interface Converted {
  props: JsonSchemaProps;
  /** The field may be absent (valibot optional/nullish): not listed in the parent's `required`. */
  optional: boolean;
}

const OPTIONAL_TYPES = new Set(['optional', 'exact_optional', 'nullish', 'undefinedable']);
const NULLABLE_TYPES = new Set(['nullable', 'nullish']);
const OBJECT_TYPES = new Set(['object', 'loose_object', 'strict_object']);

function at(path: string): string {
  return path === '' ? '<root>' : path;
}

function resolveDefault(node: SchemaNode): unknown {
  const d = node.default;
  return typeof d === 'function' ? (d as () => unknown)() : d;
}

function convertNode(node: SchemaNode, path: string, opts: ToOpenApiOptions): Converted {
  if (node.pipe !== undefined && node.pipe[0] !== node) {
    const [base, ...actions] = node.pipe;
    if (base === undefined || base.kind !== 'schema')
      throw new CrdSchemaError(`${at(path)}: pipe without a schema`);
    const out = convertNode(base, path, opts);
    for (const action of actions) applyAction(out.props, action as ActionNode, path, opts);
    return out;
  }
  if (OPTIONAL_TYPES.has(node.type) || NULLABLE_TYPES.has(node.type)) {
    if (node.wrapped === undefined)
      throw new CrdSchemaError(`${at(path)}: ${node.type} without a wrapped schema`);
    const inner = convertNode(node.wrapped, path, opts);
    const props: JsonSchemaProps = { ...inner.props };
    if (NULLABLE_TYPES.has(node.type)) props.nullable = true;
    const d = resolveDefault(node);
    if (d !== undefined) props.default = structuredClone(d);
    return { props, optional: inner.optional || OPTIONAL_TYPES.has(node.type) };
  }
  return { props: convertType(node, path, opts), optional: false };
}

function convertType(node: SchemaNode, path: string, opts: ToOpenApiOptions): JsonSchemaProps {
  switch (node.type) {
    case 'string':
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'picklist':
    case 'literal': {
      const values = node.type === 'literal' ? [node.literal] : [...(node.options ?? [])];
      if (values.every((x) => typeof x === 'string')) return { type: 'string', enum: values as string[] };
      if (values.every((x) => typeof x === 'number')) {
        const type = values.every((x) => Number.isInteger(x)) ? 'integer' : 'number';
        return { type, enum: values as number[] };
      }
      if (values.every((x) => typeof x === 'boolean')) return { type: 'boolean', enum: values as boolean[] };
      throw new CrdSchemaError(`${at(path)}: ${node.type} mixes value types`);
    }
    case 'array': {
      if (node.item === undefined) throw new CrdSchemaError(`${at(path)}: array without an item schema`);
      return { type: 'array', items: convertNode(node.item, `${path}[]`, opts).props };
    }
    case 'record': {
      if (node.key === undefined || node.value === undefined)
        throw new CrdSchemaError(`${at(path)}: record without key/value schemas`);
      if (stripPipe(node.key).type !== 'string')
        throw new CrdSchemaError(`${at(path)}: record keys must be strings`);
      const valueType = stripPipe(node.value).type;
      if (valueType === 'unknown' || valueType === 'any') return { type: 'object' };
      return { type: 'object', additionalProperties: convertNode(node.value, `${path}.*`, opts).props };
    }
    case 'unknown':
    case 'any':
    case 'custom':
      // No wire type of its own: an `openapi({ type })` or free-form hint in the pipe must supply it.
      return {};
    default:
      if (OBJECT_TYPES.has(node.type)) return convertObject(node, path, opts);
      throw new CrdSchemaError(
        `${at(path)}: valibot schema type '${node.type}' has no structural OpenAPI form`,
      );
  }
}

function stripPipe(node: SchemaNode): SchemaNode {
  let n = node;
  while (n.pipe !== undefined && n.pipe[0] !== n && n.pipe[0]?.kind === 'schema') n = n.pipe[0] as SchemaNode;
  return n;
}

function convertObject(node: SchemaNode, path: string, opts: ToOpenApiOptions): JsonSchemaProps {
  const properties: Record<string, JsonSchemaProps> = {};
  const required: string[] = [];
  for (const [key, child] of Object.entries(node.entries ?? {})) {
    const c = convertNode(child, path === '' ? key : `${path}.${key}`, opts);
    properties[key] = c.props;
    if (!c.optional) required.push(key);
  }
  const props: JsonSchemaProps = { type: 'object', properties };
  if (required.length > 0) props.required = required;
  if (node.type === 'loose_object') props['x-kubernetes-preserve-unknown-fields'] = true;
  return props;
}

function numberRequirement(action: ActionNode, path: string): number {
  const r = action.requirement;
  if (typeof r !== 'number' || !Number.isFinite(r))
    throw new CrdSchemaError(`${at(path)}: ${action.type} needs a finite number`);
  return r;
}

function applyAction(props: JsonSchemaProps, action: ActionNode, path: string, opts: ToOpenApiOptions): void {
  const isArray = props.type === 'array';
  switch (action.type) {
    case 'description':
      if (action.description !== undefined) props.description = action.description;
      return;
    case 'metadata':
      applyHints(props, action.metadata?.[OPENAPI_HINTS_KEY] as OpenApiHints | undefined, path, opts);
      return;
    case 'integer':
      props.type = 'integer';
      return;
    case 'min_value':
      props.minimum = numberRequirement(action, path);
      return;
    case 'max_value':
      props.maximum = numberRequirement(action, path);
      return;
    case 'min_length':
      if (isArray) props.minItems = numberRequirement(action, path);
      else props.minLength = numberRequirement(action, path);
      return;
    case 'max_length':
      if (isArray) props.maxItems = numberRequirement(action, path);
      else props.maxLength = numberRequirement(action, path);
      return;
    case 'length': {
      const n = numberRequirement(action, path);
      if (isArray) Object.assign(props, { minItems: n, maxItems: n });
      else Object.assign(props, { minLength: n, maxLength: n });
      return;
    }
    case 'non_empty':
      if (isArray) props.minItems = 1;
      else props.minLength = 1;
      return;
    case 'regex': {
      const re = action.requirement;
      if (!(re instanceof RegExp)) throw new CrdSchemaError(`${at(path)}: regex without a RegExp`);
      if (re.flags.replace(/[gy]/g, '') !== '')
        throw new CrdSchemaError(`${at(path)}: regex flags '${re.flags}' cannot be expressed in OpenAPI`);
      props.pattern = re.source;
      return;
    }
    case 'transform':
      // A parse-side mapping (e.g. lenient enums, null → absent): the wire shape is the input schema.
      return;
    default:
      throw new CrdSchemaError(`${at(path)}: valibot action '${action.type}' has no OpenAPI form`);
  }
}

function applyHints(
  props: JsonSchemaProps,
  hints: OpenApiHints | undefined,
  path: string,
  opts: ToOpenApiOptions,
): void {
  if (hints === undefined) return;
  if (hints.type !== undefined) props.type = hints.type;
  if (hints.format !== undefined) props.format = hints.format;
  if (hints.enum !== undefined) props.enum = [...hints.enum];
  if (hints.preserveUnknownFields === true) props['x-kubernetes-preserve-unknown-fields'] = true;
  if (hints.listType !== undefined) {
    if (props.type !== 'array') throw new CrdSchemaError(`${at(path)}: listType on a non-array`);
    props['x-kubernetes-list-type'] = hints.listType;
  }
  if (hints.listMapKeys !== undefined) {
    if (hints.listType !== 'map') throw new CrdSchemaError(`${at(path)}: listMapKeys needs listType 'map'`);
    const required = props.items?.required ?? [];
    for (const key of hints.listMapKeys) {
      if (!required.includes(key) && props.items?.properties?.[key]?.default === undefined)
        throw new CrdSchemaError(`${at(path)}: list map key '${key}' must be required or defaulted`);
    }
    props['x-kubernetes-list-map-keys'] = [...hints.listMapKeys];
  }
  if (hints.omitDefault === true && opts.keepParseDefaults !== true) delete props.default;
}

/** Throws unless every node has a type or preserves unknown fields (the structural-schema rule). */
function assertStructural(props: JsonSchemaProps, path: string): void {
  const preserve = props['x-kubernetes-preserve-unknown-fields'] === true;
  if (props.type === undefined && !preserve)
    throw new CrdSchemaError(`${at(path)}: no type (use a free-form hint for arbitrary JSON)`);
  if (props.type === 'object' && props.properties === undefined && !preserve && !props.additionalProperties)
    throw new CrdSchemaError(`${at(path)}: free-form object needs x-kubernetes-preserve-unknown-fields`);
  for (const [key, child] of Object.entries(props.properties ?? {}))
    assertStructural(child, path === '' ? key : `${path}.${key}`);
  if (props.items) assertStructural(props.items, `${path}[]`);
  if (props.additionalProperties) assertStructural(props.additionalProperties, `${path}.*`);
}

/** Returns a copy of `props` with every object's keys, and `properties`, in alphabetical order. */
function canonical(props: JsonSchemaProps): JsonSchemaProps {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(props).sort()) {
    const value = (props as Record<string, unknown>)[key];
    if (key === 'properties') {
      const sorted: Record<string, JsonSchemaProps> = {};
      const entries = value as Record<string, JsonSchemaProps>;
      for (const name of Object.keys(entries).sort()) sorted[name] = canonical(entries[name]!);
      out[key] = sorted;
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = canonical(value as JsonSchemaProps);
    } else {
      out[key] = value;
    }
  }
  return out as JsonSchemaProps;
}

/**
 * Converts a valibot schema into a structural OpenAPI v3 schema for a CRD: types, `properties`/`required`
 * (a field is required unless wrapped in `v.optional`/`v.nullish`), `items`, `additionalProperties`, `enum`,
 * `default` (from `v.optional(schema, default)` unless hinted `omitDefault`), `pattern`, bounds, lengths,
 * `description`, `format` and the `x-kubernetes-*` hints. Keys come out in alphabetical order. Throws
 * `CrdSchemaError` for constructs with no structural form (unions, functions, untyped fields without a
 * free-form hint, …). With `keepParseDefaults`, parse-only defaults stay too (for docs, never for a CRD). Pure.
 */
export function toOpenApi(schema: v.GenericSchema, options: ToOpenApiOptions = {}): JsonSchemaProps {
  const { props } = convertNode(schema as unknown as SchemaNode, '', options);
  assertStructural(props, '');
  return canonical(props);
}
