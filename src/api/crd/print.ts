// Entry for scripts/gen-crds.mjs: prints the generated CRD files as one JSON object {path: content} on stdout.
import { renderCrdFiles } from './files.ts';

const files: Record<string, string> = {};
for (const f of renderCrdFiles()) files[f.path] = f.content;
process.stdout.write(`${JSON.stringify(files)}\n`);
