// Cloud VM activities for dynamic platforms and pools: launch, describe, list and terminate
// through the platform's provider, "is SSH answering yet?", and orphan collection. Credentials
// are read from their Secret on each call and never leave the worker; results carry only ids,
// states and addresses.
import type { CoreV1Api } from '@kubernetes/client-node';
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import { ADOPTED_CLAIM_PREFIX } from '../../platform-config/contract.js';
import { providerSpec } from '../../platform-config/cloud-providers.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { BOOTSTRAP_DATA_KEY } from '../../shared/machine-api.js';
import { isNotFound, rethrowKube } from '../kubernetes/errors.js';
import { warnOnHostConfig } from '../kubernetes/events.js';
import { createHostKeyStore } from '../kubernetes/host-key-store.js';
import { createVmHostKeySeed } from '../kubernetes/vm-host-key-seed.js';
import { sshBanner } from '../ssh/banner.js';
import { vmHostKeyRecord } from '../ssh/host-keys.js';
import {
  OWNER_TAG_KEY,
  PLATFORM_TAG_KEY,
  type CloudProvider,
  type Instance,
  type ProviderDeps,
} from './provider.js';
import { providerOpener } from './registry.js';
import { GENERATED_KEY_COMMENT, userDataWithHostKey, vmHostKey } from './vm-host-key.js';

export interface CloudDeps extends ProviderDeps {
  /** VMs younger than this are never collected: their claim may not be visible yet. */
  gcGraceSeconds?: number;
}

const SSH_PROBE_TIMEOUT_MS = 3_000;
const SSH_RETRY_MS = 200;
const SSH_ATTEMPT_TIMEOUT_MS = 1_000;
/** Well inside the cloud activities' 30 s start-to-close timeout. */
const MAX_SSH_WAIT_MS = 20_000;
const DEFAULT_GC_GRACE_SECONDS = 300;

export interface CollectedVm {
  id: string;
  name?: string;
  /** Seconds since the cloud says it was launched. */
  ageSeconds?: number;
}

