// One Cluster API Machine's life, as Cluster API's "Machine States & Preboot Bootstrapping"
// proposal tells it: Pending until its bootstrap data exists, Provisioning while its
// infrastructure is made, Provisioned once it has a providerID, Running once a Node with that
// providerID joins; then Deleting: hooks, drain, volumes, hooks, terminate, bootstrap Secret and
// Node, and only then the finalizer. Nothing is re-created
// behind anyone's back: an instance that dies is reported, and waits for a person.
import {
  condition,
  continueAsNew,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { CONDITION, REASON } from '../../shared/machine-api.js';
import { askForSlotAgain, slotExhausted, slotGranted } from '../../shared/contracts/allocator.js';
import { machineObserved, type MachineObservation } from '../../shared/contracts/machine.js';
import { SA } from '../../shared/search-attributes.js';
import { machineApi } from './activity-proxies.js';
import type { SlotMail } from '../kit/allocator-slot.js';
import { deleteMachine } from './deletion.js';
import type { MachineInfra } from './infrastructure.js';
import { provision } from './provision.js';
import { MachineReport, emptyReport, type MachineReportState } from './report.js';
import type { MachineRun } from './run.js';
import { watchRunning } from './running.js';
import { MAX_HISTORY } from '../history-limit.js';

export interface MachineWorkflowInput {
  namespace: string;
  name: string;
  /** State carried across continue-as-new. */
  carried?: CarriedMachine;
}

export interface CarriedMachine {
  latest: MachineObservation;
  report: MachineReportState;
  infra?: MachineInfra;
  nodeName?: string;
  /** Where the life had got to: running (watched), or failed (waiting for deletion). */
  stage: 'running' | 'failed';
}

export type { MachineRun };

export async function machineWorkflow(input: MachineWorkflowInput): Promise<void> {
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
    ...(carried?.infra ? { infra: carried.infra } : {}),
    ...(carried?.nodeName ? { nodeName: carried.nodeName } : {}),
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
  run.report = new MachineReport(run.ref, carried?.report ?? emptyReport());
  if (latest!.spec.clusterName)
    upsertSearchAttributes([{ key: SA.clusterName, value: latest!.spec.clusterName }]);

  // The finalizer comes before anything outside is touched.
  if (!carried && !(await machineApi.addMachineFinalizer(run.ref))) return;

  let stage: CarriedMachine['stage'] | 'deleting' = carried?.stage ?? (await provision(run));
  while (stage !== 'deleting') {
    stage = stage === 'running' ? await watchRunning(run) : await waitForDeletion(run);
    if (stage !== 'deleting' && workflowInfo().historyLength > MAX_HISTORY.machine) {
      await continueAsNew<typeof machineWorkflow>({
        namespace,
        name,
        carried: {
          latest: latest!,
          report: run.report.state,
          ...(run.infra ? { infra: run.infra } : {}),
          ...(run.nodeName ? { nodeName: run.nodeName } : {}),
          stage,
        },
      });
    }
  }
  await deleteMachine(run);
}

/** A failed Machine stays as it is, for a person to look at, until it is deleted. */
async function waitForDeletion(run: MachineRun): Promise<'failed' | 'deleting'> {
  const left = await condition(run.deleting, '1 hour');
  return left ? 'deleting' : 'failed';
}

async function waitWhilePaused(run: MachineRun): Promise<void> {
  // As in Cluster API, a paused Machine is not deleted either until it is unpaused.
  if (!run.latest().paused) return;
  const { report } = run;
  const phase = report.phase ?? 'Pending';
  report.condition(CONDITION.paused, 'True', REASON.paused, 'cluster.x-k8s.io/paused is set');
  await report.publish(phase, 'paused: remove the annotation cluster.x-k8s.io/paused to go on');
  await report.event(
    'Normal',
    'Paused',
    'Paused by cluster.x-k8s.io/paused',
    `paused-${report.state.sent.length}`,
  );
  await condition(() => !run.latest().paused);
  report.condition(CONDITION.paused, 'False');
  await report.publish(phase, 'resumed');
}
