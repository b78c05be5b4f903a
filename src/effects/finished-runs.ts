/**
 * Finished run pods and their agent logs, read ahead of the Job's verdict (issue 15 §2). A run pod reaches a
 * terminal phase before the Job controller writes the Job's verdict; the controller caches the pod from its own
 * watch and starts reading the agent container's log then, so when the verdict arrives the run's evidence is
 * already at hand and finishing the run costs one status patch instead of a pod LIST, a log GET and the patch.
 * Anything the cache cannot vouch for (a pod it has not seen, a Job with pods still running or counted twice, a log
 * read that failed) falls back to the live reads of `gatherEvidence`.
 */
import type { Job, Pod } from '../api/index.ts';
import { objectKey } from '../kube/index.ts';
import { pickRunPod } from '../reconcile/agent/outcome.ts';
import type { LogRead } from '../reconcile/snapshot.ts';
import type { Change } from '../runtime/index.ts';
import { podJobKey, podJobUid } from './run-starts.ts';

function isFinished(pod: Pod): boolean {
  return pod.status.phase === 'Succeeded' || pod.status.phase === 'Failed';
}

function textBytes(read: LogRead): number {
  if (read.kind !== 'read') return 0;
  return typeof read.text === 'string' ? read.text.length * 2 : read.text.byteLength;
}

/** What the cache holds for a finished Job: the pod that speaks for the run and, when read ahead, its log. */
export interface CachedEvidence {
  readonly pod: Pod;
  /** The agent container's log, read ahead (settles as `unavailable` when that read failed). */
  readonly log: Promise<LogRead> | undefined;
}

/** Where a finished run's evidence came from (the metric `controller_run_evidence_reads_total{source}`). */
export type EvidenceSource = 'read_ahead' | 'cached_pod' | 'live';

export class FinishedRunIndex {
  /** Finished run pods by Job key (`namespace/name`), then by pod key. */
  readonly #pods = new Map<string, Map<string, Pod>>();
  /** Log reads started for finished pods, by pod uid, until the run's evidence is taken or the pod goes. */
  readonly #logs = new Map<string, Promise<LogRead>>();
  readonly #logSizes = new Map<string, number>();
  /** When each held log's read started (for the age-out of logs no verdict ever took). */
  readonly #logStarted = new Map<string, number>();
  #logBytes = 0;
  readonly #now: () => number;
  readonly #maxLogBytes: number;
  readonly #maxReads: number;
  readonly #onEvidence: ((source: EvidenceSource) => void) | undefined;
  readonly #onHeld: ((logs: number, bytes: number) => void) | undefined;
  #reading = 0;

  /**
   * `maxLogBytes` bounds the memory of logs read ahead and not yet taken; `maxReads` the reads in flight. Past
   * either, a log is simply not read ahead (the run's evidence is then read live).
   */
  constructor(opts: {
    readonly maxLogBytes: number;
    readonly maxReads: number;
    /** Told where each finished run's evidence came from. */
    readonly onEvidence?: (source: EvidenceSource) => void;
    /** Told the logs held and their bytes whenever either changes (the gauges `controller_read_ahead_logs*`). */
    readonly onHeld?: (logs: number, bytes: number) => void;
    readonly now?: () => number;
  }) {
    this.#maxLogBytes = opts.maxLogBytes;
    this.#maxReads = opts.maxReads;
    this.#onEvidence = opts.onEvidence;
    this.#onHeld = opts.onHeld;
    this.#now = opts.now ?? Date.now;
  }

  /** Records where a finished run's evidence came from. */
  evidenceRead(source: EvidenceSource): void {
    this.#onEvidence?.(source);
  }

  /** Pods cached (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const pods of this.#pods.values()) n += pods.size;
    return n;
  }

  /** Logs held (read or being read). */
  get logs(): number {
    return this.#logs.size;
  }

  /**
   * Records a change of a run pod from the finished-pods watch. Returns the pod when it has just been seen
   * finished (its log may be read ahead now), else undefined.
   */
  podChanged(c: Change<Pod>): Pod | undefined {
    const pod = c.object;
    const job = podJobKey(pod);
    // A pod of the same name but another uid (deleted and created again between two lists) replaces the old one.
    const replaced = c.type === 'modified' && c.old.metadata.uid !== pod.metadata.uid;
    if (replaced) this.#forgetLog(c.old.metadata.uid);
    if (c.type === 'deleted' || !isFinished(pod)) {
      if (job !== undefined) this.#remove(job, pod);
      this.#forgetLog(pod.metadata.uid);
      return undefined;
    }
    if (job === undefined) return undefined;
    const pods = this.#pods.get(job) ?? new Map<string, Pod>();
    pods.set(objectKey(pod), pod);
    this.#pods.set(job, pods);
    return c.type === 'added' || replaced || (c.type === 'modified' && !isFinished(c.old)) ? pod : undefined;
  }

