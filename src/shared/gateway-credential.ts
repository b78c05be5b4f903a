// The per-run credential a run's CLI presents to the model gateway in place of a vendor key
// (docs/design/gateway.md#run-identity). It names the run (namespace, Agent name, Agent uid) and carries an
// HMAC-SHA256 of those under a key only the controller and the gateway read, so the gateway can tell which run
// calls without a round trip; whether that run may still call (not ended, the model allowed) the gateway checks
// against the Agent itself.

import { createHmac } from 'node:crypto';
import { constantTimeEqual } from './constant-time.ts';

/** Every credential starts with this (so a leaked one is recognisable in a scan, and never mistaken for a key). */
export const GATEWAY_CREDENTIAL_PREFIX = 'acgw1';

/** Whom a credential names. */
export interface RunIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

const mac = (key: Uint8Array, payload: string) =>
  createHmac('sha256', key).update(`gateway:${payload}`).digest('base64url');

/** `acgw1.<base64url JSON of the identity>.<base64url HMAC>` for `run` under `key`. */
export function mintGatewayCredential(key: Uint8Array, run: RunIdentity): string {
  const payload = Buffer.from(
    JSON.stringify({ ns: run.namespace, name: run.name, uid: run.uid }),
    'utf8',
  ).toString('base64url');
  return `${GATEWAY_CREDENTIAL_PREFIX}.${payload}.${mac(key, payload)}`;
}

/**
 * The identity `credential` names when its HMAC under `key` is right (compared in constant time); `undefined` for
 * anything else (another format, a changed payload, another key).
 */
export function verifyGatewayCredential(key: Uint8Array, credential: string): RunIdentity | undefined {
  const parts = credential.split('.');
  if (parts.length !== 3 || parts[0] !== GATEWAY_CREDENTIAL_PREFIX) return undefined;
  const [, payload = '', presented = ''] = parts;
  if (!constantTimeEqual(mac(key, payload), presented)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { ns, name, uid } = claims as Record<string, unknown>;
  if (typeof ns !== 'string' || typeof name !== 'string' || typeof uid !== 'string') return undefined;
  if (ns === '' || name === '' || uid === '') return undefined;
  return { namespace: ns, name, uid };
}
