// A model-API fake (../model-api: Anthropic, OpenAI or Gemini) for runs on the real node, started by ./model-fake.ts
// inside the node's network namespace (`nsenter --net=/run/netns/<netns>`): pods there cannot reach the host's
// loopback, but they reach the bridge's address (their gateway), where this fake listens. Nothing outside the test
// bed's namespaces can reach it (the node namespace has no route off the machine; docs/design/real-node.md).
//
//   FAKE_SPEC='{"vendor":"anthropic","address":"10.214.o.1","apiKey":"…","conversations":[{"turns":[…]}]}' \
//     node --import tsx model-fake-main.ts
//
// It listens on every address of the node namespace: the bridge (and its address) is made by the CNI plugin with
// the first pod, which may come after the fake starts. Prints `{"baseUrl":"http://ADDRESS:PORT…"}` once it listens
// (OpenAI's ends in /v1, as the SDKs take it); when its stdin ends, prints `{"requests":[…]}` (the fake's record) and
// exits.
import * as v from 'valibot';
import { type Conversation, startVendorModel } from '../model-api/index.ts';

const Spec = v.object({
  vendor: v.picklist(['anthropic', 'openai', 'gemini']),
  address: v.string(),
  apiKey: v.string(),
  conversations: v.array(
    v.object({ bodyIncludes: v.optional(v.string()), turns: v.array(v.looseObject({})) }),
  ),
});
const spec = v.parse(Spec, JSON.parse(process.env.FAKE_SPEC ?? 'null'));
const fake = await startVendorModel(spec.vendor, {
  host: '0.0.0.0',
  apiKey: spec.apiKey,
  // The turns are the test's own script (../model-api/script.ts checks each when it builds the conversation).
  conversations: spec.conversations as unknown as Conversation[],
});
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl.replace('0.0.0.0', spec.address) })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ requests: fake.requests })}\n`, () => {
    void fake.close().then(() => process.exit(0));
  });
});
