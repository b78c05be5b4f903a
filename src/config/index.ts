export {
  ALL_NAMESPACES,
  type ControllerConfig,
  type ControllerFlags,
  DEFAULT_AGENT_IMAGE,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_NAMESPACE,
  parseControllerConfig,
} from './controller-config.ts';
