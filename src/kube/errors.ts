import * as v from 'valibot';
import { type Status, StatusSchema } from './meta.ts';

/**
 * Every way a call to the API server can fail. Values, never thrown.
 * - `api`: the server answered with a non-2xx status (or a watch stream carried an ERROR); `code` is the HTTP
 *   status, `reason` the Status reason (`NotFound`, `Conflict`, `AlreadyExists`, `Expired`, `Invalid`, …; empty when
 *   the body was not a Status), `status` the parsed Status body when there was one.
 * - `network`: connection refused/reset, TLS failure, socket closed mid-response.
 * - `timeout`: no complete answer within the request timeout, or (`idle: true`) a stream silent for too long.
 * - `decode`: the server answered 2xx but the body was not what we expected.
 * - `aborted`: the caller's AbortSignal fired.
 * - `config`: credentials could not be obtained (unreadable token file, failing exec plugin).
 */
export type KubeError =
  | {
      readonly kind: 'api';
      readonly code: number;
      readonly reason: string;
      readonly message: string;
      readonly status: Status | undefined;
    }
  | { readonly kind: 'network'; readonly message: string }
  | { readonly kind: 'timeout'; readonly message: string; readonly idle: boolean }
  | { readonly kind: 'decode'; readonly message: string }
  | { readonly kind: 'aborted'; readonly message: string }
  | { readonly kind: 'config'; readonly message: string };

export type KubeErrorKind = KubeError['kind'];

/** Builds an `api` error from a Status object (in-stream ERROR or parsed body) and the HTTP code. */
export function apiError(code: number, status: Status | undefined, fallbackMessage = ''): KubeError {
  return {
    kind: 'api',
    code: status?.code ?? code,
    reason: status?.reason ?? '',
    message: status?.message ?? fallbackMessage,
    status,
  };
}

/**
 * Maps a non-2xx HTTP response to an `api` error. The body is parsed as a Status when it is one; otherwise the
 * (truncated) text becomes the message and `reason` is derived from the HTTP code so predicates still work.
 */
export function apiErrorFromResponse(httpStatus: number, body: string): KubeError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const status = v.safeParse(StatusSchema, parsed);
  if (status.success && (status.output.kind === 'Status' || status.output.reason !== undefined)) {
    const s = status.output;
    return {
      kind: 'api',
      code: httpStatus,
      reason: s.reason ?? reasonForCode(httpStatus),
      message: s.message ?? '',
      status: s,
    };
  }
  return {
    kind: 'api',
    code: httpStatus,
    reason: reasonForCode(httpStatus),
    message: body.slice(0, 512),
    status: undefined,
  };
}

/** The Status reason the API server uses for a bare HTTP code (k8s.io/apimachinery `StatusReason`). */
export function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 406:
      return 'NotAcceptable';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 413:
      return 'RequestEntityTooLarge';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return '';
  }
}

const isApi = (e: KubeError): e is Extract<KubeError, { kind: 'api' }> => e.kind === 'api';

/** 404 Not Found. */
export const isNotFound = (e: KubeError): boolean => isApi(e) && (e.code === 404 || e.reason === 'NotFound');
/** 409 with reason `Conflict`: a resourceVersion precondition failed (NOT a create collision, see isAlreadyExists). */
export const isConflict = (e: KubeError): boolean => isApi(e) && e.reason === 'Conflict';
/** 409 with reason `AlreadyExists`: a create hit an existing name. */
export const isAlreadyExists = (e: KubeError): boolean => isApi(e) && e.reason === 'AlreadyExists';
/** 410 (reason `Expired` or `Gone`): a resourceVersion or continue token is too old; re-list. */
export const isGone = (e: KubeError): boolean =>
  isApi(e) && (e.code === 410 || e.reason === 'Expired' || e.reason === 'Gone');
/** 422 Invalid: the object failed validation (also a failed JSON-patch `test`). */
export const isInvalid = (e: KubeError): boolean => isApi(e) && (e.code === 422 || e.reason === 'Invalid');
/** 403 Forbidden (RBAC, or a namespace being terminated). */
export const isForbidden = (e: KubeError): boolean =>
  isApi(e) && (e.code === 403 || e.reason === 'Forbidden');
/** 401 Unauthorized: credentials missing, expired or rejected. */
export const isUnauthorized = (e: KubeError): boolean => isApi(e) && e.code === 401;
/**
 * Whether asking again may well succeed: the connection failed or timed out, or the API server (or the kubelet
 * behind it) answered 429 or 5xx. A 4xx otherwise is an answer.
 */
export const isTransient = (e: KubeError): boolean =>
  e.kind === 'network' || e.kind === 'timeout' || (isApi(e) && (e.code === 429 || e.code >= 500));
/**
 * 504 with cause `ResourceVersionTooLarge`: the requested RV is newer than the server's cache; the client
 * should re-list (docs/design/kubernetes.md#watch).
 */
export const isResourceVersionTooLarge = (e: KubeError): boolean =>
  isApi(e) &&
  e.code === 504 &&
  (e.status?.details?.causes ?? []).some((c) => c.reason === 'ResourceVersionTooLarge');

/** One line for logs: the kind plus code/reason/message; never includes request headers or bodies. */
export function describeKubeError(e: KubeError): string {
  switch (e.kind) {
    case 'api':
      return `api ${e.code}${e.reason ? ` ${e.reason}` : ''}: ${e.message}`;
    case 'timeout':
      return `${e.idle ? 'idle timeout' : 'timeout'}: ${e.message}`;
    default:
      return `${e.kind}: ${e.message}`;
  }
}
