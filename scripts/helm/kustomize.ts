// What `kubectl apply -k deploy/` applies, computed without kustomize: the base deploy/kustomization.yaml (its
// `resources` in order, its `images` transform) and the optional components deploy/components/* (their `resources`
// and strategic-merge `patches`). Only the kustomize features these files use are implemented; any other field of a
// kustomization is refused by name, so a change to deploy/ that this code cannot reproduce fails loudly here (and in
// `npm run gen:helm -- --check`) instead of silently producing a chart that differs from the base.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';

/** A Kubernetes object as parsed from YAML (plain JSON values). */
export type KubeDoc = Record<string, unknown>;

/** One object of the base or a component, with the file (relative to deploy/) and the comment that precede it. */
export interface SourceDoc {
  readonly file: string;
  readonly object: KubeDoc;
  /** The comment lines (`# ...`) that open the document in its file, without the `# `. */
  readonly comment: readonly string[];
}

/** An `images:` entry of a kustomization. */
export interface ImageOverride {
  readonly name: string;
  readonly newName?: string;
  readonly newTag?: string;
  readonly digest?: string;
}

/** A strategic-merge patch of a component and the one object it targets. */
export interface Patch {
  readonly file: string;
  readonly target: { readonly kind: string; readonly name: string };
  readonly patch: KubeDoc;
}

export interface Base {
  readonly docs: readonly SourceDoc[];
  readonly images: readonly ImageOverride[];
}

export interface Component {
  /** The directory name under deploy/components (e.g. `run-rbac`). */
  readonly name: string;
  /** The component's own comment (the header of its kustomization.yaml), without `#`. */
  readonly description: readonly string[];
  readonly docs: readonly SourceDoc[];
  readonly patches: readonly Patch[];
}

export function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function fail(message: string): never {
  throw new Error(`kustomize: ${message}`);
}

