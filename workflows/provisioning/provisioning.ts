// One durable workflow per Provisioning (`provisioning/<ns>/<name>`), Akraino ICN's BPA operator
// as a narrative. For each spec it sees: assign roles from the BareMetalHosts, find each node's IP,
// then carry out a plan (plans.ts): the first time, hand out the installer key, run kubespray
// cluster.yml and keep the kubeconfig; later, remove-node.yml and scale.yml for the workers that
// went and came. What can never work is refused before anything runs. A failed step stays
// Failed, its hosts kept, until on-call resumes it (the retry annotation) or the spec changes.
// On delete: reset the hosts, release them, remove what was made, then the finalizer.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import {
  provisioningObserved,
  type ProvisioningObservation,
  type ProvisioningInput,
} from '../../shared/contracts/provisioning.js';
import { clusterOperationObserved } from '../../shared/contracts/cluster-operation.js';
import { provisioningApi } from './activities.js';
import { historyFull } from '../history-limit.js';
import { backoffMs } from '../kit/retry.js';
import type { Plan } from './plans.js';
import { operationWait, PATCH_OPERATION_WAITS } from './operation-wait.js';
import { OperationTeller, PATCH_OPERATIONS_TOLD_APART } from './operation-teller.js';
import { Operations, PATCH_OPERATIONS, type OperationsState } from './operations.js';
import { carryOut } from './carrying-out.js';
import { unlockAll } from './host-hold.js';
import { sayHostsFreed } from './notices.js';
import { PATCH_SAY_HOSTS_FREED } from './patches.js';
import { planFor } from './planning.js';
import { Provisioner, type ProvisionerState } from './provisioner.js';
import { provisioningBeforePlans } from './provisioning-v1.js';
import { tearDown } from './tear-down.js';

/** v2: scaling, resuming a failed step, and Locks on the hosts and the spec. */
export const PATCH_PLANS = 'provisioning-plans-scale-retry-lock';

/**
 * v3: while it waits for its next change it continues as new before its history limit (every
 * relist resends the resource, so even an idle Provisioning's history grows), carrying Carried.
 */
export const PATCH_CONTINUE_AS_NEW = 'provisioning-continue-as-new';

/**
 * v4: a spec refused only because the hosts it needs are not free now is planned again on timers
 * (HOST_LOOK_FIRST_MS doubling to HOST_LOOK_MAX_MS), so it goes on by itself once one frees up.
 */
export const PATCH_LOOK_AGAIN_FOR_HOSTS = 'provisioning-look-again-for-hosts';
const HOST_LOOK_FIRST_MS = 20_000;
const HOST_LOOK_MAX_MS = 10 * 60_000;

/**
 * Why the workflow waits: a plan that failed at a step, or a spec it refused (`looks`: how often
 * it looked again for hosts that were not free).
 */
type Stuck =
  { plan: Plan; at: number; retry?: string } | { refused: true; retry?: string; looks?: number };

/** What the next run picks up: the last observation, why it waits, and what it knows. */
interface Carried {
  latest: ProvisioningObservation;
  stuck?: Stuck;
  provisioner: ProvisionerState;
  operations?: OperationsState;
}

/** How often it looked again for free hosts, when it waits for one (else undefined). */
function lookingForHosts(stuck: Stuck | undefined): number | undefined {
  if (!stuck || !('refused' in stuck) || stuck.looks === undefined) return undefined;
  return patched(PATCH_LOOK_AGAIN_FOR_HOSTS) ? stuck.looks : undefined;
}

