import { main } from './cli.ts';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`${JSON.stringify({ level: 'fatal', msg: 'Command crashed', error: message })}\n`);
    process.exitCode = 1;
  },
);
