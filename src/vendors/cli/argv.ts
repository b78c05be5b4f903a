// One entry point from a resolved recipe to the vendor argv the supervisor runs.

import { err, ok, type Result } from '../../shared/result.ts';
import { claudeArgv } from './claude.ts';
import { codexArgv } from './codex.ts';
import { execArgv } from './exec.ts';
import { geminiArgv } from './gemini.ts';
import type { VendorRunInput } from './input.ts';
import { opencodeArgv } from './opencode.ts';
import { type Vendor, vendorForModel } from './route.ts';

/** The CLI a run executes: its vendor and full argv (program first, prompt last). */
export interface VendorCommand {
  readonly vendor: Vendor;
  readonly argv: string[];
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** Why a session id cannot go into an argv, or undefined when it can (empty = unset is fine). */
export function sessionIdProblem(what: string, id: string | undefined): string | undefined {
  if (id === undefined || id === '') return undefined;
  if (id.startsWith('-')) return `${what} ${JSON.stringify(id)} must not start with '-'`;
  if (CONTROL.test(id)) return `${what} must not contain control characters`;
  return undefined;
}

/**
 * Why a recipe's deny list cannot go to `vendor`'s CLI, or undefined. Codex 0.171 has no flag or config that keeps
 * a tool from the model (docs/reference/vendor-clis.md#sandbox-and-approvals): a `disallowed_tools` list routed to it
 * would be silently ignored, so the run is refused instead.
 */
export function denyListProblem(
  vendor: Vendor,
  disallowed: readonly string[] | undefined,
): string | undefined {
  const tools = (disallowed ?? []).filter((t) => t !== '');
  if (vendor !== 'codex' || tools.length === 0) return undefined;
  return `disallowed_tools (${tools.join(', ')}): the codex CLI cannot enforce a tool deny list; remove it or use a model routed to Claude Code`;
}

/**
 * The vendor command for a run: routed by {@link vendorForModel} on the resolved model, then built by that
 * vendor's argv builder. Errors (one line, for `status.failureReason`): an exec recipe without a usable
 * `tool_config.command`, a resume id / conversation pin that starts with `-` or holds control characters, or a
 * deny list the CLI cannot enforce ({@link denyListProblem}).
 */
export function vendorCommand(input: VendorRunInput): Result<VendorCommand, string> {
  const problem =
    sessionIdProblem('spec.resumeSession', input.resumeSession) ??
    sessionIdProblem('resources.conversation.pin', input.conversationPin);
  if (problem !== undefined) return err(problem);
  const vendor = vendorForModel(input.model);
  const deny = denyListProblem(vendor, input.disallowedTools);
  if (deny !== undefined) return err(deny);
  switch (vendor) {
    case 'claude':
      return ok({ vendor, argv: claudeArgv(input) });
    case 'codex':
      return ok({ vendor, argv: codexArgv(input) });
    case 'opencode':
      return ok({ vendor, argv: opencodeArgv(input) });
    case 'gemini':
      return ok({ vendor, argv: geminiArgv(input) });
    case 'exec': {
      const argv = execArgv(input.toolConfig, input.prompt);
      return argv.ok ? ok({ vendor, argv: argv.value }) : argv;
    }
  }
}
