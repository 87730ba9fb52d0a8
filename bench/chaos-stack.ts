// What the chaos run runs against: on a given Kubernetes API, Temporal and moto, every kind of
// platform at once (local, static sshd hosts, a dynamic AWS platform and a dynamic pool whose
// VMs become sshd hosts), with the worker, the bridge and the OTP service each restarted
// whenever it dies, as `hostflow start` and a Deployment do. Shared by bench/chaos.ts and the
// small version in test/chaos.test.ts.
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import {
  DescribeInstancesCommand,
  EC2Client,
  type Instance as Ec2Instance,
} from '@aws-sdk/client-ec2';
import { Client, Connection } from '@temporalio/client';
import { join } from 'node:path';
import { startEc2Vms } from '../local-stack/ec2-vms.js';
import { startEngineProcess, type EngineProcess } from '../local-stack/engine.js';
import { startOtpService, type OtpService } from '../local-stack/otp-service.js';
import { startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { HOST_CONFIG_NAME, LABELS, OWNER_TAG_KEY } from '../platform-config/contract.js';
import { ensureNamespace } from '../local-stack/cluster-setup.js';
import type { ChaosTarget } from './chaos-run.js';
import { awsPlatformConfig } from './aws-platform-config.js';

export interface ChaosInfra {
  kubeconfigPath: string;
  temporalAddress: string;
  temporalNamespace: string;
  motoEndpoint: string;
  /** Where TaskRuns go, and where host-config lives: both created by the caller. */
  namespace: string;
  engineNamespace: string;
  taskQueue: string;
  stateDir: string;
  logDir: string;
  /** A /20 inside 10.231.128.0/17 for the VMs, apart from other users of the same moto. */
  subnetCidr: string;
  /** A prebuilt workflow bundle, if any (the tests have one). */
  workflowBundle?: string;
  staticHosts: number;
  /** Builds each static host and each pool VM runs at once. */
  concurrency: number;
  /** max-instances of the dynamic platform and of the pool. */
  maxInstances: number;
}

export interface ChaosStack {
  target: ChaosTarget;
  stop(): Promise<void>;
}

export async function startChaosStack(infra: ChaosInfra): Promise<ChaosStack> {
  const kc = new KubeConfig();
  kc.loadFromFile(infra.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const tag = infra.namespace.replace(/[^a-z0-9-]/g, '');
  const platforms = {
    local: 'local',
    static: `linux/${tag}-static`,
    dynamic: `linux/${tag}-vm`,
    pool: `linux/${tag}-pool`,
  };
  const owner = { dynamic: `${tag}-vm`, pool: `${tag}-pool` };
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const hosts: SshHostPool = await startSshHosts({
      count: infra.staticHosts,
      stateDir: join(infra.stateDir, 'ssh'),
      prefix: `ch${tag.slice(-6)}`,
    });
    stops.push(() => hosts.stop());
    const vms = await startEc2Vms({
      endpoint: infra.motoEndpoint,
      stateDir: join(infra.stateDir, 'vms'),
      bootDelayMs: 1000,
      pollMs: 200,
      subnetCidr: infra.subnetCidr,
    });
    stops.push(() => vms.stop());
    // The OTP records' own namespace, as an install has it.
    const otpNamespace = `${infra.engineNamespace}-otp`;
    await ensureNamespace(kc, otpNamespace);
    const otp: OtpService = await startOtpService({
      stateDir: join(infra.stateDir, 'otp'),
      kubeconfig: infra.kubeconfigPath,
      namespace: otpNamespace,
      logFile: join(infra.logDir, `otp-${tag}.log`),
      restart: true,
    });
    stops.push(() => otp.stop());

    const secrets: Record<string, Record<string, string>> = {
      'aws-creds': { 'access-key-id': 'testing', 'secret-access-key': 'testing' }, // moto's
      'vm-ssh': { id_rsa: vms.adminPrivateKey },
      ...Object.fromEntries(
        hosts.hosts.map((h, i) => [`admin-${i}`, { id_rsa: h.adminPrivateKey }]),
      ),
    };
    for (const [name, stringData] of Object.entries(secrets)) {
      await core.createNamespacedSecret({
        namespace: infra.engineNamespace,
        body: { metadata: { name }, stringData },
      });
    }
    const data: Record<string, string> = {
      'dynamic-platforms': platforms.dynamic,
      'dynamic-pool-platforms': platforms.pool,
    };
    hosts.hosts.forEach((host, i) => {
      Object.assign(data, {
        [`host.h${i + 1}.address`]: host.address,
        [`host.h${i + 1}.user`]: host.adminUser,
        [`host.h${i + 1}.platform`]: platforms.static,
        [`host.h${i + 1}.secret`]: `admin-${i}`,
        [`host.h${i + 1}.concurrency`]: String(infra.concurrency),
        [`host.h${i + 1}.host-key`]: host.hostPublicKey,
      });
    });
    for (const [kind, platform] of [
      ['dynamic', platforms.dynamic],
      ['pool', platforms.pool],
    ] as const) {
      const cfg = `dynamic.${platform.replace('/', '-')}`;
      Object.assign(data, {
        ...awsPlatformConfig(platform, {
          keyName: 'chaos',
          subnetId: vms.subnetId,
          maxInstances: infra.maxInstances,
        }),
        [`${cfg}.instance-tag`]: owner[kind],
        [`${cfg}.allocation-timeout`]: '120',
        ...(kind === 'pool'
          ? { [`${cfg}.concurrency`]: String(infra.concurrency), [`${cfg}.max-age`]: '60' }
          : {}),
      });
    }
    await core.createNamespacedConfigMap({
      namespace: infra.engineNamespace,
      body: {
        metadata: { name: HOST_CONFIG_NAME, labels: { [LABELS.multiPlatformConfig]: 'hosts' } },
        data,
      },
    });

    const env: NodeJS.ProcessEnv = {
      TEMPORAL_ADDRESS: infra.temporalAddress,
      TEMPORAL_NAMESPACE: infra.temporalNamespace,
      KUBECONFIG: infra.kubeconfigPath,
      HOSTFLOW_NAMESPACE: infra.engineNamespace,
      HOSTFLOW_TASK_QUEUE: infra.taskQueue,
      HOSTFLOW_WATCH_NAMESPACE: infra.namespace,
      HOSTFLOW_AWS_ENDPOINT: vms.proxyEndpoint,
      HOSTFLOW_RESYNC_SECONDS: '10',
      HOSTFLOW_TASKRUN_GC_GRACE_SECONDS: '30',
      ...(infra.workflowBundle ? { HOSTFLOW_WORKFLOW_BUNDLE: infra.workflowBundle } : {}),
      ...otp.workerEnv,
    };
    const start = (kind: 'worker' | 'bridge') =>
      startEngineProcess(kind, env, {
        name: `${kind} (${infra.namespace})`,
        logFile: join(infra.logDir, `${kind}-${infra.namespace}.log`),
        restart: true,
      });
    const [worker, bridge]: EngineProcess[] = await Promise.all([start('worker'), start('bridge')]);
    stops.push(
      () => worker.stop(),
      () => bridge.stop(),
    );

    const connection = await Connection.connect({ address: infra.temporalAddress });
    stops.push(() => connection.close());
    const temporal = new Client({ connection, namespace: infra.temporalNamespace });
    const ec2 = new EC2Client({
      endpoint: infra.motoEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    });
    const live = async (ownerTag: string): Promise<string[]> => {
      const out = await ec2.send(
        new DescribeInstancesCommand({
          Filters: [{ Name: `tag:${OWNER_TAG_KEY}`, Values: [ownerTag] }],
        }),
      );
      return (out.Reservations ?? [])
        .flatMap((r): Ec2Instance[] => r.Instances ?? [])
        .filter((i) => !['terminated', 'shutting-down'].includes(i.State?.Name ?? ''))
        .map((i) => i.InstanceId!);
    };
    const target: ChaosTarget = {
      core,
      custom: kc.makeApiClient(CustomObjectsApi),
      temporal,
      namespace: infra.namespace,
      platforms: [platforms.local, platforms.static, platforms.dynamic, platforms.pool],
      allocatorPlatforms: [platforms.static, platforms.dynamic, platforms.pool],
      processes: [
        { name: 'worker', kill: () => worker.kill() },
        { name: 'bridge', kill: () => bridge.kill() },
        {
          name: 'otp-server',
          kill: async () => {
            try {
              process.kill(-otp.process.pid, 'SIGKILL');
            } catch {
              // already gone
            }
          },
        },
      ],
      staticHosts: hosts.hosts,
      vmsOfTaskRuns: () => live(owner.dynamic),
      poolVms: () => live(owner.pool),
    };
    return { target, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
