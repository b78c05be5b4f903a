export { createApp, type ReadinessCheck, type ServerDeps } from './app.ts';
export { type RunningServer, serveApp } from './serve.ts';
