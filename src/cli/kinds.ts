// The kinds the command line reads and writes: their names as typed (plural, singular, short names), the REST
// resource, the printer columns (the CRDs' own, so `get` prints what `kubectl get` prints) and the validation every
// object read goes through. Pure.
import * as v from 'valibot';
import { buildCrd, type PrinterColumn } from '../api/crd/index.ts';
import {
  type CustomKind,
  GROUP,
  parseAgent,
  parseAgentDefinition,
  parseStation,
  RESOURCE_NAMES,
  VERSION,
} from '../api/index.ts';
import { type KubeObject, KubeObjectSchema, type ResourceType } from '../kube/index.ts';
import type { Result } from '../shared/result.ts';
import { UsageError } from './command.ts';

/** A kind as the CLI names it (its canonical word). */
export type KindName = 'agents' | 'stations' | 'definitions';

export interface KindInfo {
  readonly name: KindName;
  readonly kind: CustomKind;
  readonly resource: ResourceType;
  /** What a message calls one object: `agent`, `station`, `definition`. */
  readonly noun: string;
  /** Every word that names the kind on the command line. */
  readonly words: readonly string[];
  /** The CRD's additionalPrinterColumns (priority 1 only with `-o wide`). */
  readonly columns: readonly PrinterColumn[];
  /** The project's parser of the kind: an object that fails it is not shown. */
  readonly parse: (u: unknown) => Result<unknown, string>;
}

function info(
  name: KindName,
  kind: CustomKind,
  noun: string,
  extra: readonly string[],
  parse: (u: unknown) => Result<unknown, string>,
): KindInfo {
  const names = RESOURCE_NAMES[kind];
  const crd = buildCrd(kind);
  return {
    name,
    kind,
    noun,
    resource: { group: GROUP, version: VERSION, plural: names.plural, kind, namespaced: true },
    words: [
      ...new Set([
        name,
        noun,
        names.plural,
        names.singular,
        ...names.shortNames,
        `${names.plural}.${GROUP}`,
        `${names.singular}.${GROUP}`,
        ...extra,
      ]),
    ],
    columns: crd.spec.versions[0]?.additionalPrinterColumns ?? [],
    parse,
  };
}

export const KINDS: readonly KindInfo[] = [
  info('agents', 'Agent', 'agent', [], parseAgent),
  info('stations', 'Station', 'station', [], parseStation),
  info('definitions', 'AgentDefinition', 'definition', ['def', 'defs'], parseAgentDefinition),
];

export const AGENTS_KIND: KindInfo = KINDS[0]!;

/** The kind a word names (case-insensitive), if any. */
export function kindOf(word: string): KindInfo | undefined {
  const w = word.toLowerCase();
  return KINDS.find((k) => k.words.includes(w));
}

/** Every word a kind can be named by, for completion and error messages. */
export function kindWords(): string[] {
  return KINDS.flatMap((k) => k.words);
}

/**
 * The schema a LIST or WATCH of `kind` is read with: the object as the API server sent it (every field kept, for
 * `-o json|yaml`), accepted only when the kind's own parser accepts it.
 */
export function validatedSchema(kind: KindInfo): v.GenericSchema<unknown, KubeObject> {
  return v.pipe(
    KubeObjectSchema,
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const r = kind.parse(dataset.value);
      if (!r.ok) addIssue({ message: r.error });
    }),
  );
}

/** `kubectl get -o name` of an object: `agent.agents.re-cinq.com/<name>`. */
export function qualifiedName(kind: KindInfo, name: string): string {
  return `${RESOURCE_NAMES[kind.kind].singular}.${GROUP}/${name}`;
}

/**
 * Checks a name typed on the command line before it goes into a path: an empty name would address the whole
 * collection (a DELETE of `…/agents/` deletes every Agent), `.`/`..` and names with `/` or `%` another path. A usage
 * error (exit 2) otherwise.
 */
export function checkName(name: string, what = 'name'): string {
  if (name === '')
    throw new UsageError(
      what.startsWith('-') ? `${what} must not be empty` : `the ${what} must not be empty`,
    );
  if (name === '.' || name === '..' || /[/%]/.test(name))
    throw new UsageError(`${JSON.stringify(name)} is not a valid ${what}`);
  return name;
}

/** The kind and names of `[KIND] NAME ...` or `KIND/NAME ...` (kubectl's two forms; not mixed). */
export interface Targets {
  /** The kind named (a word before the names, or the KIND of KIND/NAME); undefined when none was. */
  readonly kind: KindInfo | undefined;
  readonly names: readonly string[];
}

/**
 * Reads the positionals of get, describe, delete and logs: an optional kind word followed by names, or names in the
 * form KIND/NAME (`agent/x`, `agent.agents.re-cinq.com/x` as `-o name` prints them), all of one kind. Every name is
 * checked ({@link checkName}). Pure.
 */
export function parseTargets(positionals: readonly string[]): Targets {
  const slashed = positionals.filter((p) => p.includes('/'));
  if (slashed.length === 0) {
    const [first, ...rest] = positionals;
    const kind = first !== undefined ? kindOf(first) : undefined;
    return { kind, names: (kind !== undefined ? rest : positionals).map((n) => checkName(n)) };
  }
  if (slashed.length !== positionals.length) {
    const first = positionals[0] ?? '';
    throw new UsageError(
      first.includes('/') || kindOf(first) === undefined
        ? `${JSON.stringify(positionals.find((p) => !p.includes('/')) ?? first)}: give every name as KIND/NAME, or a kind and then names`
        : `there is no need to name the kind ${JSON.stringify(first)} before KIND/NAME arguments`,
    );
  }
  let kind: KindInfo | undefined;
  const names = positionals.map((p) => {
    const slash = p.indexOf('/');
    const word = p.slice(0, slash);
    const k = kindOf(word);
    if (k === undefined) throw new UsageError(`unknown kind ${JSON.stringify(word)} in ${JSON.stringify(p)}`);
    if (kind !== undefined && k !== kind)
      throw new UsageError(`one kind at a time: ${kind.name} and ${k.name} were named`);
    kind = k;
    return checkName(p.slice(slash + 1));
  });
  return { kind, names };
}
