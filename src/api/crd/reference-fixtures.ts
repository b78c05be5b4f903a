// The reference system's Agent schema as its users have it installed
// (docs/design/reference-behaviour.md#custom-resources): its spec and
// status fields only. For the tests of the installed-CRD check (unit and e2e).

/** The openAPIV3Schema of the reference's Agent CRD. */
export function referenceAgentSchema(): Record<string, unknown> {
  const str = { type: 'string' };
  return {
    type: 'object',
    required: ['spec'],
    properties: {
      apiVersion: str,
      kind: str,
      metadata: { type: 'object' },
      spec: {
        type: 'object',
        required: ['stationRef'],
        properties: {
          stationRef: str,
          taskId: str,
          targetRepo: str,
          branch: str,
          parameters: { type: 'object', additionalProperties: str },
        },
      },
      status: {
        type: 'object',
        properties: {
          phase: { type: 'string', enum: ['Pending', 'Running', 'Succeeded', 'Failed'] },
          jobName: str,
          startedAt: { type: 'string', format: 'date-time' },
          completedAt: { type: 'string', format: 'date-time' },
          exitCode: { type: 'integer' },
          output: str,
          failureReason: str,
          prUrl: str,
        },
      },
    },
  };
}
