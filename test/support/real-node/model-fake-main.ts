// The Anthropic Messages fake (../model-api) for runs on the real node, started by ./model-fake.ts inside the node's
// network namespace (`nsenter --net=/run/netns/<netns>`): pods there cannot reach the host's loopback, but they
// reach the bridge's address (their gateway), where this fake listens. Nothing outside the test bed's namespaces
// can reach it (the node namespace has no route off the machine; docs/design/real-node.md).
//
//   FAKE_SPEC='{"address":"10.214.o.1","apiKey":"…","turns":[…]}' node --import tsx model-fake-main.ts
//
// It listens on every address of the node namespace: the bridge (and its address) is made by the CNI plugin with
// the first pod, which may come after the fake starts. Prints `{"baseUrl":"http://ADDRESS:PORT"}` once it listens;
// when its stdin ends, prints `{"requests":[…]}` (the fake's record) and exits.
import * as v from 'valibot';
import { startAnthropicModel, type Turn } from '../model-api/index.ts';

const Spec = v.object({ address: v.string(), apiKey: v.string(), turns: v.array(v.looseObject({})) });
const spec = v.parse(Spec, JSON.parse(process.env.FAKE_SPEC ?? 'null'));
const fake = await startAnthropicModel({
  host: '0.0.0.0',
  apiKey: spec.apiKey,
  turns: spec.turns as unknown as Turn[],
});
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl.replace('0.0.0.0', spec.address) })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ requests: fake.requests })}\n`, () => {
    void fake.close().then(() => process.exit(0));
  });
});
