// `npm run gen:api-docs`: regenerates docs/reference/api.md from the valibot schemas in src/api/ (the same schemas
// deploy/crds/ is generated from: descriptions, types, defaults, bounds, printer columns, short names).
// `npm run gen:api-docs -- --check`: writes nothing; exits 1 and names each file that differs from the generated text.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateFiles } from './generated-files.mjs';

generateFiles({
  name: 'gen:api-docs',
  root: join(dirname(fileURLToPath(import.meta.url)), '..'),
  printer: 'src/api/crd/print-api-docs.ts',
  target: 'docs/reference',
});
