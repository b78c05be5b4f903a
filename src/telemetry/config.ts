// The tracing configuration (issue 10 §5) from the standard OpenTelemetry env vars, validated at the boundary.
// No SDK here: reading the configuration costs nothing when tracing is off.

import { err, ok, type Result } from '../shared/result.ts';

/** Where and as what spans are exported. */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  readonly tracesUrl: string;
  readonly serviceName: string;
}

/** The traces URL that `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` names. */
export function tracingConfigFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  defaultServiceName: string,
): Result<TracingConfig | undefined, string> {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() ?? '';
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() ?? '';
  if (traces === '' && base === '') return ok(undefined);
  const name = traces !== '' ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = traces !== '' ? traces : `${base.replace(/\/+$/, '')}/v1/traces`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return err(`${name} is not a URL: ${JSON.stringify(traces !== '' ? traces : base)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return err(`${name} must be an http or https URL (OTLP/HTTP), got ${url.protocol}`);
  }
  // The URL is logged and handed to run pods: credentials belong in OTEL_EXPORTER_OTLP_HEADERS, never in it.
  if (url.username !== '' || url.password !== '')
    return err(`${name} must not hold credentials (user:password@)`);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || defaultServiceName;
  return ok({ tracesUrl: url.toString(), serviceName });
}

/**
 * The traces URL run pods export to: `RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` when set (a collector the pods reach
 * at another address than the controller does), else the controller's own.
 */
export function runTracesUrlFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  controller: TracingConfig,
): Result<string, string> {
  const raw = env.RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() ?? '';
  if (raw === '') return ok(controller.tracesUrl);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return err(`RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return err(`RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http or https URL, got ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    return err('RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must not hold credentials (user:password@)');
  }
  return ok(url.toString());
}
