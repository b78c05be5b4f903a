// A minimal MCP tool server over Streamable HTTP (JSON responses, no SSE) for tool-sidecar tests with the real
// CLIs: one tool, `lookup`, answering `found <q> at <MCP_ANSWER>`. Plain Node without dependencies, so it runs in a
// test image. Every JSON-RPC message it gets is printed on stdout as one line (`mcp <method>`), for the test to read,
// and so are listening (`mcp listening on <port>`) and SIGTERM (`mcp stopping`).
//
//   MCP_PORT    port to listen on (all addresses, as a container's tool must)
//   MCP_PATH    endpoint path (default /mcp)
//   MCP_ANSWER  text the tool answers with
import { createServer } from 'node:http';

const port = Number(process.env.MCP_PORT);
const path = process.env.MCP_PATH ?? '/mcp';
const answer = process.env.MCP_ANSWER ?? 'nowhere';

const TOOL = {
  name: 'lookup',
  description: 'Looks up where a thing is.',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
};

function reply(id, result) {
  return { jsonrpc: '2.0', id, result };
}

function handle(msg) {
  switch (msg.method) {
    case 'initialize':
      return reply(msg.id, {
        protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'lookup-server', version: '1.0.0' },
      });
    case 'tools/list':
      return reply(msg.id, { tools: [TOOL] });
    case 'tools/call': {
      const q = String(msg.params?.arguments?.q ?? '');
      return reply(msg.id, { content: [{ type: 'text', text: `found ${q} at ${answer}` }], isError: false });
    }
    case 'ping':
      return reply(msg.id, {});
    default:
      return msg.id === undefined
        ? undefined
        : { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } };
  }
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== path) {
    res.writeHead(404).end();
    return;
  }
  if (req.method !== 'POST') {
    // No server-initiated stream.
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => {
    body += c;
  });
  req.on('end', () => {
    let msgs;
    try {
      msgs = JSON.parse(body);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const batch = Array.isArray(msgs) ? msgs : [msgs];
    for (const m of batch)
      console.log(
        `mcp ${m.method ?? 'response'}${m.method === 'tools/call' ? ` ${JSON.stringify(m.params)}` : ''}`,
      );
    const out = batch.map(handle).filter((r) => r !== undefined);
    if (out.length === 0) {
      res.writeHead(202).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(Array.isArray(msgs) ? out : out[0]));
  });
});
server.listen(port, () => console.log(`mcp listening on ${port}`));
// The line a test reads to see when the tool was stopped (a native sidecar is stopped after the agent ends).
process.on('SIGTERM', () => {
  console.log('mcp stopping');
  process.exit(0);
});
