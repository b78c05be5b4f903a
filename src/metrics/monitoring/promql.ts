/**
 * Just enough PromQL reading to say which metric names and functions an expression uses: what the monitoring
 * tests need to prove that every name the dashboard and the rules use exists on the controller's /metrics. It
 * tokenizes; it does not parse (promtool checks syntax). Grafana variables (`$namespace`, `${datasource}`, `$__rate_interval`)
 * are skipped wherever they appear.
 */

/** PromQL's aggregation operators and functions (Prometheus 3), not metric names when followed by `(`. */
export const PROMQL_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregations
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
  // functions
  'abs',
  'absent',
  'absent_over_time',
  'avg_over_time',
  'ceil',
  'changes',
  'clamp',
  'clamp_max',
  'clamp_min',
  'count_over_time',
  'day_of_month',
  'day_of_week',
  'day_of_year',
  'days_in_month',
  'delta',
  'deriv',
  'exp',
  'floor',
  'histogram_avg',
  'histogram_count',
  'histogram_fraction',
  'histogram_quantile',
  'histogram_stddev',
  'histogram_stdvar',
  'histogram_sum',
  'hour',
  'idelta',
  'increase',
  'irate',
  'label_join',
  'label_replace',
  'last_over_time',
  'ln',
  'log10',
  'log2',
  'max_over_time',
  'min_over_time',
  'minute',
  'month',
  'predict_linear',
  'present_over_time',
  'quantile_over_time',
  'rate',
  'resets',
  'round',
  'scalar',
  'sgn',
  'sort',
  'sort_by_label',
  'sort_by_label_desc',
  'sort_desc',
  'sqrt',
  'stddev_over_time',
  'stdvar_over_time',
  'sum_over_time',
  'time',
  'timestamp',
  'vector',
  'year',
  // trigonometric
  'acos',
  'acosh',
  'asin',
  'asinh',
  'atan',
  'atanh',
  'cos',
  'cosh',
  'deg',
  'pi',
  'rad',
  'sin',
  'sinh',
  'tan',
  'tanh',
  // `@ start()` / `@ end()` modifiers
  'start',
  'end',
]);

/** Keywords that are never metric names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

const IDENT_START = /[A-Za-z_:]/;
const IDENT_CHAR = /[A-Za-z0-9_:]/;

/** What one expression uses: metric names and function names, each once, in order of first use. */
export interface PromqlNames {
  readonly metrics: readonly string[];
  readonly functions: readonly string[];
}

/** Thrown for text this reader cannot follow (an unterminated string, brace or bracket). */
export class PromqlReadError extends Error {
  override readonly name = 'PromqlReadError';
}

/** Index just past the closing `close` of a group opened at `start` (strings inside are skipped). */
function skipGroup(expr: string, start: number, open: string, close: string): number {
  let depth = 0;
  for (let i = start; i < expr.length; i++) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') i = skipString(expr, i) - 1;
    else if (c === open) depth++;
    else if (c === close && --depth === 0) return i + 1;
  }
  throw new PromqlReadError(`unclosed ${open} at ${start} in: ${expr}`);
}

/** Index just past the string literal starting at `start` (PromQL strings: '…', "…" with escapes, `…` raw). */
function skipString(expr: string, start: number): number {
  const quote = expr[start];
  for (let i = start + 1; i < expr.length; i++) {
    const c = expr[i];
    if (c === '\\' && quote !== '`') i++;
    else if (c === quote) return i + 1;
  }
  throw new PromqlReadError(`unterminated string at ${start} in: ${expr}`);
}

function skipSpaces(expr: string, i: number): number {
  while (i < expr.length && /\s/.test(expr[i]!)) i++;
  return i;
}

/** The metric names and functions `expr` uses. Throws `PromqlReadError` on unbalanced text. */
export function promqlNames(expr: string): PromqlNames {
  const metrics: string[] = [];
  const functions: string[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
    } else if (c === '{') {
      // Label matchers: label names and values, never metric names.
      i = skipGroup(expr, i, '{', '}');
    } else if (c === '[') {
      // Range or subquery: durations and Grafana interval variables.
      i = skipGroup(expr, i, '[', ']');
    } else if (c === '$') {
      // A Grafana variable: $name or ${name}.
      i++;
      if (expr[i] === '{') i = skipGroup(expr, i, '{', '}');
      else while (i < expr.length && IDENT_CHAR.test(expr[i]!)) i++;
    } else if (/[0-9.]/.test(c)) {
      // A number or duration (1, 0.25, 1e3, 5m, 0x1f).
      while (i < expr.length && /[0-9A-Za-z_.]/.test(expr[i]!)) i++;
    } else if (IDENT_START.test(c)) {
      const start = i;
      while (i < expr.length && IDENT_CHAR.test(expr[i]!)) i++;
      const word = expr.slice(start, i);
      const next = skipSpaces(expr, i);
      const lower = word.toLowerCase();
      if (LABEL_LIST_KEYWORDS.has(lower)) {
        if (expr[next] === '(') i = skipGroup(expr, next, '(', ')');
      } else if (KEYWORDS.has(lower)) {
        // nothing to record
      } else if (expr[next] === '(' || /^(?:by|without)\b/i.test(expr.slice(next))) {
        // A call, or an aggregation with its grouping first: `sum by (job) (…)`.
        if (!functions.includes(word)) functions.push(word);
      } else if (!metrics.includes(word)) {
        metrics.push(word);
      }
    } else {
      i++;
    }
  }
  return { metrics, functions };
}

/**
 * Metric names a Grafana template variable query reads: `label_values(selector, label)`, `label_values(label)`,
 * `query_result(expr)`, `metrics(regex)` (none), or a plain PromQL expression.
 */
export function grafanaVariableQueryNames(query: string): PromqlNames {
  const q = query.trim();
  const labelValues = /^label_values\((.*)\)$/s.exec(q);
  if (labelValues) {
    const args = labelValues[1]!;
    const comma = args.lastIndexOf(',');
    return comma < 0 ? { metrics: [], functions: [] } : promqlNames(args.slice(0, comma));
  }
  const result = /^query_result\((.*)\)$/s.exec(q);
  if (result) return promqlNames(result[1]!);
  if (/^(?:metrics|label_names)\(/.test(q)) return { metrics: [], functions: [] };
  return promqlNames(q);
}
