// The executor's handler table: one handler per action kind, by family (the executor contract:
// src/reconcile/executor-contract.ts). Typed over `Action['kind']`: a new kind does not compile until it is here.
import * as agent from './agent.ts';
import * as batch from './batch.ts';
import type { HandlerTable } from './deps.ts';
import * as memory from './memory.ts';
import * as reports from './reports.ts';
import * as run from './run-objects.ts';
import * as server from './server.ts';
import * as session from './session.ts';
import * as spend from './spend.ts';

export const HANDLERS: HandlerTable = {
  createServiceAccount: run.createServiceAccount,
  createRunBinding: run.createRunBindingHandler,
  deleteRunBindings: run.deleteRunBindingsHandler,
  createNetworkPolicy: run.createNetworkPolicy,
  createRunInput: run.createRunInputHandler,
  deleteRunInput: run.deleteRunInputHandler,
  createJob: run.createJob,
  deleteJob: run.deleteJob,
  patchStatus: agent.patchStatus,
  deleteAgent: agent.deleteAgent,
  addFinalizer: agent.finalizer,
  removeFinalizer: agent.finalizer,
  recordEvent: reports.recordEvent,
  notifySinks: reports.notifySinks,
  saveMemory: memory.saveMemory,
  recordSpend: spend.recordSpend,
  observeMetric: reports.observeMetric,
  submitBatch: batch.submitBatch,
  cleanupBatch: batch.cleanupBatch,
  createPromptToken: server.createPromptToken,
  createGatewayCredential: server.createGatewayCredential,
  createServerApiKey: server.createServerApiKey,
  applyServerObject: server.applyServerObject,
  deleteServerObject: server.deleteServerObject,
  deleteSession: session.deleteSession,
};
