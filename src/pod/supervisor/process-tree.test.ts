import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { descendantGroups, parseProcStat } from './process-tree.ts';

describe('process tree', () => {
  it('reads pid, ppid and pgrp from /proc/<pid>/stat, a command name with spaces and parentheses included', () => {
    assert.deepEqual(parseProcStat('4242 (tail (x) y) S 17 4242 17 0 -1 4194560'), {
      pid: 4242,
      ppid: 17,
      pgrp: 4242,
    });
    assert.equal(parseProcStat('garbage'), undefined);
  });

  it("finds the groups the root's descendants lead, not the root's own nor other processes'", () => {
    const processes = [
      { pid: 10, ppid: 1, pgrp: 10 }, // the CLI, leading its group
      { pid: 11, ppid: 10, pgrp: 10 }, // a child in the CLI's group
      { pid: 20, ppid: 10, pgrp: 20 }, // a detached tool
      { pid: 21, ppid: 20, pgrp: 20 },
      { pid: 30, ppid: 21, pgrp: 30 }, // a grandchild detached again
      { pid: 40, ppid: 1, pgrp: 40 }, // not ours
    ];
    assert.deepEqual(descendantGroups(10, processes).sort(), [20, 30]);
    assert.deepEqual(descendantGroups(40, processes), []);
  });
});
