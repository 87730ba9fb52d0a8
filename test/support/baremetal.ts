// A test's bare-metal hosts: real SSH hosts registered as metal3 BareMetalHosts in a namespace of
// their own, with their real MACs and IPs in the status, an admin-key Secret and the annotations
// with which hostflow logs in to hand out a cluster's installer key.
import { join } from 'node:path';
import { hostMac, startSshHosts, type SshHostPool } from '../../local-stack/ssh-hosts.js';
import { BAREMETALHOST_API, HOST_SSH_ANNOTATIONS } from '../../shared/bpa-api.js';
import { LOCKABLE_LABEL } from '../../locks/api.js';
import { testEnv } from './env.js';
import type { TestScope } from './scope.js';

export interface BareMetalHosts {
  pool: SshHostPool;
  /** The namespace of the BareMetalHosts `node-0…`. */
  namespace: string;
  /** Each host's MAC, lower case. */
  macs: string[];
  /** `<namespace>/<name>` of the Provisioning consuming host `index`, if one does. */
  consumerOf(index: number): Promise<string | undefined>;
  /** The stand-in kubespray's marker on host `index` ('' when absent). */
  marker(index: number): Promise<string>;
  dispose(): Promise<void>;
}

/** `count` hosts; host i reports 4 + 4i CPUs and 8 GiB. A lockable namespace: Locks apply. */
export async function registerBareMetalHosts(
  scope: TestScope,
  options: { count: number; sfx: string; lockable?: boolean },
): Promise<BareMetalHosts> {
  const { core, custom } = scope.kube;
  const { count, sfx } = options;
  const namespace = `metal3-${sfx}`;
  const pool = await startSshHosts({
    count,
    stateDir: join(testEnv('stateDir'), `ssh-${namespace}`),
    prefix: `m${sfx.slice(0, 5)}`,
  });
  const labels = options.lockable ? { [LOCKABLE_LABEL.key]: LOCKABLE_LABEL.value } : undefined;
  await core.createNamespace({ body: { metadata: { name: namespace, labels } } });
  const macs: string[] = [];
  for (const [i, host] of pool.hosts.entries()) {
    const mac = await hostMac(host);
    macs.push(mac);
    const name = `node-${i}`;
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: `${name}-admin` }, stringData: { id_rsa: host.adminPrivateKey } },
    });
    const created = (await custom.createNamespacedCustomObject({
      ...BAREMETALHOST_API,
      namespace,
      body: {
        apiVersion: 'metal3.io/v1alpha1',
        kind: 'BareMetalHost',
        metadata: {
          name,
          annotations: {
            [HOST_SSH_ANNOTATIONS.secret]: `${name}-admin`,
            [HOST_SSH_ANNOTATIONS.user]: host.adminUser,
          },
        },
        spec: { online: true },
      },
    })) as Record<string, unknown>;
    await custom.replaceNamespacedCustomObjectStatus({
      ...BAREMETALHOST_API,
      namespace,
      name,
      body: {
        ...created,
        status: {
          // What metal3's baremetal-operator reports once a host is inspected and free.
          provisioning: { state: 'available' },
          hardware: {
            cpu: { count: 4 + i * 4, arch: 'x86_64' },
            ramMebibytes: 8192,
            nics: [{ name: 'eth0', mac, ip: host.address }],
          },
        },
      },
    });
  }
  return {
    pool,
    namespace,
    macs,
    async consumerOf(index) {
      const host = (await custom.getNamespacedCustomObject({
        ...BAREMETALHOST_API,
        namespace,
        name: `node-${index}`,
      })) as { spec?: { consumerRef?: { namespace?: string; name?: string } } };
      const ref = host.spec?.consumerRef;
      return ref?.name ? `${ref.namespace}/${ref.name}` : undefined;
    },
    async marker(index) {
      const found = await pool.hosts[index]!.exec(['cat', '/var/tmp/hostflow-stand-in-kubelet']);
      return found.stdout.trim();
    },
    async dispose() {
      await pool.stop();
      for (let i = 0; i < count; i++) {
        await custom
          .deleteNamespacedCustomObject({ ...BAREMETALHOST_API, namespace, name: `node-${i}` })
          .catch(() => undefined);
      }
      await core.deleteCollectionNamespacedSecret({ namespace }).catch(() => undefined);
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}
