// Entry for scripts/gen-api-docs.mjs: prints the generated API reference as one JSON object {path: content} on stdout.
import { API_DOCS_PATH, renderApiDocs } from './api-docs.ts';

process.stdout.write(`${JSON.stringify({ [API_DOCS_PATH]: renderApiDocs() })}\n`);
