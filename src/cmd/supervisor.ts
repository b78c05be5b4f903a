import { type Command, parseFlags, UsageError } from '../cli/command.ts';
import { runRealtimeSupervisor, runSupervisor, waitForFlush } from '../pod/supervisor/index.ts';
import { runServerSupervisor } from '../pod/supervisor/server.ts';

/** How long the supervisor waits for its own stdout/stderr to drain before the hard exit. */
const FLUSH_BEFORE_EXIT_MS = 2000;

export const supervisorCommand: Command = {
  name: 'supervisor',
  summary: 'run a vendor CLI inside a run pod and stream its events (in-pod)',
  usage: [
    'Usage: agent-controller supervisor -- <command> [args...]',
    '',
    'Runs the agent CLI as a child process, forwards signals, and streams its output',
    'to stdout and the configured sinks. Configuration comes from the run environment:',
    '  AGENT_SINKS, AGENT_NOTIFY_URL, AGENT_SINK_RETRY_ATTEMPTS/_BASE_MS/_MAX_MS, AGENT_SINK_FLUSH_MS,',
    '  AGENT_SELECT, AGENT_WATCH, WORKSPACE_DIR, AGENT_MODEL, AGENT_EXIT_GRACE_MS,',
    '  AGENT_DEADLINE_MS, AGENT_DEADLINE_AT, AGENT_CONVERSATION_SOURCE/_PIN/_AUTH, HOME,',
    '  AGENT_NAME, STATION_NAME, TASK_ID, POD_NAME, POD_NAMESPACE.',
    '',
    'With AGENT_PROMPT_FILE the command lacks its prompt: it is read from that file and given to the CLI as its',
    'last argument, or on its stdin when longer than one argument can be (Claude, Codex, Gemini, exec).',
    '',
    "Exit code: the agent's own; 124 at the run deadline; 1 when the agent cannot be started.",
    '',
    'With AGENT_EXECUTION=realtime it runs a session instead: prompts are served on AGENT_PROMPT_PORT (8090) at',
    'AGENT_POD_IP to holders of AGENT_PROMPT_TOKEN, one CLI turn each (AGENT_RUN_RECIPE, AGENT_RESUME_SESSION),',
    'until POST /close, a failed turn, SIGTERM or the deadline. GET /session/state gives the session state between',
    'turns (gzip); with AGENT_SESSION_RESTORE=true no opening prompt is sent and prompts wait for PUT /session/state.',
    '',
    'With AGENT_EXECUTION=server it serves an OpenAI-compatible API instead (the command after -- is optional and',
    'unused): GET /healthz, /readyz and /metrics, and, with Authorization: Bearer <the key in the file',
    'AGENT_SERVER_API_KEY_FILE names, re-read at most once a second; at least 16 characters>), GET /v1/models and POST /v1/chat/completions (stream or not; session_id resumes a CLI session),',
    'one CLI turn per request (AGENT_RUN_RECIPE, AGENT_SYSTEM_PROMPT_FILE). Settings: AGENT_SERVER_PORT (8080) at',
    'AGENT_POD_IP, AGENT_SERVER_CONCURRENCY (4 turns at once; more get 429), AGENT_SERVER_REQUEST_TIMEOUT_SECONDS',
    '(300; then 504), AGENT_SERVER_MAX_BODY_BYTES (1048576; more get 413). It runs until SIGTERM or SIGINT, lets the',
    'turns in flight finish within AGENT_EXIT_GRACE_MS, and exits 0; 1 when it cannot start.',
    '',
    'Examples:',
    '  agent-controller supervisor -- claude --print --verbose --output-format stream-json',
    '  AGENT_EXECUTION=server agent-controller supervisor          # the OpenAI-compatible API of a server run',
  ].join('\n'),
  /**
   * Runs the supervisor and then exits the process itself (a hard exit, after flushing stdout and stderr for at
   * most 2 s), so a leftover grandchild holding the agent's pipes cannot keep the pod alive. Returns only for
   * `--help` and usage errors.
   */
  async run(io) {
    const dash = io.argv.indexOf('--');
    const own = dash === -1 ? io.argv : io.argv.slice(0, dash);
    const { help } = parseFlags(own, {});
    if (help) {
      io.stdout(`${supervisorCommand.usage}\n`);
      return 0;
    }
    const child = dash === -1 ? [] : io.argv.slice(dash + 1);
    const execution = io.env.AGENT_EXECUTION;
    // A server builds every turn's command from its recipe: it needs none after --.
    if (child.length === 0 && execution !== 'server')
      throw new UsageError('missing the command to supervise after --');
    let code: number;
    try {
      const supervise =
        execution === 'server'
          ? runServerSupervisor
          : execution === 'realtime'
            ? runRealtimeSupervisor
            : runSupervisor;
      code = await supervise({
        argv: child,
        env: io.env,
        stdout: process.stdout,
        stderr: process.stderr,
        now: Date.now,
        onSignal: (signal, handler) => {
          process.on(signal, handler);
          return () => void process.off(signal, handler);
        },
      });
    } catch (error) {
      // A bug, not an agent problem: still end the pod rather than hang on the agent's pipes.
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      io.stderr(`${JSON.stringify({ level: 'fatal', msg: '[supervisor] crashed', error: message })}\n`);
      code = 1;
    }
    await waitForFlush([process.stdout, process.stderr], FLUSH_BEFORE_EXIT_MS);
    process.exit(code);
  },
};
