// The one port every batch vendor adapter implements (docs/reference/vendor-apis.md). Adapters speak plain `fetch`
// (no SDKs), validate every vendor answer with valibot at the boundary, and map failures into `BatchError`.

import type { Result } from '../../shared/result.ts';

/** The vendors with a batch API. */
export const BATCH_PROVIDERS = ['anthropic', 'openai', 'gemini'] as const;
export type BatchProvider = (typeof BATCH_PROVIDERS)[number];

/** What one batch run asks the vendor for: exactly one prompt, no tools, no sampling parameters. */
export interface BatchRequest {
  /**
   * The per-request id (Anthropic `custom_id`, OpenAI `custom_id` and batch metadata, Gemini `displayName` and
   * request `metadata.key`). Deterministic from the Agent uid (`runCustomId`), matches `^[a-zA-Z0-9_-]{1,64}$`, so
   * a submission can be found again after a crash.
   */
  readonly customId: string;
  /** `<namespace>/<name>` of the Agent, for humans looking at the vendor console (OpenAI metadata `run`). */
  readonly label: string;
  readonly model: string;
  /** The rendered prompt, sent as the one user message. */
  readonly prompt: string;
  /** `max_tokens` / `max_output_tokens` / `maxOutputTokens`. */
  readonly maxTokens: number;
  /** `output.schema` (a JSON Schema), sent as the vendor's structured-output field when present. */
  readonly schema?: unknown;
}

/**
 * What the renderers need besides the vendor's answer, to build the CLI event lines
 * (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines).
 */
export interface RenderContext {
  /** Session / thread id of the synthesized CLI stream: the Agent uid (stable across restarts). */
  readonly sessionId: string;
  readonly model: string;
  readonly prompt: string;
  /** True when a schema was sent: a successful text is then parsed as JSON into `structured_output`. */
  readonly structured: boolean;
  /** Wall time of the run so far, for `duration_ms` fields. */
  readonly durationMs: number;
}

/** A batch the vendor accepted. `id` is what `status.batchId` records (`msgbatch_…`, `batch_…`, `batches/…`). */
export interface SubmittedBatch {
  readonly id: string;
}

/** The vendor-neutral result of one finished batch request, already rendered as CLI stream-JSON lines. */
export type BatchOutcome =
  | {
      readonly kind: 'succeeded';
      /**
       * The vendor CLI's stream-JSON event lines (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines),
       * one JSON object per entry, no newlines.
       */
      readonly lines: readonly string[];
    }
  | {
      readonly kind: 'failed';
      /** Lines as for success, ending with the CLI's error terminal line. */
      readonly lines: readonly string[];
      /**
       * Human-readable why, becomes `status.failureReason` (e.g. `errored: invalid_request_error: prompt is too
       * long`, `expired`, `canceled`, `refused: stop_reason refusal`, `safety: finishReason SAFETY`).
       */
      readonly message: string;
    };

/** What polling a batch found. */
export type BatchState =
  /** Still queued, running, finalizing or cancelling at the vendor. */
  | { readonly kind: 'inProgress'; readonly id: string }
  /** Terminal; the one request's outcome was read and rendered. */
  | { readonly kind: 'ended'; readonly id: string; readonly outcome: BatchOutcome };

/**
 * What a search for an earlier submission found (crash recovery,
 * docs/reference/vendor-apis.md#finding-an-earlier-submission).
 */
export type FindOutcome =
  /**
   * This batch carries the request (confirmed by custom id, metadata or display name). With several, `id` is the
   * oldest (the original submission) and the others are `duplicates`, every vendor alike.
   */
  | { readonly kind: 'found'; readonly id: string; readonly duplicates: readonly string[] }
  /** Nothing was submitted for this request id: it is safe to submit. */
  | { readonly kind: 'absent' }
  /**
   * The vendor cannot tell yet (Anthropic: a batch created in the window has not ended, so its custom_id cannot be
   * read). Ask again later; never submit meanwhile.
   */
  | { readonly kind: 'undecided'; readonly candidates: readonly string[] };

/** What a cleanup step achieved. */
export type CleanupOutcome =
  /** Everything the batch left at the vendor is gone (or was already gone). */
  | { readonly kind: 'done' }
  /** A first step was taken (cancel sent) and the vendor must finish it first (Anthropic: delete only once ended). */
  | { readonly kind: 'pending'; readonly detail: string };

