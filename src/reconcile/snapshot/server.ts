// The server mode's observations (issue 12, issue 27 §3): a server's Deployment, Service, route, input and API-key
// Secret as the shell read them, and what the executor met creating the key.

import type { CommonSnapshot } from './common.ts';

/** A Deployment's rollout as far as a server's readiness goes. */
export interface DeploymentProgress {
  readonly observedGeneration?: number | undefined;
  readonly replicas: number;
  readonly updatedReplicas: number;
  readonly availableReplicas: number;
}

/** One object of a server (issue 12) as the shell read it. */
export type ServerChildObservation =
  | { readonly kind: 'absent' }
  | {
      readonly kind: 'present';
      readonly uid: string;
      readonly resourceVersion: string;
      readonly generation?: number | undefined;
      readonly annotations: Readonly<Record<string, string>>;
      /** The uid of its controller ownerReference, if any. */
      readonly controllerUid?: string | undefined;
      /** The name and kind of its controller ownerReference, if any (an earlier Agent of the same name?). */
      readonly controllerName?: string | undefined;
      readonly deleting: boolean;
      /**
       * Whether its spec is what the controller would write now, as the API server itself decided on a dry-run
       * replace of the desired object (defaults and canonical forms included); undefined when not asked.
       */
      readonly matches?: boolean | undefined;
      /** Deployments only. */
      readonly progress?: DeploymentProgress | undefined;
    };

/** What the shell read of a server's objects (live, on `needs: 'server'`). */
export interface ServerObservation {
  readonly deployment: ServerChildObservation;
  readonly service: ServerChildObservation;
  /** `unsupported`: the Gateway API (gateway.networking.k8s.io/v1 HTTPRoute) is not served. Absent: not read. */
  readonly route?: ServerChildObservation | { readonly kind: 'unsupported' } | undefined;
  /** Whether the API-key Secret exists. */
  readonly apiKey: ApiKeyObservation;
  /** The input ConfigMap (its data, when this Agent's); absent: not read. */
  readonly input?:
    | { readonly kind: 'absent' }
    | { readonly kind: 'present'; readonly data: Readonly<Record<string, string>> }
    | undefined;
}

/**
 * Whether a server's API-key Secret exists: all the controller learns of it (it never reads Secrets; the shell asks
 * with a dry-run create). Its contents, its owner and its version are not known: the pods read the key from a
 * mounted file, so a new key reaches them without a rollout.
 */
export type ApiKeyObservation = { readonly kind: 'present' } | { readonly kind: 'absent' };

/**
 * What the executor's last create of a server's generated API-key Secret met, kept by the shell (per Agent uid) until
 * the Agent's status says it (issue 27 §2): `created` with the new Secret's uid (decide records it in
 * `status.apiKeySecretUID`), or `taken` (a Secret of that name existed: someone else's; decide clears a uid recorded
 * before). A record that fails is decided again on the next reconcile, as long as this replica keeps the observation.
 */
export type ServerKeyObservation =
  | { readonly kind: 'created'; readonly uid: string }
  | { readonly kind: 'taken' };

/** What a server reads beyond the common part. */
export interface ServerObservations {
  /** A server's objects (issue 12), read live when decide asks (`needs: 'server'`). */
  readonly server?: ServerObservation | undefined;
  /** A server's API-key Secret created or found taken by the executor and not yet on the Agent's status. */
  readonly serverKey?: ServerKeyObservation | undefined;
  /** Set by the executor when the API server refused a server object (422/400): `message` names it and says why. */
  readonly serverRejected?: { readonly message: string } | undefined;
}

/** What the server mode's decisions read: the common part and the server's own observations. */
export type ServerSnapshot = CommonSnapshot & ServerObservations;
