import type * as v from 'valibot';
import { AgentSpecSchema, AgentStatusSchema } from '../agent.ts';
import { AgentDefinitionSpecSchema } from '../agent-definition.ts';
import { AgentPolicySpecSchema } from '../agent-policy.ts';
import { type CustomKind, GROUP, RESOURCE_NAMES, VERSION } from '../group.ts';
import { StationSpecSchema } from '../station.ts';
import { type JsonSchemaProps, toOpenApi } from './openapi.ts';

/** An `additionalPrinterColumns` entry. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** The apiextensions.k8s.io/v1 CustomResourceDefinition shape this generator emits (one version). */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[] };
    scope: 'Namespaced' | 'Cluster';
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: JsonSchemaProps };
      subresources?: { status: Record<string, never> };
    }[];
  };
}

interface KindDefinition {
  readonly description: string;
  readonly scope?: 'Cluster';
  readonly spec: v.GenericSchema;
  readonly status?: v.GenericSchema;
  readonly columns: readonly PrinterColumn[];
}

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** What each CRD is made of: schemas, printer columns; from docs/design/reference-behaviour.md#custom-resources. */
const KINDS: Readonly<Record<CustomKind, KindDefinition>> = {
  Agent: {
    description: 'An Agent is one execution of an AgentDefinition recipe inside a Station.',
    spec: AgentSpecSchema,
    status: AgentStatusSchema,
    columns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Station', type: 'string', jsonPath: '.spec.stationRef' },
      { name: 'Job', type: 'string', jsonPath: '.status.jobName' },
      AGE,
      // Ours, with `-o wide` only (priority 1): the reference's default columns stay as they are.
      { name: 'Session', type: 'string', jsonPath: '.status.sessionId', priority: 1 },
      { name: 'Batch', type: 'string', jsonPath: '.status.batchId', priority: 1 },
      { name: 'Tokens', type: 'integer', jsonPath: '.status.tokenUsage.total', priority: 1 },
      { name: 'Cost', type: 'string', jsonPath: '.status.costEstimate.usd', priority: 1 },
      { name: 'URL', type: 'string', jsonPath: '.status.url', priority: 1 },
    ],
  },
  Station: {
    description: 'A Station pairs an AgentDefinition recipe with a Pod template and run limits.',
    spec: StationSpecSchema,
    columns: [
      { name: 'Recipe', type: 'string', jsonPath: '.spec.agentDefRef' },
      { name: 'Deadline', type: 'integer', jsonPath: '.spec.deadlineMinutes' },
      AGE,
    ],
  },
  AgentDefinition: {
    description: 'An AgentDefinition is a reusable recipe for a coding-agent task.',
    spec: AgentDefinitionSpecSchema,
    columns: [{ name: 'Model', type: 'string', jsonPath: '.spec.model' }, AGE],
  },
  AgentPolicy: {
    description:
      'An AgentPolicy (cluster-scoped) limits what the runs of the Stations that name it may do: images, models, vendors, execution modes, tools, resources, sandbox, env, sidecars.',
    scope: 'Cluster',
    spec: AgentPolicySpecSchema,
    columns: [
      {
        name: 'Default',
        type: 'string',
        jsonPath: '.metadata.labels.agents\\.re-cinq\\.com/default-policy',
      },
      AGE,
    ],
  },
};

/** The valibot schemas the CRD of `kind` is generated from (spec, and status when the kind has one). */
export function kindSchemas(kind: CustomKind): {
  readonly spec: v.GenericSchema;
  readonly status?: v.GenericSchema;
} {
  const def = KINDS[kind];
  return def.status === undefined ? { spec: def.spec } : { spec: def.spec, status: def.status };
}

/** Kinds in the order the CRD files are written. */
export const CRD_KINDS: readonly CustomKind[] = ['Agent', 'Station', 'AgentDefinition', 'AgentPolicy'];

/**
 * Builds the CustomResourceDefinition of `kind`: group `agents.re-cinq.com`, version `v1alpha1` (served,
 * storage), Namespaced (AgentPolicy: Cluster), the reference's names, short names and printer columns, `required: [spec]`, and the
 * status subresource only on Agent. The spec/status schemas come from the valibot schemas. Pure and
 * deterministic: the same input always yields a deep-equal object.
 */
export function buildCrd(kind: CustomKind): CustomResourceDefinition {
  const def = KINDS[kind];
  const names = RESOURCE_NAMES[kind];
  const properties: Record<string, JsonSchemaProps> = {
    apiVersion: {
      description: 'Versioned schema of this representation of an object (agents.re-cinq.com/v1alpha1).',
      type: 'string',
    },
    kind: { description: 'REST resource this object represents, in CamelCase.', type: 'string' },
    metadata: { type: 'object' },
    spec: toOpenApi(def.spec),
  };
  if (def.status !== undefined) properties.status = toOpenApi(def.status);
  const version: CustomResourceDefinition['spec']['versions'][number] = {
    name: VERSION,
    served: true,
    storage: true,
    additionalPrinterColumns: def.columns.map((c) => ({ ...c })),
    schema: {
      openAPIV3Schema: { description: def.description, properties, required: ['spec'], type: 'object' },
    },
  };
  if (def.status !== undefined) version.subresources = { status: {} };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${names.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: names.kind,
        listKind: names.listKind,
        plural: names.plural,
        singular: names.singular,
        shortNames: [...names.shortNames],
      },
      scope: def.scope ?? 'Namespaced',
      versions: [version],
    },
  };
}
