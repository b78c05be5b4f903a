/**
 * The one YAML emitter, for JSON values (null, booleans, finite numbers, strings, arrays, plain objects): the
 * generated manifests (CRDs, monitoring, the Helm chart) and the command line's `-o yaml`, written the way kubectl
 * prints objects: block style, two-space indent, sequences at their key's indent, keys in insertion order,
 * `undefined` object members skipped, multi-line strings (prompts, output, results) as literal blocks so they read
 * as text. Deterministic and pure; no dependency. Every string is written so that YAML 1.1 and 1.2 parsers alike
 * read it back as exactly that string.
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

/** Characters a literal block cannot hold (they need escapes): controls other than tab and newline, BOM, NEL, LS/PS. */
const UNPRINTABLE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]/;

/**
 * A multi-line string as a literal block (`|`, `|-`, `|+`, with an indentation indicator when the text starts with
 * a blank), as header and content lines; undefined when the string is better quoted (one line, unprintable
 * characters, nothing but newlines).
 */
export function literalBlock(s: string, indent: number): { header: string; lines: string[] } | undefined {
  if (!s.includes('\n') || UNPRINTABLE.test(s)) return undefined;
  const body = s.replace(/\n+$/, '');
  if (body === '') return undefined;
  const trailing = s.length - body.length;
  const chomp = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const indicator = /^[ \t\n]/.test(body) ? '2' : '';
  const pad = ' '.repeat(indent);
  const lines = body.split('\n').map((l) => (l === '' ? '' : `${pad}${l}`));
  for (let i = 1; i < trailing && chomp === '+'; i++) lines.push('');
  return { header: `|${indicator}${chomp}`, lines };
}

function scalar(value: unknown, path: string): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`toYaml: non-finite number at ${path}`);
    if (Object.is(value, -0)) return '0';
    // JavaScript writes 1e21 and 1e-7 without a fraction, which YAML 1.1 (what kubectl's and many other
    // parsers read) takes for a string: `1.0e+21` is a float in YAML 1.1 and 1.2 alike.
    const text = String(value);
    return /e/.test(text) && !text.includes('.') ? text.replace('e', '.0e') : text;
  }
  if (typeof value === 'string') return yamlString(value);
  if (Array.isArray(value)) return value.length === 0 ? '[]' : undefined;
  if (isPlainObject(value)) return Object.values(value).some((v) => v !== undefined) ? undefined : '{}';
  throw new TypeError(`toYaml: unsupported ${typeof value} at ${path}`);
}

/** `prefix` followed by the value: inline scalar, literal block, or nested block on the next lines. */
function emitValue(prefix: string, value: unknown, indent: number, path: string, out: string[]): void {
  if (typeof value === 'string') {
    const block = literalBlock(value, indent + 2);
    if (block !== undefined) {
      out.push(`${prefix} ${block.header}`);
      out.push(...block.lines);
      return;
    }
  }
  const s = scalar(value, path);
  if (s !== undefined) {
    out.push(`${prefix} ${s}`);
    return;
  }
  out.push(prefix);
  // Sequences sit at their key's indent (Kubernetes style); mappings indent by two.
  emitBlock(value, Array.isArray(value) ? indent : indent + 2, path, out);
}

function emitBlock(value: unknown, indent: number, path: string, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const p = `${path}[${i}]`;
      if (item === undefined) throw new TypeError(`toYaml: undefined array item at ${p}`);
      if (typeof item === 'string' && literalBlock(item, indent + 2) !== undefined) {
        emitValue(`${pad}-`, item, indent, p, out);
        return;
      }
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
    emitValue(`${pad}${yamlString(key)}:`, v, indent, path === '' ? key : `${path}.${key}`, out);
  }
}

/**
 * Serialises a JSON value as one YAML document ending in a newline. Deterministic: the same value always gives
 * the same text. Throws `TypeError` for values JSON cannot represent (non-finite numbers, functions, class
 * instances, `undefined` at the top or as an array item).
 */
export function toYaml(value: unknown): string {
  // At the top a block's indentation is relative to -1: only blocks without an indentation indicator are used.
  const block = typeof value === 'string' ? literalBlock(value, 2) : undefined;
  if (block !== undefined && !block.header.includes('2'))
    return `${[block.header, ...block.lines].join('\n')}\n`;
  const s = scalar(value, '<root>');
  if (s !== undefined) return `${s}\n`;
  const out: string[] = [];
  emitBlock(value, 0, '', out);
  return `${out.join('\n')}\n`;
}
