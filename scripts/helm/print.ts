// Entry for scripts/gen-helm.mjs: prints the generated chart as one JSON object {path: content} on stdout.
import { readSources, renderChart } from './chart.ts';
import { ROOT } from './kustomize.ts';

const files: Record<string, string> = {};
for (const f of renderChart(readSources(ROOT))) files[f.path] = f.content;
process.stdout.write(`${JSON.stringify(files)}\n`);
