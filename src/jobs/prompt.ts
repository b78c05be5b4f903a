// Prompt templating (docs/design/reference-behaviour.md#prompt-templating): one pass of `{name}` substitution, no
// escaping, no logic. A run's prompt and system prompt are rendered here, once, for every execution mode.
import type { Agent, AgentDefinition } from '../api/index.ts';

const TOKEN = /\{([A-Za-z0-9_.-]+)\}/g;

/**
 * Renders `template` with `parameters`: each `{name}` token (name chars `[A-Za-z0-9_.-]`, at least one) whose name is
 * an own key of `parameters` becomes its value; unknown tokens, `{}`, `{a b}` and unclosed braces stay verbatim.
 * Substituted values are never re-scanned.
 */
export function renderPrompt(
  template: string,
  parameters: Readonly<Record<string, string>> | undefined,
): string {
  if (template === '' || parameters === undefined) return template;
  return template.replace(TOKEN, (token, name: string) => {
    if (!Object.hasOwn(parameters, name)) return token;
    const value = parameters[name];
    return typeof value === 'string' ? value : token;
  });
}

/** The rendered prompt of a run: its definition's template filled with the Agent's parameters. */
export function runPromptText(agent: Agent, definition: AgentDefinition): string {
  return renderPrompt(definition.spec.prompt, agent.spec.parameters);
}

/** The rendered system prompt of a run (issue 10 §1), or undefined when the definition has none (or a blank one). */
export function runSystemPrompt(agent: Agent, definition: AgentDefinition): string | undefined {
  const template = definition.spec.systemPrompt;
  if (template === undefined || template.trim() === '') return undefined;
  return renderPrompt(template, agent.spec.parameters);
}
