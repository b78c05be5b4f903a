// The batch mode's observations (issue 27 §3): the state of the batch protocol (src/reconcile/agent/batch.ts) as the
// shell knows it: the vendor key, the submission, the poller's latest observation, the vendor cleanup's progress.

import type { BatchState, FindOutcome } from '../../vendors/batch/port.ts';
import type { CommonSnapshot } from './common.ts';

/** Whether the vendor key of a Pending batch run can be read (the shell reads `agent-secrets`). */
export type CredentialCheck =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'present' }
  /** The Secret or the key is missing; `message` names the key, never a value. */
  | { readonly kind: 'missing'; readonly message: string };

/** What is known about the vendor submission of a batch run that has its record but no batchId. */
export type SubmissionObservation =
  /** Nothing known: after a restart or a create whose answer was lost. Decide asks for `needs: 'batchLookup'`. */
  | { readonly kind: 'unknown' }
  /** This controller knows no create is outstanding (it wrote the record, or the last create was refused). */
  | { readonly kind: 'none' }
  /** The vendor was searched. */
  | { readonly kind: 'lookedUp'; readonly result: FindOutcome }
  /** The create just succeeded. */
  | { readonly kind: 'submitted'; readonly id: string }
  /** The create was refused for good (4xx other than 429): the vendor's message. */
  | { readonly kind: 'rejected'; readonly message: string };

/** How the last cleanup attempt of this reconcile went (absent: none made yet). */
export type CleanupObservation =
  | { readonly kind: 'pending'; readonly detail: string }
  | { readonly kind: 'failed'; readonly message: string };

/** What a batch run reads beyond the common part. */
export interface BatchObservations {
  /** Batch runs: whether the vendor key exists (Pending only). */
  readonly credentials?: CredentialCheck | undefined;
  /** Batch runs with a record and no batchId, and cleanups of such runs. */
  readonly submission?: SubmissionObservation | undefined;
  /** Batch runs with a batchId: the poller's latest observation (undefined: not polled yet). */
  readonly batchState?: BatchState | undefined;
  /** Set after a cleanup attempt in this reconcile did not finish. */
  readonly cleanup?: CleanupObservation | undefined;
  /** After a failed cleanup: no new attempt before this time (the shell's backoff). */
  readonly cleanupNotBefore?: Date | undefined;
}

/** What the batch mode's decisions read: the common part and the batch protocol's observations. */
export type BatchSnapshot = CommonSnapshot & BatchObservations;
