// The expected values are AWS's published examples of Signature Version 4 for S3 ("Examples: Signature
// calculations" of https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html): the canonical
// requests, strings to sign and signatures are typed in from that page, never computed here.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  amzDate,
  authorization,
  canonicalQuery,
  canonicalRequest,
  EMPTY_SHA256,
  type SignInput,
  sha256Hex,
  signature,
  stringToSign,
  uriEncode,
} from './sigv4.ts';

const credentials = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const scope = { amzDate: '20130524T000000Z', region: 'us-east-1', service: 's3' };
const host = 'examplebucket.s3.amazonaws.com';

describe('SigV4 against AWS S3 examples', () => {
  it('GET Object (range, empty payload)', () => {
    const input: SignInput = {
      method: 'GET',
      path: '/test.txt',
      query: [],
      headers: {
        Host: host,
        Range: 'bytes=0-9',
        'x-amz-content-sha256': EMPTY_SHA256,
        'x-amz-date': '20130524T000000Z',
      },
      payloadHash: EMPTY_SHA256,
    };
    const canonical = canonicalRequest(input);
    assert.equal(
      canonical,
      [
        'GET',
        '/test.txt',
        '',
        'host:examplebucket.s3.amazonaws.com',
        'range:bytes=0-9',
        'x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        'x-amz-date:20130524T000000Z',
        '',
        'host;range;x-amz-content-sha256;x-amz-date',
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      ].join('\n'),
    );
    assert.equal(
      stringToSign(canonical, scope),
      [
        'AWS4-HMAC-SHA256',
        '20130524T000000Z',
        '20130524/us-east-1/s3/aws4_request',
        '7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972',
      ].join('\n'),
    );
    assert.equal(
      signature(credentials.secretAccessKey, input, scope),
      'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    assert.equal(
      authorization(credentials, input, scope),
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('PUT Object (a $ in the key, a signed payload)', () => {
    const payloadHash = '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072';
    assert.equal(sha256Hex('Welcome to Amazon S3.'), payloadHash);
    const input: SignInput = {
      method: 'PUT',
      path: `/${uriEncode('test$file.text', true)}`,
      query: [],
      headers: {
        Host: host,
        Date: 'Fri, 24 May 2013 00:00:00 GMT',
        'x-amz-date': '20130524T000000Z',
        'x-amz-storage-class': 'REDUCED_REDUNDANCY',
        'x-amz-content-sha256': payloadHash,
      },
      payloadHash,
    };
    const canonical = canonicalRequest(input);
    assert.equal(
      canonical,
      [
        'PUT',
        '/test%24file.text',
        '',
        'date:Fri, 24 May 2013 00:00:00 GMT',
        'host:examplebucket.s3.amazonaws.com',
        'x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
        'x-amz-date:20130524T000000Z',
        'x-amz-storage-class:REDUCED_REDUNDANCY',
        '',
        'date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class',
        '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      ].join('\n'),
    );
    assert.equal(
      stringToSign(canonical, scope).split('\n')[3],
      '9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d',
    );
    assert.equal(
      signature(credentials.secretAccessKey, input, scope),
      '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd',
    );
  });

  it('GET Bucket Lifecycle (a query parameter without a value)', () => {
    const input: SignInput = {
      method: 'GET',
      path: '/',
      query: [['lifecycle', '']],
      headers: { Host: host, 'x-amz-date': '20130524T000000Z', 'x-amz-content-sha256': EMPTY_SHA256 },
      payloadHash: EMPTY_SHA256,
    };
    assert.equal(canonicalRequest(input).split('\n')[2], 'lifecycle=');
    assert.equal(
      signature(credentials.secretAccessKey, input, scope),
      'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543',
    );
  });

  it('Get Bucket (List Objects): query parameters sorted', () => {
    const input: SignInput = {
      method: 'GET',
      path: '/',
      query: [
        ['prefix', 'J'],
        ['max-keys', '2'],
      ],
      headers: { Host: host, 'x-amz-date': '20130524T000000Z', 'x-amz-content-sha256': EMPTY_SHA256 },
      payloadHash: EMPTY_SHA256,
    };
    assert.equal(canonicalRequest(input).split('\n')[2], 'max-keys=2&prefix=J');
    assert.equal(
      signature(credentials.secretAccessKey, input, scope),
      '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    );
  });
});

describe('SigV4 encoding', () => {
  it('URI-encodes all but the unreserved characters, upper-case hex, UTF-8 bytes', () => {
    assert.equal(uriEncode('a-b_c.d~e'), 'a-b_c.d~e');
    assert.equal(uriEncode('a b+c=d&e/f'), 'a%20b%2Bc%3Dd%26e%2Ff');
    assert.equal(uriEncode('sessions/ns/uid/turn-000001.tar.gz', true), 'sessions/ns/uid/turn-000001.tar.gz');
    assert.equal(uriEncode('é*', true), '%C3%A9%2A');
    assert.equal(uriEncode('x/y', false), 'x%2Fy');
  });

  it('sorts the canonical query by encoded name and encodes tokens', () => {
    assert.equal(
      canonicalQuery([
        ['prefix', 'a b/'],
        ['list-type', '2'],
        ['continuation-token', '1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM='],
      ]),
      'continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&list-type=2&prefix=a%20b%2F',
    );
  });

  it('dates as YYYYMMDDTHHMMSSZ', () => {
    assert.equal(amzDate(new Date('2013-05-24T00:00:00.123Z')), '20130524T000000Z');
    assert.equal(amzDate(new Date('2026-12-07T11:05:09Z')), '20261207T110509Z');
  });
});
