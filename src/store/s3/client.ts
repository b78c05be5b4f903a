// A small S3 client: path-style URLs, AWS Signature Version 4 in the Authorization header with the payload's
// SHA-256 signed, and the object calls the session store needs (PUT with user metadata, GET, HEAD, DELETE,
// ListObjectsV2, CopyObject; CreateBucket for test beds). Every failure is a typed S3Error (the code and message
// of S3's XML error body, the HTTP status), never an exception. Runs on Node and Deno (fetch, node:crypto).

import { err, ok, type Result } from '../../shared/result.ts';
import { amzDate, authorization, type Credentials, EMPTY_SHA256, sha256Hex, uriEncode } from './sigv4.ts';
import { type ListedObject, type ListPage, parseCopyXml, parseErrorXml, parseListXml } from './xml.ts';

export interface S3ClientConfig {
  /** The endpoint, e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:7070` (path-style addressing). */
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  readonly credentials: Credentials;
  /** Per-request deadline (default 30 s). */
  readonly timeoutMs?: number;
  /** For tests: the clock that dates signatures. */
  readonly now?: () => Date;
}

/**
 * A failed call. `status` is the HTTP status (0: no answer: network error, timeout, or refused before sending);
 * `code` is S3's error code (`NoSuchKey`, `AccessDenied`, `SignatureDoesNotMatch`, …), or for answers without an
 * error body one named after the status (`NotFound`, `Forbidden`, `HttpError`), or `NetworkError`,
 * `InvalidArgument` (refused here), `InvalidResponse` (an answer this client cannot read).
 */
export interface S3Error {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly requestId?: string | undefined;
}

export interface ObjectInfo {
  readonly size: number;
  readonly etag: string | undefined;
  readonly contentType: string | undefined;
  readonly lastModified: string | undefined;
  /** User metadata (`x-amz-meta-<name>`), names lower-case without the prefix. */
  readonly metadata: Readonly<Record<string, string>>;
}

export interface PutOptions {
  readonly contentType?: string;
  readonly metadata?: Readonly<Record<string, string>>;
}

export interface ListOptions {
  readonly prefix?: string;
  readonly continuationToken?: string;
  /** Keys per page (S3's default and maximum: 1000). */
  readonly maxKeys?: number;
}

export type { ListedObject, ListPage };

const META = 'x-amz-meta-';
/** Metadata names S3 carries as HTTP header names; lower-case here, as S3 returns them. */
const META_NAME = /^[a-z0-9][a-z0-9-]*$/;
/** Metadata values: printable US-ASCII (S3 keeps other bytes only RFC 2047-encoded). */
const META_VALUE = /^[\x20-\x7e]*$/;

function invalid(message: string): S3Error {
  return { status: 0, code: 'InvalidArgument', message };
}

/** Refuses keys S3 or a URL parser would change: empty, over 1024 bytes, `.`/`..` segments, control characters. */
export function checkKey(key: string): string | undefined {
  if (key === '') return 'the object key is empty';
  if (new TextEncoder().encode(key).length > 1024) return 'the object key is longer than 1024 bytes';
  if (key.split('/').some((s) => s === '.' || s === '..'))
    return `the object key ${JSON.stringify(key)} has a . or .. segment`;
  if (/[\x00-\x1f\x7f]/.test(key)) return `the object key ${JSON.stringify(key)} has a control character`;
  return undefined;
}

function checkMetadata(metadata: Readonly<Record<string, string>>): string | undefined {
  for (const [name, value] of Object.entries(metadata)) {
    if (!META_NAME.test(name))
      return `metadata name ${JSON.stringify(name)} is not lower-case letters, digits and -`;
    if (!META_VALUE.test(value)) return `metadata ${name} is not printable ASCII`;
  }
  return undefined;
}

/** The error of a non-2xx answer, from its XML body when it has one. */
async function answerError(res: Response): Promise<S3Error> {
  const text = await res.text().catch(() => '');
  const body = parseErrorXml(text);
  if (body) return { status: res.status, code: body.code, message: body.message, requestId: body.requestId };
  const code = res.status === 404 ? 'NotFound' : res.status === 403 ? 'Forbidden' : 'HttpError';
  return { status: res.status, code, message: `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}` };
}

