import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { S3Client } from './client.ts';

/** A loopback server recording each request and answering with the next queued reply. */
let seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];
let replies: { status: number; body?: string; headers?: Record<string, string> }[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    const reply = replies.shift() ?? { status: 200 };
    res.writeHead(reply.status, reply.headers ?? {});
    res.end(reply.body ?? '');
  });
});
let client: S3Client;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    bucket: 'sessions',
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    now: () => new Date('2026-12-07T11:00:00Z'),
  });
});
after(() => server.close());

describe('S3 client requests', () => {
  it('PUT: path-style, the key escaped once, metadata headers, the payload hash signed', async () => {
    seen = [];
    replies = [{ status: 200, headers: { etag: '"e1"' } }];
    const put = await client.putObject('ns/a b+c$é/turn-000001.tar.gz', new TextEncoder().encode('hello'), {
      metadata: { 'session-id': 's-1', vendor: 'claude' },
      contentType: 'application/gzip',
    });
    assert.deepEqual(put, { ok: true, value: { etag: '"e1"' } });
    const req = seen[0];
    assert.ok(req);
    assert.equal(req.method, 'PUT');
    assert.equal(req.url, '/sessions/ns/a%20b%2Bc%24%C3%A9/turn-000001.tar.gz');
    assert.equal(req.body, 'hello');
    assert.equal(req.headers['x-amz-meta-session-id'], 's-1');
    assert.equal(req.headers['x-amz-meta-vendor'], 'claude');
    assert.equal(req.headers['content-type'], 'application/gzip');
    // SHA-256 of "hello".
    assert.equal(
      req.headers['x-amz-content-sha256'],
      '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
    );
    assert.equal(req.headers['x-amz-date'], '20261207T110000Z');
    assert.match(
      String(req.headers.authorization),
      /^AWS4-HMAC-SHA256 Credential=AKID\/20261207\/us-east-1\/s3\/aws4_request,SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-session-id;x-amz-meta-vendor,Signature=[0-9a-f]{64}$/,
    );
  });

  it('refuses metadata S3 cannot carry and bad keys without sending', async () => {
    seen = [];
    const bad = await client.putObject('k', new Uint8Array(), { metadata: { Vendor: 'x' } });
    assert.equal(bad.ok, false);
    assert.equal(!bad.ok && bad.error.code, 'InvalidArgument');
    const nonAscii = await client.putObject('k', new Uint8Array(), { metadata: { vendor: 'é' } });
    assert.equal(!nonAscii.ok && nonAscii.error.code, 'InvalidArgument');
    const dots = await client.getObject('a/../b');
    assert.equal(!dots.ok && dots.error.code, 'InvalidArgument');
    assert.equal(seen.length, 0);
  });

  it('ListObjectsV2: the query encoded, the token passed back', async () => {
    seen = [];
    replies = [
      {
        status: 200,
        body: '<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>p/1</Key><Size>1</Size></Contents><NextContinuationToken>t/1=</NextContinuationToken></ListBucketResult>',
      },
      {
        status: 200,
        body: '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/2</Key><Size>2</Size></Contents></ListBucketResult>',
      },
    ];
    const all = await client.listAll('p/', 1);
    assert.deepEqual(all.ok && all.value.map((o) => o.key), ['p/1', 'p/2']);
    assert.equal(seen[0]?.url, '/sessions/?list-type=2&prefix=p%2F&max-keys=1');
    assert.equal(seen[1]?.url, '/sessions/?list-type=2&prefix=p%2F&continuation-token=t%2F1%3D&max-keys=1');
  });

  it('errors: the XML body, a bodiless HEAD 404, a 200 CopyObject error, no answer', async () => {
    replies = [
      {
        status: 403,
        body: '<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>',
      },
      { status: 404 },
      { status: 200, body: '<Error><Code>InternalError</Code><Message>copy failed</Message></Error>' },
    ];
    assert.deepEqual(await client.getObject('k'), {
      ok: false,
      error: {
        status: 403,
        code: 'SignatureDoesNotMatch',
        message: 'The request signature we calculated does not match',
        requestId: undefined,
      },
    });
    const head = await client.headObject('missing');
    assert.equal(!head.ok && head.error.code, 'NoSuchKey');
    assert.equal(!head.ok && head.error.status, 404);
    const copy = await client.copyObject('a', 'b');
    assert.deepEqual(!copy.ok && [copy.error.status, copy.error.code], [200, 'InternalError']);
    const closed = new S3Client({
      endpoint: 'http://127.0.0.1:1',
      bucket: 'b',
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 's' },
    });
    const none = await closed.deleteObject('k');
    assert.deepEqual(!none.ok && [none.error.status, none.error.code], [0, 'NetworkError']);
  });

  it('CopyObject names the source path-style, escaped', async () => {
    seen = [];
    replies = [{ status: 200, body: '<CopyObjectResult><ETag>"x"</ETag></CopyObjectResult>' }];
    const copy = await client.copyObject('a/turn 1', 'b/turn 1');
    assert.deepEqual(copy, { ok: true, value: { etag: '"x"' } });
    assert.equal(seen[0]?.url, '/sessions/b/turn%201');
    assert.equal(seen[0]?.headers['x-amz-copy-source'], '/sessions/a/turn%201');
    assert.equal(seen[0]?.headers['x-amz-metadata-directive'], 'COPY');
  });
});
