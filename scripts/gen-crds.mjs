// `npm run gen:crds`: regenerates deploy/crds/*.yaml from the valibot schemas in src/api/.
// `npm run gen:crds -- --check`: writes nothing; exits 1 and names each file that differs from the generated text.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateFiles } from './generated-files.mjs';

generateFiles({
  name: 'gen:crds',
  root: join(dirname(fileURLToPath(import.meta.url)), '..'),
  printer: 'src/api/crd/print.ts',
  target: 'deploy/crds',
});