function infoOf(res: Response): ObjectInfo {
  const metadata: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    const n = name.toLowerCase();
    if (n.startsWith(META)) metadata[n.slice(META.length)] = value;
  });
  const length = res.headers.get('content-length');
  return {
    size: length !== null && /^\d+$/.test(length) ? Number(length) : 0,
    etag: res.headers.get('etag') ?? undefined,
    contentType: res.headers.get('content-type') ?? undefined,
    lastModified: res.headers.get('last-modified') ?? undefined,
    metadata,
  };
}

export class S3Client {
  readonly bucket: string;
  private readonly base: URL;
  private readonly region: string;
  private readonly credentials: Credentials;
  private readonly timeoutMs: number;
  private readonly now: () => Date;

  constructor(config: S3ClientConfig) {
    this.base = new URL(config.endpoint);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:')
      throw new Error(`the S3 endpoint must be http or https, got ${config.endpoint}`);
    this.bucket = config.bucket;
    this.region = config.region;
    this.credentials = config.credentials;
    this.timeoutMs = config.timeoutMs ?? 30_000;
    this.now = config.now ?? (() => new Date());
  }

  /** The encoded path of the bucket or of one of its objects (path-style). */
  private path(key?: string): string {
    const root = this.base.pathname.replace(/\/+$/, '');
    const bucket = `${root}/${uriEncode(this.bucket)}`;
    return key === undefined ? `${bucket}/` : `${bucket}/${uriEncode(key, true)}`;
  }

  /** Signs and sends one request; resolves with the answer, whatever its status, or a NetworkError. */
  private async send(
    method: string,
    path: string,
    options: {
      query?: readonly (readonly [string, string])[];
      headers?: Readonly<Record<string, string>>;
      body?: Uint8Array;
    } = {},
  ): Promise<Result<Response, S3Error>> {
    const query = options.query ?? [];
    const payloadHash = options.body ? sha256Hex(options.body) : EMPTY_SHA256;
    const date = amzDate(this.now());
    const headers: Record<string, string> = {
      ...options.headers,
      host: this.base.host,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': date,
    };
    const auth = authorization(
      this.credentials,
      { method, path, query, headers, payloadHash },
      { amzDate: date, region: this.region, service: 's3' },
    );
    const { host: _host, ...sent } = headers;
    const search = query.map(([k, val]) => `${uriEncode(k)}=${uriEncode(val)}`).join('&');
    const url = `${this.base.origin}${path}${search ? `?${search}` : ''}`;
    try {
      const res = await fetch(url, {
        method,
        headers: { ...sent, authorization: auth },
        ...(options.body ? { body: options.body } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'manual',
      });
      return ok(res);
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return err({ status: 0, code: 'NetworkError', message: `${method} ${path}: ${message}` });
    }
  }

  /** PutBucket; an existing bucket of the same owner is not an error. */
  async createBucket(): Promise<Result<void, S3Error>> {
    const sent = await this.send('PUT', this.path());
    if (!sent.ok) return sent;
    const res = sent.value;
    if (res.ok) {
      await res.body?.cancel();
      return ok(undefined);
    }
    const e = await answerError(res);
    return e.code === 'BucketAlreadyOwnedByYou' ? ok(undefined) : err(e);
  }

  async putObject(
    key: string,
    body: Uint8Array,
    options: PutOptions = {},
  ): Promise<Result<{ etag: string | undefined }, S3Error>> {
    const bad = checkKey(key) ?? checkMetadata(options.metadata ?? {});
    if (bad) return err(invalid(bad));
    const headers: Record<string, string> = {
      'content-type': options.contentType ?? 'application/octet-stream',
    };
    for (const [name, value] of Object.entries(options.metadata ?? {})) headers[`${META}${name}`] = value;
    const sent = await this.send('PUT', this.path(key), { headers, body });
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) return err(await answerError(res));
    await res.body?.cancel();
    return ok({ etag: res.headers.get('etag') ?? undefined });
  }

