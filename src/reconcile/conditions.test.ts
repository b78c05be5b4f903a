import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  conditionsSatisfied,
  findCondition,
  formatConditionTime,
  isConditionTrue,
  removeCondition,
  type StatusCondition,
  setCondition,
  setConditions,
} from './conditions.ts';

const T0 = new Date('2025-01-01T10:00:00.123Z');
const T1 = new Date('2025-01-01T11:30:00.999Z');

describe('formatConditionTime', () => {
  it('formats whole seconds in UTC like metav1.Time', () => {
    assert.equal(formatConditionTime(T0), '2025-01-01T10:00:00Z');
    assert.equal(formatConditionTime(new Date('2025-06-30T23:59:59.000Z')), '2025-06-30T23:59:59Z');
  });
});

describe('setCondition', () => {
  const ready = { type: 'Ready', status: 'False', reason: 'Queued', message: 'waiting' } as const;

  it('appends a new condition stamped with now', () => {
    const out = setCondition(undefined, { ...ready, observedGeneration: 2 }, T0);
    assert.deepEqual(out, [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Queued',
        message: 'waiting',
        lastTransitionTime: '2025-01-01T10:00:00Z',
        observedGeneration: 2,
      },
    ]);
  });

  it('keeps lastTransitionTime when the status is unchanged but updates reason and message', () => {
    const first = setCondition([], ready, T0);
    const second = setCondition(first, { ...ready, reason: 'Running', message: 'job x' }, T1);
    assert.equal(second.length, 1);
    assert.equal(second[0]?.lastTransitionTime, '2025-01-01T10:00:00Z');
    assert.equal(second[0]?.reason, 'Running');
    assert.equal(second[0]?.message, 'job x');
  });

  it('moves lastTransitionTime when the status changes', () => {
    const first = setCondition([], ready, T0);
    const second = setCondition(first, { ...ready, status: 'True', reason: 'Succeeded' }, T1);
    assert.equal(second[0]?.lastTransitionTime, '2025-01-01T11:30:00Z');
    assert.equal(second[0]?.status, 'True');
  });

  it('keeps the position of other conditions and never mutates its input', () => {
    const input: StatusCondition[] = [
      { type: 'A', status: 'True', reason: 'X', message: '', lastTransitionTime: 't' },
      { type: 'Ready', status: 'False', reason: 'Queued', message: '', lastTransitionTime: 't' },
      { type: 'B', status: 'True', reason: 'Y', message: '', lastTransitionTime: 't' },
    ];
    const copy = structuredClone(input);
    const out = setCondition(input, { ...ready, status: 'True', reason: 'Done' }, T1);
    assert.deepEqual(input, copy);
    assert.deepEqual(
      out.map((c) => c.type),
      ['A', 'Ready', 'B'],
    );
    assert.equal(out[0], input[0]);
  });

  it('drops an observedGeneration that the update does not carry', () => {
    const first = setCondition([], { ...ready, observedGeneration: 1 }, T0);
    const second = setCondition(first, ready, T1);
    assert.equal('observedGeneration' in (second[0] ?? {}), false);
  });
});

describe('setConditions, findCondition, isConditionTrue, removeCondition', () => {
  it('applies updates in order and finds them by type', () => {
    const out = setConditions(
      undefined,
      [
        { type: 'Ready', status: 'True', reason: 'Succeeded', message: '' },
        { type: 'Complete', status: 'True', reason: 'Succeeded', message: '' },
      ],
      T0,
    );
    assert.equal(findCondition(out, 'Complete')?.reason, 'Succeeded');
    assert.equal(findCondition(out, 'Failed'), undefined);
    assert.equal(isConditionTrue(out, 'Ready'), true);
    assert.equal(isConditionTrue(out, 'Failed'), false);
    assert.equal(isConditionTrue(undefined, 'Ready'), false);
    assert.deepEqual(
      removeCondition(out, 'Ready').map((c) => c.type),
      ['Complete'],
    );
    assert.deepEqual(removeCondition(undefined, 'Ready'), []);
  });
});

describe('conditionsSatisfied', () => {
  const update = {
    type: 'Ready',
    status: 'False',
    reason: 'Queued',
    message: 'm',
    observedGeneration: 1,
  } as const;
  it('is true only when every update is already present verbatim', () => {
    const list = setCondition([], update, T0);
    assert.equal(conditionsSatisfied(list, [update]), true);
    assert.equal(conditionsSatisfied(list, [{ ...update, message: 'other' }]), false);
    assert.equal(conditionsSatisfied(list, [{ ...update, observedGeneration: 2 }]), false);
    assert.equal(conditionsSatisfied(list, [{ ...update, status: 'True' }]), false);
    assert.equal(conditionsSatisfied([], [update]), false);
    assert.equal(conditionsSatisfied(undefined, []), true);
  });
});
