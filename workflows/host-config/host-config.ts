// host-config as an entity (`hostconfig/<engine namespace>`): each change the bridge observes
// is checked once — every problem becomes a Warning Event on the ConfigMap — and every
// allocator is told to reload, so added hosts take waiting work at once. It never fails on a
// failing dependency, and never continues-as-new with a change still unhandled.
import {
  allHandlersFinished,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  hostConfigObserved,
  type HostConfigWorkflowInput,
} from '../../shared/contracts/host-config.js';
import type { HostConfigActivities } from '../../activities/kubernetes/host-config.js';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { metrics } from '../metrics.js';
import { untilDone } from '../kit/retry.js';
import { MAX_HISTORY } from '../history-limit.js';
import { ALLOCATOR_CALL, KUBE_CALL } from '../kit/activity-options.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

/** Reading host-config and checking it. */
const hostConfigApi = proxyLocalActivities<HostConfigActivities>(KUBE_CALL);
/** Telling every allocator to reload. */
const allocatorApi = proxyActivities<TemporalActivities>(ALLOCATOR_CALL);

export async function hostConfigWorkflow(input: HostConfigWorkflowInput): Promise<void> {
  let latest = input.handled;
  let handled = input.handled;
  const maxHistory = input.maxHistory ?? MAX_HISTORY.hostConfig;
  setHandler(hostConfigObserved, ({ resourceVersion }) => {
    latest = resourceVersion;
  });
  const waitedOut = <T>(what: string, call: () => Promise<T>) =>
    untilDone(call, {
      what,
      evenFinal: true,
      report: ({ cause, waitMs, attempt }) => {
        metrics.waits.add(1, { platform: '', dependency: 'kubernetes' });
        setCurrentDetails(
          `host-config in ${input.engineNamespace}: cannot ${what} (try ${attempt}, next in ` +
            `${waitMs / 1000} s): ${cause}`,
        );
      },
    });
  for (;;) {
    await condition(() => latest !== handled || newBuildCurrent());
    handled = latest;
    const { problems } = await waitedOut('read and check it', () =>
      hostConfigApi.reportHostConfigProblems(),
    );
    const allocators = await allocatorApi.notifyAllocators();
    setCurrentDetails(
      `host-config in ${input.engineNamespace} (resourceVersion ${handled}): ` +
        (problems.length
          ? `${problems.length} problem(s):\n- ${problems.join('\n- ')}`
          : 'no problems') +
        `\n\n${allocators} allocator(s) reloaded it.`,
    );
    const { continueAsNewSuggested, historyLength } = workflowInfo();
    if (continueAsNewSuggested || historyLength > maxHistory || newBuildCurrent()) {
      await condition(allHandlersFinished);
      // A change that arrived meanwhile is handled by this run: continue-as-new carries only
      // what was handled, so it would be lost.
      if (latest !== handled) {
        continue;
      }
      await continueAsNewOnCurrentBuild<typeof hostConfigWorkflow>({
        engineNamespace: input.engineNamespace,
        handled,
        ...(input.maxHistory ? { maxHistory: input.maxHistory } : {}),
      });
    }
  }
}
