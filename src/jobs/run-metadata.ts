// The identity every object of one run shares: its name, labels, Agent-uid annotation and owner reference
// (docs/design/reference-behaviour.md#labels-and-annotations).

import { type Agent, API_VERSION, KIND_AGENT } from '../api/index.ts';
import {
  ANNOTATION_AGENT_UID,
  COMPONENT_JOB,
  jobNameFor,
  LABEL_AGENT,
  LABEL_COMPONENT,
  LABEL_STATION,
  safeName,
} from './names.ts';

/** Labels of a run: on the Job (our addition, for the Job watch) and forced onto its pod template. */
export function runLabels(agentName: string, stationName: string): Record<string, string> {
  return {
    [LABEL_COMPONENT]: COMPONENT_JOB,
    [LABEL_AGENT]: safeName(agentName),
    [LABEL_STATION]: safeName(stationName),
  };
}

/**
 * Metadata of every object that belongs to one run (the Job and its sink NetworkPolicy): the run's name, labels and
 * Agent-uid annotation, owned by the Agent (controller, blockOwnerDeletion) so it is garbage-collected with it.
 */
export interface RunObjectMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly ownerReferences: readonly [
    {
      readonly apiVersion: string;
      readonly kind: string;
      readonly name: string;
      readonly uid: string;
      readonly controller: true;
      readonly blockOwnerDeletion: true;
    },
  ];
}

/** The metadata of a run object of `agent` in `station` (pure). */
export function runObjectMetadata(agent: Agent, stationName: string): RunObjectMetadata {
  return {
    name: jobNameFor(agent.metadata.name),
    namespace: agent.metadata.namespace,
    labels: runLabels(agent.metadata.name, stationName),
    annotations: { [ANNOTATION_AGENT_UID]: agent.metadata.uid },
    ownerReferences: [
      {
        apiVersion: API_VERSION,
        kind: KIND_AGENT,
        name: agent.metadata.name,
        uid: agent.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
}
