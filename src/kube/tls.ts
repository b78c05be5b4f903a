import { Buffer } from 'node:buffer';
import type * as https from 'node:https';

/** TLS material for the connection to the API server. Strings are PEM. */
export interface TlsMaterial {
  readonly ca?: string | Uint8Array | undefined;
  readonly cert?: string | Uint8Array | undefined;
  readonly key?: string | Uint8Array | undefined;
  /** false only when the kubeconfig says insecure-skip-tls-verify. */
  readonly rejectUnauthorized?: boolean | undefined;
  /** TLS server name override (kubeconfig `tls-server-name`). */
  readonly servername?: string | undefined;
}

const sameBytes = (a: string | Uint8Array | undefined, b: string | Uint8Array | undefined): boolean => {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const ta = typeof a === 'string' ? new TextEncoder().encode(a) : a;
  const tb = typeof b === 'string' ? new TextEncoder().encode(b) : b;
  if (ta.length !== tb.length) return false;
  for (let i = 0; i < ta.length; i++) if (ta[i] !== tb[i]) return false;
  return true;
};

/** True when two TLS materials would produce the same connections. */
export function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return (
    sameBytes(a.ca, b.ca) &&
    sameBytes(a.cert, b.cert) &&
    sameBytes(a.key, b.key) &&
    a.rejectUnauthorized === b.rejectUnauthorized &&
    a.servername === b.servername
  );
}

function toPem(v: string | Uint8Array): string | Buffer {
  return typeof v === 'string' ? v : Buffer.from(v);
}

/** node:https options for connections to the API server with this TLS material. */
export function tlsOptions(
  tls: TlsMaterial,
): Pick<https.AgentOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'> {
  return {
    ...(tls.ca !== undefined ? { ca: toPem(tls.ca) } : {}),
    ...(tls.cert !== undefined ? { cert: toPem(tls.cert) } : {}),
    ...(tls.key !== undefined ? { key: toPem(tls.key) } : {}),
    ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
    ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
  };
}
