// The engine's secret from which each cloud VM's host key is derived (cloud/vm-host-key.ts):
// Secret hostflow-vm-host-key-seed in the engine namespace, made by the first worker that
// launches a VM. Deriving the key from the launch key makes a retried launch give the VM the
// same key: a launch whose worker died after the cloud created the VM, but before its key was
// recorded, records the key that VM was given.
import type { CoreV1Api } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../shared/ownership.js';
import { isConflict, isNotFound, rethrowKube } from './errors.js';

export const VM_HOST_KEY_SEED_SECRET = 'hostflow-vm-host-key-seed';
const SEED_KEY = 'seed';
const SEED_BYTES = 32;

/** The seed, made (and stored) on first use. Never logged, never leaves the worker. */
export function createVmHostKeySeed(deps: {
  core: CoreV1Api;
  engineNamespace: string;
}): () => Promise<Buffer> {
  const { core, engineNamespace: namespace } = deps;
  const where = `Secret ${namespace}/${VM_HOST_KEY_SEED_SECRET}`;

  const read = async (): Promise<Buffer | undefined> => {
    let secret;
    try {
      secret = await core.readNamespacedSecret({ name: VM_HOST_KEY_SEED_SECRET, namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      rethrowKube(`read ${where}`, err);
    }
    // A seed someone else wrote would let them know every VM's host key: only the engine's own.
    const seed = Buffer.from(secret.data?.[SEED_KEY] ?? '', 'base64');
    if (secret.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY || seed.length !== SEED_BYTES) {
      throw ApplicationFailure.nonRetryable(
        `${where} was not made by hostflow (label ${MANAGED_BY_LABEL}: ${MANAGED_BY} and a ` +
          `${SEED_BYTES}-byte "${SEED_KEY}"); hostflow derives cloud VMs' host keys from it and ` +
          'launches no VM until it is deleted (hostflow then makes a new one)',
        'VmHostKeySeedNotOwned',
      );
    }
    return seed;
  };

  // Read at each launch (no cache): every worker derives from the seed that holds now.
  return async () => {
    let seed = await read();
    if (!seed) {
      try {
        await core.createNamespacedSecret({
          namespace,
          body: {
            metadata: {
              name: VM_HOST_KEY_SEED_SECRET,
              labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
            },
            type: 'Opaque',
            data: { [SEED_KEY]: randomBytes(SEED_BYTES).toString('base64') },
          },
        });
      } catch (err) {
        if (!isConflict(err)) rethrowKube(`create ${where}`, err);
        // another worker made it first: theirs holds
      }
      seed = await read();
      if (!seed) {
        throw ApplicationFailure.retryable(`${where} vanished as it was made`, 'KubernetesHttp404');
      }
    }
    return seed;
  };
}
