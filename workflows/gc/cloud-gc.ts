// Garbage collection of cloud VMs (docs/architecture.md, "Garbage collection"): at worker start and every interval,
// each dynamic and pool platform's VMs are listed by owner tag, and the ones no running workflow
// claims are terminated. Workflows claim a VM's launch key before launching it (CloudLaunches),
// so a VM is only ever collected once its owner is gone, e.g. its TaskRun workflow was
// terminated by hand, or it was launched by a worker that died and never came back for it.
import { isCancellation, log, setCurrentDetails } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import type { CloudGcInput } from '../../shared/contracts/gc.js';
import { cloudGc } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { collectEveryInterval } from './passes.js';
import { continueAsNewOnCurrentBuild } from '../kit/new-build.js';

export async function cloudGcWorkflow(input: CloudGcInput): Promise<void> {
  await collectEveryInterval(input.intervalSeconds, async () => {
    const lines = await collectPass();
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
