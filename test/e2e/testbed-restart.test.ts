// e2e: alone — it stops and starts kube-apiserver, which every file beside it would see
// `scripts/testbed restart kube-apiserver` on the shared testbed: kube-apiserver alone is stopped and started again
// with the same command line and port, so an existing client and kubeconfig keep working; a watch open across the
// restart ends instead of hanging; etcd, kube-controller-manager and the node agent keep running and reconnect (the
// node agent renews its Lease again, and a Job created afterwards runs to Complete with its log readable). Other
// engineers' tests see a few seconds of outage. Runtime-independent, so it runs in the node pass only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import {
  apiPath,
  e2eCluster,
  freshNamespace,
  JobSchema,
  pollUntil,
  readTestbedInfo,
  restartTestbedApiServer,
  runTestbed,
} from '../support/index.ts';
import { type ProcRecord, procAlive, readProcRecords } from '../support/proc.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : cluster.testbed === undefined
      ? 'needs the local testbed (scripts/testbed up)'
      : process.env.AGENT_E2E_RUNTIME === 'deno'
        ? 'the testbed does not depend on the JavaScript runtime; it runs in the node pass only'
        : false;

/** The argv of a running process. */
function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}

function record(records: readonly ProcRecord[], name: string): ProcRecord {
  const rec = records.find((r) => r.name === name);
  assert.ok(rec, `${name} is recorded in pids.json: ${JSON.stringify(records)}`);
  return rec;
}

const LeaseSchema = v.looseObject({
  spec: v.optional(v.looseObject({ renewTime: v.optional(v.nullable(v.string())) }), {}),
});
const NodeReadySchema = v.looseObject({
  status: v.looseObject({
    conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() })), []),
  }),
});

