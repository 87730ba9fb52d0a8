// Makes the IBM Cloud double's instances behave like VMs, as ec2-vms.ts does for moto: when an
// instance finishes booting, an SSH test host (admin `root`, as on IBM images) starts at an
// address of its own, which the double then reports (VPC floating IP, Power VS network);
// deleting the instance stops the host. The host presents the SSH host key the instance's user
// data gives (cloud-init-stand-in.ts). Failure injection: a boot whose SSH never answers,
// a failed instance, throttling and server errors (the double's own).
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { IBMZ_PROVIDER } from '../platform-config/ibm-config.js';
import {
  startIbmCloudDouble,
  type DoubleInstance,
  type IbmCloudDouble,
  type IbmCloudDoubleOptions,
} from './ibm-cloud-double.js';
import { hostKeyFromUserData } from './cloud-init-stand-in.js';
import { addressSlot, slotAddress } from './netns.js';
import { startSshHostAt, type SshHost } from './ssh-hosts.js';

export interface IbmVmsOptions extends Omit<IbmCloudDoubleOptions, 'onRunning' | 'onDeleted'> {
  stateDir: string;
  /** A /20 inside 10.231.128.0/17 (never handed out to host pools), e.g. 10.231.192.0/20. */
  subnetCidr: string;
  /** Called when an instance's SSH host answers. */
  onHostReady?: (instanceId: string, at: number) => void;
}

export interface IbmVms {
  double: IbmCloudDouble;
  adminPrivateKey: string;
  hosts(): Map<string, SshHost>;
  errors(): string[];
  /** The next `n` instances boot, but no SSH host ever answers at their address. */
  hangBoots(n: number): void;
  /** The instance fails (VPC `failed`, Power VS `ERROR`) and its SSH host stops. */
  failInstance(id: string): Promise<void>;
  stop(): Promise<void>;
}

/** The host key the instance's user data gives (VPC `user_data` raw, Power VS `userData` base64). */
function hostKeyOf(instance: DoubleInstance) {
  const request = instance.request as { user_data?: unknown; userData?: unknown } | undefined;
  const userData =
    typeof request?.user_data === 'string'
      ? request.user_data
      : typeof request?.userData === 'string'
        ? Buffer.from(request.userData, 'base64').toString('utf8')
        : undefined;
  const hostKey = hostKeyFromUserData(userData);
  return hostKey ? { hostKey } : {};
}

export async function startIbmVms(opts: IbmVmsOptions): Promise<IbmVms> {
  const stateDir = resolve(opts.stateDir);
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });
  const [base] = opts.subnetCidr.split('/');
  const first = addressSlot(base ?? '');
  if (first === undefined || first < 32_768) {
    throw new Error(`ibm vms: subnet ${opts.subnetCidr} is not inside 10.231.128.0/17`);
  }
  const adminKey = generateEd25519KeyPair(`root@ibm-vms`);
  const prefix = `hfibm${process.pid}`;
  const hosts = new Map<string, SshHost>();
  const starting = new Map<string, Promise<void>>();
  const errors: string[] = [];
  let next = 1;
  let hang = 0;
  let stopped = false;

  const stopHost = async (id: string) => {
    await starting.get(id);
    const host = hosts.get(id);
    hosts.delete(id);
    await host?.stop().catch((err: unknown) => errors.push(`${id}: stop: ${String(err)}`));
  };

  const onRunning = async (instance: DoubleInstance): Promise<string | undefined> => {
    if (stopped) return undefined;
    const address = slotAddress(first + next++);
    if (hang > 0) {
      hang--;
      return address; // reported, but nothing ever answers there
    }
    const start = startSshHostAt({
      address,
      name: `${prefix}-${next}`,
      prefix,
      stateDir: join(stateDir, instance.id),
      adminUser: IBMZ_PROVIDER.adminUser,
      adminKey,
      ...hostKeyOf(instance),
    }).then(
      (host) => {
        hosts.set(instance.id, host);
        opts.onHostReady?.(instance.id, performance.now());
        if (instance.status === 'deleted' || stopped) void stopHost(instance.id);
      },
      (err: unknown) => void errors.push(`${instance.id} at ${address}: ${String(err)}`),
    );
    starting.set(instance.id, start);
    await start;
    starting.delete(instance.id);
    return address;
  };

  const double = await startIbmCloudDouble({
    ...opts,
    onRunning,
    onDeleted: (instance) => void stopHost(instance.id),
  });
  return {
    double,
    adminPrivateKey: adminKey.privateKey,
    hosts: () => new Map(hosts),
    errors: () => [...errors],
    hangBoots: (n) => void (hang += n),
    async failInstance(id) {
      double.failInstance(id);
      await stopHost(id);
    },
    async stop() {
      stopped = true;
      await double.stop();
      await Promise.all([...starting.values()]);
      await Promise.all([...hosts.keys()].map(stopHost));
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
