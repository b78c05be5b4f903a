// The model-API fake of `npm run bench -- --scenario gateway`, in a process of its own so that its work does not
// share the benchmark client's event loop: the Anthropic Messages fake (test/support/model-api) answering every call
// with the same short turn (a whole message, or a stream of 9 events: message_start, ping, one text block in three
// deltas, message_delta, message_stop). Prints one JSON line `{"baseUrl": …, "apiKey": …}` on stdout, then serves
// until stdin closes (the benchmark ended or went away).
import { startAnthropicModel } from '../test/support/model-api/index.ts';
import { BENCH_ANSWER, BENCH_USAGE } from './gateway-figures.ts';

const fake = await startAnthropicModel({ turns: [{ text: BENCH_ANSWER, usage: BENCH_USAGE }] });
process.stdout.write(`${JSON.stringify({ baseUrl: fake.baseUrl, apiKey: fake.apiKey })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void fake.close().then(() => process.exit(0));
});
