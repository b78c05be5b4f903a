export { GATEWAY_VENDORS } from '../api/gateway.ts';
export { createGatewayApp, type GatewayAppDeps, MAX_REQUEST_BYTES } from './app.ts';
export { REFUSAL_REASONS } from './refusals.ts';
export { type RunningGateway, startGateway } from './run.ts';
