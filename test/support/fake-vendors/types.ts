// The control surface every fake vendor batch server offers (one per vendor, loopback HTTP, built from
// docs/reference/vendor-apis.md). Tests and the contract suite drive all three through this one interface.

import type { BatchProvider } from '../../../src/vendors/batch/port.ts';

/** How a fake finishes the one request of a batch. */
export type FakeOutcome =
  /** The model answered `text` (a JSON string when a schema was sent). */
  | { readonly kind: 'succeeded'; readonly text: string }
  /** The request itself failed at the vendor (Anthropic `errored`, OpenAI error line, Gemini per-request error). */
  | { readonly kind: 'errored'; readonly message: string }
  /** The batch expired before the request ran. */
  | { readonly kind: 'expired' }
  /** The batch was cancelled before the request ran. */
  | { readonly kind: 'cancelled' }
  /** The model refused / was stopped for safety (Anthropic stop_reason refusal, OpenAI refusal part, Gemini SAFETY). */
  | { readonly kind: 'refused' }
  /** Only OpenAI and Gemini: the whole batch failed (OpenAI `failed` with errors.data, Gemini top-level error). */
  | { readonly kind: 'batchFailed'; readonly message: string };

/** A fake's view of one batch it holds. */
export interface FakeBatch {
  /** The vendor id (`msgbatch_…`, `batch_…`, `batches/…`). */
  readonly id: string;
  /** `custom_id` (Anthropic, OpenAI) or `displayName` (Gemini) of its one request. */
  readonly customId: string;
  readonly model: string;
  /** The user prompt text as received. */
  readonly prompt: string;
  /** The request parameters as received (Anthropic `params`, OpenAI line `body`, Gemini `request`). */
  readonly params: unknown;
  /** `pending` (validating / in progress), `cancelling`, or `ended` (any terminal state). */
  readonly state: 'pending' | 'cancelling' | 'ended';
  /** The vendor's own state string (`in_progress`, `ended`, `completed`, `BATCH_STATE_RUNNING`, …). */
  readonly vendorState: string;
  readonly deleted: boolean;
  readonly createdAt: Date;
  /** OpenAI only: the input, output and error file ids, and whether each still exists. */
  readonly files?: readonly {
    readonly id: string;
    readonly role: 'input' | 'output' | 'error';
    readonly exists: boolean;
  }[];
}

/** One HTTP request the fake received (the key header is recorded as `authorized: boolean`, never its value). */
export interface RecordedRequest {
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly authorized: boolean;
  /** Lower-cased header names and values, the auth headers removed. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body text (multipart bodies as received). */
  readonly body: string;
  readonly at: number;
}

/** A failure to inject: the next `times` requests matching `method` and `path` get `status`. */
export interface FakeFault {
  readonly method?: string;
  /** Matched against the request path (with query). */
  readonly path?: RegExp;
  readonly status: number;
  /** `retry-after` header value in seconds. */
  readonly retryAfterSeconds?: number;
  /** How many matching requests fail (default 1). */
  readonly times?: number;
  /** Wait this long before answering (a slow answer; with a client timeout, a lost one). */
  readonly delayMs?: number;
  /**
   * When true the request is processed normally (e.g. the batch IS created) but the answer is replaced by the fault:
   * a create whose 200 was lost.
   */
  readonly afterEffect?: boolean;
}

export interface FakeVendorOptions {
  /** The one key the fake accepts (default `test-key-<provider>`). */
  readonly apiKey?: string;
  /**
   * When set, every new batch finishes on its own this many ms after creation with `autoOutcome` (default: an echo
   * `succeeded` whose text is `echo: <prompt>`, or `{"echo":"<prompt>"}` when a schema was sent).
   */
  readonly autoFinishMs?: number;
  /** `undefined` → the default echo; `'hold'` → the batch stays pending (until `finish()` or a cancel). */
  readonly autoOutcome?: (batch: FakeBatch) => FakeOutcome | 'hold' | undefined;
  /** Port to listen on (default 0 = any free port). Always 127.0.0.1. */
  readonly port?: number;
}

export interface FakeVendorServer {
  readonly provider: BatchProvider;
  /** Base URL as the controller's `<VENDOR>_BASE_URL` expects it (`http://127.0.0.1:<port>` plus `/v1` for OpenAI). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Every request received, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Every batch ever created (deleted ones included, flagged). */
  batches(): readonly FakeBatch[];
  /** Finishes a pending or cancelling batch with `outcome` (throws if unknown or already ended). */
  finish(id: string, outcome: FakeOutcome): void;
  /** Queues a fault for the next matching requests. */
  inject(fault: FakeFault): void;
  /** Forgets every batch, request and fault. */
  reset(): void;
  close(): Promise<void>;
}
