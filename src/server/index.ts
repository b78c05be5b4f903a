export { createApp, type ReadinessCheck, type ServerDeps } from './app.ts';
export { type RunningServer, type ServeOptions, serveApp, type TlsFiles } from './serve.ts';
