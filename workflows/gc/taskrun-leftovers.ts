// Garbage collection of what TaskRun workflows leave behind when they cannot clean up after
// themselves, typically because an operator terminated one (docs/architecture.md, "Nothing leaks when a workflow is terminated by hand"): build users
// on static hosts that no running workflow owns, TaskRun Secrets whose TaskRun is gone, and the
// Locks of workflows that ended without releasing them.
// Runs at each worker start and every interval (the engine's resync period by default).
import { isCancellation, log, setCurrentDetails } from '@temporalio/workflow';
import { innermostMessage } from '../../shared/failures.js';
import type { LeftoversGcInput } from '../../shared/contracts/gc.js';
import { leftoversGc } from './activity-proxies.js';
import { metrics } from '../metrics.js';
import { collectEveryInterval } from './passes.js';
import { continueAsNewOnCurrentBuild } from '../kit/new-build.js';

export async function taskRunLeftoversGcWorkflow(input: LeftoversGcInput): Promise<void> {
  await collectEveryInterval(input.intervalSeconds, async () => {
    let lines: string[];
    try {
      const found = await leftoversGc.collectTaskRunLeftovers.executeWithOptions(
        { summary: 'Remove build users and Secrets no running TaskRun workflow owns' },
        [{ userGraceSeconds: input.graceSeconds, secretGraceSeconds: input.graceSeconds }],
      );
      for (const { host } of found.users) metrics.orphanUsersCollected.add(1, { host });
      if (found.secrets.length) metrics.orphanSecretsCollected.add(found.secrets.length);
      lines = [
        ...found.users.map(({ host, user }) => `removed user ${user} from ${host}`),
        ...found.secrets.map(({ namespace, name }) => `deleted Secret ${namespace}/${name}`),
        ...(found.locks ?? []).map(
          ({ lock, holder }) => `released Lock ${lock} of ended ${holder}`,
        ),
        ...found.failures.map((failure) => `could not look: ${failure}`),
      ];
    } catch (err) {
      // Nothing could be read this time (visibility, host-config): the next pass tries again.
      if (isCancellation(err)) throw err;
      log.warn('collecting TaskRun leftovers failed', { error: innermostMessage(err) });
      lines = [`failed: ${innermostMessage(err)}`];
    }
    setCurrentDetails(
      `Every ${input.intervalSeconds}s (and at each worker start) removes build users on static ` +
        'hosts and TaskRun Secrets that no running TaskRun workflow owns, and releases Locks of ' +
        'workflows that ended.\n\nLast pass:\n- ' +
        (lines.join('\n- ') || 'nothing to collect'),
    );
  });
  await continueAsNewOnCurrentBuild<typeof taskRunLeftoversGcWorkflow>(input);
}
