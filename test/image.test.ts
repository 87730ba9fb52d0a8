// The container image (deploy/image) end to end: the worker, the bridge and the OTP service run
// from it, as the production Deployments run them (their arguments, environment and volumes; uid
// 1000, read-only root filesystem, no capabilities), against the local stack, and serve a local
// TaskRun and a static-pool TaskRun whose build logs in to a real sshd host with the redeemed key,
// and a Provisioning whose kubespray (the project's stand-in) the image's worker runs as a runner
// Job on the suite's local kubelet. No process of this repository's checkout serves this file's
// namespaces: only the image's.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { KUBESPRAY_STAND_IN } from '../local-stack/kubespray-overlay.js';
import { planOtpService } from '../local-stack/otp-service.js';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import { startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { LABELS } from '../platform-config/contract.js';
import { PROVISIONING_API } from '../shared/bpa-api.js';
import { statusCode } from '../shared/kube-errors.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { SA } from '../shared/search-attributes.js';
import { indexedType } from '../runtime/temporal-requirements.js';
import { createNamespace } from '../local-stack/temporal.js';
import { Connection } from '@temporalio/client';
import { registerBareMetalHosts, type BareMetalHosts } from './support/baremetal.js';
import { runnerEnv, testEnv, uniqueSuffix } from './support/env.js';
import {
  IMAGE,
  buildImage,
  containerKubeconfig,
  deployedWorkloads,
  execIn,
  inspectContainer,
  runWorkload,
  secretVolume,
  type ImageProcess,
  type Workload,
} from './support/image.js';
import { redeemSecret } from './support/otp.js';
import { watchRunnerJobs } from './support/runner-jobs.js';
import { createScope, type TestScope } from './support/scope.js';
import { sshCommand } from './support/ssh.js';

const sfx = uniqueSuffix();
const dir = join(testEnv('stateDir'), `image-${sfx}`);
let scope: TestScope;
let hosts: SshHostPool;
let metal: BareMetalHosts;
const running: ImageProcess[] = [];
let worker: ImageProcess;
let bridge: ImageProcess;
let otp: ImageProcess;
let otpUrl: string;
let health: { worker: string; bridge: string };
const staticPlatform = `linux/image-${sfx}`;
/** Where the worker finds the kubespray it offers (the runner image has it at the same path). */
const KUBESPRAY_DIR = '/opt/kubespray/kubespray-stand-in';

beforeAll(async () => {
  // Current already when CI built it in an earlier step; otherwise this builds it (minutes).
  await buildImage();
  const workloads = await deployedWorkloads();
  const workload = (name: string): Workload => {
    const w = workloads[name];
    if (!w) throw new Error(`deploy/base has no Deployment ${name}`);
    return w;
  };
  scope = await createScope('image');
  hosts = await startSshHosts({
    count: 1,
    stateDir: join(dir, 'ssh'),
    prefix: `img${sfx.slice(0, 4)}`,
  });
  metal = await registerBareMetalHosts(scope, { count: 1, sfx });
  const host = hosts.hosts[0]!;
  await scope.kube.core.createNamespacedSecret({
    namespace: scope.engineNamespace,
    body: { metadata: { name: 'admin-0' }, stringData: { id_rsa: host.adminPrivateKey } },
  });
  await scope.setHostConfig({
    'local-platforms': 'linux/amd64',
    'host.h1.address': host.address,
    'host.h1.user': host.adminUser,
    'host.h1.platform': staticPlatform,
    'host.h1.secret': 'admin-0',
    'host.h1.concurrency': '2',
  });

  // The OTP service's certificate, store token and sealing key, made as the local stack makes
  // them, then shown to the containers as the Secrets hostflow-otp-tls and hostflow-otp.
  const port = await freePort();
  const plan = await planOtpService({
    stateDir: join(dir, 'otp-state'),
    kubeconfig: testEnv('kubeconfig'),
    namespace: scope.otpNamespace,
    port,
  });
  otpUrl = plan.url;
  const secrets: Record<string, Record<string, string>> = {
    'hostflow-otp-tls': {
      'tls.crt': plan.files.tlsCert,
      'tls.key': plan.files.tlsKey,
      'ca.crt': plan.files.caCert,
    },
    'hostflow-otp': {
      'store-token': plan.files.storeToken,
      'sealing-key': String(plan.env.HOSTFLOW_OTP_SEALING_KEY_FILE),
    },
  };
  const kubeDir = join(dir, 'kube');
  containerKubeconfig(kubeDir);
  secretVolume(kubeDir, { kubeconfig: join(kubeDir, 'kubeconfig') });

  const [workerMetrics, workerHealth, bridgeMetrics, bridgeHealth, otpMetrics] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  health = {
    worker: `http://127.0.0.1:${workerHealth}`,
    bridge: `http://127.0.0.1:${bridgeHealth}`,
  };
  // Where things are on this machine instead of in a cluster; everything else is the manifests'.
  const placed = {
    TEMPORAL_ADDRESS: testEnv('temporalAddress'),
    TEMPORAL_NAMESPACE: testEnv('temporalNamespace'),
    KUBECONFIG: '/etc/hostflow/kube/kubeconfig',
    HOSTFLOW_NAMESPACE: scope.engineNamespace,
    HOSTFLOW_OTP_URL: plan.url,
  };
  const start = (
    name: string,
    kind: string,
    env: Record<string, string>,
    readyLine: string,
    more: Record<string, string> = {},
  ) => {
    const w = workload(name);
    const mounts: Record<string, string> = { '/etc/hostflow/kube': kubeDir, ...more };
    for (const m of w.secretMounts) {
      const files = secrets[m.secret];
      if (!files) {
        if (m.optional) continue;
        throw new Error(`${name} mounts Secret ${m.secret}, which this test does not make`);
      }
      mounts[m.path] = secretVolume(join(dir, `${kind}-${m.secret}`), files, m.items);
    }
    return runWorkload(w, {
      container: `hostflow-test-${kind}-${sfx}`,
      env: { ...placed, ...env },
      mounts,
      readyLine,
      logFile: join(testEnv('stateDir'), 'logs', `image-${kind}-${sfx}.log`),
    }).then((p) => (running.push(p), p));
  };
  otp = await start(
    'hostflow-otp',
    'otp',
    {
      HOSTFLOW_OTP_LISTEN: `127.0.0.1:${port}`,
      HOSTFLOW_OTP_NAMESPACE: scope.otpNamespace,
      HOSTFLOW_METRICS_ADDRESS: `127.0.0.1:${otpMetrics}`,
    },
    plan.readyLine,
  );
  const engineEnv = {
    HOSTFLOW_TASK_QUEUE: scope.taskQueue,
    HOSTFLOW_WATCH_NAMESPACE: scope.namespace,
  };
  [worker, bridge] = await Promise.all([
    start(
      'hostflow-worker',
      'worker',
      {
        ...engineEnv,
        HOSTFLOW_METRICS_ADDRESS: `127.0.0.1:${workerMetrics}`,
        HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${workerHealth}`,
        // The runner (the suite's local node and its image) and the kubespray it offers.
        ...runnerEnv(),
        HOSTFLOW_KUBESPRAY_DIR: KUBESPRAY_DIR,
        HOSTFLOW_BAREMETAL_NAMESPACES: metal.namespace,
      },
      'polling',
      { [KUBESPRAY_DIR]: KUBESPRAY_STAND_IN },
    ),
    start(
      'hostflow-bridge',
      'bridge',
      {
        ...engineEnv,
        HOSTFLOW_METRICS_ADDRESS: `127.0.0.1:${bridgeMetrics}`,
        HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${bridgeHealth}`,
      },
      'watching',
    ),
  ]);
}, 30 * 60_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await hosts?.stop();
  await metal?.dispose();
  await scope?.dispose();
}, 120_000);

