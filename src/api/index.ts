export * from './agent.ts';
export * from './agent-definition.ts';
export * from './agent-policy.ts';
export * from './core.ts';
export * from './group.ts';
export * from './meta.ts';
export * from './model.ts';
export { DNS1123_SUBDOMAIN, formatIssues, type OpenApiHints, parseWith } from './schema-kit.ts';
export * from './station.ts';
