import type { ConversationConfig } from './config.ts';
import { isAllowedSourceUrl, joinUrl } from './skills.ts';
import type { Tool } from './steps.ts';

/** The env var under which a restore step sees the resolved header line (reference name). */
export const CONVERSATION_AUTH_CHILD_ENV = 'LORE_CONVERSATION_AUTH';

const UNSAFE_CHARS = /[\s\u0000-\u001f\u007f]/;

/**
 * The restore script. `$1` = state dir under HOME, `$2` = archive URL. The header line travels on curl's stdin
 * (`-H @-`), never in argv (the reference put it in argv, lesson #152); best effort.
 */
export const RESTORE_SCRIPT = [
  'mkdir -p "$HOME/$1" && {',
  `if [ -n "$${CONVERSATION_AUTH_CHILD_ENV}" ];`,
  `then printf '%s\\n' "$${CONVERSATION_AUTH_CHILD_ENV}" | curl -fsSL -H @- -- "$2";`,
  'else curl -fsSL -- "$2"; fi;',
  '} | tar -xz --no-same-owner -C "$HOME"',
].join(' ');

/** The planned restore, or why there is none (undefined reason = simply not configured). */
export type ConversationPlan =
  | { readonly kind: 'restore'; readonly tool: Tool }
  | { readonly kind: 'inactive'; readonly warning?: string };

/**
 * The `conversation` tool (docs/design/reference-behaviour.md#conversation-continuity): active only when source, id
 * and the vendor's state dir are all set.
 * Downloads `<source>/<id>` and unpacks it into HOME. The credential is the env var NAMED by
 * `AGENT_CONVERSATION_AUTH`; the executor resolves it in-process and hands it to the step as
 * LORE_CONVERSATION_AUTH (shell-safe even when the secret's name has dashes, lesson v0.10.1–3).
 */
export function planConversation(
  conversation: ConversationConfig,
  stateDir: string | undefined,
  home: string,
): ConversationPlan {
  if (conversation.source === '' || conversation.id === '' || stateDir === undefined)
    return { kind: 'inactive' };
  if (!isAllowedSourceUrl(conversation.source)) {
    return {
      kind: 'inactive',
      warning: `conversation source ${JSON.stringify(conversation.source)} is not an http(s) or file URL`,
    };
  }
  if (UNSAFE_CHARS.test(conversation.id) || conversation.id.startsWith('-')) {
    return { kind: 'inactive', warning: `conversation id ${JSON.stringify(conversation.id)} is not usable` };
  }
  const envFrom =
    conversation.authEnv === '' ? undefined : { [CONVERSATION_AUTH_CHILD_ENV]: conversation.authEnv };
  return {
    kind: 'restore',
    tool: {
      name: 'conversation',
      requires: ['sh', 'curl', 'tar'],
      steps: [
        {
          kind: 'exec',
          argv: ['sh', '-c', RESTORE_SCRIPT, 'sh', stateDir, joinUrl(conversation.source, conversation.id)],
          env: { HOME: home },
          ...(envFrom ? { envFrom } : {}),
          bestEffort: true,
        },
      ],
    },
  };
}