export async function provisioningWorkflow(input: ProvisioningInput): Promise<void> {
  // Runs started before plans go on with the code they started with.
  if (!patched(PATCH_PLANS)) return provisioningBeforePlans(input);
  const { namespace, name } = input;
  // Decided once per run: runs recorded before v3 never continue.
  const mayContinue = patched(PATCH_CONTINUE_AS_NEW);
  const carried = input.carried as Carried | undefined;
  let latest: ProvisioningObservation | undefined = carried?.latest;
  setHandler(provisioningObserved, (seen) => {
    if (latest?.deleting) return;
    const newer = !latest || seen.deleting || seen.generation > latest.generation;
    const retried = latest && seen.generation === latest.generation && seen.retry !== latest.retry;
    if (newer || retried) latest = seen;
  });
  await condition(() => latest !== undefined);
  const ref = { namespace, name, uid: latest!.uid };
  const provisioner = new Provisioner(ref, latest!.cluster ?? '', carried?.provisioner);
  const { report } = provisioner;
  let stuck: Stuck | undefined = carried?.stuck;
  // Decided once per run: runs recorded before v9 take no ClusterOperations.
  const operations = patched(PATCH_OPERATIONS)
    ? new Operations(ref, carried?.operations, patched(PATCH_OPERATIONS_TOLD_APART))
    : undefined;
  // The spec change it is carrying out, if any: operations wait for it.
  let changing: string | undefined;
  // Decided when first needed: runs recorded before v10 neither say why nor know windows.
  let saysWhy: boolean | undefined;
  const operationWaits = () => (saysWhy ??= patched(PATCH_OPERATION_WAITS));
  const whyOperationsWait = () =>
    operationWait({
      name,
      installed: provisioner.isInstalled,
      ...(changing ? { changing } : {}),
      ...(stuck
        ? { stuck: 'refused' in stuck ? 'refused' : stuck.plan.steps[stuck.at]!.what }
        : {}),
      ...(latest!.spec.maintenanceWindow ? { window: latest!.spec.maintenanceWindow } : {}),
      now: Date.now(),
    });
  const waitsFor = () => `cluster ${provisioner.cluster || name}`;
  const wait = () => (operationWaits() ? whyOperationsWait() : undefined);
  // v18: the handler records; the teller tells the line, and the loop runs it.
  const teller = operations?.toldApart
    ? new OperationTeller(operations, waitsFor, wait)
    : undefined;
  if (teller) {
    setHandler(clusterOperationObserved, (seen) => teller.observe(seen));
    void teller.run();
  } else {
    // Runs recorded before v18 tell from the handler, beside the loop, as they did.
    /* eslint-disable hostflow/no-await-in-handler -- kept as it ran, for replay; fixed in v18 */
    setHandler(clusterOperationObserved, async (seen) => {
      const ahead = operations?.observe(seen);
      if (typeof ahead === 'object') return operations!.sayRefused(seen, ahead.refused);
      if (ahead !== undefined) await operations!.sayQueued(seen, ahead, waitsFor(), wait());
      // The line moved: one joined it ahead of others, or one left it. Those behind are told (v12).
      if (ahead !== undefined || seen.deleting) await operations?.sayPlaces(waitsFor(), wait);
    });
    /* eslint-enable hostflow/no-await-in-handler */
  }
  // Nothing left to tell the queued operations, nor being told.
  const told = () => teller?.idle ?? true;
  // Operations still waiting when the Provisioning goes end unrun, once the teller is done.
  const dropOperations = async (why: string) => {
    if (teller) await condition(told);
    await operations?.dropAll(why);
  };
  // An operation runs on the cluster as installed, not while a failed step waits for on-call,
  // and (v10) only in the Provisioning's maintenance window.
  const operationDue = () =>
    !!operations?.waiting && provisioner.isInstalled && !stuck && !(saysWhy && whyOperationsWait());
  const retryAsked = () => stuck !== undefined && latest!.retry !== stuck.retry;
  const changed = () =>
    latest!.deleting || latest!.generation !== provisioner.generation || retryAsked();
  const full = () => mayContinue && historyFull(input.maxHistory, 'provisioning');

  try {
    for (;;) {
      const looks = lookingForHosts(stuck);
      // Queued operations that cannot start are told why; a shut window is waited out (v10).
      const why = operations?.waiting && operationWaits() ? whyOperationsWait() : undefined;
      if (teller) teller.waiting(why);
      else await operations?.sayWaiting(waitsFor(), why);
      const wakeAt = why?.opensAt;
      // An operation came or went meanwhile: look again at why they wait, and until when.
      const waiting = operations?.waiting;
      const queueMoved = () => !!saysWhy && operations?.waiting !== waiting;
      const due = () => changed() || full() || operationDue() || queueMoved();
      const moved =
        looks === undefined && wakeAt === undefined
          ? await condition(due).then(() => true)
          : await condition(
              due,
              looks !== undefined
                ? backoffMs(looks + 1, HOST_LOOK_MAX_MS, HOST_LOOK_FIRST_MS)
                : Math.max(1, wakeAt! - Date.now()),
            );
      // Refused for want of a free host, and nothing changed: plan the same spec again.
      const lookAgain = !moved && !changed() && looks !== undefined;
      if (!changed() && !lookAgain) {
        if (operationDue()) {
          // Its place was said before it runs, never over its run (v18).
          if (teller) await condition(told);
          await operations!.runNext(provisioner, latest!.spec.operationHistoryLimit);
          continue;
        }
        // Woken by the window's timer or the queue (v10): look again at why they wait.
        if (!full()) continue;
        // Nothing to do but wait: the next run waits on, knowing all this one knew.
        await condition(() => allHandlersFinished() && told());
        const next: Carried = { latest: latest!, provisioner: provisioner.state() };
        if (stuck) next.stuck = stuck;
        if (operations) next.operations = operations.state();
        return await continueAsNew<typeof provisioningWorkflow>({ ...input, carried: next });
      }
      const seen = latest!;
      if (seen.deleting) break;
      if (!lookAgain) provisioner.tries++; // a look again is the same try: its Events are one
      let plan: Plan | 'refused' | 'gone';
      let from = 0;
      if (seen.generation === provisioner.generation && stuck && 'plan' in stuck) {
        // On-call fixed the cause: resume where it failed, with the same nodes.
        ({ plan, at: from } = stuck);
        await report.event(
          'Normal',
          'Retrying',
          `resuming at "${plan.steps[from]!.what}" (${seen.retry ?? 'retry'})`,
        );
      } else {
        provisioner.generation = seen.generation;
        plan = await planFor(provisioner, seen);
        // It looked again by itself and took the hosts it waited for: says so (v15).
        if (lookAgain && typeof plan === 'object' && patched(PATCH_SAY_HOSTS_FREED)) {
          await sayHostsFreed(report, {
            plan,
            cluster: provisioner.cluster,
            installed: provisioner.isInstalled,
            looks: looks!,
            searched: provisioner.searched,
          });
        }
      }
      stuck = undefined;
      if (plan === 'gone') {
        // Gone without us (its finalizer removed by hand): free what it held all the same.
        await dropOperations('its Provisioning is gone');
        await tearDown(provisioner);
        return;
      }
      if (plan === 'refused') {
        stuck = { refused: true, retry: seen.retry };
        if (provisioner.waitsForHost) stuck.looks = lookAgain ? (looks ?? 0) + 1 : 0;
        continue;
      }
      changing = plan.phase;
      const failedAt = await carryOut(provisioner, plan, from, () => !latest!.deleting);
      changing = undefined;
      if (failedAt !== undefined) stuck = { plan, at: failedAt, retry: seen.retry };
    }
    await dropOperations('its Provisioning is being deleted');
    await tearDown(provisioner);
    await provisioningApi.removeProvisioningFinalizer(ref);
    setCurrentDetails(`**${namespace}/${name}**: deleted; hosts released.`);
  } catch (err) {
    // Cancelled by an operator: the Locks go; the hosts stay claimed, for a person to look at.
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => unlockAll(provisioner));
    throw err;
  }
}
