import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiErrorFromResponse } from '../kube/index.ts';
import { CliError, EXIT, exitCodeOf, kubeErrorLine, kubeFailure, oneLine } from './exit.ts';
import { colorEnabled, painter, phaseTone, sanitize, stripAnsi } from './style.ts';

const api = (code: number, message = '') =>
  apiErrorFromResponse(code, JSON.stringify({ kind: 'Status', code, message }));

describe('exit codes of API errors', () => {
  it('401/403 → 3, 404 → 4, anything else → 1', () => {
    assert.equal(exitCodeOf(api(401)), EXIT.notAllowed);
    assert.equal(exitCodeOf(api(403)), EXIT.notAllowed);
    assert.equal(exitCodeOf(api(404)), EXIT.notFound);
    for (const code of [400, 409, 422, 500, 503]) assert.equal(exitCodeOf(api(code)), EXIT.failed);
    assert.equal(exitCodeOf({ kind: 'network', message: 'ECONNREFUSED' }), EXIT.failed);
    assert.equal(exitCodeOf({ kind: 'timeout', message: 't', idle: false }), EXIT.failed);
  });

  it('one line about the object, with the server message for refusals', () => {
    const what = 'agent "x" in namespace "team"';
    assert.equal(
      kubeErrorLine(api(404, 'agents "x" not found'), what),
      'agent "x" in namespace "team" not found',
    );
    assert.equal(
      kubeErrorLine(api(403, 'User "u" cannot get\nresource "agents"'), what),
      'not allowed (403): User "u" cannot get resource "agents"',
    );
    assert.equal(kubeErrorLine(api(403), what), `not allowed (403): cannot access ${what}`);
    assert.equal(
      kubeErrorLine(api(401, 'Unauthorized'), what),
      'not authenticated (401): Unauthorized; check the kubeconfig credentials',
    );
    assert.equal(
      kubeErrorLine(api(422, 'spec.stationRef: Invalid'), what),
      `${what}: 422 Invalid: spec.stationRef: Invalid`,
    );
    assert.equal(
      kubeErrorLine({ kind: 'network', message: 'connect ECONNREFUSED 127.0.0.1:6443' }, what),
      'cannot reach the API server: connect ECONNREFUSED 127.0.0.1:6443',
    );
    assert.equal(kubeErrorLine({ kind: 'decode', message: 'bad' }, what), `${what}: decode: bad`);
  });

  it('kubeFailure carries both', () => {
    const e = kubeFailure(api(404), 'x');
    assert.ok(e instanceof CliError);
    assert.equal(e.code, 4);
    assert.equal(new CliError('m').code, 1);
    assert.equal(oneLine(' a \n\t b '), 'a b');
  });

  it('server and webhook messages cannot drive the terminal', () => {
    const what = 'agent "x" in namespace "team"';
    const evil = 'denied\x1b]0;pwned\x07 \x1b[2J\u202eok\x9b1A';
    assert.equal(
      kubeErrorLine(api(403, evil), what),
      'not allowed (403): denied^[]0;pwned^G ^[[2J<U+202E>ok^[[1A',
    );
    assert.equal(
      kubeErrorLine(api(422, `admission webhook "v" denied the request: ${evil}`), what),
      `${what}: 422 Invalid: admission webhook "v" denied the request: denied^[]0;pwned^G ^[[2J<U+202E>ok^[[1A`,
    );
    assert.equal(
      kubeErrorLine({ kind: 'network', message: 'reset\x1b[31m' }, what),
      'cannot reach the API server: reset^[[31m',
    );
    assert.equal(oneLine('a\x1b[1mb'), 'a^[[1mb');
  });
});

describe('style', () => {
  it('colour only on a terminal, without NO_COLOR, not on a dumb terminal', () => {
    assert.equal(colorEnabled(true, {}), true);
    assert.equal(colorEnabled(false, {}), false);
    assert.equal(colorEnabled(true, { NO_COLOR: '1' }), false);
    assert.equal(
      colorEnabled(true, { NO_COLOR: '' }),
      true,
      'an empty NO_COLOR does not count (no-color.org)',
    );
    assert.equal(colorEnabled(true, { TERM: 'dumb' }), false);
  });
  it('painter and stripAnsi', () => {
    assert.equal(painter(false)('red', 'x'), 'x');
    assert.equal(painter(true)('bold', 'x'), '\x1b[1mx\x1b[0m');
    assert.equal(painter(true)('red', ''), '');
    assert.equal(stripAnsi(painter(true)('green', 'ok')), 'ok');
    assert.deepEqual(['Succeeded', 'Failed', 'Running', 'Pending'].map(phaseTone), [
      'green',
      'red',
      'blue',
      'yellow',
    ]);
  });
  it('sanitize shows control characters instead of obeying them, keeping tabs and newlines', () => {
    assert.equal(sanitize('a\tb\nc'), 'a\tb\nc');
    assert.equal(sanitize('\x1b[2J\x07\x00\x7f\r'), '^[[2J^G^@^?');
    assert.equal(sanitize('\x9b31m'), '^[[31m');
    assert.equal(
      sanitize('a\x85b\x80\x9f\xa0é'),
      'a<U+0085>b<U+0080><U+009F>\xa0é',
      'all of C1, not what follows',
    );
    assert.equal(
      sanitize('\u202aa\u202eb\u2066c\u2069\u200e'),
      '<U+202A>a<U+202E>b<U+2066>c<U+2069>\u200e',
      'bidi overrides and isolates',
    );
    assert.equal(sanitize(sanitize('\x1b\x9b\u202e')), sanitize('\x1b\x9b\u202e'), 'idempotent');
  });
});
