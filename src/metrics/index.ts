export {
  type ControllerMetrics,
  createControllerMetrics,
  FAILURE_KINDS,
  type FailureKind,
  PHASES,
} from './registry.ts';
