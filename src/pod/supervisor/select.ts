import * as v from 'valibot';
import {
  type ClassifiedEvent,
  classifySelectEvent,
  SELECT_EVENTS,
  type SelectEvent,
  type Vendor,
} from '../../vendors/cli/index.ts';
import type { ParsedLine } from '../shared/index.ts';

/** One usable `output.select` entry (`role` is ignored at runtime, as in the reference). */
export interface Selector {
  readonly event: SelectEvent;
  readonly tool?: string;
  readonly contains?: string;
}

const Entry = v.looseObject({
  event: v.string(),
  tool: v.optional(v.nullable(v.string())),
  contains: v.optional(v.nullable(v.string())),
});

/**
 * Parses `AGENT_SELECT` (docs/design/reference-behaviour.md#event-selection): entries without a string `event`, or
 * whose `tool`/`contains` is not a
 * string, are skipped; an unknown event value is skipped with the reference warning in `warnings`; malformed JSON
 * or a non-array gives an empty list (which lets everything through). Pure.
 */
export function parseSelectors(text: string | undefined): { selectors: Selector[]; warnings: string[] } {
  const selectors: Selector[] = [];
  const warnings: string[] = [];
  const raw = (text ?? '').trim();
  if (raw === '') return { selectors, warnings };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    warnings.push('[selectmatcher] AGENT_SELECT is not valid JSON; every line is delivered');
    return { selectors, warnings };
  }
  if (!Array.isArray(json)) {
    warnings.push('[selectmatcher] AGENT_SELECT is not a JSON array; every line is delivered');
    return { selectors, warnings };
  }
  for (const item of json) {
    const parsed = v.safeParse(Entry, item);
    if (!parsed.success) continue;
    const { event, tool, contains } = parsed.output;
    const known = SELECT_EVENTS.find((e) => e === event);
    if (!known) {
      warnings.push(`[selectmatcher] dropping output.select entry with unknown event '${event}'`);
      continue;
    }
    selectors.push({
      event: known,
      ...(typeof tool === 'string' && tool !== '' ? { tool } : {}),
      ...(typeof contains === 'string' && contains !== '' ? { contains } : {}),
    });
  }
  return { selectors, warnings };
}

/** True iff `selector` accepts the classified line: same class, exact tool when set, substring when set. */
export function matches(selector: Selector, c: ClassifiedEvent): boolean {
  if (selector.event !== c.event) return false;
  if (selector.tool !== undefined && selector.tool !== c.tool) return false;
  if (selector.contains !== undefined && !(c.text ?? '').includes(selector.contains)) return false;
  return true;
}

/**
 * `selected(selectors, vendor, line)` (docs/design/reference-behaviour.md#event-selection, classes from
 * `classifySelectEvent`): an empty list passes
 * everything; an unparseable line and an unclassified event never pass; otherwise true iff some selector matches.
 * Pure.
 */
export function selected(selectors: readonly Selector[], vendor: Vendor, parsed: ParsedLine): boolean {
  if (selectors.length === 0) return true;
  if (!parsed.json) return false;
  const c = classifySelectEvent(vendor, parsed.value);
  if (!c) return false;
  return selectors.some((s) => matches(s, c));
}
