// Deleting a Machine in Cluster API's order, each step resumable (a crashed worker's replay
// resumes where it was): pre-drain hooks, cordon and drain through the Eviction API within
// nodeDrainTimeout, volume detach within nodeVolumeDetachTimeout, pre-terminate hooks, the
// infrastructure terminated and confirmed (a static host given back), the bootstrap Secret and
// the Node deleted, and only then the finalizer.
import { condition, patched } from '@temporalio/workflow';
import {
  CONDITION,
  HOSTFLOW_MACHINE_KIND,
  MACHINE_ANNOTATIONS,
  REASON,
} from '../../shared/machine-api.js';
import { innermostMessage } from '../../shared/failures.js';
import { machineBootstrap, machineApi } from './activity-proxies.js';
import { blockedPods, cordonAndDrain, type DrainPass } from '../kit/node-drain.js';
import { lockNode, unlockNode } from '../../locks/hold.js';
import { failureOf, untilDeadline } from '../kit/retry.js';
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
  const node = run.nodeName;
  if (node) {
    await waitForHooks(run, 'preDrainHooks', CONDITION.preDrainHookSucceeded);
    // From the drain until the Node is deleted, nobody else uncordons or deletes it.
    const reason = `Machine ${ref.namespace}/${ref.name} drains and deletes it`;
    await lockNode(node, reason, (cause) =>
      report.event('Warning', 'NodeNotLocked', `Node ${node}: ${cause}`),
    );
    if (run.latest().excludeDraining) {
      await report.event('Normal', 'DrainSkipped', `${MACHINE_ANNOTATIONS.excludeDraining} is set`);
    } else {
      await drain(run, node, durationMs(spec.nodeDrainTimeout, 0));
    }
    if (!run.latest().excludeVolumeWait) {
      await waitForVolumes(run, node, durationMs(spec.nodeVolumeDetachTimeout, 0));
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
    await machineApi.deleteInfrastructure({
      namespace: ref.namespace,
      name: infraRef.name,
      machine: ref,
      madeInfrastructure: infra !== undefined,
    });
  }
  const secretName = spec.bootstrap?.dataSecretName;
  if (secretName) {
    await machineApi.deleteBootstrapSecret({
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
  await machineApi.removeMachineFinalizer(ref);
  await report.event('Normal', 'Deleted', 'Every deletion step is done; the finalizer is removed');
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
  const left = (pass: DrainPass) => {
    const blocked = blockedPods(pass);
    return {
      blocked,
      message: `${pass.remaining} pod(s) left on Node ${node}${blocked ? `; ${blocked}` : ''}`,
    };
  };
  const pass = await cordonAndDrain({
    nodeApi: machineApi,
    node,
    timeoutMs: timeoutMs > 0 ? timeoutMs : undefined,
    onPending: async (pending) => {
      const { blocked, message } = left(pending);
      report.condition(CONDITION.drainingSucceeded, 'False', REASON.draining, message);
      await report.publish('Deleting', `draining: ${message}`);
      if (blocked)
        await report.event('Warning', 'DrainBlocked', message, `drain-blocked-${blocked}`);
    },
  });
  if (pass === 'gone') return;
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
  const { message } = left(pass);
  report.condition(
    CONDITION.drainingSucceeded,
    'False',
    REASON.drainingFailed,
    `nodeDrainTimeout passed: ${message}`,
  );
  await report.publish('Deleting', `nodeDrainTimeout passed; going on: ${message}`);
  await report.event('Warning', 'FailedDrainNode', `nodeDrainTimeout passed: ${message}`);
}

async function waitForVolumes(run: MachineRun, node: string, timeoutMs: number): Promise<void> {
  const { report } = run;
  const attached = (left: string[]) =>
    `VolumeAttachments ${left.join(', ')} still attached to Node ${node}`;
  const ended = await untilDeadline(() => machineApi.volumeAttachmentsOf({ node }), {
    isDone: (left) => !left.length,
    timeoutMs: timeoutMs > 0 ? timeoutMs : undefined,
    maxWaitMs: 5_000,
    onPending: async (left) => {
      const message = attached(left);
      report.condition(
        CONDITION.volumeDetachSucceeded,
        'False',
        REASON.waitingForVolumeDetach,
        message,
      );
      await report.publish('Deleting', message);
    },
  });
  if (ended.done) {
    report.condition(CONDITION.volumeDetachSucceeded, 'True');
    return;
  }
  await report.event(
    'Warning',
    'VolumeDetachTimeout',
    `nodeVolumeDetachTimeout passed: ${attached(ended.last)}`,
  );
}

/** Deletes the Node, trying for `timeoutMs` (0: until it is gone), then going on with an Event. */
async function deleteNode(run: MachineRun, node: string, timeoutMs: number): Promise<void> {
  const ended = await untilDeadline(() => failureOf(() => machineApi.deleteNode({ name: node })), {
    isDone: (err) => err === undefined,
    timeoutMs: timeoutMs > 0 ? timeoutMs : undefined,
    maxWaitMs: 5_000,
    waitEndsAtDeadline: false,
  });
  if (!ended.done) {
    await run.report.event(
      'Warning',
      'FailedDeleteNode',
      `Node ${node}: ${innermostMessage(ended.last)}`,
    );
  }
}
