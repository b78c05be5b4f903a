// One turn of a server-mode run (server.ts): one CLI invocation answering one request, stopped by its timeout, its
// client leaving, or the shutdown.

import type { ChildProcess } from 'node:child_process';
import type { PromptDelivery, RunResult, Vendor } from '../../vendors/cli/index.ts';
import type { ChatTurn, CompletionHead } from './openai.ts';
import { type ExitInfo, signalGroup } from './supervise.ts';

/** Why a turn was stopped before it ended by itself. */
export type StopReason = 'timeout' | 'disconnected' | 'shutdown';

/** One CLI invocation answering one request: stopped by its timeout, its client leaving, or the shutdown. */
export class Turn {
  readonly id: string;
  readonly #graceMs: number;
  #child: { kill(signal: NodeJS.Signals): void } | undefined;
  #gone = false;
  #stopped: StopReason | undefined;
  /** The strongest signal asked for before the CLI was started. */
  #pending: 'SIGTERM' | 'SIGKILL' | undefined;
  #killTimer: ReturnType<typeof setTimeout> | undefined;
  #onStop: (reason: StopReason) => void = () => undefined;
  /** Settles with the reason of the first stop asked for (a turn that ends by itself never settles it). */
  readonly whenStopped: Promise<StopReason>;

  constructor(id: string, graceMs: number) {
    this.id = id;
    this.#graceMs = graceMs;
    this.whenStopped = new Promise((resolve) => {
      this.#onStop = resolve;
    });
  }

  get stopped(): StopReason | undefined {
    return this.#stopped;
  }

  /** The turn's CLI runs: a stop asked before is carried out now. */
  attach(child: ChildProcess, exited: Promise<ExitInfo>): void {
    this.#child = { kill: (signal) => signalGroup(child, signal) };
    void exited.then(() => {
      this.#gone = true;
      clearTimeout(this.#killTimer);
    });
    if (this.#pending !== undefined) this.#signal(this.#pending);
  }

  /** Stops the turn: SIGTERM to its CLI's process group, SIGKILL after the grace (or SIGKILL at once). */
  stop(reason: StopReason, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): void {
    if (this.#stopped === undefined) {
      this.#stopped = reason;
      this.#onStop(reason);
    }
    if (this.#child === undefined) {
      if (this.#pending !== 'SIGKILL') this.#pending = signal;
      return;
    }
    this.#signal(signal);
  }

  #signal(signal: 'SIGTERM' | 'SIGKILL'): void {
    const child = this.#child;
    if (child === undefined || this.#gone) return;
    child.kill(signal);
    if (signal === 'SIGTERM' && this.#killTimer === undefined) {
      this.#killTimer = setTimeout(() => {
        if (!this.#gone) child.kill('SIGKILL');
      }, this.#graceMs);
    } else if (signal === 'SIGKILL') clearTimeout(this.#killTimer);
  }

  /**
   * The turn is over: nothing is signalled any more. A CLI still running (its answer given up on, an error thrown
   * while it ran) has its process group killed first, so no slot is given back while its CLI lives on.
   */
  done(): void {
    if (!this.#gone) this.#child?.kill('SIGKILL');
    this.#gone = true;
    clearTimeout(this.#killTimer);
  }
}

/** How a turn's CLI run ended. */
export type TurnEnd =
  | { readonly kind: 'not-started' }
  | {
      readonly kind: 'exited';
      readonly code: number;
      readonly result: RunResult;
      readonly sessionId: string | undefined;
    };

/** What one turn needs: its request, its CLI invocation and the vendor that reads its lines. */
export interface TurnPlan {
  readonly turn: Turn;
  readonly chat: ChatTurn;
  readonly delivery: PromptDelivery;
  readonly vendor: Vendor;
  readonly head: CompletionHead;
}
