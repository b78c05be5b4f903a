// Prompt templating (docs/design/reference-behaviour.md#prompt-templating): one pass of `{name}` substitution, no
// escaping, no logic.

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
