// Names and numbers of a server (execution: server, issue 12): its port, the objects it is made of, the API key's
// Secret and where the pods mount it, and the annotations that tell the controller whether an object still is what
// it wrote.

import type { Agent, AgentDefinition } from '../api/index.ts';
import { safeName } from './names.ts';

/** Port of the server pod's OpenAI-compatible API (the supervisor in server mode); also the Service's port. */
export const SERVER_PORT = 8080;
/** Label value of `agents.re-cinq.com/component` on a server's Deployment, Service and HTTPRoute. */
export const COMPONENT_SERVER = 'server';
/** Key of the API-key Secret that holds the key clients present. */
export const SERVER_API_KEY_KEY = 'api-key';
/** Name of the server pod's volume of the API-key Secret (its key `api-key` only; the agent container only). */
export const SERVER_API_KEY_VOLUME = 'server-api-key';
/** Where the agent container of a server pod mounts the API-key Secret (read-only). */
export const SERVER_API_KEY_DIR = '/var/run/agent-server';
/** The file the server-mode supervisor reads the API key from (re-read while it runs: a new key needs no restart). */
export const SERVER_API_KEY_FILE = `${SERVER_API_KEY_DIR}/${SERVER_API_KEY_KEY}`;
/** The env variable naming that file (the key's value is never in the environment). */
export const SERVER_API_KEY_FILE_ENV = 'AGENT_SERVER_API_KEY_FILE';
/** Annotation on a server's objects: the hash of the spec the controller wrote (a changed recipe changes it). */
export const ANNOTATION_SPEC_HASH = 'agents.re-cinq.com/spec-hash';
/** API version of the HTTPRoute a server gets when the Gateway API is installed. */
export const HTTPROUTE_API_VERSION = 'gateway.networking.k8s.io/v1';

/** Name of a server's Deployment, Service and HTTPRoute: `<agent>-server`. */
export function serverName(agentName: string): string {
  return safeName(`${agentName}-server`);
}

/** Name of the Secret the controller generates for a server's API key: `<agent>-server-api-key`. */
export function generatedApiKeySecretName(agentName: string): string {
  return safeName(`${agentName}-server-api-key`, 253);
}

/** The Secret holding a server's API key: the definition's `server.apiKeySecret`, else the generated one. */
export function serverApiKeySecretName(agent: Agent, definition: AgentDefinition): string {
  return definition.spec.server.apiKeySecret ?? generatedApiKeySecretName(agent.metadata.name);
}

/** True when the controller generates the server's API key (the definition names no Secret). */
export function generatesApiKey(definition: AgentDefinition): boolean {
  return definition.spec.server.apiKeySecret === undefined;
}
