declare const __VERSION__: string | undefined;

/** The product version, injected by the bundler; `0.0.0-dev` when running from source. */
export const VERSION: string = typeof __VERSION__ === 'string' ? __VERSION__ : '0.0.0-dev';
