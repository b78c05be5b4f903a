import { sameTls, type TlsMaterial } from './tls.ts';

/** One keep-alive agent, the TLS material it was made with, and how many requests use it now. */
export interface PooledAgent<A> {
  readonly agent: A;
  readonly tls: TlsMaterial;
  inflight: number;
  /** Replaced by an agent for other TLS material: destroyed once its last request is done. */
  retired: boolean;
}

/**
 * The transport's keep-alive agents: one current agent shared by every request, replaced only when the TLS material
 * changes (e.g. a rotated exec client certificate). A replaced agent is destroyed as soon as no request uses it.
 */
export interface AgentPool<A> {
  /**
   * The agent for `tls`, counted in use until {@link release}: the current one when its TLS material is the same;
   * else a new one (made by the pool's factory), which becomes current.
   */
  acquire(tls: TlsMaterial): PooledAgent<A>;
  /** One request is done with `entry`; a retired agent is destroyed with its last request. */
  release(entry: PooledAgent<A>): void;
  /** Destroys every agent, in use or not; the pool is closed from then on. */
  close(): void;
  isClosed(): boolean;
}

/** Creates an empty pool; `newAgent` makes the agent for a TLS material (the transport's http(s).Agent). */
export function createAgentPool<A extends { destroy(): void }>(
  newAgent: (tls: TlsMaterial) => A,
): AgentPool<A> {
  let current: PooledAgent<A> | undefined;
  const all = new Set<PooledAgent<A>>();
  let closed = false;
  const destroy = (entry: PooledAgent<A>): void => {
    entry.agent.destroy();
    all.delete(entry);
  };
  return {
    acquire(tls) {
      if (current && sameTls(current.tls, tls)) {
        current.inflight++;
        return current;
      }
      if (current) {
        current.retired = true;
        if (current.inflight === 0) destroy(current);
      }
      current = { agent: newAgent(tls), tls, inflight: 1, retired: false };
      all.add(current);
      return current;
    },
    release(entry) {
      entry.inflight--;
      if (entry.retired && entry.inflight === 0) destroy(entry);
    },
    close() {
      closed = true;
      for (const e of all) e.agent.destroy();
      all.clear();
      current = undefined;
    },
    isClosed: () => closed,
  };
}