/** Failures at the vendor boundary. The adapter already retried what is retryable within its budget. */
export type BatchError =
  /** 4xx other than 429 (final): the vendor's own message. `status` 401/403 = a wrong key. */
  | { readonly kind: 'rejected'; readonly status: number; readonly type: string; readonly message: string }
  /** 429 or 5xx after the retries; `retryAfterMs` from the last answer when it said. */
  | {
      readonly kind: 'unavailable';
      readonly status: number;
      readonly message: string;
      readonly retryAfterMs?: number;
    }
  /** No answer: connection refused, reset, or the request timed out (the request may or may not have landed). */
  | { readonly kind: 'network'; readonly message: string }
  /** An answer that does not have the documented shape. */
  | { readonly kind: 'protocol'; readonly message: string };

/** Per-call settings: the key, where the vendor is, and the runtime's `fetch`. */
export interface VendorCall {
  readonly apiKey: string;
  /** Base URL without trailing slash (`https://api.anthropic.com`, `https://api.openai.com/v1`, `https://generativelanguage.googleapis.com`). */
  readonly baseUrl: string;
  readonly fetch: typeof fetch;
  /** Timeout of one HTTP attempt (ms). */
  readonly timeoutMs: number;
  /** Attempts per request for 429 / 5xx / network failures of idempotent calls (at least 1). */
  readonly attempts: number;
  /** Sleeps between attempts; tests pass a fast one. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly signal?: AbortSignal;
}

/**
 * A vendor's batch API, as one adapter per vendor implements it. Every method is safe to call again after a
 * crash; none throws (failures are `BatchError`s); none ever puts the key into an error message.
 */
export interface BatchVendor {
  readonly provider: BatchProvider;
  /**
   * Creates a batch of exactly `request` (OpenAI: uploads the JSONL input first; if the batch create then fails the
   * upload is deleted again). Never retried on a network failure or 5xx, where the create may have landed: the
   * caller searches with `find` first (docs/reference/vendor-apis.md#finding-an-earlier-submission).
   */
  submit(request: BatchRequest, call: VendorCall): Promise<Result<SubmittedBatch, BatchError>>;
  /** Polls one batch; when terminal, also reads and renders its one result. */
  check(id: string, render: RenderContext, call: VendorCall): Promise<Result<BatchState, BatchError>>;
  /** Requests cancellation (idempotent; a batch that already ended is not an error). */
  cancel(id: string, call: VendorCall): Promise<Result<void, BatchError>>;
  /**
   * Removes what the batch left at the vendor: Anthropic deletes the batch once ended (cancelling first, answering
   * `pending` until it has ended); OpenAI deletes the input, output and error files; Gemini deletes the batch. A
   * batch or file already gone (404) counts as done.
   */
  cleanup(id: string, call: VendorCall): Promise<Result<CleanupOutcome, BatchError>>;
  /**
   * Searches for batches submitted for `customId` (OpenAI: metadata; Gemini: displayName; Anthropic: batches
   * created at or after `since` whose results name the custom id).
   */
  find(customId: string, since: Date, call: VendorCall): Promise<Result<FindOutcome, BatchError>>;
  /**
   * One page ({@link LIST_PAGE_SIZE} batches, newest first) of the account's batch list, with whether each has
   * ended: one request tells the poller about many batches (their list endpoints: docs/reference/vendor-apis.md).
   */
  listPage(cursor: string | undefined, call: VendorCall): Promise<Result<BatchListPage, BatchError>>;
}

/** Batches asked for per list page (within every vendor's maximum; OpenAI allows 100). */
export const LIST_PAGE_SIZE = 100;

/** One page of a vendor's batch list. */
export interface BatchListPage {
  readonly batches: readonly { readonly id: string; readonly ended: boolean }[];
  /** Cursor of the next page; undefined on the last one. */
  readonly next: string | undefined;
}

/** The environment variable holding each vendor's API key (also the default Secret key). */
export const API_KEY_ENV: Readonly<Record<BatchProvider, string>> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  gemini: 'GEMINI_API_KEY',
};

/** The environment variable overriding each vendor's base URL, and the default. */
export const BASE_URL_ENV: Readonly<Record<BatchProvider, string>> = {
  anthropic: 'ANTHROPIC_BASE_URL',
  openai: 'OPENAI_BASE_URL',
  gemini: 'GEMINI_BASE_URL',
};
export const DEFAULT_BASE_URL: Readonly<Record<BatchProvider, string>> = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
  gemini: 'https://generativelanguage.googleapis.com',
};

/** The request id of a run: `run-` and the Agent uid (36 characters), within the vendors' `[a-zA-Z0-9_-]{1,64}`. */
export function runCustomId(uid: string): string {
  const safe = uid.replace(/[^a-zA-Z0-9_-]/g, '-').slice(0, 60);
  return `run-${safe}`;
}
