// A provisioned HostflowMachine is watched: a VM terminated or stopped out of band is said on it
// (Ready False, reason InstanceTerminated, and an Event), which Cluster API core mirrors onto the
// Machine, where a MachineHealthCheck can remediate it. hostflow never re-creates it behind
// anyone's back. Returns when deleted, or when its VM is gone.
import { condition } from '@temporalio/workflow';
import { CONDITION, REASON } from '../../shared/machine-api.js';
import { cloudCheck } from './activity-proxies.js';
import type { MachineRun } from './run.js';
import { newBuildCurrent } from '../kit/new-build.js';

const WATCH_MS = 30_000;
/** States a running instance never comes back from by itself. */
const DEAD_STATES = ['terminated', 'failed', 'stopped', 'stopping'];

export async function watchProvisioned(
  run: MachineRun,
): Promise<'provisioned' | 'failed' | 'deleting'> {
  const { report, infra } = run;
  // Paused (its annotation, at once; its Cluster, when looked at): said, and nothing watched.
  await condition(() => run.deleting() || run.latest().paused || newBuildCurrent(), WATCH_MS);
  await run.unpaused();
  if (run.deleting()) return 'deleting';
  if (infra?.kind !== 'dynamic' || !infra.instanceId) return 'provisioned';
  let state: string | undefined;
  try {
    const vm = await cloudCheck.describeInstance({ cloud: infra.cloud!, id: infra.instanceId });
    state = vm ? vm.state : 'terminated';
  } catch {
    state = undefined; // the cloud did not answer: ask again next time
  }
  if (!state || !DEAD_STATES.includes(state)) return 'provisioned';
  const message =
    `${infra.cloud!.provider.type} instance ${infra.instanceId} is ${state}, not by hostflow: ` +
    'it is not re-created; a MachineHealthCheck or a person deleting the Machine replaces it';
  report.condition(CONDITION.ready, 'False', REASON.instanceTerminated, message);
  await report.publish('Failed', message);
  await report.event('Warning', REASON.instanceTerminated, message);
  return 'failed';
}
