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
import type { NodeUpdateInput, NodeUpdateResult } from '../../shared/contracts/rollout.js';
import { innermostMessage } from '../../shared/failures.js';
import { NODE_ANNOTATIONS } from '../../shared/mco-api.js';
import { SA } from '../../shared/search-attributes.js';
import { osCheck, osRebase, poolApi } from './activity-proxies.js';
import { blockedPods, drainNode } from '../kit/node-drain.js';
import { lockNode, unlockNode } from '../../locks/hold.js';

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
    poolApi
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
  await lockNode(node, `MachineConfigPool ${input.pool} is updating it to ${image}`);
  try {
    await step('start', () =>
      poolApi.annotateNode({
        name: node,
        annotations: {
          [NODE_ANNOTATIONS.desiredImage]: image,
          [NODE_ANNOTATIONS.state]: 'Working',
          [NODE_ANNOTATIONS.reason]: null,
        },
      }),
    );
    await step('cordon', () => poolApi.cordonNode({ name: node }));
    await step('drain', () => drain(input, event));
    await step('rebase', () => osRebase.rebaseOsImage({ host: input.host, image }));
    await event('Normal', 'Rebased', `rpm-ostree rebase onto ${image} staged; rebooting`);
    await step('reboot', () => osCheck.rebootNode({ host: input.host }));
    await step('reboot', () => waitForBoot(input));
    await step('uncordon', () => poolApi.uncordonNode({ name: node }));
    await step('done', () =>
      poolApi.annotateNode({
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
      await poolApi
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

/** Evicts within the drain timeout; past it, the step fails (Event FailedToDrain). */
async function drain(
  input: NodeUpdateInput,
  event: (type: 'Normal' | 'Warning', reason: string, message: string) => Promise<void>,
): Promise<void> {
  const pass = await drainNode({
    nodeApi: poolApi,
    node: input.node,
    timeoutMs: input.drainTimeoutMs,
  });
  if (pass.remaining === 0) return;
  const blocked = blockedPods(pass);
  const message = `${pass.remaining} pod(s) left after ${Math.round(input.drainTimeoutMs / 1000)}s${blocked ? `: ${blocked}` : ''}`;
  await event('Warning', 'FailedToDrain', `Node ${input.node}: ${message}`);
  throw new StepFailed('drain', message);
}

/** Until the node is Ready again and booted `image`; past the boot timeout, the step fails. */
async function waitForBoot(input: NodeUpdateInput): Promise<void> {
  const started = Date.now();
  let seen = 'no answer yet';
  for (;;) {
    const booted = await osCheck.bootedOsImage({ host: input.host }).catch(() => undefined);
    const ready = await poolApi.nodeReady({ name: input.node }).catch(() => false);
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
