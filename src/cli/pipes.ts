// Output into a closed pipe (`agent-controller completion bash | true`, `logs X | head`, `get -w | head -1`): the
// reader has gone, which is no error of the command. Node ignores SIGPIPE and reports the broken pipe as an 'error'
// event on stdout (EPIPE), which unhandled crashes the process with a stack trace. The command line exits quietly
// with 0 instead (as kubectl does: it has printed everything anyone reads); the services never install this.

/** What is needed of a stream: its 'error' event. */
export interface ErrorEmitter {
  on(event: 'error', listener: (error: unknown) => void): unknown;
}

const guarded = new WeakSet<object>();

/**
 * Makes a broken pipe on `stream` end the process quietly (`exit(0)`); any other write error becomes one line on
 * stderr and exit 1, never a stack trace. Installed once per stream.
 */
export function exitQuietlyOnClosedPipe(
  stream: ErrorEmitter,
  exit: (code: number) => void,
  stderr: (text: string) => void,
): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on('error', (error) => {
    if (isBrokenPipe(error)) {
      exit(0);
      return;
    }
    stderr(`error: cannot write the output: ${error instanceof Error ? error.message : String(error)}\n`);
    exit(1);
  });
}

/** An EPIPE (the reading end of the pipe is closed). */
export function isBrokenPipe(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'EPIPE';
}
