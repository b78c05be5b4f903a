import type { InitConfig } from './config.ts';
import { planConversation } from './conversation.ts';
import { planRepo } from './repos.ts';
import { planSkills } from './skills.ts';
import type { Step, Tool } from './steps.ts';
import { type CliFacts, planVendorCli } from './vendor-cli.ts';

/** Everything the init will do, decided up front from validated config. Pure; holds no secrets. */
export interface InitPlan {
  readonly home: string;
  readonly workspace: string;
  readonly binDir: string;
  /** Active tools in execution order: supervisor, git, vendor CLI, skills, conversation. */
  readonly tools: readonly Tool[];
  /** Reasons that make the init fail before it changes anything (unsafe repo URL or ref). */
  readonly refusals: readonly string[];
  /** Things left out on purpose (repo destinations outside the workspace, unsafe skill names, ...). */
  readonly warnings: readonly string[];
}

/**
 * Plans the init (docs/design/reference-behaviour.md#init-steps): the supervisor injection always; `git` when repos
 * survive validation; the vendor CLI routed from the model (`cli`, facts supplied by the caller); `skills` always;
 * `conversation` when configured. A tool with no steps is not active.
 */
export function planInit(config: InitConfig, cli: CliFacts): InitPlan {
  const binDir = `${config.home}/bin`;
  const refusals: string[] = [];
  const warnings: string[] = [];
  const tools: Tool[] = [
    {
      name: 'supervisor',
      requires: [],
      steps: [
        { kind: 'mkdir', path: binDir },
        { kind: 'inject-supervisor', binDir },
      ],
    },
  ];

  const gitSteps: Step[] = [];
  for (const repo of config.repos) {
    const decision = planRepo(repo, config.workspace);
    if (decision.kind === 'refuse') refusals.push(decision.reason);
    else if (decision.kind === 'skip')
      warnings.push(`repo ${JSON.stringify(decision.name)} skipped: ${decision.reason}`);
    else {
      if (decision.warning !== undefined)
        warnings.push(`repo ${JSON.stringify(decision.name)}: ${decision.warning}`);
      gitSteps.push(...decision.steps);
    }
  }
  if (gitSteps.length > 0) tools.push({ name: 'git', requires: ['git'], steps: gitSteps });

  const cliTool = planVendorCli(cli, config.home, config.cliVersion);
  if (cliTool) tools.push(cliTool);

  const skills = planSkills(config.skills, config.skillsSource, config.home, config.workspace);
  warnings.push(...skills.warnings);
  tools.push(skills.tool);

  const conversation = planConversation(config.conversation, cli.stateDir, config.home);
  if (conversation.kind === 'restore') tools.push(conversation.tool);
  else if (conversation.warning !== undefined) warnings.push(conversation.warning);

  return {
    home: config.home,
    workspace: config.workspace,
    binDir,
    tools,
    refusals,
    warnings,
  };
}

/** The executables the active tools need, deduplicated, in first-seen order. */
export function requiredExecutables(tools: readonly Tool[]): string[] {
  return [...new Set(tools.flatMap((t) => t.requires))];
}
