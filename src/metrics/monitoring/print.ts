// Entry for scripts/gen-monitoring.mjs: prints the generated monitoring files (deploy/monitoring,
// charts/monitoring) as one JSON object {path: content} on stdout.
import { renderMonitoringFiles } from './files.ts';

const files: Record<string, string> = {};
for (const f of renderMonitoringFiles()) files[f.path] = f.content;
process.stdout.write(`${JSON.stringify(files)}\n`);
