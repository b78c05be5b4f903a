/** The model a run uses when neither the Agent nor its AgentDefinition names one. */
export const DEFAULT_MODEL = 'claude-opus-5-5';

/**
 * Resolves the model of a run: the Agent's `spec.model`, else the definition's `spec.model`, else
 * `DEFAULT_MODEL`. Empty strings count as unset. Pure.
 */
export function resolveModel(
  agent: { readonly spec: { readonly model?: string | undefined } },
  definition?: { readonly spec: { readonly model?: string | undefined } } | undefined,
): string {
  const own = agent.spec.model;
  if (own !== undefined && own !== '') return own;
  const fromDef = definition?.spec.model;
  if (fromDef !== undefined && fromDef !== '') return fromDef;
  return DEFAULT_MODEL;
}
