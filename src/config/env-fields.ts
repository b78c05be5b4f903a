// The valibot fields the programs' configurations share (controller, gateway): numbers, ports, namespace names,
// URLs and addresses read from flags and the environment, each failing with one line that names the variable.
import * as v from 'valibot';

/** True for an address only this host can reach. */
export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);
}

export const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const digits = (name: string) =>
  v.pipe(
    v.string(),
    v.regex(
      /^\d+$/,
      (issue) => `${name} must be a non-negative integer, got: ${JSON.stringify(issue.input)}`,
    ),
    v.transform(Number),
  );
export const port = (name: string) =>
  v.pipe(
    digits(name),
    v.minValue(0, `${name} must be a port number (0-65535)`),
    v.maxValue(65535, `${name} must be a port number (0-65535)`),
  );
export const namespaceName = (name: string) =>
  v.pipe(
    v.string(),
    v.regex(
      DNS1123_LABEL,
      (issue) => `${name} is not a valid namespace name: ${JSON.stringify(issue.input)}`,
    ),
  );

export const httpUrl = (name: string) =>
  v.pipe(
    v.string(),
    v.check((text) => {
      try {
        const u = new URL(text);
        return u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        return false;
      }
    }, `${name} must be an http(s) URL`),
  );