describe('testbed: restart kube-apiserver', { skip }, () => {
  if (typeof cluster === 'string' || cluster.testbed === undefined) return;
  const testbed = cluster.testbed;
  const { client, kubeconfig } = cluster;
  const pidsFile = join(dirname(kubeconfig), 'pids.json');
  after(() => client.close());

  it('restarts kube-apiserver alone, on the same port with the same flags; clients and components reconnect', {
    timeout: 300_000,
  }, async (t) => {
    const before = readProcRecords(pidsFile);
    const oldApi = record(before, 'kube-apiserver');
    assert.ok(procAlive(oldApi), 'kube-apiserver runs before the restart');
    const argvBefore = cmdline(oldApi.pid);
    const others = before.filter((r) => r.name !== 'kube-apiserver');
    assert.deepEqual(others.map((r) => r.name).sort(), [
      'etcd',
      'kube-controller-manager',
      'node-agent',
      'versitygw',
    ]);

    const ns = await freshNamespace(client, 'testbed-restart');
    t.after(ns.cleanup);
    const configmaps = apiPath('v1', 'configmaps', { namespace: ns.name });
    // A watch that is open when the API server goes away: it must end, not hang.
    const seen: string[] = [];
    const watchEnded = client
      .watch(configmaps, { timeoutSeconds: 600 }, (e) => {
        if (e.type !== 'ERROR') seen.push(e.object.metadata.name ?? '');
      })
      .then(
        (end) => ({ how: end.kind, at: Date.now() }),
        (error: unknown) => ({ how: `error: ${String(error)}`, at: Date.now() }),
      );
    await client.create(configmaps, { metadata: { name: 'before' } });
    await pollUntil(() => (seen.includes('before') ? true : undefined), {
      timeoutMs: 20_000,
      description: 'the watch to see the ConfigMap created before the restart',
    });

    const run = await restartTestbedApiServer(kubeconfig);
    const restarted = Date.now();
    const summary = run.stderr.trim().split('\n').at(-1) ?? '';
    t.diagnostic(`${summary} (the command took ${run.durationMs} ms, lock wait included)`);
    assert.equal(
      run.stdout.trim().split('\n').at(-1),
      kubeconfig,
      'the kubeconfig path is the last line of stdout',
    );
    const unavailable = /unavailable ([\d.]+) s/.exec(summary);
    assert.ok(unavailable, `the summary says how long the API server was unavailable: ${run.stderr}`);
    assert.ok(Number(unavailable[1]) < 30, `kube-apiserver was unavailable ${unavailable[1]} s`);

    // A new kube-apiserver process with exactly the old command line; nothing else was restarted.
    const afterRecs = readProcRecords(pidsFile);
    const newApi = record(afterRecs, 'kube-apiserver');
    assert.notEqual(`${newApi.pid}/${newApi.start}`, `${oldApi.pid}/${oldApi.start}`, 'a new process');
    assert.equal(procAlive(oldApi), false, 'the old kube-apiserver is gone');
    assert.ok(procAlive(newApi), 'the new kube-apiserver runs');
    assert.deepEqual(cmdline(newApi.pid), argvBefore, 'same binary, flags, certificates and port');
    for (const rec of others) {
      assert.deepEqual(record(afterRecs, rec.name), rec, `${rec.name} was not restarted`);
      assert.ok(procAlive(rec), `${rec.name} still runs`);
    }
    assert.equal(
      readTestbedInfo(kubeconfig)?.apiserver,
      testbed.apiserver,
      'the API server URL is unchanged',
    );

    // The watch open across the restart ended (cleanly or with a transport error) by the time the restart was over.
    const ended = await Promise.race([watchEnded, delay(10_000).then(() => undefined)]);
    assert.ok(ended, 'a watch open across the restart ends');
    t.diagnostic(
      `the open watch ended (${ended.how}) ${ended.at - restarted} ms relative to the restart's end`,
    );

    // The client created before the restart (same kubeconfig, same keep-alive agent) works.
    const ready = await client.request('GET', '/readyz', { timeoutMs: 5000 }).catch(async () => {
      // A pooled connection from before the restart may be reset once; a second request uses a new one.
      return client.request('GET', '/readyz', { timeoutMs: 5000 });
    });
    assert.equal(ready.status, 200, ready.body);
    await client.create(configmaps, { metadata: { name: 'after' } });

    // The node agent reconnected: it renews its Lease again and the node stays Ready.
    const leasePath = apiPath('coordination.k8s.io/v1', 'leases', {
      namespace: 'kube-node-lease',
      name: testbed.nodeName,
    });
    await pollUntil(
      async (observe) => {
        const lease = await client.get(leasePath, LeaseSchema);
        observe(lease.spec.renewTime);
        return Date.parse(lease.spec.renewTime ?? '') >= restarted - 1000 ? true : undefined;
      },
      { timeoutMs: 40_000, description: 'the node agent to renew its Lease after the restart' },
    );
    const node = await client.get(apiPath('v1', 'nodes', { name: testbed.nodeName }), NodeReadySchema);
    assert.ok(
      node.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      `the node is Ready: ${JSON.stringify(node.status.conditions)}`,
    );

    // kube-controller-manager (Job controller) and the node agent (pods, logs) work end to end.
    const jobs = apiPath('batch/v1', 'jobs', { namespace: ns.name });
    await client.create(jobs, {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'after-restart' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: 'main',
                image: 'docker.io/library/busybox:1.37',
                command: ['sh', '-c', 'echo restarted'],
              },
            ],
          },
        },
      },
    });
    await pollUntil(
      async (observe) => {
        const job = await client.get(`${jobs}/after-restart`, JobSchema);
        observe(job.status);
        return job.status.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
          ? true
          : undefined;
      },
      { timeoutMs: 120_000, description: 'a Job created after the restart to Complete' },
    );
    const pods = await client.list(apiPath('v1', 'pods', { namespace: ns.name }), {
      labelSelector: 'batch.kubernetes.io/job-name=after-restart',
    });
    const pod = pods.items[0]?.metadata.name;
    assert.ok(pod, 'the Job created a pod');
    assert.equal(await client.logs(ns.name, pod, { container: 'main' }), 'restarted\n');
  });

  it('refuses a component it cannot restart (exit 2) and leaves kube-apiserver alone', async () => {
    const api = record(readProcRecords(pidsFile), 'kube-apiserver');
    for (const args of [['restart'], ['restart', 'etcd'], ['restart', 'kube-apiserver', 'extra']]) {
      const run = await runTestbed(kubeconfig, args, 60_000);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /unknown command/);
    }
    assert.deepEqual(record(readProcRecords(pidsFile), 'kube-apiserver'), api);
    assert.ok(procAlive(api));
    const help = await runTestbed(kubeconfig, ['--help'], 60_000);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /restart kube-apiserver/);
  });
});
