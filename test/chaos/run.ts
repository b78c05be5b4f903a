// `npm run chaos -- [--profile long|short] [--minutes N] [--seed N] [--replicas N]`: one chaos run on the local
// testbed (see driver.ts), its report on stdout; exit 1 when any invariant was violated. The seed is printed: the
// same seed replays the same workload and fault schedule.
import { parseArgs } from 'node:util';
import { e2eCluster } from '../support/index.ts';
import { type ChaosProfile, formatReport, PROFILES, runChaos } from './driver.ts';

const { values } = parseArgs({
  options: {
    profile: { type: 'string', default: 'long' },
    minutes: { type: 'string' },
    seed: { type: 'string' },
    replicas: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(`Usage: npm run chaos -- [--profile long|short] [--minutes N] [--seed N] [--replicas 2|3]

One chaos run on the local testbed: controller replicas behind the fault proxy, a workload of Agents, faults on a
schedule the seed fixes; then the invariants, checked from the audit log. Prints the report; exit 1 when an
invariant was violated, 2 on bad arguments.
Defaults: the long profile (${PROFILES.long.minutes} minutes, ${PROFILES.long.replicas} replicas), a random seed (printed: --seed replays it).`);
  process.exit(0);
}
const base =
  values.profile === 'short' ? PROFILES.short : values.profile === 'long' ? PROFILES.long : undefined;
if (base === undefined) {
  console.error(`chaos: unknown profile ${values.profile} (long or short)`);
  process.exit(2);
}
const number = (text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`chaos: not a positive number: ${text}`);
    process.exit(2);
  }
  return n;
};
const profile: ChaosProfile = {
  ...base,
  seed: number(values.seed, Math.floor(Math.random() * 2 ** 31)),
  minutes: number(values.minutes, base.minutes),
  replicas: Math.min(3, Math.max(2, number(values.replicas, base.replicas))),
};
const cluster = e2eCluster();
if (typeof cluster === 'string') {
  console.error(`chaos: ${cluster}`);
  process.exit(2);
}
console.log(`chaos: seed ${profile.seed} (replay with --seed ${profile.seed})`);
const t0 = Date.now();
const report = await runChaos(cluster, profile, (line) => console.log(`chaos: ${line}`));
cluster.client.close();
console.log(`\n${formatReport(report)}\nwall time ${((Date.now() - t0) / 60_000).toFixed(1)} min`);
process.exit(report.violations === 0 ? 0 : 1);
