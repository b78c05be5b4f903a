// Delegated authentication and authorisation, as an aggregated API server does them: who a bearer token belongs to
// (TokenReview) and whether that person may do something (SubjectAccessReview). The realtime prompt API and the web
// console both ask through here. Answers are cached briefly: a token's review for 10 s, an allowing review for 10 s
// (refusals are never kept, so a new grant takes effect at once).

import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { describeKubeError, type Transport } from '../kube/index.ts';
import type { CallerIdentity } from '../server/prompt.ts';

/** How long a TokenReview answer is reused for the same token. */
const TOKEN_CACHE_MS = 10_000;
/** How long an allowing SubjectAccessReview is reused for the same caller and request. */
const ALLOW_CACHE_MS = 10_000;
/** Cache entries kept at most (cleared when passed). */
const MAX_CACHED = 1000;

/** The resource attributes of a SubjectAccessReview. */
export interface ResourceAccess {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string | undefined;
  readonly namespace: string;
  readonly name?: string | undefined;
}

export interface AccessReviews {
  /** Who the token belongs to; undefined when the API server does not know it; `error` when the review failed. */
  authenticateToken(token: string): Promise<CallerIdentity | undefined | { readonly error: string }>;
  /** Whether `caller` may do `access`; `error` when the review failed. */
  authorize(caller: CallerIdentity, access: ResourceAccess): Promise<boolean | { readonly error: string }>;
}

const UserInfo = v.looseObject({
  username: v.optional(v.string()),
  uid: v.optional(v.string()),
  groups: v.optional(v.array(v.string())),
  extra: v.optional(v.record(v.string(), v.array(v.string()))),
});
const TokenReviewStatus = v.looseObject({
  status: v.optional(
    v.looseObject({
      authenticated: v.optional(v.boolean()),
      user: v.optional(UserInfo),
    }),
  ),
});
const SarStatus = v.looseObject({
  status: v.optional(v.looseObject({ allowed: v.optional(v.boolean()) })),
});

/** Reviews against the API server of `transport` (the controller's own credentials ask). */
export function createAccessReviews(o: {
  readonly transport: Transport;
  readonly now: () => number;
}): AccessReviews {
  const reviews = new Map<string, { at: number; identity: CallerIdentity | undefined }>();
  /** TokenReviews in flight by token hash: callers arriving together share one review. */
  const reviewing = new Map<string, Promise<CallerIdentity | undefined | { error: string }>>();
  const allowed = new Map<string, number>();

  async function reviewToken(
    key: string,
    token: string,
  ): Promise<CallerIdentity | undefined | { error: string }> {
    const r = await o.transport.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    if (!r.ok) return { error: describeKubeError(r.error) };
    const parsed = v.safeParse(TokenReviewStatus, safeJson(r.value.text));
    if (!parsed.success) return { error: 'TokenReview answer is not understood' };
    const s = parsed.output.status;
    const identity = s?.authenticated === true ? identityOf(s.user) : undefined;
    if (reviews.size > MAX_CACHED) reviews.clear();
    reviews.set(key, { at: o.now(), identity });
    return identity;
  }

  return {
    authenticateToken(token) {
      const key = createHash('sha256').update(token).digest('hex');
      const cached = reviews.get(key);
      if (cached !== undefined && o.now() - cached.at < TOKEN_CACHE_MS)
        return Promise.resolve(cached.identity);
      const pending = reviewing.get(key);
      if (pending !== undefined) return pending;
      const review = reviewToken(key, token).finally(() => reviewing.delete(key));
      reviewing.set(key, review);
      return review;
    },
    async authorize(caller, access) {
      const key = JSON.stringify([caller.username, caller.uid, caller.groups, caller.extra, access]);
      const at = allowed.get(key);
      if (at !== undefined && o.now() - at < ALLOW_CACHE_MS) return true;
      const r = await o.transport.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: caller.username,
            ...(caller.uid !== undefined ? { uid: caller.uid } : {}),
            groups: caller.groups,
            ...(caller.extra !== undefined ? { extra: caller.extra } : {}),
            resourceAttributes: {
              namespace: access.namespace,
              verb: access.verb,
              group: access.group,
              resource: access.resource,
              ...(access.subresource !== undefined ? { subresource: access.subresource } : {}),
              ...(access.name !== undefined ? { name: access.name } : {}),
            },
          },
        },
      });
      if (!r.ok) return { error: describeKubeError(r.error) };
      const parsed = v.safeParse(SarStatus, safeJson(r.value.text));
      if (!parsed.success) return { error: 'SubjectAccessReview answer is not understood' };
      const yes = parsed.output.status?.allowed === true;
      if (yes) {
        if (allowed.size > MAX_CACHED) allowed.clear();
        allowed.set(key, o.now());
      }
      return yes;
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const SelfSubjectReviewStatus = v.looseObject({
  status: v.optional(
    v.looseObject({
      userInfo: v.optional(UserInfo),
    }),
  ),
});

/** Who the transport's own credentials are (SelfSubjectReview): the identity a local run's console link signs in as. */
export async function whoAmI(transport: Transport): Promise<CallerIdentity | { readonly error: string }> {
  const r = await transport.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  if (!r.ok) return { error: describeKubeError(r.error) };
  const parsed = v.safeParse(SelfSubjectReviewStatus, safeJson(r.value.text));
  return (
    identityOf(parsed.success ? parsed.output.status?.userInfo : undefined) ?? {
      error: 'SelfSubjectReview answer names no user',
    }
  );
}

/** The identity of a review's user info; undefined without a user name. */
function identityOf(user: v.InferOutput<typeof UserInfo> | undefined): CallerIdentity | undefined {
  if (user?.username === undefined || user.username === '') return undefined;
  return {
    username: user.username,
    ...(user.uid !== undefined ? { uid: user.uid } : {}),
    groups: user.groups ?? [],
    ...(user.extra !== undefined ? { extra: user.extra } : {}),
  };
}