  /**
   * Starts reading a finished pod's agent log with `read`, unless a read of it is already held or the budget is
   * spent. Returns whether it started.
   */
  readAhead(pod: Pod, read: (pod: Pod) => Promise<LogRead>): boolean {
    const uid = pod.metadata.uid;
    if (uid === '' || this.#logs.has(uid)) return false;
    if (this.#reading >= this.#maxReads || this.#logBytes >= this.#maxLogBytes) return false;
    this.#reading++;
    const pending = read(pod)
      .catch((error: unknown): LogRead => ({ kind: 'unavailable', detail: String(error) }))
      .then((result) => {
        this.#reading--;
        // Taken or forgotten meanwhile: nothing to account.
        if (this.#logs.get(uid) !== pending) return result;
        const bytes = textBytes(result);
        if (result.kind !== 'read' || this.#logBytes + bytes > this.#maxLogBytes) {
          this.#forgetLog(uid);
          return result;
        }
        this.#logSizes.set(uid, bytes);
        this.#logBytes += bytes;
        this.#heldChanged();
        return result;
      });
    this.#logs.set(uid, pending);
    this.#logStarted.set(uid, this.#now());
    this.#heldChanged();
    return true;
  }

  /**
   * Forgets logs held longer than `maxAgeMs` (read ahead for a run whose verdict another replica handled, or that
   * finished live before its pod was seen), so they cannot fill the budget. Returns how many were forgotten.
   */
  sweep(maxAgeMs: number): number {
    const now = this.#now();
    let n = 0;
    for (const [uid, started] of this.#logStarted) {
      if (now - started >= maxAgeMs) {
        this.#forgetLog(uid);
        n++;
      }
    }
    return n;
  }

  /** Forgets every held log (leadership lost: another replica finishes the runs). */
  clearLogs(): void {
    for (const uid of [...this.#logs.keys()]) this.#forgetLog(uid);
  }

  /** Bytes of the logs held (settled reads only). */
  get logBytes(): number {
    return this.#logBytes;
  }

  /**
   * The evidence of the finished Job `job` from the cache alone, and takes its log (a second call reads live), or
   * undefined when the cache cannot vouch for it: the Job still has pods active or terminating, its pods are not
   * all cached finished (the Job's succeeded + failed counts and its uncounted terminated pods). Cached pods of an
   * earlier Job of the same name (another controller-uid) are left out. Every log held for pods of that Job name is
   * forgotten, whatever the answer.
   */
  take(job: Job): CachedEvidence | undefined {
    const status = job.status;
    // Pods the Job controller has seen finish: counted, or still in uncountedTerminatedPods (an early verdict such
    // as SuccessCriteriaMet may come before the count).
    const uncounted = status.uncountedTerminatedPods;
    const counted =
      (status.succeeded ?? 0) +
      (status.failed ?? 0) +
      (uncounted?.succeeded?.length ?? 0) +
      (uncounted?.failed?.length ?? 0);
    const jobKey = `${job.metadata.namespace ?? ''}/${job.metadata.name ?? ''}`;
    const cached = [...(this.#pods.get(jobKey)?.values() ?? [])];
    // Whatever is decided, the logs of this Job name's pods are not needed again (a later call reads live).
    const logs = new Map(cached.map((p) => [p.metadata.uid, this.#logs.get(p.metadata.uid)]));
    for (const p of cached) this.#forgetLog(p.metadata.uid);
    if ((status.active ?? 0) > 0 || (status.terminating ?? 0) > 0) return undefined;
    // Only this Job's pods: a pod of an earlier Job of the same name (an Agent deleted and created again) is not.
    const pods = cached.filter((p) => podJobUid(p) === job.metadata.uid);
    if (counted === 0 || pods.length < counted) return undefined;
    const pod = pickRunPod(pods);
    if (pod === undefined) return undefined;
    return { pod, log: logs.get(pod.metadata.uid) };
  }

  #remove(job: string, pod: Pod): void {
    const pods = this.#pods.get(job);
    if (pods === undefined) return;
    pods.delete(objectKey(pod));
    if (pods.size === 0) this.#pods.delete(job);
  }

  #forgetLog(uid: string): void {
    this.#logStarted.delete(uid);
    if (!this.#logs.delete(uid)) return;
    this.#logBytes -= this.#logSizes.get(uid) ?? 0;
    this.#logSizes.delete(uid);
    this.#heldChanged();
  }

  #heldChanged(): void {
    this.#onHeld?.(this.#logs.size, this.#logBytes);
  }
}