describe('the image', () => {
  it('runs the worker, the bridge and the OTP service as uid 1000 on a read-only root', async () => {
    for (const p of [worker, bridge, otp]) {
      const c = await inspectContainer(p.container);
      expect(c).toMatchObject({
        image: IMAGE,
        user: '1000:1000',
        readOnlyRoot: true,
        running: true,
      });
      const id = await execIn(p.container, ['id', '-u']);
      expect(id.output.trim()).toBe('1000');
      const write = await execIn(p.container, ['touch', '/app/written']);
      expect(write.code).not.toBe(0);
      expect(write.output).toContain('Read-only file system');
    }
    expect((await inspectContainer(worker.container)).args).toEqual(
      expect.arrayContaining(['dist/workers/worker.js']),
    );
    // The Deployments' probes: ready once polling (worker) and once every watch listed (bridge).
    for (const url of [health.worker, health.bridge]) {
      const status = await waitFor(`${url}/readyz`, async () => {
        const res = await fetch(`${url}/readyz`);
        return res.ok ? res.status : undefined;
      });
      expect(status).toBe(200);
    }
  });

  it('installs a Provisioning: its kubespray a runner Job the worker starts and follows, the kubeconfig read from the node', async () => {
    const { custom } = scope.kube;
    const provisioning = { ...PROVISIONING_API, namespace: scope.namespace, name: 'img' };
    const get = () =>
      custom.getNamespacedCustomObject(provisioning).then(
        (found) =>
          found as {
            status?: { phase?: string; install?: { log?: string }; kubeconfigSecret?: string };
          },
        (err: unknown) => {
          if (statusCode(err) === 404) return undefined;
          throw err;
        },
      );
    // The cluster's runner Jobs, as they come and go (each is deleted once its log is read).
    const jobs = watchRunnerJobs(`${scope.namespace}/cluster-img`);
    try {
      await custom.createNamespacedCustomObject({
        ...PROVISIONING_API,
        namespace: scope.namespace,
        body: {
          apiVersion: 'bpa.akraino.org/v1alpha1',
          kind: 'Provisioning',
          metadata: { name: 'img', labels: { cluster: 'cluster-img' } },
          spec: { masters: [{ master: { 'mac-address': metal.macs[0]! } }] },
        },
      });
      const status = await waitFor(
        'Provisioning img to end',
        async () => {
          const found = (await get())?.status;
          return ['Ready', 'Failed', 'Refused'].includes(found?.phase ?? '') ? found : undefined;
        },
        { timeoutMs: 180_000 },
      );
      expect(status?.phase).toBe('Ready');
      expect(await metal.marker(0)).toBe('master in cluster-img');
      expect(jobs.whats()).toEqual(['kubespray cluster.yml']);
      // The admin kubeconfig, read from the control plane over the worker's SSH.
      const secret = await scope.kube.core.readNamespacedSecret({
        name: status!.kubeconfigSecret!,
        namespace: scope.namespace,
      });
      expect(Buffer.from(secret.data!.value!, 'base64').toString('utf8')).toContain(
        `server: https://${metal.pool.hosts[0]!.address}:6443`,
      );
      // The worker kept its copy of the run's log, which the Job streamed to it.
      const log = await execIn(worker.container, ['cat', status!.install!.log!]);
      expect(log).toMatchObject({ code: 0, output: expect.stringContaining('PLAY RECAP') });

      await custom.deleteNamespacedCustomObject(provisioning);
      await waitFor('Provisioning img to go', async () => ((await get()) ? undefined : true), {
        timeoutMs: 120_000,
      });
      expect(await metal.marker(0)).toBe('');
      expect(jobs.whats()).toEqual(['kubespray cluster.yml', 'kubespray reset.yml']);
    } finally {
      await jobs.stop();
    }
  }, 360_000);

  it('readies a fresh Temporal namespace with the setup Job (deploy/setup-temporal): each search attribute of its type', async () => {
    const namespace = `image-setup-${sfx}`;
    await createNamespace(testEnv('temporalAddress'), namespace);
    const job = (await deployedWorkloads('deploy/setup-temporal'))['hostflow-setup-temporal'];
    if (!job) throw new Error('deploy/setup-temporal has no Job hostflow-setup-temporal');
    const setup = await runWorkload(job, {
      container: `hostflow-setup-${sfx}`,
      env: { TEMPORAL_ADDRESS: testEnv('temporalAddress'), TEMPORAL_NAMESPACE: namespace },
      mounts: {},
      readyLine: 'ready for hostflow',
      logFile: join(testEnv('stateDir'), 'logs', `image-setup-${sfx}.log`),
    });
    expect(await setup.exited).toBe(0);
    const connection = await Connection.connect({ address: testEnv('temporalAddress') });
    try {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({
        namespace,
      });
      for (const key of Object.values(SA)) {
        expect([key.name, customAttributes?.[key.name]]).toEqual([key.name, indexedType(key.type)]);
      }
    } finally {
      await connection.close();
    }
  });

  it('serves a local TaskRun and cleans up when it completes', async () => {
    const { taskRuns } = scope;
    const tr = await taskRuns.create({ name: 'local', platform: 'linux/amd64' });
    expect(await taskRuns.waitForSecret(tr.name, 60_000)).toEqual({ host: 'localhost' });
    const labels = await waitFor('TaskRun labels', async () => {
      const l = (await taskRuns.get(tr.name)).metadata.labels ?? {};
      return l[LABELS.assignedHost] ? l : undefined;
    });
    expect(labels[LABELS.targetPlatform]).toBe('linux-amd64');
    const handle = scope.temporal.client.workflow.getHandle(
      WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
    );
    await taskRuns.complete(tr.name);
    await taskRuns.waitForSecretGone(tr.name, 60_000);
    expect(await handle.result()).toEqual({ served: 'local' });
  });

  it('serves a static TaskRun: a build user on the sshd host, its key redeemed from the OTP service', async () => {
    const { taskRuns } = scope;
    const host = hosts.hosts[0]!;
    const tr = await taskRuns.create({ name: 'static', platform: staticPlatform });
    const secret = await taskRuns.waitForSecret(tr.name, 60_000);
    expect(Object.keys(secret).sort()).toEqual(['host', 'otp', 'otp-ca', 'otp-server', 'user-dir']);
    expect(secret['otp-server']).toBe(`${otpUrl}/otp`);
    const [user, address] = secret.host!.split('@') as [string, string];
    expect(user).toMatch(/^u-[0-9a-f]{12}$/);
    expect(address).toBe(host.address);

    const key = await redeemSecret(secret);
    expect(key).toContain('OPENSSH PRIVATE KEY');
    const login = await sshCommand(
      { address, user, privateKey: key },
      'whoami && cd "$HOME/build" && pwd',
    );
    expect(login.stdout.trim()).toBe(`${user}\n${secret['user-dir']}`);

    await taskRuns.complete(tr.name);
    await taskRuns.waitForSecretGone(tr.name, 60_000);
    const users = await host.exec(['getent', 'passwd', user]);
    expect(users.code).not.toBe(0);
    expect((await host.exec(['test', '-e', `/home/${user}`])).code).not.toBe(0);
  });
});
