// MCP server wiring shared by the Claude argv and the run env.

/** The env name an MCP server's `headers_secret` is exposed under: uppercased, every non-alphanumeric → `_`. */
export function mcpHeaderEnvName(secret: string): string {
  return secret.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}
