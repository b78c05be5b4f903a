// `-o yaml`: JSON data (objects read from the API server) as YAML, the way kubectl prints it: block style, two-space
// indent, sequences at their key's indent, and multi-line strings (prompts, output, results) as literal blocks so
// they read as text. Pure; no dependency (scalar quoting is the CRD writer's, which every YAML parser reads back).
import { yamlString } from '../api/crd/yaml.ts';

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
  if (value === null || value === undefined) return 'null';
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
  // Sequences sit at their key's indent (kubectl style); mappings indent by two.
  emitBlock(value, Array.isArray(value) ? indent : indent + 2, path, out);
}

function emitBlock(value: unknown, indent: number, path: string, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const p = `${path}[${i}]`;
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
      // The nested block's first line goes on the dash line: `- key: value`.
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
 * One YAML document for a JSON value, ending in a newline. Object keys keep their order; `undefined` members are
 * left out. Throws `TypeError` for what JSON cannot hold (non-finite numbers, functions, class instances).
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
