import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { portForwardOn } from '../port-forward.ts';
import { SpdySession, type SpdyStream } from './session.ts';

/** A loopback TCP pair: [client socket, server socket]. */
async function socketPair(): Promise<[Socket, Socket, Server]> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect(address.port, '127.0.0.1');
  await once(client, 'connect');
  const [peer] = await accepted;
  return [client, peer, server];
}

async function readAll(stream: SpdyStream | NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

describe('SPDY session', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  it('opens streams both ways with headers, carries data in both directions and half-closes', async () => {
    const [a, b, server] = await socketPair();
    servers.push(server);
    const seen: { headers: ReadonlyMap<string, string>; body: Promise<string> }[] = [];
    new SpdySession(b, {
      role: 'server',
      onStream: (stream, headers) => {
        stream.reply();
        seen.push({ headers, body: readAll(stream) });
        stream.end(`pong ${headers.get('n')}`);
      },
    });
    const client = new SpdySession(a, { role: 'client' });
    const streams = [1, 2, 3].map((n) => client.open({ N: String(n), 'content-type': 'text/plain' }));
    for (const [i, s] of streams.entries()) s.end('x'.repeat(100_000 * i));
    const answers = await Promise.all(streams.map((s) => readAll(s)));
    assert.deepEqual(answers, ['pong 1', 'pong 2', 'pong 3']);
    assert.deepEqual(
      seen.map((s) => s.headers.get('n')),
      ['1', '2', '3'],
    );
    assert.deepEqual(
      (await Promise.all(seen.map((s) => s.body))).map((b) => b.length),
      [0, 100_000, 200_000],
    );
    assert.deepEqual(
      streams.map((s) => s.id),
      [1, 3, 5],
      'client streams have odd ids',
    );
    client.close();
  });

  it('answers the peer’s pings, and a reset reaches the other side as an error', async () => {
    const [a, b, server] = await socketPair();
    servers.push(server);
    const resetSeen = new Promise<Error>((resolve) => {
      new SpdySession(b, {
        role: 'server',
        onStream: (stream) => {
          stream.reply();
          stream.on('error', resolve);
        },
      });
    });
    const client = new SpdySession(a, { role: 'client' });
    const stream = client.open({ n: '1' });
    stream.write('partial');
    stream.reset();
    assert.match((await resetSeen).message, /reset by the peer \(status 5\)/);
    client.close();
  });

  it('ends every open stream with an error when the connection closes', async () => {
    const [a, b, server] = await socketPair();
    servers.push(server);
    new SpdySession(b, {
      role: 'server',
      onStream: (s) => {
        s.on('error', () => {});
        s.reply();
      },
    });
    const client = new SpdySession(a, { role: 'client' });
    const stream = client.open({});
    const failed = once(stream, 'error');
    const closed = new Promise<Error | undefined>((resolve) => client.onClose(resolve));
    b.end();
    const [error] = (await failed) as [Error];
    assert.match(error.message, /connection closed/);
    assert.match((await closed)?.message ?? '', /connection closed/);
    assert.throws(() => client.open({}), /closed/);
  });

  it('a protocol error (garbage from the peer) closes the session with its cause', async () => {
    const [a, b, server] = await socketPair();
    servers.push(server);
    const client = new SpdySession(a, { role: 'client' });
    const closed = new Promise<Error | undefined>((resolve) => client.onClose(resolve));
    b.write(Uint8Array.of(0x80, 0x02, 0, 1, 0, 0, 0, 0));
    assert.match((await closed)?.message ?? '', /unsupported SPDY version/);
  });
});

describe('portforward.k8s.io client', () => {
  it('pairs an error and a data stream per connection; a kubelet error fails the data stream', async () => {
    const [a, b, server] = await socketPair();
    const pairs = new Map<string, Map<string, SpdyStream>>();
    new SpdySession(b, {
      role: 'server',
      onStream: (stream, headers) => {
        stream.reply();
        stream.on('error', () => {});
        const id = headers.get('requestid') ?? '';
        const pair = pairs.get(id) ?? new Map<string, SpdyStream>();
        pair.set(headers.get('streamtype') ?? '', stream);
        pairs.set(id, pair);
        const error = pair.get('error');
        const data = pair.get('data');
        if (!error || !data) return;
        error.resume();
        if (headers.get('port') === '9') {
          error.end('error forwarding port 9 to pod p: connection refused');
          return;
        }
        data.on('data', (chunk: Buffer) => data.write(`echo:${String(chunk)}`));
        data.on('end', () => {
          data.end();
          error.end();
        });
      },
    });
    const pf = portForwardOn(new SpdySession(a, { role: 'client' }));
    const ok = pf.connect(8443);
    ok.end('hello');
    assert.equal(await readAll(ok), 'echo:hello');
    const refused = pf.connect(9);
    const [error] = (await once(refused, 'error')) as [Error];
    assert.match(error.message, /error forwarding port 9 to pod p: connection refused/);
    assert.deepEqual([...pairs.keys()], ['0', '1'], 'request ids count up per connection');

    // listen(): a local TCP port whose connections are forwarded.
    const local = await pf.listen(8443);
    const socket = connect(local.port, '127.0.0.1');
    socket.end('via listener');
    assert.equal(await readAll(socket), 'echo:via listener');
    local.close();
    pf.close();
    await assert.rejects(
      pf.listen(8443),
      /port-forward session is closed/,
      'no listener on a closed session',
    );
    server.close();
  });
});
