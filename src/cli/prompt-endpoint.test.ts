import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type PodList, pickApiPod, type Service } from './prompt-endpoint.ts';

const service = (targetPort?: number | string): Service => ({
  spec: {
    selector: { app: 'ctl' },
    ports: [{ name: 'api', port: 443, ...(targetPort !== undefined ? { targetPort } : {}) }],
  },
});

type PodItem = PodList['items'][number];
const pod = (
  name: string,
  opts: {
    phase?: string;
    ready?: string;
    deleting?: boolean;
    ports?: { name?: string; containerPort: number }[];
  } = {},
): PodItem => ({
  metadata: { name, ...(opts.deleting ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}) },
  spec: { containers: [{ ports: [] }, { ports: opts.ports ?? [{ name: 'api', containerPort: 8443 }] }] },
  status: {
    phase: opts.phase ?? 'Running',
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Ready', status: opts.ready ?? 'True' },
    ],
  },
});

describe('prompt API discovery: the pod behind the Service (as kubectl port-forward svc/... resolves it)', () => {
  it('a named targetPort is the container port of that name, on the first ready pod by name', () => {
    const pods = { items: [pod('ctl-b'), pod('ctl-a', { ports: [{ name: 'api', containerPort: 9443 }] })] };
    assert.deepEqual(pickApiPod(service('api'), pods), { ok: true, value: { pod: 'ctl-a', port: 9443 } });
  });

  it('a numeric targetPort is used as it is; without one, the Service port', () => {
    const pods = { items: [pod('p')] };
    assert.deepEqual(pickApiPod(service(8444), pods), { ok: true, value: { pod: 'p', port: 8444 } });
    assert.deepEqual(pickApiPod(service(), pods), { ok: true, value: { pod: 'p', port: 443 } });
  });

  it('skips pods that are not Running, not Ready, being deleted, or lack the named port', () => {
    const pods = {
      items: [
        pod('a-pending', { phase: 'Pending' }),
        pod('b-unready', { ready: 'False' }),
        pod('c-deleting', { deleting: true }),
        pod('d-no-port', { ports: [{ name: 'metrics', containerPort: 8080 }] }),
        pod('e-good'),
      ],
    };
    assert.deepEqual(pickApiPod(service('api'), pods), { ok: true, value: { pod: 'e-good', port: 8443 } });
  });

  it('says why when there is nothing to forward to', () => {
    assert.deepEqual(pickApiPod({ spec: { ports: [] } }, { items: [pod('p')] }), {
      ok: false,
      error: 'service agent-controller-api has no ports',
    });
    for (const items of [[], [pod('p', { ready: 'False' })], [{ ...pod('p'), status: undefined }]]) {
      assert.deepEqual(pickApiPod(service('api'), { items }), {
        ok: false,
        error: 'no ready pod behind service agent-controller-api',
      });
    }
  });
});
