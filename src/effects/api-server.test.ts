import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointsRule } from '../jobs/index.ts';
import { apiServerEndpoints } from './api-server.ts';

describe('where the API server listens (EndpointSlice default/kubernetes)', () => {
  it('keeps ready (or unknown) addresses and valid ports, each once', () => {
    assert.deepEqual(
      apiServerEndpoints({
        endpoints: [
          { addresses: ['10.0.0.1'], conditions: { ready: true } },
          { addresses: ['10.0.0.2'], conditions: { ready: false } },
          { addresses: ['10.0.0.3', '10.0.0.1'] },
        ],
        ports: [{ port: 6443 }, { port: 6443 }, { port: null }, { port: 70000 }],
      }),
      { addresses: ['10.0.0.1', '10.0.0.3'], ports: [6443] },
    );
    assert.deepEqual(apiServerEndpoints({ endpoints: null, ports: null }), { addresses: [], ports: [] });
  });

  it('becomes one egress rule: each address alone (IPv4 /32, IPv6 /128) on each port; none when empty', () => {
    assert.deepEqual(endpointsRule({ addresses: ['10.0.0.1', 'fd00::1'], ports: [6443, 443] }), {
      to: [{ ipBlock: { cidr: '10.0.0.1/32' } }, { ipBlock: { cidr: 'fd00::1/128' } }],
      ports: [
        { protocol: 'TCP', port: 6443 },
        { protocol: 'TCP', port: 443 },
      ],
    });
    assert.equal(endpointsRule({ addresses: [], ports: [443] }), undefined);
    assert.equal(endpointsRule({ addresses: ['10.0.0.1'], ports: [] }), undefined);
  });
});
