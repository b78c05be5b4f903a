// Safe HTML building: every interpolated value is escaped unless it is already `Html` (built by `html` itself).
// Pages are plain strings; nothing from an object, a log or a request reaches the markup unescaped.

/** Markup that is safe to include as is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

type Part = Html | string | number | boolean | undefined | null | readonly Part[];

function render(part: Part): string {
  if (part === undefined || part === null || part === false || part === true) return '';
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** A template tag: literal parts as written, values escaped (arrays joined; undefined, null and booleans left out). */
export function html(strings: TemplateStringsArray, ...values: readonly Part[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** A query string from the defined, non-empty entries (`?a=1&b=2`, or '' when none). */
export function query(params: Readonly<Record<string, string | undefined>>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}
