// A small JSON Schema validator for `output.schema` of an AgentDefinition (issue 10 §2): the keywords a result
// schema uses in practice (type, enum, const, properties, required, additionalProperties, items, minItems,
// maxItems, minLength, maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not).
// Unknown keywords are ignored (as JSON Schema says); `$ref` and `pattern` are reported, never ignored, so a schema
// is never silently weaker than it reads. `pattern` is refused because the value is agent output: a backtracking
// regular expression over it could stall the controller (no linear-time engine runs on both Node and Deno). Pure;
// answers the first error with its JSON path.

type Json = unknown;
type Schema = Readonly<Record<string, unknown>> | boolean;

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

function typeOf(value: Json): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function hasType(value: Json, type: unknown): boolean {
  const actual = typeOf(value);
  if (type === 'number') return actual === 'number' || actual === 'integer';
  return actual === type;
}

function equal(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && equal(a[k], b[k]));
  }
  return false;
}

const describe = (value: Json): string => {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 40 ? `${text.slice(0, 37)}...` : text;
};

/** The first way `value` does not match `schema`, as `<path>: <what>`; undefined when it matches. */
export function validateJson(schema: unknown, value: Json, path = '$'): string | undefined {
  if (schema === true || schema === undefined) return undefined;
  if (schema === false) return `${path}: no value is allowed here`;
  if (!isObject(schema)) return `${path}: the schema is not an object`;
  const s = schema as Readonly<Record<string, unknown>>;
  if (s.$ref !== undefined) return `${path}: $ref is not supported in output.schema`;
  if (s.pattern !== undefined) return `${path}: pattern is not supported in output.schema`;
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => hasType(value, t))) {
      return `${path}: expected ${types.join(' or ')}, got ${typeOf(value)}`;
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => equal(e, value))) {
    return `${path}: ${describe(value)} is not one of ${describe(s.enum)}`;
  }
  if ('const' in s && !equal(s.const, value)) return `${path}: expected ${describe(s.const)}`;
  if (typeof value === 'string') {
    const length = Array.from(value).length;
    if (typeof s.minLength === 'number' && length < s.minLength)
      return `${path}: shorter than ${s.minLength}`;
    if (typeof s.maxLength === 'number' && length > s.maxLength) return `${path}: longer than ${s.maxLength}`;
  }
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) return `${path}: less than ${s.minimum}`;
    if (typeof s.maximum === 'number' && value > s.maximum) return `${path}: more than ${s.maximum}`;
    if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum)
      return `${path}: not more than ${s.exclusiveMinimum}`;
    if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum)
      return `${path}: not less than ${s.exclusiveMaximum}`;
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems)
      return `${path}: fewer than ${s.minItems} items`;
    if (typeof s.maxItems === 'number' && value.length > s.maxItems)
      return `${path}: more than ${s.maxItems} items`;
    if (s.items !== undefined) {
      for (let i = 0; i < value.length; i++) {
        const problem = validateJson(s.items, value[i], `${path}[${i}]`);
        if (problem !== undefined) return problem;
      }
    }
  }
  if (isObject(value)) {
    const properties = isObject(s.properties) ? s.properties : {};
    if (Array.isArray(s.required)) {
      const missing = s.required.find((k) => typeof k === 'string' && !(k in value));
      if (missing !== undefined) return `${path}: missing required property ${describe(missing)}`;
    }
    for (const [key, child] of Object.entries(value)) {
      const where = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
        ? `${path}.${key}`
        : `${path}[${JSON.stringify(key)}]`;
      if (key in properties) {
        const problem = validateJson(properties[key], child, where);
        if (problem !== undefined) return problem;
      } else if (s.additionalProperties !== undefined) {
        if (s.additionalProperties === false) return `${path}: property ${describe(key)} is not allowed`;
        const problem = validateJson(s.additionalProperties, child, where);
        if (problem !== undefined) return problem;
      }
    }
  }
  if (Array.isArray(s.allOf)) {
    for (const sub of s.allOf) {
      const problem = validateJson(sub, value, path);
      if (problem !== undefined) return problem;
    }
  }
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => validateJson(sub, value, path) === undefined)) {
    return `${path}: matches none of anyOf`;
  }
  if (Array.isArray(s.oneOf)) {
    const matches = s.oneOf.filter((sub) => validateJson(sub, value, path) === undefined).length;
    if (matches !== 1) return `${path}: matches ${matches} of oneOf, not exactly one`;
  }
  if (s.not !== undefined && validateJson(s.not as Schema, value, path) === undefined) {
    return `${path}: matches the schema under not`;
  }
  return undefined;
}
