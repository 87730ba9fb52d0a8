// `npm start`'s demo cloud: moto's EC2 on loopback, whose instances boot into real sshd hosts
// (local-stack/ec2-vms.ts), with a dynamic platform (one VM per TaskRun) and a dynamic pool
// configured on it in host-config. Other host-config keys are the operator's and are left alone.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startEc2Vms } from '../local-stack/ec2-vms.js';
import { startMoto } from '../local-stack/moto.js';
import { upsertSecret } from '../local-stack/upsert.js';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';
import { MERGE_PATCH } from '../shared/merge-patch.js';

export const DEMO_DYNAMIC_PLATFORM = 'linux/demo-vm';
export const DEMO_POOL_PLATFORM = 'linux/demo-pool';
const CREDENTIALS = 'demo-aws'; // moto accepts any credentials: these are not secrets
const SSH_SECRET = 'demo-vm-ssh';

export interface DemoCloud {
  /** EC2 endpoint for the worker (HOSTFLOW_AWS_ENDPOINT). */
  endpoint: string;
  stop(): Promise<void>;
}

export async function startDemoCloud(options: {
  stateDir: string;
  logDir: string;
  port: number;
  kubeConfig: KubeConfig;
  engineNamespace: string;
}): Promise<DemoCloud> {
  const moto = await startMoto({ port: options.port, logDir: options.logDir, restart: true });
  try {
    const vms = await startEc2Vms({
      endpoint: moto.endpoint,
      stateDir: options.stateDir,
      bootDelayMs: 3000,
    });
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = options.engineNamespace;
    const secrets = {
      [CREDENTIALS]: { 'access-key-id': 'demo', 'secret-access-key': 'demo' },
      [SSH_SECRET]: { id_rsa: vms.adminPrivateKey }, // fresh each start
    };
    // Written in place, not deleted and made again: while the last start's VMs may live, the
    // allocator Locks these Secrets against deletion (locks/platform-secrets.ts), never updates.
    for (const [name, stringData] of Object.entries(secrets)) {
      await upsertSecret(core, namespace, { metadata: { name }, stringData });
    }
    const platform = (cfg: string, tag: string, extra: Record<string, string>) => ({
      [`dynamic.${cfg}.type`]: 'aws',
      [`dynamic.${cfg}.region`]: 'us-east-1',
      [`dynamic.${cfg}.ami`]: 'ami-760aaa0f',
      [`dynamic.${cfg}.instance-type`]: 't3.micro',
      [`dynamic.${cfg}.key-name`]: 'demo',
      [`dynamic.${cfg}.aws-secret`]: CREDENTIALS,
      [`dynamic.${cfg}.ssh-secret`]: SSH_SECRET,
      [`dynamic.${cfg}.subnet-id`]: vms.subnetId,
      [`dynamic.${cfg}.instance-tag`]: tag,
      [`dynamic.${cfg}.check-interval`]: '5',
      [`dynamic.${cfg}.allocation-timeout`]: '120',
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [`dynamic.${cfg}.${k}`, v])),
    });
    await core.patchNamespacedConfigMap(
      {
        name: HOST_CONFIG_NAME,
        namespace,
        body: {
          data: {
            'dynamic-platforms': DEMO_DYNAMIC_PLATFORM,
            'dynamic-pool-platforms': DEMO_POOL_PLATFORM,
            ...platform('linux-demo-vm', 'hostflow-demo-vm', { 'max-instances': '4' }),
            ...platform('linux-demo-pool', 'hostflow-demo-pool', {
              'max-instances': '2',
              concurrency: '2',
              'max-age': '10',
            }),
          },
        },
      },
      MERGE_PATCH,
    );
    return {
      endpoint: moto.endpoint,
      async stop() {
        await vms.stop();
        await moto.stop();
      },
    };
  } catch (err) {
    await moto.stop();
    throw new Error(`demo cloud: ${(err as Error).message}`, { cause: err });
  }
}