  /** GetObject, the body as a stream (the caller reads or cancels it). */
  async getObjectStream(
    key: string,
  ): Promise<Result<ObjectInfo & { body: ReadableStream<Uint8Array> }, S3Error>> {
    const bad = checkKey(key);
    if (bad) return err(invalid(bad));
    const sent = await this.send('GET', this.path(key));
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) return err(await answerError(res));
    const body = res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
    return ok({ ...infoOf(res), body });
  }

  /** GetObject, the body read whole. */
  async getObject(key: string): Promise<Result<ObjectInfo & { body: Uint8Array }, S3Error>> {
    const got = await this.getObjectStream(key);
    if (!got.ok) return got;
    try {
      const body = new Uint8Array(await new Response(got.value.body).arrayBuffer());
      return ok({ ...got.value, size: body.length, body });
    } catch (error) {
      return err({
        status: 0,
        code: 'NetworkError',
        message: `GET ${key}: the body broke off: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }

  async headObject(key: string): Promise<Result<ObjectInfo, S3Error>> {
    const bad = checkKey(key);
    if (bad) return err(invalid(bad));
    const sent = await this.send('HEAD', this.path(key));
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) {
      const e = await answerError(res);
      // HEAD answers carry no body: a 404 is a missing key.
      return err(e.code === 'NotFound' ? { ...e, code: 'NoSuchKey', message: `no object ${key}` } : e);
    }
    return ok(infoOf(res));
  }

  /** DeleteObject; S3 answers 204 whether the key existed or not. */
  async deleteObject(key: string): Promise<Result<void, S3Error>> {
    const bad = checkKey(key);
    if (bad) return err(invalid(bad));
    const sent = await this.send('DELETE', this.path(key));
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) return err(await answerError(res));
    await res.body?.cancel();
    return ok(undefined);
  }

  /** One page of ListObjectsV2. */
  async listObjectsV2(options: ListOptions = {}): Promise<Result<ListPage, S3Error>> {
    const query: [string, string][] = [['list-type', '2']];
    if (options.prefix !== undefined) query.push(['prefix', options.prefix]);
    if (options.continuationToken !== undefined)
      query.push(['continuation-token', options.continuationToken]);
    if (options.maxKeys !== undefined) query.push(['max-keys', String(options.maxKeys)]);
    const sent = await this.send('GET', this.path(), { query });
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) return err(await answerError(res));
    const page = parseListXml(await res.text());
    if (!page.ok) return err({ status: res.status, code: 'InvalidResponse', message: page.error });
    return ok(page.value);
  }

  /** Every object under `prefix`, page after page. */
  async listAll(prefix: string, maxKeys?: number): Promise<Result<ListedObject[], S3Error>> {
    const all: ListedObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.listObjectsV2({
        prefix,
        ...(token !== undefined ? { continuationToken: token } : {}),
        ...(maxKeys !== undefined ? { maxKeys } : {}),
      });
      if (!page.ok) return page;
      all.push(...page.value.objects);
      token = page.value.isTruncated ? page.value.nextContinuationToken : undefined;
    } while (token !== undefined);
    return ok(all);
  }

  /**
   * CopyObject within the bucket, the source's metadata kept. S3 may answer 200 with an `<Error>` body (a copy that
   * failed after it started): that is an error here.
   */
  async copyObject(sourceKey: string, destinationKey: string): Promise<Result<{ etag: string }, S3Error>> {
    const bad = checkKey(sourceKey) ?? checkKey(destinationKey);
    if (bad) return err(invalid(bad));
    const headers = {
      'x-amz-copy-source': `/${uriEncode(this.bucket)}/${uriEncode(sourceKey, true)}`,
      'x-amz-metadata-directive': 'COPY',
    };
    const sent = await this.send('PUT', this.path(destinationKey), { headers });
    if (!sent.ok) return sent;
    const res = sent.value;
    if (!res.ok) return err(await answerError(res));
    const text = await res.text();
    const etag = parseCopyXml(text);
    if (etag !== undefined) return ok({ etag });
    const body = parseErrorXml(text);
    if (body)
      return err({ status: res.status, code: body.code, message: body.message, requestId: body.requestId });
    return err({
      status: res.status,
      code: 'InvalidResponse',
      message: 'CopyObject answered without a CopyObjectResult',
    });
  }
}
