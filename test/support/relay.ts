import * as net from 'node:net';

// A relay in front of the API server

/** A TCP relay to the API server (TLS passes through) whose connections can be cut, refused and restored. */
export interface ApiRelay {
  /** `https://127.0.0.1:<port>`: the API server as seen through the relay. */
  readonly url: string;
  /** Destroys every open connection; new ones are still accepted. */
  cut(): void;
  /** Destroys every open connection and refuses new ones until `open` (an API server that is down). */
  block(): void;
  open(): void;
  /** Keeps every open connection up but stops forwarding bytes on it (a half-open connection). */
  stall(): void;
  /** Connections refused while blocked. */
  refused(): number;
  /** Connections accepted (forwarded) so far. */
  accepted(): number;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `target` (the API server URL). */
export async function startApiRelay(target: URL): Promise<ApiRelay> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let blocked = false;
  let accepted = 0;
  let refused = 0;
  const server = net.createServer((client) => {
    if (blocked) {
      refused++;
      client.destroy();
      return;
    }
    accepted++;
    const upstream = net.connect(Number(target.port), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const destroyAll = (): void => {
    for (const p of [...pairs]) {
      p.client.destroy();
      p.upstream.destroy();
    }
    pairs.clear();
  };
  return {
    url: `https://127.0.0.1:${port}`,
    cut: destroyAll,
    block: () => {
      blocked = true;
      destroyAll();
    },
    stall: () => {
      for (const p of pairs) {
        p.client.unpipe(p.upstream);
        p.upstream.unpipe(p.client);
        p.client.pause();
        p.upstream.pause();
      }
    },
    open: () => {
      blocked = false;
    },
    refused: () => refused,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        destroyAll();
        server.close(() => resolve());
      }),
  };
}
