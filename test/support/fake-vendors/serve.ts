// Runs the three fake vendor batch APIs on loopback for local trials (`npm start` without a cluster starts them):
// every batch finishes after AUTO_FINISH_MS (default 3000) with an echo of its prompt. Prints one JSON line with the
// base URLs and keys, then serves until SIGINT/SIGTERM. Verified only against these fakes, never a real vendor.
import { startFakeAnthropic } from './anthropic.ts';
import { startFakeGemini } from './gemini.ts';
import { startFakeOpenAI } from './openai.ts';

const autoFinishMs = Number(process.env.AUTO_FINISH_MS ?? '3000');
const fakes = await Promise.all([
  startFakeAnthropic({ autoFinishMs }),
  startFakeOpenAI({ autoFinishMs }),
  startFakeGemini({ autoFinishMs }),
]);
process.stdout.write(
  `${JSON.stringify(Object.fromEntries(fakes.map((f) => [f.provider, { baseUrl: f.baseUrl, apiKey: f.apiKey }])))}\n`,
);
const stop = (): void => {
  void Promise.all(fakes.map((f) => f.close())).then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
