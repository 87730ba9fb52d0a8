// What a rollout tells people: the pool's status (MCO's machine counts, the Updated, Updating and
// Degraded conditions, the configuration it renders to), the UI's current details (which nodes
// are done, working, waiting, degraded), a gauge per pool and state, and Events on the pool. The
// kit's resource status writes them (only changes), sends each Event once, and keeps the Phase
// search attribute: Degraded, Updated or Updating.
import { workflowInfo } from '@temporalio/workflow';
import type { PoolNodeDetail } from '../../activities/kubernetes/machine-config-pools.js';
import { POOL_CONDITION } from '../../shared/mco-api.js';
import type { PoolObservation } from '../../shared/contracts/rollout.js';
import { poolApi } from './activity-proxies.js';
import { ResourceStatus } from '../kit/resource-status.js';
import { metrics } from '../metrics.js';
import { available } from './plan.js';

export class PoolReport {
  private readonly status: ResourceStatus;

  constructor(private readonly pool: string) {
    this.status = new ResourceStatus(
      {
        where: `MachineConfigPool ${pool}`,
        writeStatus: (status) => poolApi.writePoolStatus({ name: pool, status }),
        recordEvent: (event) =>
          poolApi.recordRolloutEvent({
            kind: 'MachineConfigPool',
            name: pool,
            ...event,
            dedupKey: `${workflowInfo().workflowId}/${event.dedupKey}`,
          }),
      },
      {
        failedWrite: 'throw',
        failedEvent: 'log',
        skipUnchanged: true,
        eventsOnce: true,
      },
    );
  }

  private condition(type: string, status: 'True' | 'False', reason: string, message: string): void {
    this.status.condition({ type, status, reason, message });
  }

  async publish(
    observed: PoolObservation,
    view: { nodes: PoolNodeDetail[]; target?: string; busy: string[] },
    why: { blocked?: string; degraded: PoolNodeDetail[] },
  ): Promise<void> {
    const { nodes, target, busy } = view;
    const working = new Set(busy);
    const updated = nodes.filter(
      (n) => n.currentImage === target && n.state !== 'Degraded' && !working.has(n.name),
    );
    const waiting = nodes.filter(
      (n) => !updated.includes(n) && !working.has(n.name) && n.state !== 'Degraded',
    );
    const counts = {
      machineCount: nodes.length,
      updatedMachineCount: updated.length,
      readyMachineCount: updated.filter((n) => n.ready && !n.unschedulable).length,
      unavailableMachineCount: nodes.filter((n) => working.has(n.name) || !available(n)).length,
      degradedMachineCount: why.degraded.length,
    };
    const all = nodes.length > 0 && updated.length === nodes.length;
    const degradedText = why.degraded.map((n) => `${n.name}: ${n.reason ?? 'degraded'}`).join('; ');
    if (why.blocked) this.condition(POOL_CONDITION.degraded, 'True', 'RolloutBlocked', why.blocked);
    else if (why.degraded.length)
      this.condition(
        POOL_CONDITION.degraded,
        'True',
        'NodeDegraded',
        `${degradedText}. Fix the cause, then annotate the node hostflow.dev/retry=<now>`,
      );
    else this.condition(POOL_CONDITION.degraded, 'False', 'AsExpected', '');
    this.condition(
      POOL_CONDITION.updated,
      all ? 'True' : 'False',
      all ? 'AllNodesUpdated' : 'NodesNotUpdated',
      all
        ? `All nodes are updated with ${target}`
        : `${updated.length} of ${nodes.length} nodes run ${target ?? 'the target image'}`,
    );
    const updating =
      !all && (working.size > 0 || (!why.blocked && !why.degraded.length && !observed.spec.paused));
    this.condition(
      POOL_CONDITION.updating,
      updating ? 'True' : 'False',
      updating ? 'Updating' : observed.spec.paused && !all ? 'Paused' : 'NotUpdating',
      updating
        ? `updating to ${target}: ${[...working].join(', ') || 'starting'}`
        : observed.spec.paused && !all
          ? 'spec.paused is set: no node starts'
          : '',
    );
    const status = {
      observedGeneration: observed.generation,
      ...counts,
      configuration: {
        name: observed.target?.from ?? '',
        ...(target ? { osImageURL: target } : {}),
        source: 'hostflow',
      },
      conditions: this.status.conditions,
    };
    const tags = { pool: this.pool };
    metrics.rolloutNodes.set(updated.length, { ...tags, state: 'updated' });
    metrics.rolloutNodes.set(why.degraded.length, { ...tags, state: 'degraded' });
    metrics.rolloutNodes.set(working.size, { ...tags, state: 'working' });
    metrics.rolloutNodes.set(waiting.length, { ...tags, state: 'waiting' });
    this.status.enter(
      why.blocked || why.degraded.length
        ? 'Degraded'
        : all
          ? 'Updated'
          : observed.spec.paused
            ? 'Paused'
            : 'Updating',
    );
    // Only changes are written (the transition times stay put while nothing moves).
    await this.status.publish(
      [
        `**Pool ${this.pool}** → \`${target ?? 'no image'}\` (${observed.target?.from ?? 'none'})`,
        why.blocked ? `**Blocked:** ${why.blocked}` : '',
        observed.spec.paused ? '**Paused** (spec.paused): no new node starts' : '',
        `- done (${updated.length}): ${updated.map((n) => n.name).join(', ') || '—'}`,
        `- working (${working.size}): ${[...working].join(', ') || '—'}`,
        `- waiting (${waiting.length}): ${waiting.map((n) => n.name).join(', ') || '—'}`,
        `- degraded (${why.degraded.length}): ${degradedText || '—'}`,
      ]
        .filter(Boolean)
        .join('\n'),
      status,
    );
  }

  /** One Event per key for the life of this run. */
  async event(
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    key = `${reason}/${message}`,
  ): Promise<void> {
    await this.status.event({ type, reason, message, dedupKey: key });
  }
}
