import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyVendorRequest, countRequests } from './batch-scenario.ts';

describe('vendor request classification (batch benchmark)', () => {
  it('tells creates, list pages, polls, cancels and deletes apart for the three vendors', () => {
    const cases: [string, string, string][] = [
      ['POST', '/v1/messages/batches', 'create'],
      ['GET', '/v1/messages/batches?limit=100', 'list'],
      ['GET', '/v1/messages/batches?limit=100&after_id=msgbatch_1', 'list'],
      ['GET', '/v1/messages/batches/msgbatch_1', 'poll'],
      ['GET', '/v1/messages/batches/msgbatch_1/results', 'poll'],
      ['POST', '/v1/messages/batches/msgbatch_1/cancel', 'cancel'],
      ['DELETE', '/v1/messages/batches/msgbatch_1', 'delete'],
      ['POST', '/v1/files', 'create'],
      ['POST', '/v1/batches', 'create'],
      ['GET', '/v1/batches?limit=100&after=batch_1', 'list'],
      ['GET', '/v1/batches/batch_1', 'poll'],
      ['POST', '/v1/batches/batch_1/cancel', 'cancel'],
      ['DELETE', '/v1/files/file-1', 'delete'],
      ['POST', '/v1beta/models/gemini-3.8-flash:batchGenerateContent', 'create'],
      ['GET', '/v1beta/batches?pageSize=100&pageToken=t', 'list'],
      ['GET', '/v1beta/batches/b1', 'poll'],
      ['POST', '/v1beta/batches/b1:cancel', 'cancel'],
      ['PUT', '/v1/other', 'other'],
    ];
    for (const [method, path, kind] of cases)
      assert.equal(classifyVendorRequest({ method, path }), kind, `${method} ${path}`);
  });

  it('counts the requests of each kind inside [from, to) only', () => {
    const at = (t: number, method: string, path: string) => ({ method, path, at: t });
    const counted = countRequests(
      [
        at(5, 'GET', '/v1/batches?limit=100'),
        at(10, 'GET', '/v1/batches?limit=100'),
        at(15, 'GET', '/v1/batches/b'),
        at(19, 'DELETE', '/v1/files/f'),
        at(20, 'GET', '/v1/batches?limit=100'),
      ],
      10,
      20,
    );
    assert.deepEqual(counted, { create: 0, list: 1, poll: 1, cancel: 0, delete: 1, other: 0 });
  });
});
