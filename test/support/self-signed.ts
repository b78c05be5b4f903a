// A throwaway TLS identity for tests that serve HTTPS: a self-signed P-256 certificate for 127.0.0.1 (CN and
// subjectAltName) or for the names given, made with the openssl command line, valid one day.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { KubeClient } from './kube-client.ts';

/** Whether the openssl command line is there (tests that need a certificate skip without it). */
export const HAVE_OPENSSL = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

/**
 * Makes a key and a self-signed certificate in `dir` (PEM, also returned with their paths) for `subjectAltNames` (openssl's form, `IP:…` or
 * `DNS:…`; the first one's value is also the CN); throws when openssl fails.
 */
export function selfSignedCert(
  dir: string,
  subjectAltNames: readonly string[] = ['IP:127.0.0.1'],
): { readonly cert: string; readonly key: string; readonly certFile: string; readonly keyFile: string } {
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${(subjectAltNames[0] ?? '').replace(/^[A-Z]+:/, '')}`,
      '-addext',
      `subjectAltName=${subjectAltNames.join(',')}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl req failed (${made.status}): ${made.stderr}`);
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}

/**
 * An HTTPS server on 127.0.0.1 (a fresh certificate made in `dir`) answering with `handler`, and a KubeClient that
 * trusts it; `close` drops both (and every open connection).
 */
export async function kubeClientOnTls(
  dir: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ readonly server: Server; readonly client: KubeClient; readonly close: () => void }> {
  const { cert, key } = selfSignedCert(dir);
  const server = createServer({ cert, key }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new KubeClient({
    server: new URL(`https://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ca: cert,
    insecure: false,
    token: 't0k',
  });
  const close = (): void => {
    client.close();
    server.closeAllConnections();
    server.close();
  };
  return { server, client, close };
}
