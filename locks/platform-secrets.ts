// What a platform's allocator locks, so that the work it started can always be finished: while a
// cloud platform has live VMs, its credentials Secret (aws-secret / secret) and its ssh-secret,
// without which no VM can be terminated or cleaned; while builds run on a static host, the
// host's admin-key Secret, without which no build user can be removed. DELETE only: rotating a
// credential (an update) stays possible.
import type { CoreV1Api } from '@kubernetes/client-node';
import type { CloudPlatform } from '../platform-config/host-config.js';
import { providerSpec } from '../platform-config/cloud-providers.js';
import type { LockTarget } from './api.js';
import { readHostConfig } from '../activities/kubernetes/host-config.js';
import type { LockSync, createLockActivities } from './adapter.js';

export interface PlatformLockInput {
  platform: string;
  /** The allocator's workflow id. */
  holder: string;
  /** Static hosts with builds on them. */
  busyHosts: string[];
  /** Whether the platform has VMs that may still need terminating. */
  vmsLive: boolean;
}

export function createPlatformLockActivities(deps: {
  core: CoreV1Api;
  engineNamespace: string;
  locks: ReturnType<typeof createLockActivities>;
}) {
  const secret = (name: string, reason: string): LockTarget => ({
    namespace: deps.engineNamespace,
    name,
    resource: 'secrets',
    apiGroup: '',
    operations: ['DELETE'],
    reason,
  });

  return {
    /**
     * Locks the Secrets the platform's work in progress needs and releases the rest. With the
     * platform gone from host-config (or broken there), nothing changes: its Secrets are not
     * known, and what was locked stays locked until the work is done (`unresolved`).
     */
    async lockPlatformDependencies(
      input: PlatformLockInput,
    ): Promise<LockSync & { unresolved?: boolean }> {
      const read = await readHostConfig(deps.core, deps.engineNamespace);
      const working = input.vmsLive || input.busyHosts.length > 0;
      if (!read.found || read.config.problems.some((p) => p.platform === input.platform)) {
        if (working) return { held: [], lockedByOthers: [], unresolved: true };
        return deps.locks.syncLocks({ holder: input.holder, wanted: [] });
      }
      const wanted: LockTarget[] = [];
      const cloud = read.config.dynamic.find((d) => d.platform === input.platform);
      if (cloud && input.vmsLive) {
        const why = `platform ${input.platform} has VMs that hostflow must be able to terminate`;
        wanted.push(secret(credentialsSecret(cloud), why));
        wanted.push(secret(cloud.common.sshSecret, why));
      }
      for (const host of read.config.staticHosts) {
        if (host.platform !== input.platform || !input.busyHosts.includes(host.name)) continue;
        wanted.push(
          secret(
            host.secret,
            `builds run on host ${host.name}; hostflow removes their users with this key`,
          ),
        );
      }
      return deps.locks.syncLocks({ holder: input.holder, wanted: dedupe(wanted) });
    },
  };
}

export type PlatformLockActivities = ReturnType<typeof createPlatformLockActivities>;

function credentialsSecret(cloud: CloudPlatform): string {
  return providerSpec(cloud.provider.type).credentialsSecret(cloud.provider.config);
}

/** One target per Secret: hosts sharing an admin key, or an ssh-secret that is also the key. */
function dedupe(targets: LockTarget[]): LockTarget[] {
  const byName = new Map<string, LockTarget>();
  for (const target of targets) {
    const seen = byName.get(target.name);
    byName.set(
      target.name,
      seen && seen.reason !== target.reason
        ? { ...seen, reason: `${seen.reason}; ${target.reason}` }
        : (seen ?? target),
    );
  }
  return [...byName.values()];
}
