// `get` tables as kubectl prints them: upper-case headers, NAME (and NAMESPACE with -A) first, then the CRD's printer
// columns (priority 1 only with `-o wide`), cells padded to the widest cell plus three spaces (at least six wide),
// ages as kubectl's human durations. Pure.
import type { PrinterColumn } from '../api/crd/index.ts';
import type { KindInfo } from './kinds.ts';
import { type Paint, phaseTone, sanitize, stripAnsi } from './style.ts';

/**
 * A duration as kubectl prints ages: seconds below 2 minutes (`95s`), then minutes with seconds below 10 minutes
 * (`3m7s`), minutes below 3 hours (`47m`), hours with minutes below 8 hours (`5h3m`), hours below 2 days (`30h`),
 * days with hours below 8 days (`3d4h`), days below 2 years (`120d`), then years with days below 8 years, then years.
 * A negative duration of a second or two (clock skew) is `0s`, more is `<invalid>`.
 */
export function humanAge(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  const join = (big: number, bigUnit: string, small: number, smallUnit: string) =>
    small === 0 ? `${big}${bigUnit}` : `${big}${bigUnit}${small}${smallUnit}`;
  if (minutes < 10) return join(minutes, 'm', seconds % 60, 's');
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return join(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) return join(days, 'd', hours % 24, 'h');
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) return join(years, 'y', days % 365, 'd');
  return `${years}y`;
}

/** A short duration for status lines: `12s`, `3m05s`, `1h02m`. */
export function clockDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (h > 0) return `${h}h${two(m)}m`;
  if (m > 0) return `${m}m${two(s)}s`;
  return `${s}s`;
}

/**
 * The value at a printer column's JSONPath: dotted field names from the root (`.status.phase`), where `\.` is a dot
 * inside a name (`.metadata.labels.agents\.re-cinq\.com/default-policy`). Undefined when any step is missing.
 */
export function jsonPathValue(obj: unknown, path: string): unknown {
  const fields: string[] = [];
  let current = '';
  for (let i = path.startsWith('.') ? 1 : 0; i < path.length; i++) {
    const c = path[i];
    if (c === '\\' && path[i + 1] === '.') {
      current += '.';
      i++;
    } else if (c === '.') {
      fields.push(current);
      current = '';
    } else current += c;
  }
  fields.push(current);
  let at: unknown = obj;
  for (const f of fields) {
    if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, f)) return undefined;
    at = (at as Record<string, unknown>)[f];
  }
  return at;
}

/** One cell of a printer column: dates as ages, strings up to their first line break, nothing for absent values. */
export function cellText(column: Pick<PrinterColumn, 'type'>, value: unknown, now: number): string {
  if (value === undefined || value === null) return '';
  if (column.type === 'date') {
    const t = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    return Number.isNaN(t) ? '' : humanAge(now - t);
  }
  if (typeof value === 'string') return sanitize(value.split(/[\r\n\f]/, 1)[0] ?? '');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return sanitize(JSON.stringify(value));
}

/**
 * A table cell: text, or text to be coloured. Cells are cluster text: {@link renderTable} makes every one safe
 * (control characters visible, on one line) and only then paints it, so colour codes are the CLI's own.
 */
export type Cell = string | { readonly text: string; readonly paint: (safeText: string) => string };

/** What a table is made of. */
export interface Table {
  readonly header: readonly string[];
  readonly rows: readonly (readonly Cell[])[];
}

/** A cell as printed: made safe, then painted. */
export function cellDisplay(cell: Cell): string {
  const safe = (t: string) => sanitize(t).replace(/[\n\t]/g, ' ');
  return typeof cell === 'string' ? safe(cell) : cell.paint(safe(cell.text));
}

export interface TableOptions {
  readonly wide: boolean;
  readonly allNamespaces: boolean;
  readonly now: number;
  /** Colours the Phase cell (identity when colour is off). */
  readonly paint?: Paint | undefined;
}

/** The columns shown for a kind: priority 0 always, the others with `-o wide`. */
export function visibleColumns(kind: KindInfo, wide: boolean): readonly PrinterColumn[] {
  return kind.columns.filter((c) => wide || (c.priority ?? 0) === 0);
}

/** The header of a kind's table. */
export function tableHeader(kind: KindInfo, o: Pick<TableOptions, 'wide' | 'allNamespaces'>): string[] {
  return [
    ...(o.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    ...visibleColumns(kind, o.wide).map((c) => c.name.toUpperCase()),
  ];
}

interface Named {
  readonly metadata: { readonly name?: string | undefined; readonly namespace?: string | undefined };
}

/** The row of one object. */
export function tableRow(kind: KindInfo, obj: Named, o: TableOptions): Cell[] {
  const paint = o.paint;
  const cells = visibleColumns(kind, o.wide).map((c): Cell => {
    const text = cellText(c, jsonPathValue(obj, c.jsonPath), o.now);
    return c.jsonPath === '.status.phase' && paint !== undefined && text !== ''
      ? { text, paint: (safe) => paint(phaseTone(safe), safe) }
      : text;
  });
  return [
    ...(o.allNamespaces ? [sanitize(obj.metadata.namespace ?? '')] : []),
    sanitize(obj.metadata.name ?? ''),
    ...cells,
  ];
}

/** The table of `objects` (in the order given). An Agent without status shows Phase `Pending`, as it is read. */
export function buildTable(kind: KindInfo, objects: readonly Named[], o: TableOptions): Table {
  return {
    header: tableHeader(kind, o),
    rows: objects.map((obj) => tableRow(kind, withPhase(kind, obj), o)),
  };
}

function withPhase<T extends Named>(kind: KindInfo, obj: T): T {
  if (kind.name !== 'agents' || jsonPathValue(obj, '.status.phase') !== undefined) return obj;
  const status = (obj as { status?: unknown }).status;
  return {
    ...obj,
    status: { ...(typeof status === 'object' && status !== null ? status : {}), phase: 'Pending' },
  };
}

/** Column widths for a table: the widest cell (colour codes not counted) plus three, at least six. */
export function columnWidths(table: Table, previous: readonly number[] = []): number[] {
  const widths = table.header.map((h, i) => Math.max(6, h.length + 3, previous[i] ?? 0));
  for (const row of table.rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 6, stripAnsi(cellDisplay(cell)).length + 3);
    });
  return widths;
}

/** One line of cells padded to `widths` (the last cell unpadded, no trailing blanks), each made safe. */
export function formatRow(row: readonly Cell[], widths: readonly number[]): string {
  return row
    .map(cellDisplay)
    .map((cell, i, cells) =>
      i === cells.length - 1
        ? cell
        : cell + ' '.repeat(Math.max(0, (widths[i] ?? 0) - stripAnsi(cell).length)),
    )
    .join('')
    .trimEnd();
}

/** The lines of a table (header first), and the widths used, for rows printed later (`--watch`). */
export function renderTable(
  table: Table,
  opts: { readonly header?: boolean; readonly widths?: readonly number[] } = {},
): { lines: string[]; widths: number[] } {
  const widths = columnWidths(table, opts.widths);
  const lines = [
    ...(opts.header === false ? [] : [formatRow(table.header, widths)]),
    ...table.rows.map((r) => formatRow(r, widths)),
  ];
  return { lines, widths };
}
