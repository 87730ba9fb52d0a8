// Garbage collection of cloud VMs (docs/architecture.md, "Garbage collection"): at worker start and every interval,
// each dynamic and pool platform's VMs are listed by owner tag, and the ones no running workflow
// claims are terminated. Workflows claim a VM's launch key before launching it (CloudLaunches),
// so a VM is only ever collected once its owner is gone, e.g. its TaskRun workflow was
// terminated by hand, or it was launched by a worker that died and never came back for it.
import { isCancellation, log, patched, setCurrentDetails } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import type { CloudGcInput } from '../../shared/contracts/gc.js';
import { cloudGc, hostConfigApi, temporalApi } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { collectEveryInterval } from './passes.js';
import { continueAsNewOnCurrentBuild } from '../kit/new-build.js';

/**
 * v2: a pass is one activity, so the history holds only what was collected (before, it recorded
 * every platform's config and every claim of every build in flight, on every pass).
 */
export const PATCH_ONE_ACTIVITY_PER_PASS = 'cloud-gc-one-activity-per-pass';

export async function cloudGcWorkflow(input: CloudGcInput): Promise<void> {
  await collectEveryInterval(input.intervalSeconds, async () => {
    const lines = patched(PATCH_ONE_ACTIVITY_PER_PASS) ? await collectPass() : await collectV1();
    setCurrentDetails(
      `Every ${input.intervalSeconds}s (and at each worker start) terminates cloud VMs no running ` +
        `workflow owns.\n\nLast pass:\n- ${lines.join('\n- ') || 'no cloud platforms configured'}`,
    );
  });
  await continueAsNewOnCurrentBuild<typeof cloudGcWorkflow>(input);
}

async function collectPass(): Promise<string[]> {
  try {
    const passes = await cloudGc.collectOrphanVms.executeWithOptions(
      { summary: 'Collect cloud VMs no running workflow owns' },
      [],
    );
    return passes.map(({ platform, collected, failed }) => {
      metrics.orphansCollected.add(collected.length, { platform });
      if (failed) return `${platform}: failed: ${failed}`;
      return `${platform}: ${collected.length ? `terminated ${collected.join(', ')}` : 'no orphans'}`;
    });
  } catch (err) {
    // Nothing read (host-config, visibility): the next pass tries again. GC never fails.
    if (isCancellation(err)) throw err;
    log.warn('orphan collection failed', { error: innermostMessage(err) });
    return [`failed: ${innermostMessage(err)}`];
  }
}

/** Before v2: the pass from the workflow, a call per platform. */
async function collectV1(): Promise<string[]> {
  const platforms = await hostConfigApi.loadCloudPlatforms();
  const claims = platforms.length > 0 ? await temporalApi.claimedLaunches() : [];
  const lines: string[] = [];
  for (const cloud of platforms) {
    try {
      const collected = await cloudGc.collectOrphans.executeWithOptions(
        { summary: `Collect ${cloud.platform} VMs no running workflow owns` },
        [{ cloud, claims }],
      );
      metrics.orphansCollected.add(collected.length, { platform: cloud.platform });
      lines.push(
        `${cloud.platform}: ${collected.length ? `terminated ${collected.map((vm) => vm.id).join(', ')}` : 'no orphans'}`,
      );
    } catch (err) {
      // One platform's broken credentials must not stop the others' collection.
      log.warn('orphan collection failed', {
        platform: cloud.platform,
        error: innermostMessage(err),
      });
      lines.push(`${cloud.platform}: failed: ${innermostMessage(err)}`);
    }
  }
  return lines;
}
