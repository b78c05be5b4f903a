import { type KubeObject, objectKey } from '../kube/meta.ts';

/** A change to one cached object, with the previous state for modifications. */
export type Change<T> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'modified'; readonly old: T; readonly object: T }
  | { readonly type: 'deleted'; readonly object: T };

/** Read access to a cache: what reconcilers get. Objects are shared: treat them as immutable. */
export interface StoreReader<T> {
  get(key: string): T | undefined;
  list(): T[];
  keys(): string[];
  readonly size: number;
  /** True after the first complete LIST was applied. */
  hasSynced(): boolean;
  /** Resolves after the first complete LIST was applied (never rejects). */
  readonly ready: Promise<void>;
}

/**
 * A keyed cache of objects (`namespace/name`). One writer (the informer), many readers.
 * `replace` swaps the whole content at once, so readers never see a half-applied re-list.
 */
export class Store<T extends KubeObject> implements StoreReader<T> {
  #items = new Map<string, T>();
  #synced = false;
  #resolveReady: () => void = () => {};
  readonly ready: Promise<void> = new Promise<void>((resolve) => {
    this.#resolveReady = resolve;
  });

  get(key: string): T | undefined {
    return this.#items.get(key);
  }
  list(): T[] {
    return [...this.#items.values()];
  }
  keys(): string[] {
    return [...this.#items.keys()];
  }
  get size(): number {
    return this.#items.size;
  }
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Inserts or replaces one object; `added` if the key was absent, else `modified`. */
  upsert(obj: T): Change<T> {
    const key = objectKey(obj);
    const old = this.#items.get(key);
    this.#items.set(key, obj);
    return old === undefined ? { type: 'added', object: obj } : { type: 'modified', old, object: obj };
  }

  /** Removes one object by key; the removed object, if there was one. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    this.#items.delete(key);
    return old;
  }

  /**
   * Replaces the whole content with a fresh LIST and marks the store synced. Returns the difference: `added` for new
   * keys, `modified` when the resourceVersion changed, `deleted` for keys no longer listed (unchanged objects produce
   * nothing).
   */
  replace(items: readonly T[]): Change<T>[] {
    const next = new Map<string, T>();
    for (const obj of items) next.set(objectKey(obj), obj);
    const changes: Change<T>[] = [];
    for (const [key, obj] of next) {
      const old = this.#items.get(key);
      if (old === undefined) changes.push({ type: 'added', object: obj });
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
        changes.push({ type: 'modified', old, object: obj });
      } else next.set(key, old); // unchanged: keep the same object, so identity-keyed memos (parses) survive
    }
    for (const [key, old] of this.#items) if (!next.has(key)) changes.push({ type: 'deleted', object: old });
    this.#items = next;
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveReady();
    }
    return changes;
  }
}
