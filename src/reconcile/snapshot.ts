// The observed world of one Agent (issue 27 §3): the common part every execution mode reads (./snapshot/common.ts)
// plus each mode's observations (./snapshot/job.ts, ./snapshot/batch.ts, ./snapshot/server.ts). Only the shell and the
// modules that dispatch between modes (./agent/decide.ts, ./agent/fallback.ts) see the whole; a mode's decisions
// take the common part and their own observations (test/unit/architecture.test.ts checks the imports).

import type { BatchObservations } from './snapshot/batch.ts';
import type { CommonSnapshot } from './snapshot/common.ts';
import type { JobObservations } from './snapshot/job.ts';
import type { ServerObservations } from './snapshot/server.ts';

export type * from './snapshot/batch.ts';
export type * from './snapshot/common.ts';
export type * from './snapshot/job.ts';
export type * from './snapshot/server.ts';

/**
 * Everything `decide` reads about one Agent: the common part and the observations of every mode. The shell builds
 * each part in one place (src/effects/reconcile-agent.ts, `initialSnapshot`) and adds what decide asks for (`needs`)
 * and what the executor met.
 */
export type Snapshot = CommonSnapshot & JobObservations & BatchObservations & ServerObservations;
