// host-config as an entity (`hostconfig/<engine namespace>`): each change the bridge observes
// is checked once — every problem becomes a Warning Event on the ConfigMap — and every
// allocator is told to reload, so added hosts take waiting work at once.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { allocator, kube } from '../activities.js';
import { hostConfigObserved } from '../../shared/messages.js';
import type { HostConfigWorkflowInput } from '../../shared/types.js';

const MAX_HISTORY = 2_000;

export async function hostConfigWorkflow(input: HostConfigWorkflowInput): Promise<void> {
  let latest = input.handled;
  let handled = input.handled;
  setHandler(hostConfigObserved, ({ resourceVersion }) => {
    latest = resourceVersion;
  });
  for (;;) {
    await condition(() => latest !== handled);
    handled = latest;
    const { problems } = await kube.reportHostConfigProblems();
    const allocators = await allocator.notifyAllocators();
    setCurrentDetails(
      `host-config in ${input.engineNamespace} (resourceVersion ${handled}): ` +
        (problems.length
          ? `${problems.length} problem(s):\n- ${problems.join('\n- ')}`
          : 'no problems') +
        `\n\n${allocators} allocator(s) reloaded it.`,
    );
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof hostConfigWorkflow>({
        engineNamespace: input.engineNamespace,
        handled,
      });
    }
  }
}
