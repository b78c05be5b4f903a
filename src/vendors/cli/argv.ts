// One entry point from a resolved recipe to the vendor argv the supervisor runs.

import { err, ok, type Result } from '../../shared/result.ts';
import { claudeArgv } from './claude.ts';
import { codexArgv } from './codex.ts';
import { execArgv } from './exec.ts';
import { geminiArgv } from './gemini.ts';
import { permissionModeOf, type VendorRunInput } from './input.ts';
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

/** Vendors whose CLI has no way to limit the model to a list of tools (no flag, no config). */
const NO_ALLOW_LIST: ReadonlySet<Vendor> = new Set(['codex', 'opencode']);

/**
 * Why a recipe's allow list cannot go to `vendor`'s CLI, or undefined. `allowed_tools` grants only the tools it
 * names; Codex 0.171 and OpenCode 1.18 have no flag or config that limits a run to a list
 * (docs/reference/vendor-clis.md#sandbox-and-approvals, docs/reference/vendor-clis.md#tool-permissions-2), so the
 * list would be silently ignored and the run would get every tool: it is refused instead, as the reference's
 * silent ignore is not (docs/design/reference-behaviour.md#d-t-tool-lists-a-cli-cannot-enforce). In `bypass` mode an
 * allow list means nothing to any CLI (Claude Code and Gemini CLI drop it too: every tool runs without asking), so
 * it is not refused there; an empty list, or one of empty names, is no list.
 */
export function allowListProblem(
  vendor: Vendor,
  allowed: readonly string[] | undefined,
  permissionMode: string | undefined,
): string | undefined {
  const tools = (allowed ?? []).filter((t) => t !== '');
  if (!NO_ALLOW_LIST.has(vendor) || tools.length === 0 || permissionModeOf(permissionMode) === 'bypass')
    return undefined;
  return `allowed_tools (${tools.join(', ')}): the ${vendor} CLI cannot enforce a tool allow list, so the run would get every tool; remove it (or set permission_mode: bypass to allow every tool) or use a model routed to Claude Code or Gemini CLI`;
}

/**
 * The vendor command for a run: routed by {@link vendorForModel} on the resolved model, then built by that
 * vendor's argv builder. Errors (one line, for `status.failureReason`): an exec recipe without a usable
 * `tool_config.command`, a resume id / conversation pin that starts with `-` or holds control characters, or a
 * deny or allow list the CLI cannot enforce ({@link denyListProblem}, {@link allowListProblem}).
 */
export function vendorCommand(input: VendorRunInput): Result<VendorCommand, string> {
  const problem =
    sessionIdProblem('spec.resumeSession', input.resumeSession) ??
    sessionIdProblem('resources.conversation.pin', input.conversationPin);
  if (problem !== undefined) return err(problem);
  const vendor = vendorForModel(input.model);
  const tools =
    denyListProblem(vendor, input.disallowedTools) ??
    allowListProblem(vendor, input.allowedTools, input.permissionMode);
  if (tools !== undefined) return err(tools);
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
