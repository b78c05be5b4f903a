export {
  type ControllerMetrics,
  createControllerMetrics,
  PHASES,
} from './registry.ts';
