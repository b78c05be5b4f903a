// `npm run gen:monitoring`: regenerates charts/monitoring/rules.yaml and deploy/monitoring/{prometheus-rule.yaml,
// dashboard.json} from src/metrics/monitoring/ (alerts.ts, dashboard.ts). charts/monitoring/rules.test.yaml is
// written by hand.
// `npm run gen:monitoring -- --check`: writes nothing; exits 1 and names each file that differs from the generated text.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateFiles } from './generated-files.mjs';

generateFiles({
  name: 'gen:monitoring',
  root: join(dirname(fileURLToPath(import.meta.url)), '..'),
  printer: 'src/metrics/monitoring/print.ts',
  target: ['deploy/monitoring', 'charts/monitoring'],
});
