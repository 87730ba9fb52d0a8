// One node's update to one image, as MCO's daemon does it: desiredImage and state Working, cordon,
// drain through the Eviction API (Event FailedToDrain past the timeout), `rpm-ostree rebase`,
// reboot, wait until the node is Ready and booted the image, uncordon, then currentImage and
// state Done. A step that fails leaves the node Degraded with the step and the reason, and the
// pool stops. The node is locked while it is updated. Its own workflow, so its history is found
// by the node's name and a killed worker resumes it at the step it was at.
import {
  CancellationScope,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { NodeHost } from '../../activities/ssh/os-image.js';
import { innermostMessage } from '../../shared/failures.js';
import { CLUSTER_LOCKS_NAMESPACE } from '../../shared/lock-api.js';
import { NODE_ANNOTATIONS } from '../../shared/mco-api.js';
import { SA } from '../../shared/search-attributes.js';
import { locks, osCheck, osRebase, poolKube as kube } from '../activities.js';
import { backoffMs } from '../kit/retry.js';

export interface NodeUpdateInput {
  pool: string;
  node: string;
  image: string;
  host: NodeHost;
  drainTimeoutMs: number;
  bootTimeoutMs: number;
}

export type NodeUpdateResult = { done: true } | { done: false; step: string; reason: string };

const POLL_MS = 2_000;

class StepFailed extends Error {
  constructor(
    readonly step: string,
    readonly reason: string,
  ) {
    super(`${step}: ${reason}`);
  }
}

export async function nodeUpdateWorkflow(input: NodeUpdateInput): Promise<NodeUpdateResult> {
  const { node, image } = input;
  upsertSearchAttributes([{ key: SA.host, value: node }]);
  const event = (type: 'Normal' | 'Warning', reason: string, message: string) =>
    kube
      .recordRolloutEvent({
        kind: 'Node',
        name: node,
        type,
        reason,
        message,
        dedupKey: `${workflowInfo().workflowId}/${workflowInfo().runId}/${reason}`,
      })
      .catch(() => undefined); // Events are for people: never a reason to stop
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof StepFailed) throw err;
      throw new StepFailed(name, innermostMessage(err));
    }
  };
  await lockNode(input);
  try {
    await step('start', () =>
      kube.annotateNode({
        name: node,
        annotations: {
          [NODE_ANNOTATIONS.desiredImage]: image,
          [NODE_ANNOTATIONS.state]: 'Working',
          [NODE_ANNOTATIONS.reason]: null,
        },
      }),
    );
    await step('cordon', () => kube.cordonNode({ name: node }));
    await step('drain', () => drain(input, event));
    await step('rebase', () => osRebase.rebaseOsImage({ host: input.host, image }));
    await event('Normal', 'Rebased', `rpm-ostree rebase onto ${image} staged; rebooting`);
    await step('reboot', () => osCheck.rebootNode({ host: input.host }));
    await step('reboot', () => waitForBoot(input));
    await step('uncordon', () => kube.uncordonNode({ name: node }));
    await step('done', () =>
      kube.annotateNode({
        name: node,
        annotations: {
          [NODE_ANNOTATIONS.currentImage]: image,
          [NODE_ANNOTATIONS.state]: 'Done',
          [NODE_ANNOTATIONS.reason]: null,
        },
      }),
    );
    await event('Normal', 'Updated', `Node ${node} runs ${image}`);
    return { done: true };
  } catch (err) {
    if (!(err instanceof StepFailed)) throw err;
    const reason = `${err.step}: ${err.reason}`.slice(0, 1000);
    await CancellationScope.nonCancellable(async () => {
      await kube
        .annotateNode({
          name: node,
          annotations: { [NODE_ANNOTATIONS.state]: 'Degraded', [NODE_ANNOTATIONS.reason]: reason },
        })
        .catch(() => undefined);
      await event('Warning', 'NodeDegraded', `Node ${node} is Degraded at ${reason}`);
    });
    return { done: false, step: err.step, reason: err.reason };
  } finally {
    await CancellationScope.nonCancellable(() => unlockNode());
  }
}

async function drain(
  input: NodeUpdateInput,
  event: (type: 'Normal' | 'Warning', reason: string, message: string) => Promise<void>,
): Promise<void> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const pass = await kube.drainNodeOnce({ node: input.node });
    if (pass.remaining === 0) return;
    if (Date.now() - started >= input.drainTimeoutMs) {
      const blocked = pass.blocked.map((b) => `${b.pod}: ${b.reason}`).join('; ');
      const message = `${pass.remaining} pod(s) left after ${Math.round(input.drainTimeoutMs / 1000)}s${blocked ? `: ${blocked}` : ''}`;
      await event('Warning', 'FailedToDrain', `Node ${input.node}: ${message}`);
      throw new StepFailed('drain', message);
    }
    await sleep(
      Math.min(
        backoffMs(attempt, 5_000),
        Math.max(1, input.drainTimeoutMs - (Date.now() - started)),
      ),
    );
  }
}

/** Until the node is Ready again and booted `image`; past the boot timeout, the step fails. */
async function waitForBoot(input: NodeUpdateInput): Promise<void> {
  const started = Date.now();
  let seen = 'no answer yet';
  for (;;) {
    const booted = await osCheck.bootedOsImage({ host: input.host }).catch(() => undefined);
    const ready = await kube.nodeReady({ name: input.node }).catch(() => false);
    if (booted === input.image && ready) return;
    if (booted !== undefined) seen = `booted ${booted}${ready ? '' : ', not Ready'}`;
    if (Date.now() - started >= input.bootTimeoutMs) {
      throw new StepFailed(
        'reboot',
        `not back on ${input.image} within ${Math.round(input.bootTimeoutMs / 1000)}s (${seen})`,
      );
    }
    await sleep(POLL_MS);
  }
}

function lockTarget(input: NodeUpdateInput) {
  return {
    namespace: CLUSTER_LOCKS_NAMESPACE,
    name: input.node,
    resource: 'nodes',
    apiGroup: '',
    operations: ['UPDATE' as const, 'DELETE' as const],
    reason: `MachineConfigPool ${input.pool} is updating it to ${input.image}`,
  };
}

async function lockNode(input: NodeUpdateInput): Promise<void> {
  await locks
    .syncLocks({ holder: workflowInfo().workflowId, wanted: [lockTarget(input)] })
    .catch(() => undefined);
}

async function unlockNode(): Promise<void> {
  for (let attempt = 1; attempt <= 10; attempt++) {
    try {
      await locks.syncLocks({
        holder: workflowInfo().workflowId,
        wanted: [],
        alsoIn: [CLUSTER_LOCKS_NAMESPACE],
      });
      return;
    } catch {
      await sleep(backoffMs(attempt, 30_000));
    }
  }
}
