export { buildCrd, CRD_KINDS, type CustomResourceDefinition, type PrinterColumn } from './build-crd.ts';
export {
  CRD_FILE_HEADER,
  CRD_FILE_PATHS,
  type GeneratedFile,
  renderCrdFile,
  renderCrdFiles,
} from './files.ts';
export { CrdSchemaError, type JsonSchemaProps, toOpenApi } from './openapi.ts';
export { crdDrift, missingFields } from './schema-drift.ts';
