// Container probes as the kubelet runs them (startup and readiness probes of sidecars): one check per
// period after the initial delay, each bounded by the probe's timeout; the verdict follows the success and
// failure thresholds (tallyProbe in plan.ts). exec probes run through an injected function (the pod worker
// runs the command in the container's mount namespace, as its user); tcpSocket and httpGet probes go to
// the pod IP (or the probe's host) and the port, by number or by the container's port name.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { NEW_TALLY, type ProbeTally, probeHandler, resolveProbePort, tallyProbe } from './plan.ts';
import type { ContainerPort, Probe } from './pod-spec.ts';

/** The outcome of one probe check; `detail` says why it failed (the kubelet's event message). */
export interface ProbeCheck {
  readonly passed: boolean;
  readonly detail?: string;
}

/** What a probe needs to know about its container. */
export interface ProbeTarget {
  /** Default host of tcpSocket and httpGet probes. */
  readonly podIP: string;
  /** The container's ports, for named probe ports. */
  readonly ports: readonly ContainerPort[];
  /** Runs an exec probe's command in the container, killing it after `timeoutMs` or on `signal`. */
  readonly exec: (command: readonly string[], timeoutMs: number, signal: AbortSignal) => Promise<ProbeCheck>;
}

/** The kubelet's prober user agent. */
const USER_AGENT = 'kube-probe/1.36';

function fail(detail: string): ProbeCheck {
  return { passed: false, detail };
}

/** Hosts as they appear in a URL or dial message (IPv6 in brackets). */
function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function tcpCheck(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<ProbeCheck> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (check: ProbeCheck): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(check);
    };
    const onAbort = (): void => done(fail('probe cancelled'));
    const timer = setTimeout(() => done(fail(`dial tcp ${hostPort(host, port)}: i/o timeout`)), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => done({ passed: true }));
    socket.once('error', (error) => done(fail(`dial tcp ${hostPort(host, port)}: ${error.message}`)));
  });
}

function httpCheck(
  probe: NonNullable<Probe['httpGet']>,
  host: string,
  port: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ProbeCheck> {
  const https = probe.scheme === 'HTTPS';
  const path = probe.path.startsWith('/') ? probe.path : `/${probe.path}`;
  const url = `${https ? 'https' : 'http'}://${hostPort(host, port)}${path}`;
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: '*/*' };
  for (const h of probe.httpHeaders) headers[h.name.toLowerCase()] = h.value;
  return new Promise((resolve) => {
    let settled = false;
    const done = (check: ProbeCheck): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      req.destroy();
      resolve(check);
    };
    const onAbort = (): void => done(fail('probe cancelled'));
    // HTTPS probes do not verify the certificate, as the kubelet's.
    const req = (https ? httpsRequest : httpRequest)(url, {
      method: 'GET',
      headers,
      rejectUnauthorized: false,
    });
    const timer = setTimeout(
      () =>
        done(
          fail(`Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`),
        ),
      timeoutMs,
    );
    signal.addEventListener('abort', onAbort, { once: true });
    req.once('response', (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      done(
        status >= 200 && status < 400
          ? { passed: true }
          : fail(`HTTP probe failed with statuscode: ${status}`),
      );
    });
    req.once('error', (error) => done(fail(`Get "${url}": ${error.message}`)));
    req.end();
  });
}

/** Runs one check of `probe` against its container. */
export async function checkProbe(
  probe: Probe,
  target: ProbeTarget,
  signal: AbortSignal,
): Promise<ProbeCheck> {
  const timeoutMs = probe.timeoutSeconds * 1000;
  switch (probeHandler(probe)) {
    case 'exec':
      return target.exec(probe.exec?.command ?? [], timeoutMs, signal);
    case 'tcpSocket': {
      const tcp = probe.tcpSocket!;
      const port = resolveProbePort(tcp.port, target.ports);
      if (!port.ok) return fail(port.error);
      return tcpCheck(tcp.host || target.podIP, port.value, timeoutMs, signal);
    }
    case 'httpGet': {
      const http = probe.httpGet!;
      const port = resolveProbePort(http.port, target.ports);
      if (!port.ok) return fail(port.error);
      return httpCheck(http, http.host || target.podIP, port.value, timeoutMs, signal);
    }
    default:
      return fail('the probe has no exec, tcpSocket or httpGet handler');
  }
}

/** Options of a prober. */
export interface ProberOptions {
  /** Stop probing once the verdict is success or failure (startup probes). */
  readonly untilDecided: boolean;
  /** Called when the verdict changes, with the last check (its detail says why a failure failed). */
  readonly onVerdict: (verdict: 'success' | 'failure', last: ProbeCheck) => void;
  /** Milliseconds per probe second (tests shorten it; default 1000). */
  readonly secondMs?: number;
}

/**
 * Probes a container until stopped: the first check after `initialDelaySeconds`, then one every
 * `periodSeconds` (a slow check delays the next one, checks never overlap).
 */
export class Prober {
  readonly #probe: Probe;
  readonly #check: (signal: AbortSignal) => Promise<ProbeCheck>;
  readonly #opts: ProberOptions;
  readonly #stop = new AbortController();
  #tally: ProbeTally = NEW_TALLY;
  /** Settles when the probing loop has ended. */
  readonly done: Promise<void>;

  constructor(probe: Probe, check: (signal: AbortSignal) => Promise<ProbeCheck>, opts: ProberOptions) {
    this.#probe = probe;
    this.#check = check;
    this.#opts = opts;
    this.done = this.#loop();
  }

  /** The current verdict. */
  get verdict(): ProbeTally['result'] {
    return this.#tally.result;
  }

  /** Stops probing (an in-flight check is cancelled). */
  stop(): void {
    this.#stop.abort();
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#stop.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async #loop(): Promise<void> {
    const second = this.#opts.secondMs ?? 1000;
    const signal = this.#stop.signal;
    await this.#sleep(this.#probe.initialDelaySeconds * second);
    while (!signal.aborted) {
      const began = Date.now();
      let check: ProbeCheck;
      try {
        check = await this.#check(signal);
      } catch (error) {
        check = fail(error instanceof Error ? error.message : String(error));
      }
      if (signal.aborted) return;
      const before = this.#tally.result;
      this.#tally = tallyProbe(this.#tally, check.passed, this.#probe);
      const verdict = this.#tally.result;
      if (verdict !== before && verdict !== 'unknown') {
        this.#opts.onVerdict(verdict, check);
        if (this.#opts.untilDecided) return;
      }
      await this.#sleep(Math.max(0, this.#probe.periodSeconds * second - (Date.now() - began)));
    }
  }
}
