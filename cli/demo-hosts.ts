// `npm start`'s demo static pool: two real sshd hosts in their own network namespaces, their
// admin keys as Secrets, and `host.demo-N.*` entries in host-config pointing at them. Other
// host-config keys are the operator's and are left as they are.
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { startSshHosts, type SshHostPool } from '../local-stack/ssh-hosts.js';
import { HOST_CONFIG_NAME } from '../platform-config/contract.js';

export const DEMO_STATIC_PLATFORM = 'linux/arm64';
const DEMO_HOSTS = 2;
const DEMO_CONCURRENCY = 4;

export async function startDemoHosts(options: {
  stateDir: string;
  kubeConfig: KubeConfig;
  engineNamespace: string;
}): Promise<SshHostPool> {
  const pool = await startSshHosts({
    count: DEMO_HOSTS,
    stateDir: options.stateDir,
    prefix: 'hfdemo',
    restart: true,
  });
  try {
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = options.engineNamespace;
    const entries: Record<string, string> = {};
    for (const [i, host] of pool.hosts.entries()) {
      const name = `demo-${i + 1}`;
      const secret = {
        metadata: { name: `${name}-ssh`, namespace },
        stringData: { id_rsa: host.adminPrivateKey },
      };
      // The hosts get fresh admin keys each start: replace the Secret.
      await core
        .deleteNamespacedSecret({ name: secret.metadata.name, namespace })
        .catch(() => undefined);
      await core.createNamespacedSecret({ namespace, body: secret });
      Object.assign(entries, {
        [`host.${name}.address`]: host.address,
        [`host.${name}.user`]: host.adminUser,
        [`host.${name}.platform`]: DEMO_STATIC_PLATFORM,
        [`host.${name}.secret`]: secret.metadata.name,
        [`host.${name}.concurrency`]: String(DEMO_CONCURRENCY),
      });
    }
    await core.patchNamespacedConfigMap(
      { name: HOST_CONFIG_NAME, namespace, body: { data: entries } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return pool;
  } catch (err) {
    await pool.stop();
    throw new Error(`demo SSH hosts: ${(err as Error).message}`, { cause: err });
  }
}