export function createCloudActivities(deps: CloudDeps) {
  const openProvider = providerOpener(deps);
  async function withProvider<T>(
    cloud: CloudPlatform,
    fn: (p: CloudProvider) => Promise<T>,
  ): Promise<T> {
    const provider = await openProvider(cloud);
    try {
      return await fn(provider);
    } finally {
      provider.destroy?.();
    }
  }
  const hostKeyStore = createHostKeyStore(deps);
  const hostKeySeed = createVmHostKeySeed(deps);
  const owner = (cloud: CloudPlatform) => ({ key: OWNER_TAG_KEY, value: cloud.common.instanceTag });
  // Only the key generated at launch goes with the VM; a record someone else made stays.
  const forgetHostKey = (id: string) =>
    hostKeyStore.forget(vmHostKeyRecord(id), (record) =>
      record.endsWith(` ${GENERATED_KEY_COMMENT}`),
    );

  return {
    /**
     * Idempotent per launch key: a retried launch returns the same VM, never a second one.
     * The key must have been claimed (CloudLaunches search attribute) before calling this.
     */
    async launchInstance(input: {
      cloud: CloudPlatform;
      launchKey: string;
      /** e.g. the TaskRun tag and additional-instance-tags. */
      tags: Record<string, string>;
      /** A Secret whose `value` is the VM's user-data (a Machine's bootstrap data). */
      userDataSecret?: { namespace: string; name: string };
    }): Promise<Instance & { sshUser: string }> {
      const { cloud, launchKey } = input;
      const suffix = createHash('sha256').update(launchKey).digest('hex').slice(0, 10);
      const given = input.userDataSecret
        ? await readUserData(deps.core, input.userDataSecret)
        : platformUserData(cloud);
      // The VM's host key, made here (never in a workflow), the same on a retry: its private half
      // goes only into the user data, its public half into the host-key store before anything
      // connects to the VM.
      const hostKey = vmHostKey(await hostKeySeed(), launchKey);
      const userData = userDataWithHostKey(given, hostKey);
      checkUserDataSize(cloud, userData, given);
      return withProvider(cloud, async (provider) => {
        const vm = await provider.launch({
          name: `${cloud.common.instanceTag}-${suffix}`,
          owner: owner(cloud),
          tags: { ...input.tags, [PLATFORM_TAG_KEY]: cloud.platform },
          idempotencyKey: launchKey,
          userData,
        });
        await hostKeyStore.recordFirst(
          vmHostKeyRecord(vm.id),
          `${hostKey.publicKey} ${GENERATED_KEY_COMMENT}`,
        );
        return { ...vm, sshUser: provider.sshUser };
      });
    },

    async describeInstance(input: {
      cloud: CloudPlatform;
      id: string;
    }): Promise<Instance | undefined> {
      return withProvider(input.cloud, (provider) => provider.describe(input.id));
    },

    /**
     * The platform's VMs by owner tag, for a pool rebuilding its state. A VM tagged for another
     * platform (one sharing the instance-tag) is left out.
     */
    async listInstances(input: { cloud: CloudPlatform }): Promise<Instance[]> {
      const { cloud } = input;
      const all = await withProvider(cloud, (provider) => provider.listByOwner(owner(cloud)));
      return all.filter((vm) => (vm.tags[PLATFORM_TAG_KEY] ?? cloud.platform) === cloud.platform);
    },

    /** Idempotent: an instance that is already gone counts as terminated. */
    async terminateInstance(input: { cloud: CloudPlatform; id: string }): Promise<void> {
      await withProvider(input.cloud, (provider) => provider.terminate(input.id));
      await forgetHostKey(input.id);
    },

    /**
     * Terminates the platform's VMs (by owner tag) that no running workflow claims, sparing VMs
     * younger than the grace period. `claims` are launch keys and `adopted:<id>` entries.
     */
    async collectOrphans(input: {
      cloud: CloudPlatform;
      claims: string[];
    }): Promise<CollectedVm[]> {
      const { cloud } = input;
      const graceMs = (deps.gcGraceSeconds ?? DEFAULT_GC_GRACE_SECONDS) * 1000;
      return withProvider(cloud, async (provider) => {
        const ids = new Set(
          input.claims
            .filter((c) => c.startsWith(ADOPTED_CLAIM_PREFIX))
            .map((c) => c.slice(ADOPTED_CLAIM_PREFIX.length)),
        );
        const refs = new Set(
          input.claims
            .filter((c) => !c.startsWith(ADOPTED_CLAIM_PREFIX))
            .map((c) => provider.launchRef(c, owner(cloud))),
        );
        const collected: CollectedVm[] = [];
        for (const vm of await provider.listByOwner(owner(cloud))) {
          const age = vm.launchedAt ? Date.now() - Date.parse(vm.launchedAt) : undefined;
          if (ids.has(vm.id) || (vm.launchRef && refs.has(vm.launchRef))) continue;
          if (age === undefined || !(age >= graceMs)) continue; // unknown age: never guess
          await provider.terminate(vm.id);
          await forgetHostKey(vm.id);
          const entry = {
            id: vm.id,
            ...(vm.tags.Name ? { name: vm.tags.Name } : {}),
            ageSeconds: Math.round(age / 1000),
          };
          log.warn('terminated an orphaned VM no running workflow owns', {
            platform: cloud.platform,
            ...entry,
          });
          await warnOnHostConfig(deps.core, deps.engineNamespace, {
            reason: 'OrphanVmCollected',
            message:
              `Terminated ${cloud.platform} VM ${vm.id}${vm.tags.Name ? ` (${vm.tags.Name})` : ''}, ` +
              `launched ${entry.ageSeconds}s ago with owner tag ${cloud.common.instanceTag}: no running workflow owns it`,
            dedupKey: `orphan/${vm.id}`,
          });
          collected.push(entry);
        }
        return collected;
      });
    },

    /**
     * Whether an SSH server answers at the address (its banner arrives). With `waitMs`, keeps
     * trying for that long, starting an attempt every 200 ms (each may take up to a second, as
     * a SYN to a VM still booting often goes unanswered), so a VM is served the moment its sshd
     * is up rather than at the next check-interval.
     */
    async sshReachable(input: { address: string; waitMs?: number }): Promise<boolean> {
      if (!input.waitMs) return sshBanner(input.address, SSH_PROBE_TIMEOUT_MS);
      const deadline = Date.now() + Math.min(input.waitMs, MAX_SSH_WAIT_MS);
      return new Promise((resolve) => {
        let pending = 0;
        let settled = false;
        const settle = (ok: boolean) => {
          settled = true;
          clearInterval(timer);
          resolve(ok);
        };
        const attempt = () => {
          pending++;
          void sshBanner(input.address, SSH_ATTEMPT_TIMEOUT_MS).then((ok) => {
            pending--;
            if (settled) return;
            if (ok) settle(true);
            else if (pending === 0 && Date.now() >= deadline) settle(false);
          });
        };
        const timer = setInterval(() => {
          if (settled) return;
          if (Date.now() < deadline) attempt();
          else if (pending === 0) settle(false);
        }, SSH_RETRY_MS);
        attempt();
      });
    },
  };
}

export type CloudActivities = ReturnType<typeof createCloudActivities>;

/** The platform's own user-data (host-config `user-data`), where its provider takes one. */
function platformUserData(cloud: CloudPlatform): string | undefined {
  return providerSpec(cloud.provider.type).userData(cloud.provider.config);
}

/** A cloud's limit on user data (AWS: 16 KB), checked in sizes only: the data holds secrets. */
function checkUserDataSize(cloud: CloudPlatform, userData: string, given: string | undefined) {
  const bytes = Buffer.byteLength(userData, 'utf8');
  const { maxUserDataBytes: most, cloudName } = providerSpec(cloud.provider.type);
  if (most === undefined || bytes <= most) return;
  const givenBytes = given === undefined ? 0 : Buffer.byteLength(given, 'utf8');
  throw ApplicationFailure.nonRetryable(
    `the user data of a ${cloud.platform} VM would be ${bytes} bytes (${givenBytes} given, ` +
      `${bytes - givenBytes} for the VM's SSH host key); ${cloudName} accepts at most ` +
      `${most}: shorten the user-data (or the Machine's bootstrap data)`,
    'UserDataTooLarge',
  );
}

/** The Secret's `value`, which stays in this process: only the cloud's API sees it. */
async function readUserData(
  core: CoreV1Api,
  ref: { namespace: string; name: string },
): Promise<string> {
  let value: string | undefined;
  try {
    value = (await core.readNamespacedSecret(ref)).data?.[BOOTSTRAP_DATA_KEY];
  } catch (err) {
    if (!isNotFound(err)) rethrowKube(`read Secret ${ref.namespace}/${ref.name}`, err);
  }
  if (!value) {
    throw ApplicationFailure.nonRetryable(
      `Secret ${ref.namespace}/${ref.name} has no key "${BOOTSTRAP_DATA_KEY}" (or is gone)`,
      'BootstrapDataMissing',
    );
  }
  return Buffer.from(value, 'base64').toString('utf8');
}
