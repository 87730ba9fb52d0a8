// A Running Machine is watched: its instance (a VM that terminates or fails out of band makes the
// Machine Failed, with Cluster API's reason and an Event, and is never re-created) and its Node
// (gone, or back). Only changes are written. Returns when deleted, or when it failed.
import { condition } from '@temporalio/workflow';
import { CONDITION, REASON } from '../../shared/machine-api.js';
import { cloudCheck, machineApi } from './activity-proxies.js';
import type { MachineRun } from './run.js';

const WATCH_MS = 30_000;
/** States a running instance never comes back from by itself. */
const DEAD_STATES = ['terminated', 'failed', 'stopped', 'stopping'];

export async function watchRunning(run: MachineRun): Promise<'running' | 'failed' | 'deleting'> {
  const { report, infra } = run;
  if (await condition(run.deleting, WATCH_MS)) return 'deleting';
  if (infra?.kind === 'dynamic' && infra.instanceId) {
    let state: string | undefined;
    try {
      const vm = await cloudCheck.describeInstance({ cloud: infra.cloud!, id: infra.instanceId });
      state = vm ? vm.state : 'terminated';
    } catch {
      state = undefined; // the cloud did not answer: ask again next time
    }
    if (state && DEAD_STATES.includes(state)) {
      const message = `${infra.cloud!.provider.type} instance ${infra.instanceId} state ${state} is unexpected`;
      report.fail('UpdateError', message);
      report.condition(
        CONDITION.infrastructureReady,
        'False',
        REASON.instanceStateUnexpected,
        message,
      );
      report.condition(CONDITION.ready, 'False', REASON.instanceStateUnexpected, message);
      await report.publish('Running', `${message}; it is not re-created: delete the Machine`, {
        infrastructureReady: false,
      });
      await report.event('Warning', 'InstanceStateUnexpected', message);
      return 'failed';
    }
  }
  if (run.nodeName && run.infra?.providerID) {
    const node = await machineApi.findNodeByProviderId({ providerID: run.infra.providerID });
    const healthy = report.state.conditions.find((c) => c.type === CONDITION.nodeHealthy);
    const now = node ? (node.ready ? 'True' : 'False') : 'False';
    const reason = node ? (node.ready ? undefined : REASON.nodeProvisioning) : REASON.nodeNotFound;
    if (healthy?.status !== now || healthy.reason !== reason) {
      report.condition(
        CONDITION.nodeHealthy,
        now,
        reason,
        node ? undefined : `Node ${run.nodeName} is gone`,
      );
      await report.publish('Running', node ? `Node ${node.name}` : `Node ${run.nodeName} is gone`);
    }
  }
  return 'running';
}
