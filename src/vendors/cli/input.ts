// What every vendor argv builder reads: the resolved recipe of one run.

/** Permission modes of a recipe; an unknown string reads as `auto`. */
export type PermissionMode = 'auto' | 'bypass';

/** `permission_mode` as the run uses it: `bypass` only when spelled exactly so, else the secure default `auto`. */
export function permissionModeOf(mode: string | undefined): PermissionMode {
  return mode === 'bypass' ? 'bypass' : 'auto';
}

/** An MCP server of the recipe, wire shape (`resources.mcp_servers[]`). */
export interface McpServerSpec {
  readonly name: string;
  readonly transport: string;
  readonly command?: string | undefined;
  readonly args?: readonly string[] | undefined;
  readonly url?: string | undefined;
  readonly headers_secret?: string | undefined;
}

/** The inputs of a vendor argv: the resolved model, the rendered prompt and the recipe's CLI options. */
export interface VendorRunInput {
  /** The resolved model (never empty after `resolveModel`). */
  readonly model: string;
  /** The rendered prompt; always the last argv element. */
  readonly prompt: string;
  readonly permissionMode?: string | undefined;
  readonly allowedTools?: readonly string[] | undefined;
  readonly disallowedTools?: readonly string[] | undefined;
  /** Claude `--max-turns` when > 0. */
  readonly maxTurns?: number | undefined;
  readonly mcpServers?: readonly McpServerSpec[] | undefined;
  /** Agent `spec.resumeSession`: the CLI session to continue. */
  readonly resumeSession?: string | undefined;
  /** `resources.conversation.pin`: the session id to start (Claude `--session-id`, Gemini `--session-id`). */
  readonly conversationPin?: string | undefined;
  /** `tool_config` of the definition; only the exec vendor reads it. */
  readonly toolConfig?: unknown;
}

/** Non-empty entries of an optional list. */
export function present(list: readonly string[] | undefined): string[] {
  return (list ?? []).filter((s) => s !== '');
}
