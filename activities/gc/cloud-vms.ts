// One pass of cloud VM garbage collection (docs/architecture.md, "Garbage collection"), as a single activity: what it
// reads (every platform's config, every running workflow's claims) stays in the worker, so the
// GC workflow's history records only what was collected, whatever the number of builds.
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { innermostMessage } from '../../shared/failures.js';
import type { CollectedVm } from '../cloud/instances.js';

export interface CloudGcDeps {
  loadCloudPlatforms(): Promise<CloudPlatform[]>;
  claimedLaunches(): Promise<string[]>;
  collectOrphans(input: { cloud: CloudPlatform; claims: string[] }): Promise<CollectedVm[]>;
}

export interface CloudGcPass {
  platform: string;
  /** Ids of the VMs terminated. */
  collected: string[];
  /** Why this platform could not be collected this time. */
  failed?: string;
}

export function createCloudGcActivities(deps: CloudGcDeps) {
  return {
    /** Terminates every platform's VMs that no running workflow owns; one platform's trouble spares the others. */
    async collectOrphanVms(): Promise<CloudGcPass[]> {
      const platforms = await deps.loadCloudPlatforms();
      const claims = platforms.length > 0 ? await deps.claimedLaunches() : [];
      const passes: CloudGcPass[] = [];
      for (const cloud of platforms) {
        try {
          const collected = await deps.collectOrphans({ cloud, claims });
          passes.push({ platform: cloud.platform, collected: collected.map((vm) => vm.id) });
        } catch (err) {
          passes.push({ platform: cloud.platform, collected: [], failed: innermostMessage(err) });
        }
      }
      return passes;
    },
  };
}

export type CloudGcActivities = ReturnType<typeof createCloudGcActivities>;
