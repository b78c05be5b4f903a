import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkKey } from './client.ts';
import { decodeXmlText, parseCopyXml, parseErrorXml, parseListXml } from './xml.ts';

describe('S3 XML', () => {
  it('decodes entities, numeric references and CDATA', () => {
    assert.equal(decodeXmlText('a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;'), 'a & b <c> "d" \'e\'');
    assert.equal(decodeXmlText('&#233;&#x41;'), 'éA');
    assert.equal(decodeXmlText('<![CDATA[x &amp; y]]>'), 'x &amp; y');
    assert.equal(decodeXmlText('&unknown;'), '&unknown;');
  });

  it('reads an Error body', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a&amp;b</Key><RequestId>4442587FB7D0A2F9</RequestId></Error>`;
    assert.deepEqual(parseErrorXml(xml), {
      code: 'NoSuchKey',
      message: 'The specified key does not exist.',
      requestId: '4442587FB7D0A2F9',
    });
    assert.equal(parseErrorXml('<Error><Message>no code</Message></Error>'), undefined);
    assert.equal(parseErrorXml('not xml'), undefined);
    assert.deepEqual(parseErrorXml('<Error><Code>AccessDenied</Code></Error>'), {
      code: 'AccessDenied',
      message: '',
      requestId: undefined,
    });
  });

  it('reads a truncated ListBucketResult page', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>sessions/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents><Key>sessions/a&amp;b/turn-000001.tar.gz</Key><LastModified>2026-12-07T10:00:00.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>4096</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>sessions/b/turn-000002.tar.gz</Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>sessions/c/</Prefix></CommonPrefixes>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
</ListBucketResult>`;
    assert.deepEqual(parseListXml(xml), {
      ok: true,
      value: {
        objects: [
          {
            key: 'sessions/a&b/turn-000001.tar.gz',
            size: 4096,
            etag: '"9b2cf535f27731c974343645a3985328"',
            lastModified: '2026-12-07T10:00:00.000Z',
          },
          { key: 'sessions/b/turn-000002.tar.gz', size: 0, etag: undefined, lastModified: undefined },
        ],
        isTruncated: true,
        nextContinuationToken: '1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=',
      },
    });
  });

  it('reads an empty last page and refuses broken ones', () => {
    assert.deepEqual(
      parseListXml(
        '<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>',
      ),
      { ok: true, value: { objects: [], isTruncated: false, nextContinuationToken: undefined } },
    );
    assert.equal(parseListXml('<Error><Code>x</Code></Error>').ok, false);
    assert.equal(
      parseListXml('<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>').ok,
      false,
      'truncated without a token',
    );
    assert.equal(
      parseListXml('<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>')
        .ok,
      false,
      'a negative size',
    );
    assert.equal(
      parseListXml('<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>').ok,
      false,
    );
  });

  it('reads a CopyObjectResult', () => {
    assert.equal(
      parseCopyXml(
        '<CopyObjectResult><LastModified>2026-12-07T10:00:00.000Z</LastModified><ETag>"abc"</ETag></CopyObjectResult>',
      ),
      '"abc"',
    );
    assert.equal(parseCopyXml('<Error><Code>InternalError</Code></Error>'), undefined);
  });
});

describe('S3 object keys', () => {
  it('refuses keys a URL parser or S3 would change', () => {
    assert.equal(checkKey('sessions/ns/uid/turn-000001.tar.gz'), undefined);
    assert.equal(checkKey('with space/and+plus/é'), undefined);
    assert.match(checkKey('') ?? '', /empty/);
    assert.match(checkKey('a/../b') ?? '', /segment/);
    assert.match(checkKey('./a') ?? '', /segment/);
    assert.match(checkKey('a\nb') ?? '', /control/);
    assert.match(checkKey('x'.repeat(1025)) ?? '', /1024/);
  });
});
