// Deleting a Machine in Cluster API's order, each step resumable (a crashed worker's replay
// resumes where it was): pre-drain hooks, cordon and drain through the Eviction API within
// nodeDrainTimeout, volume detach within nodeVolumeDetachTimeout, pre-terminate hooks, the
// infrastructure terminated and confirmed (a static host given back), the bootstrap Secret and
// the Node deleted, and only then the finalizer.
import { condition, patched, sleep, workflowInfo } from '@temporalio/workflow';
import { CLUSTER_LOCKS_NAMESPACE } from '../../shared/lock-api.js';
import {
  CONDITION,
  HOSTFLOW_MACHINE_KIND,
  MACHINE_ANNOTATIONS,
  REASON,
} from '../../shared/machine-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { locks, machineBootstrap, machineKube as kube } from '../activities.js';
import { backoffMs } from '../kit/retry.js';
import { releaseInfrastructure } from './infrastructure.js';
import type { MachineRun } from './run.js';
import { durationMs } from './spec-check.js';

/** v2: the HostflowMachine is deleted (when it is this Machine's) even if nothing was made from it. */
export const PATCH_ALWAYS_DELETE_INFRASTRUCTURE = 'machine-always-delete-infrastructure';

/** Cluster API's default for nodeDeletionTimeout. */
const DEFAULT_NODE_DELETION_MS = 10_000;

export async function deleteMachine(run: MachineRun): Promise<void> {
  const { report, ref } = run;
  await run.unpaused();
  await report.publish('Deleting', 'deleting');
  await report.event('Normal', 'Deleting', 'Deleting the Machine');
  const spec = run.latest().spec;
  if (run.nodeName) {
    await waitForHooks(run, 'preDrainHooks', CONDITION.preDrainHookSucceeded);
    await lockNode(run, run.nodeName);
    if (run.latest().excludeDraining) {
      await report.event('Normal', 'DrainSkipped', `${MACHINE_ANNOTATIONS.excludeDraining} is set`);
    } else {
      await drain(run, run.nodeName, durationMs(spec.nodeDrainTimeout, 0));
    }
    if (!run.latest().excludeVolumeWait) {
      await waitForVolumes(run, run.nodeName, durationMs(spec.nodeVolumeDetachTimeout, 0));
    }
  }
  await waitForHooks(run, 'preTerminateHooks', CONDITION.preTerminateHookSucceeded);

  const infra = run.infra;
  if (infra) {
    await run.unpaused();
    await report.publish('Deleting', 'releasing its infrastructure');
    if (infra.kind === 'static' && infra.host && infra.granted) {
      // The host's next Machine is bootstrapped afresh, as a new VM would be.
      await machineBootstrap
        .forgetBootstrap({ host: infra.host })
        .catch((err: unknown) =>
          report.event(
            'Warning',
            'BootstrapNotForgotten',
            `${infra.host!.name}: ${innermostMessage(err)}`,
          ),
        );
    }
    await releaseInfrastructure(infra, (message, waitMs) =>
      report.event(
        'Warning',
        'FailedTerminate',
        `${message}; trying again in ${waitMs / 1000}s`,
        `terminate-${waitMs}`,
      ),
    );
  }
  const infraRef = spec.infrastructureRef;
  if (
    infraRef?.kind === HOSTFLOW_MACHINE_KIND &&
    infraRef.name &&
    (infra || patched(PATCH_ALWAYS_DELETE_INFRASTRUCTURE))
  ) {
    // Each delete checks the object is this Machine's first; one that is not stays, with an Event.
    await kube.deleteInfrastructure({
      namespace: ref.namespace,
      name: infraRef.name,
      machine: ref,
      madeInfrastructure: infra !== undefined,
    });
  }
  const secretName = spec.bootstrap?.dataSecretName;
  if (secretName) {
    await kube.deleteBootstrapSecret({
      namespace: ref.namespace,
      name: secretName,
      machine: ref,
      ...(spec.bootstrap?.configRef ? { configRef: spec.bootstrap.configRef } : {}),
    });
  }
  if (run.nodeName) {
    await deleteNode(
      run,
      run.nodeName,
      durationMs(spec.nodeDeletionTimeout, DEFAULT_NODE_DELETION_MS),
    );
    await unlockNode();
  }
  await report.publish('Deleting', 'removing the finalizer');
  await kube.removeMachineFinalizer(ref);
  await report.event('Normal', 'Deleted', 'Every deletion step is done; the finalizer is removed');
}

/**
 * Locks the Node from the drain until it is deleted: nobody else uncordons or deletes it meanwhile
 * (this workflow still may). A Lock that cannot be taken never holds the deletion up.
 */
async function lockNode(run: MachineRun, node: string): Promise<void> {
  const target = {
    namespace: CLUSTER_LOCKS_NAMESPACE,
    name: node,
    resource: 'nodes',
    apiGroup: '',
    operations: ['UPDATE' as const, 'DELETE' as const],
    reason: `Machine ${run.ref.namespace}/${run.ref.name} drains and deletes it`,
  };
  await locks
    .syncLocks({ holder: workflowInfo().workflowId, wanted: [target] })
    .catch((err: unknown) =>
      run.report.event('Warning', 'NodeNotLocked', `Node ${node}: ${innermostMessage(err)}`),
    );
}

