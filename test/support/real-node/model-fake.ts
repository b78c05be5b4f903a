// A scripted model (../model-api: the Anthropic, OpenAI or Gemini fake) where run pods on the real node reach it:
// inside the node's network namespace, on the bridge's address (the pods' gateway). The host's loopback, where the other e2e files run their
// fakes, is out of the pods' reach, and no route leads from the node namespace anywhere but to the test bed's own
// addresses. The fake runs in a child process (./model-fake-main.ts) entered into that namespace with nsenter; its
// record comes back when it is finished.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import type { Turn } from '../model-api/index.ts';
import type { RealNodeInfo } from './info.ts';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), 'model-fake-main.ts');

/** What a test reads of a request the fake got (the fields of ../model-api's ModelRequest that cross a pipe). */
const RequestSchema = v.looseObject({
  method: v.string(),
  path: v.string(),
  apiKey: v.optional(v.string()),
  model: v.optional(v.string()),
  stream: v.boolean(),
  tools: v.array(v.string()),
  toolResults: v.array(v.object({ id: v.string(), content: v.string() })),
  status: v.number(),
});
export type RecordedRequest = v.InferOutput<typeof RequestSchema>;
const Ready = v.object({ baseUrl: v.string() });
const Record = v.object({ requests: v.array(RequestSchema) });

/** The bridge's address in the node namespace: the first host address of the pod range (`10.214.o.1`). */
export function bridgeAddress(podCIDR: string): string {
  const m = /^(\d+)\.(\d+)\.(\d+)\.0\/24$/.exec(podCIDR);
  if (m === null) throw new Error(`expected a /24 pod range, got ${podCIDR}`);
  return `${m[1]}.${m[2]}.${m[3]}.1`;
}

export interface NodeModelFake {
  /** The base URL for a run pod on the real node, as the vendor's variable takes it (OpenAI's ends in /v1). */
  readonly baseUrl: string;
  /** Stops the fake and returns every request it got, in order (again the same when called twice). */
  finish(): Promise<RecordedRequest[]>;
}

/** What a node fake plays: one conversation's turns, or conversations picked by text in the request's body. */
export interface NodeModelScript {
  readonly vendor: 'anthropic' | 'openai' | 'gemini';
  readonly apiKey: string;
  readonly turns?: readonly Turn[];
  readonly conversations?: readonly { readonly bodyIncludes?: string; readonly turns: readonly Turn[] }[];
}

/** Starts `script`'s fake in the real node's network namespace; pods reach it at the bridge's address. */
export function startNodeModel(node: RealNodeInfo, script: NodeModelScript): Promise<NodeModelFake> {
  const spec = {
    vendor: script.vendor,
    address: bridgeAddress(node.podCIDR),
    apiKey: script.apiKey,
    conversations: script.conversations ?? [{ turns: script.turns ?? [] }],
  };
  const child = spawn(
    'nsenter',
    [`--net=/run/netns/${node.netns}`, '--', process.execPath, '--import', 'tsx', MAIN],
    { env: { ...process.env, FAKE_SPEC: JSON.stringify(spec) }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const lines = () => out.split('\n').filter((l) => l.startsWith('{'));
  return new Promise((resolve, reject) => {
    const onData = () => {
      const first = lines()[0];
      if (first === undefined) return;
      child.stdout.off('data', onData);
      const { baseUrl } = v.parse(Ready, JSON.parse(first));
      let finished: Promise<RecordedRequest[]> | undefined;
      resolve({
        baseUrl,
        finish() {
          finished ??= (async () => {
            child.stdin.end();
            const code = await exited;
            const last = lines().at(-1);
            if (code !== 0 || last === undefined || last === first)
              throw new Error(`the node's model fake ended with ${code}: ${err}`);
            return v.parse(Record, JSON.parse(last)).requests;
          })();
          return finished;
        },
      });
    };
    child.stdout.on('data', onData);
    void exited.then((code) =>
      reject(new Error(`the node's model fake exited (${code}) before it listened: ${err}`)),
    );
    child.once('error', reject);
  });
}
