import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN } from '../api/index.ts';
import {
  CONDITION_COMPLETE,
  CONDITION_FAILED,
  CONDITION_READY,
  FAILURE_JOB_FAILED,
  FAILURE_JOB_GONE,
  FAILURE_MISSING_REF,
  FAILURE_POD_GONE,
  failureBuild,
  failureInvalidReference,
  failureNotOwned,
  failureOutputUnavailable,
  failureRejected,
  preemptedMessage,
  REASON,
} from './reasons.ts';

describe('reasons', () => {
  it('keeps the reference failure strings verbatim', () => {
    assert.equal(FAILURE_MISSING_REF, 'Station or AgentDefinition not found');
    assert.equal(
      FAILURE_JOB_GONE,
      'run record unavailable: Job garbage-collected before its result was observed',
    );
    assert.equal(FAILURE_POD_GONE, 'run output unavailable: pod garbage-collected');
    assert.equal(FAILURE_JOB_FAILED, 'Job failed');
  });

  it('formats our own failure strings', () => {
    assert.equal(failureBuild('no agent'), 'Job build failed: no agent');
    assert.equal(failureInvalidReference('Station', 's', 'x'), 'Station s is invalid: x');
    assert.equal(failureRejected('bad'), 'Job rejected by the API server: bad');
    assert.equal(
      failureNotOwned('agent-job-x'),
      'Job agent-job-x already exists and is not owned by this Agent',
    );
    assert.equal(failureOutputUnavailable('timeout'), 'run output unavailable: timeout');
    assert.equal(
      preemptedMessage('new', 'stn'),
      'preempted by Agent new: Station stn is at its concurrency limit (concurrencyPolicy Replace)',
    );
  });

  it('uses condition types and reasons the API server accepts (metav1.Condition patterns)', () => {
    for (const type of [CONDITION_READY, CONDITION_COMPLETE, CONDITION_FAILED]) {
      assert.match(type, CONDITION_TYPE_PATTERN);
    }
    for (const reason of Object.values(REASON)) {
      assert.match(reason, CONDITION_REASON_PATTERN);
      assert.match(reason, /^[A-Z][a-zA-Z]+$/, `${reason} is CamelCase`);
    }
  });

  it('has distinct reasons', () => {
    const values = Object.values(REASON);
    assert.equal(new Set(values).size, values.length);
  });
});
