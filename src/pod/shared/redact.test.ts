import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactUrl } from './redact.ts';

describe('redactUrl', () => {
  it('drops userinfo and the query', () => {
    assert.equal(
      redactUrl('https://user:pw@hooks.example.com:8443/a/b?token=s3cret#x'),
      'https://hooks.example.com:8443/a/b?…',
    );
    assert.equal(redactUrl('http://127.0.0.1:18099/notify'), 'http://127.0.0.1:18099/notify');
    assert.equal(redactUrl('nope'), '<invalid url>');
  });
});
