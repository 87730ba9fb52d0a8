// One MachineConfigPool's OS image, rolled out as MCO's node controller and daemons do it, as one
// durable workflow: preflight before any node is touched; then the nodes not on the image, in
// zone order, never more than maxUnavailable unavailable at once, each in a child workflow of its
// own (node-update.ts); a node that fails stops the pool until it is fixed and retried; pause
// stops new nodes; deleting the override rolls the pool back to its base image the same way. A
// pool let go (deleted, no longer labelled for this engine, or the MCO runs here) ends its run
// once its nodes under way are done; where the MCO runs, the pool is told why first.
import {
  condition,
  ParentClosePolicy,
  setHandler,
  startChild,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { PoolNodeDetail } from '../../activities/kubernetes/machine-config-pools.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { parseGoDuration } from '../../shared/go-duration.js';
import {
  poolObserved,
  type NodeUpdateResult,
  type PoolObservation,
} from '../../shared/contracts/rollout.js';
import { KIND, SA } from '../../shared/search-attributes.js';
import { poolApi } from './activity-proxies.js';
import { nodeUpdateWorkflow } from './node-update.js';
import { maxUnavailableOf, nextCandidates } from './plan.js';
import { PoolReport } from './pool-report.js';
import { preflight } from './preflight.js';
import { MAX_HISTORY } from '../history-limit.js';
import { continueAsNewOnCurrentBuild, newBuildCurrent } from '../kit/new-build.js';

export interface RolloutInput {
  pool: string;
  carried?: {
    latest: PoolObservation;
    retriesSeen: Record<string, string>;
    preflightPassed?: string;
  };
}

/** How often the pool's nodes are looked at while something is under way. */
const POLL_MS = 5_000;
/** When idle, a look now and then all the same (a node that joined the pool). */
const IDLE_MS = 5 * 60_000;
const DEFAULT_DRAIN_MS = 60 * 60_000; // MCO's daemon gives up on a drain after an hour
const DEFAULT_BOOT_MS = 15 * 60_000;

export async function rolloutWorkflow(input: RolloutInput): Promise<void> {
  const { pool } = input;
  let latest = input.carried?.latest;
  let changed = false;
  setHandler(poolObserved, (seen) => {
    latest = seen;
    changed = true;
  });
  const retriesSeen: Record<string, string> = { ...input.carried?.retriesSeen };
  let preflightPassed = input.carried?.preflightPassed;
  const busy = new Map<string, Promise<NodeUpdateResult>>();
  const finished = new Map<string, NodeUpdateResult>();
  const report = new PoolReport(pool);

  for (;;) {
    await condition(() => latest !== undefined);
    const observed = latest!;
    changed = false;
    if (observed.deleted && busy.size === 0) {
      if (observed.notServed) {
        await poolApi.sayPoolNotServed({
          name: pool,
          uid: observed.uid,
          message: observed.notServed,
        });
      }
      return;
    }
    const target = observed.target?.image;
    const nodes = await poolApi.listPoolNodes({ spec: observed.spec });
    const retried = acceptRetries(nodes, retriesSeen);
    const max = maxUnavailableOf(observed.spec.maxUnavailable, nodes.length);
    const status = { nodes, target, busy: [...busy.keys()] };

    let blocked: string | undefined;
    if (!target)
      blocked = `no image: set ${'baseOSContainerImage'} in the machine-config-osimageurl ConfigMap`;
    else if (typeof max !== 'number') blocked = max.error;
    else if (preflightPassed !== target) {
      const refused = await preflight(report, pool, target, nodes);
      if (refused) blocked = `preflight: ${refused}`;
      else preflightPassed = target;
    }
    const degraded = nodes.filter((n) => n.state === 'Degraded' && !busy.has(n.name));
    await report.publish(observed, status, { blocked, degraded });

    const start = (node: PoolNodeDetail) =>
      busy.set(
        node.name,
        updateNode(pool, node, target!, observed).then((result) => {
          finished.set(node.name, result);
          busy.delete(node.name);
          return result;
        }),
      );
    if (!blocked && !observed.spec.paused && !observed.deleted && target) {
      // A retried node is unavailable already: taking it up again adds nothing unavailable.
      for (const node of retried) if (!busy.has(node.name)) start(node);
      if (!degraded.length) {
        for (const node of nextCandidates(nodes, target, max as number, new Set(busy.keys())))
          start(node);
      }
    }
    // Polled while nodes are being updated or wait for room, or a Degraded node may be retried
    // (Node changes are not sent by the bridge); otherwise the next signal (or the idle timer) wakes it.
    const pending =
      !blocked && !observed.spec.paused && nodes.some((n) => n.currentImage !== target);
    const waitMs = busy.size > 0 || degraded.length > 0 || pending ? POLL_MS : IDLE_MS;
    const before = finished.size;
    await condition(() => changed || finished.size !== before || newBuildCurrent(), waitMs);
    const due = workflowInfo().historyLength > MAX_HISTORY.rollout || newBuildCurrent();
    if (busy.size === 0 && due) {
      await continueAsNewOnCurrentBuild<typeof rolloutWorkflow>({
        pool,
        carried: { latest: latest!, retriesSeen, ...(preflightPassed ? { preflightPassed } : {}) },
      });
    }
  }
}

/** Degraded nodes whose retry annotation is new: they are updated again, from the start. */
function acceptRetries(
  nodes: PoolNodeDetail[],
  retriesSeen: Record<string, string>,
): PoolNodeDetail[] {
  const retried: PoolNodeDetail[] = [];
  for (const node of nodes) {
    if (!node.retry || retriesSeen[node.name] === node.retry) continue;
    retriesSeen[node.name] = node.retry;
    if (node.state !== 'Degraded') continue;
    node.state = undefined; // its update writes Working
    retried.push(node);
  }
  return retried;
}

async function updateNode(
  pool: string,
  node: PoolNodeDetail,
  image: string,
  observed: PoolObservation,
): Promise<NodeUpdateResult> {
  const { settings } = observed;
  const ms = (text: string | undefined, fallback: number) => {
    const parsed = text ? parseGoDuration(text) : undefined;
    return parsed && 'ms' in parsed ? parsed.ms : fallback;
  };
  const handle: ChildWorkflowHandle<typeof nodeUpdateWorkflow> = await startChild(
    nodeUpdateWorkflow,
    {
      workflowId: WORKFLOW_ID.rolloutNode(pool, node.name, imageKey(image)),
      args: [
        {
          pool,
          node: node.name,
          image,
          host: {
            name: node.name,
            address: node.address ?? node.name,
            user: settings.sshUser,
            keySecret: settings.sshSecret,
          },
          drainTimeoutMs: ms(settings.drainTimeout, DEFAULT_DRAIN_MS),
          bootTimeoutMs: ms(settings.bootTimeout, DEFAULT_BOOT_MS),
        },
      ],
      parentClosePolicy: ParentClosePolicy.ABANDON, // a node mid-update finishes even so
      typedSearchAttributes: [
        { key: SA.kind, value: KIND.rolloutNode },
        { key: SA.name, value: pool },
        { key: SA.host, value: node.name },
      ],
      staticSummary: `Node ${node.name} → ${image}`,
    },
  );
  return handle.result();
}

/** A short, stable key of an image for workflow IDs (a retry of the same image reuses it). */
function imageKey(image: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < image.length; i++) h = Math.imul(h ^ image.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}