function readYamlDocs(abs: string, rel: string): SourceDoc[] {
  const text = readFileSync(abs, 'utf8');
  const out: SourceDoc[] = [];
  // Documents are separated by lines that are exactly `---`; each keeps the comment lines that open it.
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    const docs = loadAll(chunk).filter((d) => d !== null && d !== undefined);
    if (docs.length === 0) continue;
    if (docs.length > 1) fail(`${rel}: more than one document between two --- lines`);
    const object = docs[0];
    if (!isRecord(object)) fail(`${rel}: a document is not a mapping`);
    const comment: string[] = [];
    for (const line of chunk.replace(/^\n+/, '').split('\n')) {
      if (line.startsWith('#')) comment.push(line.replace(/^# ?/, ''));
      else break;
    }
    out.push({ file: rel, object, comment });
  }
  return out;
}

function readKustomization(dir: string, allowed: readonly string[]): Record<string, unknown> {
  const file = join(dir, 'kustomization.yaml');
  const parsed = loadAll(readFileSync(file, 'utf8'));
  const k = parsed[0];
  if (parsed.length !== 1 || !isRecord(k)) fail(`${file}: expected one mapping`);
  for (const key of Object.keys(k)) {
    if (!allowed.includes(key))
      fail(
        `${file} uses \`${key}\`, which scripts/helm/kustomize.ts does not implement (allowed: ${allowed})`,
      );
  }
  return k;
}

function stringList(x: unknown, what: string): string[] {
  if (x === undefined) return [];
  if (!Array.isArray(x) || !x.every((s) => typeof s === 'string')) fail(`${what} must be a list of strings`);
  return x;
}

function loadResources(deployDir: string, dir: string, resources: readonly string[]): SourceDoc[] {
  const docs: SourceDoc[] = [];
  for (const r of resources) {
    const abs = join(dir, r);
    if (statSync(abs).isDirectory())
      fail(`${relative(deployDir, abs)}: directory resources are not implemented`);
    docs.push(...readYamlDocs(abs, relative(deployDir, abs)));
  }
  return docs;
}

/** The leading comment block of a file (lines starting with `#`), without the `#`. */
function headerComment(file: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('#')) break;
    out.push(line.replace(/^# ?/, ''));
  }
  return out;
}

/** Reads deploy/kustomization.yaml and the files it lists. */
export function loadBase(deployDir: string): Base {
  const k = readKustomization(deployDir, ['apiVersion', 'kind', 'resources', 'images']);
  if (k.kind !== 'Kustomization') fail('deploy/kustomization.yaml: kind must be Kustomization');
  const docs = loadResources(deployDir, deployDir, stringList(k.resources, 'resources'));
  const images: ImageOverride[] = [];
  for (const entry of Array.isArray(k.images) ? k.images : k.images === undefined ? [] : fail('bad images')) {
    if (!isRecord(entry) || typeof entry.name !== 'string') fail('images: each entry needs a name');
    for (const key of Object.keys(entry)) {
      if (!['name', 'newName', 'newTag', 'digest'].includes(key))
        fail(`images: \`${key}\` is not implemented`);
      if (typeof entry[key] !== 'string') fail(`images: ${key} must be a string`);
    }
    images.push(entry as unknown as ImageOverride);
  }
  return { docs, images };
}

/** The component directories under deploy/components, sorted by name. */
export function componentNames(deployDir: string): string[] {
  const dir = join(deployDir, 'components');
  return readdirSync(dir)
    .filter((n) => statSync(join(dir, n)).isDirectory())
    .sort();
}

/** Reads deploy/components/<name>/kustomization.yaml, its resources and its patches. */
export function loadComponent(deployDir: string, name: string): Component {
  const dir = join(deployDir, 'components', name);
  const k = readKustomization(dir, ['apiVersion', 'kind', 'resources', 'patches']);
  if (k.kind !== 'Component') fail(`components/${name}: kind must be Component`);
  const docs = loadResources(deployDir, dir, stringList(k.resources, `components/${name} resources`));
  const patches: Patch[] = [];
  for (const p of Array.isArray(k.patches) ? k.patches : k.patches === undefined ? [] : fail('bad patches')) {
    if (!isRecord(p) || typeof p.path !== 'string') fail(`components/${name}: each patch needs a path`);
    for (const key of Object.keys(p))
      if (key !== 'path' && key !== 'target')
        fail(`components/${name}: patch field \`${key}\` is not implemented`);
    const target = p.target;
    if (!isRecord(target) || typeof target.kind !== 'string' || typeof target.name !== 'string')
      fail(`components/${name}: each patch needs target.kind and target.name`);
    for (const key of Object.keys(target))
      if (key !== 'kind' && key !== 'name')
        fail(`components/${name}: patch target \`${key}\` is not implemented`);
    const file = join(dir, p.path);
    const parsed = readYamlDocs(file, relative(deployDir, file));
    if (parsed.length !== 1) fail(`${p.path}: a patch file must hold one document`);
    patches.push({
      file: relative(deployDir, file),
      target: { kind: target.kind, name: target.name },
      patch: parsed[0]!.object,
    });
  }
  return { name, description: headerComment(join(dir, 'kustomization.yaml')), docs, patches };
}

// ---------------------------------------------------------------------------------------------------------------
// images

/** Splits `repo[:tag][@digest]` (a registry port's colon is not a tag). */
export function parseImage(image: string): { name: string; tag?: string; digest?: string } {
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  return { name: rest, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

/** An image reference with kustomize's `images` override applied (digest wins over tag, as in kustomize). */
export function overrideImage(image: string, o: ImageOverride): string {
  const cur = parseImage(image);
  const name = o.newName ?? cur.name;
  if (o.digest !== undefined) return `${name}@${o.digest}`;
  const tag = o.newTag ?? cur.tag;
  const digest = o.newTag !== undefined ? undefined : cur.digest;
  return `${name}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
}

/** The pod specs of an object that kustomize's image transformer visits (Pods, workload templates, CronJobs). */
export function podSpecs(obj: KubeDoc): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const at = (...path: string[]): void => {
    let cur: unknown = obj;
    for (const p of path) cur = isRecord(cur) ? cur[p] : undefined;
    if (isRecord(cur)) out.push(cur);
  };
  if (obj.kind === 'Pod') at('spec');
  at('spec', 'template', 'spec');
  at('spec', 'jobTemplate', 'spec', 'template', 'spec');
  return out;
}

function applyImages(obj: KubeDoc, images: readonly ImageOverride[]): void {
  for (const spec of podSpecs(obj)) {
    for (const field of ['containers', 'initContainers', 'ephemeralContainers']) {
      const list = spec[field];
      if (!Array.isArray(list)) continue;
      for (const c of list) {
        if (!isRecord(c) || typeof c.image !== 'string') continue;
        const o = images.find((i) => i.name === parseImage(c.image as string).name);
        if (o !== undefined) c.image = overrideImage(c.image, o);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// strategic merge

/**
 * Merge keys of the lists a strategic-merge patch may touch (Kubernetes' patchMergeKey of each field); lists not
 * named here are replaced whole, as atomic lists are. Enough for patches of pod templates.
 */
export const MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  ports: 'containerPort',
  volumeMounts: 'mountPath',
  volumes: 'name',
  imagePullSecrets: 'name',
  tolerations: 'key',
};

/**
 * Applies a strategic-merge patch (the subset kustomize components use: maps merge, `null` removes a key, lists
 * with a merge key merge element by element with new elements appended in patch order, other lists are replaced).
 * `$patch` and other directives are refused. Returns a new value; neither argument is changed.
 */
export function strategicMerge(base: unknown, patch: unknown, field = ''): unknown {
  if (isRecord(patch)) {
    const out: Record<string, unknown> = isRecord(base) ? structuredClone(base) : {};
    for (const [key, value] of Object.entries(patch)) {
      if (key.startsWith('$')) fail(`strategic-merge directive ${key} is not implemented`);
      if (value === null) delete out[key];
      else out[key] = strategicMerge(out[key], value, key);
    }
    return out;
  }
  if (Array.isArray(patch)) {
    const key = MERGE_KEYS[field];
    if (key === undefined || !Array.isArray(base)) return structuredClone(patch);
    const out = structuredClone(base) as unknown[];
    for (const item of patch) {
      if (!isRecord(item) || item[key] === undefined) fail(`a ${field} element without ${key}`);
      const i = out.findIndex((e) => isRecord(e) && e[key] === item[key]);
      if (i === -1) out.push(structuredClone(item));
      else out[i] = strategicMerge(out[i], item, '');
    }
    return out;
  }
  return patch;
}

// ---------------------------------------------------------------------------------------------------------------
// build

/** `kubectl kustomize` of the base with `components` (in the order given): the objects, in resource order. */
export function build(base: Base, components: readonly Component[] = []): KubeDoc[] {
  const objects = base.docs.map((d) => structuredClone(d.object));
  for (const c of components) {
    objects.push(...c.docs.map((d) => structuredClone(d.object)));
    for (const p of c.patches) {
      const i = objects.findIndex((o) => o.kind === p.target.kind && metadataOf(o).name === p.target.name);
      if (i === -1) fail(`${p.file}: no ${p.target.kind} ${p.target.name} to patch`);
      objects[i] = strategicMerge(objects[i], p.patch) as KubeDoc;
    }
  }
  for (const o of objects) applyImages(o, base.images);
  return objects;
}

export function metadataOf(o: KubeDoc): { name?: string; namespace?: string; [k: string]: unknown } {
  return isRecord(o.metadata) ? (o.metadata as { name?: string; namespace?: string }) : {};
}

/** `apiVersion/kind/namespace/name`: an object's identity. */
export function objectKey(o: KubeDoc): string {
  const m = metadataOf(o);
  return `${String(o.apiVersion)}/${String(o.kind)}/${m.namespace ?? ''}/${m.name ?? ''}`;
}

/** deploy/ of the repository whose root is `root`. */
export function deployDir(root: string): string {
  return join(root, 'deploy');
}

/** The repository root, from this file's location. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
