// AWS Signature Version 4 for S3 (header authorization, signed payload): the canonical request, the string to sign,
// the signing key and the Authorization header, as
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html describes them. Pure functions.

import { createHash, createHmac } from 'node:crypto';

/** The hex SHA-256 of the empty payload (every body-less request signs it). */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** What is signed of one request. Header names in any case; `host` and `x-amz-*` must be among them. */
export interface SignInput {
  readonly method: string;
  /** The path as sent, already URI-encoded (S3 object keys are not encoded a second time). */
  readonly path: string;
  /** Query parameters (unencoded); order does not matter. */
  readonly query: readonly (readonly [string, string])[];
  readonly headers: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body (the value of x-amz-content-sha256). */
  readonly payloadHash: string;
}

export interface Scope {
  /** `YYYYMMDDTHHMMSSZ`, the value of x-amz-date. */
  readonly amzDate: string;
  readonly region: string;
  readonly service: string;
}

export const sha256Hex = (data: string | Uint8Array): string =>
  createHash('sha256').update(data).digest('hex');

const hmac = (key: string | Uint8Array, data: string): Buffer =>
  createHmac('sha256', key).update(data).digest();

/**
 * URI-encodes as SigV4 asks: every byte but the unreserved `A-Z a-z 0-9 - _ . ~` as `%XY` (upper-case hex);
 * `/` kept when `keepSlash` (object key paths).
 */
export function uriEncode(value: string, keepSlash = false): string {
  let out = '';
  for (const byte of new TextEncoder().encode(value)) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** `YYYYMMDDTHHMMSSZ` of a time. */
export function amzDate(at: Date): string {
  return at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** The canonical query string: encoded names and values, sorted by name (then value), `name=value` joined by `&`. */
export function canonicalQuery(query: readonly (readonly [string, string])[]): string {
  return query
    .map(([k, val]) => [uriEncode(k), uriEncode(val)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, val]) => `${k}=${val}`)
    .join('&');
}

/** Lower-cased header names, sorted, with trimmed values (inner runs of spaces folded to one). */
function canonicalHeaderList(headers: Readonly<Record<string, string>>): (readonly [string, string])[] {
  return Object.entries(headers)
    .map(([k, val]) => [k.toLowerCase(), val.trim().replace(/ +/g, ' ')] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export function signedHeaders(headers: Readonly<Record<string, string>>): string {
  return canonicalHeaderList(headers)
    .map(([k]) => k)
    .join(';');
}

export function canonicalRequest(input: SignInput): string {
  const list = canonicalHeaderList(input.headers);
  return [
    input.method,
    input.path,
    canonicalQuery(input.query),
    ...list.map(([k, val]) => `${k}:${val}`),
    '',
    list.map(([k]) => k).join(';'),
    input.payloadHash,
  ].join('\n');
}

export function credentialScope(scope: Scope): string {
  return `${scope.amzDate.slice(0, 8)}/${scope.region}/${scope.service}/aws4_request`;
}

export function stringToSign(canonical: string, scope: Scope): string {
  return ['AWS4-HMAC-SHA256', scope.amzDate, credentialScope(scope), sha256Hex(canonical)].join('\n');
}

export function signingKey(secretAccessKey: string, scope: Scope): Buffer {
  const day = hmac(`AWS4${secretAccessKey}`, scope.amzDate.slice(0, 8));
  return hmac(hmac(hmac(day, scope.region), scope.service), 'aws4_request');
}

export function signature(secretAccessKey: string, input: SignInput, scope: Scope): string {
  return hmac(signingKey(secretAccessKey, scope), stringToSign(canonicalRequest(input), scope)).toString(
    'hex',
  );
}

/** The Authorization header value for `input`. */
export function authorization(credentials: Credentials, input: SignInput, scope: Scope): string {
  return (
    `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope(scope)},` +
    `SignedHeaders=${signedHeaders(input.headers)},Signature=${signature(credentials.secretAccessKey, input, scope)}`
  );
}
