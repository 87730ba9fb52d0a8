// One HostflowMachine's life, as a Cluster API infrastructure provider lives it beside Cluster API
// core: Pending until a Machine owns it and its bootstrap data exists, Provisioning while its VM
// or host is taken and bootstrapped, Provisioned once it says so (Cluster API core then copies
// its providerID, waits for the Node, and runs the Machine's life: drain, hooks, Node deletion);
// watched while it lives; and when deleted, its VM terminated or its host given back before its
// finalizer goes. Nothing is re-created behind anyone's back.
import { condition, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { CONDITION, REASON } from '../../shared/machine-api.js';
import { askForSlotAgain, slotExhausted, slotGranted } from '../../shared/contracts/allocator.js';
import { machineObserved, type MachineObservation } from '../../shared/contracts/machine.js';
import { SA } from '../../shared/search-attributes.js';
import { machineApi } from './activity-proxies.js';
import type { SlotMail } from '../kit/allocator-slot.js';
import { lookUntilDone } from '../kit/retry.js';
import type { MachineInfra } from './infrastructure.js';
import { provision } from './provision.js';
import { release } from './release.js';
import { MachineReport, emptyReport, type MachineReportState } from './report.js';
import type { MachineRun, OwnerInfo } from './run.js';
import { watchProvisioned } from './running.js';
import { MAX_HISTORY } from '../history-limit.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

export interface HostflowMachineWorkflowInput {
  namespace: string;
  name: string;
  /** State carried across continue-as-new. */
  carried?: CarriedMachine;
}

export interface CarriedMachine {
  latest: MachineObservation;
  report: MachineReportState;
  owner?: OwnerInfo;
  infra?: MachineInfra;
  /** Where the life had got to: provisioned (watched), or failed (waiting for deletion). */
  stage: 'provisioned' | 'failed';
}

/** How often a paused Cluster is looked at again (its pause is not told to the workflow). */
const PAUSE_LOOK_MS = 15_000;

export async function hostflowMachineWorkflow(input: HostflowMachineWorkflowInput): Promise<void> {
  const { namespace, name, carried } = input;
  let latest = carried?.latest;
  setHandler(machineObserved, (seen) => {
    if (latest && seen.uid !== latest.uid) return; // a namesake: its own workflow runs next
    latest = { ...seen, deleting: seen.deleting || (latest?.deleting ?? false) };
  });
  const mail: SlotMail = {};
  const run: MachineRun = {
    ref: { namespace, name, uid: '' },
    report: undefined as unknown as MachineReport,
    latest: () => latest!,
    deleting: () => latest!.deleting,
    unpaused: () => waitWhilePaused(run),
    mail,
    ...(carried?.owner ? { owner: carried.owner } : {}),
    ...(carried?.infra ? { infra: carried.infra } : {}),
  };
  setHandler(slotGranted, ({ requestId, host }) => {
    if (requestId === run.infra?.requestId) mail.grant = host;
  });
  setHandler(slotExhausted, ({ requestId, reason }) => {
    if (requestId === run.infra?.requestId) mail.exhausted = reason;
  });
  setHandler(askForSlotAgain, () => void (mail.askAgain = true));

  await condition(() => latest !== undefined);
  run.ref = { namespace, name, uid: latest!.uid };
  run.report = new MachineReport(
    run.ref,
    carried?.report ?? emptyReport(),
    () => run.latest().generation,
  );
  if (latest!.clusterName)
    upsertSearchAttributes([{ key: SA.clusterName, value: latest!.clusterName }]);

  let stage: CarriedMachine['stage'] | 'deleting';
  if (carried) stage = carried.stage;
  else {
    // The finalizer comes before anything is taken for it.
    if (!(await machineApi.addHostflowMachineFinalizer(run.ref))) return;
    run.report.condition(CONDITION.paused, 'False', REASON.notPaused);
    stage = await provision(run);
  }
  while (stage !== 'deleting') {
    stage = stage === 'provisioned' ? await watchProvisioned(run) : await waitForDeletion(run);
    const due = workflowInfo().historyLength > MAX_HISTORY.machine || newBuildCurrent();
    if (stage !== 'deleting' && due) {
      await continueAsNewOnCurrentBuild<typeof hostflowMachineWorkflow>({
        namespace,
        name,
        carried: {
          latest: latest!,
          report: run.report.state,
          ...(run.owner ? { owner: run.owner } : {}),
          ...(run.infra ? { infra: run.infra } : {}),
          stage,
        },
      });
    }
  }
  await release(run);
}

/** A failed HostflowMachine stays as it is, for a person or a health check, until deleted. */
async function waitForDeletion(run: MachineRun): Promise<'failed' | 'deleting'> {
  await condition(() => run.deleting() || run.latest().paused || newBuildCurrent(), '1 hour');
  await run.unpaused();
  return run.deleting() ? 'deleting' : 'failed';
}

/**
 * As Cluster API asks of a provider: nothing moves while the HostflowMachine carries the paused
 * annotation or its Cluster is paused (spec.paused), deletion included.
 */
async function waitWhilePaused(run: MachineRun): Promise<void> {
  const { report } = run;
  let wasPaused = false;
  await lookUntilDone<void>(async () => {
    const why = run.latest().paused
      ? 'cluster.x-k8s.io/paused is set on it'
      : run.owner && (await clusterPaused(run))
        ? `its Cluster ${run.owner.clusterName} is paused`
        : undefined;
    if (!why) {
      if (wasPaused) {
        report.condition(CONDITION.paused, 'False', REASON.notPaused);
        await report.publish(report.phase ?? 'Pending', 'resumed');
      }
      return { done: undefined };
    }
    if (!wasPaused) {
      wasPaused = true;
      report.condition(CONDITION.paused, 'True', REASON.paused, why);
      await report.publish(report.phase ?? 'Pending', `paused: ${why}`);
      await report.event('Normal', 'Paused', why, `paused-${report.state.sent.length}`);
    }
    const annotated = run.latest().paused;
    return { wakeWhen: () => run.latest().paused !== annotated };
  }, PAUSE_LOOK_MS);
}

async function clusterPaused(run: MachineRun): Promise<boolean> {
  const owner = run.owner!;
  const machine = await machineApi.readOwnerMachine({
    namespace: run.ref.namespace,
    hostflowMachine: run.ref.name,
    owner: { name: owner.machineName, uid: owner.machineUid },
  });
  return machine.found && machine.clusterPaused;
}
