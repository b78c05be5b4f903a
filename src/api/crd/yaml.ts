/**
 * A small YAML emitter for JSON values (null, booleans, finite numbers, strings, arrays, plain objects), enough to
 * write Kubernetes manifests deterministically: block style, two-space indent, sequences at their key's indent,
 * keys in insertion order, `undefined` object members skipped.
 */

// Words that YAML 1.1 or 1.2 resolvers read as booleans or null.
const RESERVED_WORDS = /^(?:y|n|yes|no|true|false|on|off|null|~)$/i;
// Characters a plain scalar may consist of here (a conservative subset of YAML's plain-safe set).
const PLAIN_CHARS = /^[A-Za-z0-9 _./()=+,;:?<>-]+$/;
// First characters a plain scalar may start with: no indicator, digit, sign or dot (numbers, timestamps, .inf).
const PLAIN_START = /^[A-Za-z_/]/;

function isPlainSafe(s: string): boolean {
  if (s === '' || s !== s.trim()) return false;
  if (!PLAIN_START.test(s) || !PLAIN_CHARS.test(s)) return false;
  if (RESERVED_WORDS.test(s)) return false;
  // `: ` starts a mapping value and a trailing `:` ends a key; `?`/`-`/`:` followed by space are indicators.
  if (s.includes(': ') || s.endsWith(':') || s.includes(' #')) return false;
  return true;
}

function needsDoubleQuotes(s: string): boolean {
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 || c === 0x7f || (c >= 0x80 && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff)
      return true;
    if (c >= 0xd800 && c <= 0xdfff) return true; // lone surrogate
  }
  return false;
}

function doubleQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (
      c < 0x20 ||
      c === 0x7f ||
      (c >= 0x80 && c <= 0x9f) ||
      c === 0x2028 ||
      c === 0x2029 ||
      c === 0xfeff ||
      (c >= 0xd800 && c <= 0xdfff)
    )
      out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Renders a string as a YAML scalar that every YAML 1.1/1.2 parser reads back as exactly that string. */
export function yamlString(s: string): string {
  if (isPlainSafe(s)) return s;
  if (needsDoubleQuotes(s)) return doubleQuote(s);
  return `'${s.replaceAll("'", "''")}'`;
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

function scalar(value: unknown, path: string): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`toYaml: non-finite number at ${path}`);
    return Object.is(value, -0) ? '0' : String(value);
  }
  if (typeof value === 'string') return yamlString(value);
  if (Array.isArray(value)) return value.length === 0 ? '[]' : undefined;
  if (isPlainObject(value)) return Object.values(value).some((v) => v !== undefined) ? undefined : '{}';
  throw new TypeError(`toYaml: unsupported ${typeof value} at ${path}`);
}

function emitBlock(value: unknown, indent: number, path: string, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const p = `${path}[${i}]`;
      if (item === undefined) throw new TypeError(`toYaml: undefined array item at ${p}`);
      const s = scalar(item, p);
      if (s !== undefined) {
        out.push(`${pad}- ${s}`);
        return;
      }
      const start = out.length;
      emitBlock(item, indent + 2, p, out);
      // Put the first line of the nested block on the dash line: `- key: value`.
      out[start] = `${pad}- ${out[start]!.slice(indent + 2)}`;
    });
    return;
  }
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    const p = path === '' ? key : `${path}.${key}`;
    const k = yamlString(key);
    const s = scalar(v, p);
    if (s !== undefined) out.push(`${pad}${k}: ${s}`);
    else {
      out.push(`${pad}${k}:`);
      // Sequences sit at their key's indent (Kubernetes style); mappings indent by two.
      emitBlock(v, Array.isArray(v) ? indent : indent + 2, p, out);
    }
  }
}

/**
 * Serialises a JSON value as one YAML document ending in a newline. Deterministic: the same value always gives
 * the same text. Throws `TypeError` for values JSON cannot represent (non-finite numbers, functions, class
 * instances, `undefined` array items).
 */
export function toYaml(value: unknown): string {
  const s = scalar(value, '<root>');
  if (s !== undefined) return `${s}\n`;
  const out: string[] = [];
  emitBlock(value, 0, '', out);
  return `${out.join('\n')}\n`;
}