/** Lets go of the Node's Lock until that succeeds: left, it would lock a later Node of its name. */
async function unlockNode(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const holder = workflowInfo().workflowId;
      await locks.syncLocks({ holder, wanted: [], alsoIn: [CLUSTER_LOCKS_NAMESPACE] });
      return;
    } catch {
      await sleep(backoffMs(attempt, 30_000));
    }
  }
}

/** Waits while hook annotations of this kind exist, saying which. */
async function waitForHooks(
  run: MachineRun,
  kind: 'preDrainHooks' | 'preTerminateHooks',
  type: string,
): Promise<void> {
  const { report } = run;
  const hooks = () => run.latest()[kind];
  if (!hooks().length) return;
  report.condition(type, 'False', REASON.waitingExternalHook, `waiting for ${hooks().join(', ')}`);
  await report.publish('Deleting', `waiting for the hooks ${hooks().join(', ')} to be removed`);
  await report.event(
    'Normal',
    'WaitingExternalHook',
    `Waiting for ${hooks().join(', ')}`,
    `${kind}-wait`,
  );
  await condition(() => hooks().length === 0);
  report.condition(type, 'True');
  await report.publish(
    'Deleting',
    `the ${kind === 'preDrainHooks' ? 'pre-drain' : 'pre-terminate'} hooks are gone`,
  );
}

/** Cordons, then evicts until nothing is left, or `timeoutMs` (0: no bound) passes. */
async function drain(run: MachineRun, node: string, timeoutMs: number): Promise<void> {
  const { report } = run;
  const started = Date.now();
  if ((await kube.cordonNode({ name: node })) === 'gone') return;
  for (let attempt = 1; ; attempt++) {
    const pass = await kube.drainNodeOnce({ node });
    if (pass.remaining === 0) {
      report.condition(CONDITION.drainingSucceeded, 'True');
      await report.publish('Deleting', `Node ${node} drained`);
      await report.event(
        'Normal',
        'SuccessfulDrainNode',
        `success draining Machine's node "${node}"`,
      );
      return;
    }
    const blocked = pass.blocked
      .map((b: { pod: string; reason: string }) => `${b.pod}: ${b.reason}`)
      .join('; ');
    const message = `${pass.remaining} pod(s) left on Node ${node}${blocked ? `; ${blocked}` : ''}`;
    if (timeoutMs > 0 && Date.now() - started >= timeoutMs) {
      report.condition(
        CONDITION.drainingSucceeded,
        'False',
        REASON.drainingFailed,
        `nodeDrainTimeout passed: ${message}`,
      );
      await report.publish('Deleting', `nodeDrainTimeout passed; going on: ${message}`);
      await report.event('Warning', 'FailedDrainNode', `nodeDrainTimeout passed: ${message}`);
      return;
    }
    report.condition(CONDITION.drainingSucceeded, 'False', REASON.draining, message);
    await report.publish('Deleting', `draining: ${message}`);
    if (blocked) await report.event('Warning', 'DrainBlocked', message, `drain-blocked-${blocked}`);
    await sleep(
      Math.min(
        backoffMs(attempt, 5_000),
        timeoutMs > 0 ? Math.max(1, timeoutMs - (Date.now() - started)) : 5_000,
      ),
    );
  }
}

async function waitForVolumes(run: MachineRun, node: string, timeoutMs: number): Promise<void> {
  const { report } = run;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const left = await kube.volumeAttachmentsOf({ node });
    if (!left.length) {
      report.condition(CONDITION.volumeDetachSucceeded, 'True');
      return;
    }
    const message = `VolumeAttachments ${left.join(', ')} still attached to Node ${node}`;
    if (timeoutMs > 0 && Date.now() - started >= timeoutMs) {
      await report.event(
        'Warning',
        'VolumeDetachTimeout',
        `nodeVolumeDetachTimeout passed: ${message}`,
      );
      return;
    }
    report.condition(
      CONDITION.volumeDetachSucceeded,
      'False',
      REASON.waitingForVolumeDetach,
      message,
    );
    await report.publish('Deleting', message);
    await sleep(
      Math.min(
        backoffMs(attempt, 5_000),
        timeoutMs > 0 ? Math.max(1, timeoutMs - (Date.now() - started)) : 5_000,
      ),
    );
  }
}

/** Deletes the Node, trying for `timeoutMs` (0: until it is gone), then going on with an Event. */
async function deleteNode(run: MachineRun, node: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      await kube.deleteNode({ name: node });
      return;
    } catch (err) {
      if (timeoutMs > 0 && Date.now() - started >= timeoutMs) {
        await run.report.event(
          'Warning',
          'FailedDeleteNode',
          `Node ${node}: ${innermostMessage(err)}`,
        );
        return;
      }
      await sleep(backoffMs(attempt, 5_000));
    }
  }
}
