// One durable workflow per Provisioning (`provisioning/<ns>/<name>`), Akraino ICN's BPA operator
// as a narrative. For each spec it sees: assign roles from the BareMetalHosts, find each node's IP,
// then carry out a plan (plans.ts): the first time, hand out the installer key, run kubespray
// cluster.yml and keep the kubeconfig; later, remove-node.yml and scale.yml for the workers that
// went and came. What can never work is refused before anything runs. A failed step stays
// Failed, its hosts kept, until on-call resumes it (the retry annotation) or the spec changes.
// Between changes it gives the ClusterOperations waiting on it their turns (operation-line.ts).
// On delete: reset the hosts, release them, remove what was made, then the finalizer.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  isCancellation,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { ProvisioningInput } from '../../shared/contracts/provisioning.js';
import { provisioningApi } from './activity-proxies.js';
import { carryOut } from './carrying-out.js';
import { unlockAll } from './host-hold.js';
import { LoopState, Observed, type Carried } from './loop-state.js';
import { hearOperations } from './operation-handlers.js';
import { planFor } from './planning.js';
import { tearDown } from './tear-down.js';
import { continueAsNewOnCurrentBuild } from '../kit/new-build.js';

export async function provisioningWorkflow(input: ProvisioningInput): Promise<void> {
  const carried = input.carried as Carried | undefined;
  const observed = new Observed(carried?.latest);
  await condition(() => observed.latest !== undefined);
  const run = new LoopState(input, observed, carried);
  hearOperations(run);
  const { provisioner, operations, teller } = run;
  // The loop's awaits are where its recorded histories had them: one more or less between two
  // commands could reorder them beside the teller's and the handlers' (loop-state.ts).
  try {
    for (;;) {
      const looks = run.looksForHosts();
      // Waiting operations that cannot start are told why; a shut window is waited out.
      const why = run.whyOperationsWait();
      teller.waiting(why);
      const moved = await run.change(looks, why?.opensAt);
      // Refused for want of a free host, and nothing changed: plan the same spec again.
      const lookAgain = !moved && !run.changed() && looks !== undefined;
      if (!run.changed() && !lookAgain) {
        if (run.operationDue()) {
          // Its place was said before its turn, never over it.
          await condition(() => run.told());
          await operations.runNext(provisioner, run.latest.spec.operationHistoryLimit);
          continue;
        }
        // Woken by the window's timer or the line: look again at why they wait.
        if (!run.full()) continue;
        // Time to continue as new: the next run waits on and gives turns, with all this one knew.
        await condition(() => allHandlersFinished() && run.told());
        return await continueAsNewOnCurrentBuild<typeof provisioningWorkflow>({
          ...input,
          carried: run.carried(),
        });
      }
      const seen = run.latest;
      if (seen.deleting) break;
      if (!lookAgain) provisioner.tries++; // a look again is the same try: its Events are one
      const failed = run.failedPlan(seen);
      // On-call fixed the cause: resume where it failed, with the same nodes.
      if (failed) await run.sayRetrying(failed, seen);
      else provisioner.generation = seen.generation;
      const plan = failed?.plan ?? (await planFor(provisioner, seen));
      // It looked again by itself and took the hosts it waited for: says so.
      if (!failed && lookAgain && typeof plan === 'object') {
        await run.sayHostsFreed(plan, looks!);
      }
      run.stuck = undefined;
      if (plan === 'gone') {
        // Gone without us (its finalizer removed by hand): free what it held all the same.
        await run.dropOperations('its Provisioning is gone');
        await tearDown(provisioner);
        return;
      }
      if (plan === 'refused') {
        run.stuckRefused(seen, lookAgain, looks);
        continue;
      }
      run.changing = plan.phase;
      const from = failed?.at ?? 0;
      const failedAt = await carryOut(provisioner, plan, from, () => !run.latest.deleting);
      run.changing = undefined;
      if (failedAt !== undefined) run.stuckFailed(plan, failedAt, seen);
    }
    await run.dropOperations('its Provisioning is being deleted');
    await tearDown(provisioner);
    await provisioningApi.removeProvisioningFinalizer(provisioner.ref);
    setCurrentDetails(`**${input.namespace}/${input.name}**: deleted; hosts released.`);
  } catch (err) {
    // Cancelled by an operator: the Locks go; the hosts stay claimed, for a person to look at.
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => unlockAll(provisioner));
    throw err;
  }
}
