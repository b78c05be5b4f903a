// `npm run gen:helm`: regenerates the Helm chart charts/agent-controller from the kustomize base deploy/ (its
// kustomization, the files it lists, deploy/components/*, deploy/crds) and package.json's version; files of the
// chart directory that the generator no longer writes are removed.
// `npm run gen:helm -- --check`: writes nothing; exits 1 and names each file that differs, is missing or is extra.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateFiles } from './generated-files.mjs';

generateFiles({
  name: 'gen:helm',
  root: join(dirname(fileURLToPath(import.meta.url)), '..'),
  printer: 'scripts/helm/print.ts',
  target: 'charts/agent-controller',
  prune: true,
});
