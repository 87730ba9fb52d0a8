// What an allocator shows operators: metrics, and its details in the UI (slots, waiters, hosts,
// pool VMs, and what it is waiting for when host-config cannot be read).
import { setCurrentDetails } from '@temporalio/workflow';
import { metrics } from '../metrics.js';
import { summary, type AllocationState } from './allocation.js';

/** A host-config read that keeps failing: the allocator serves with what it read last. */
export interface ConfigTrouble {
  attempt: number;
  cause: string;
  /** Epoch ms of the next read. */
  retryAt: number;
}

export function report(
  platform: string,
  state: AllocationState,
  poolVms: string,
  trouble: ConfigTrouble | undefined,
  locks = '',
): void {
  const view = summary(state, Date.now());
  const tags = { platform };
  metrics.slotsInUse.set(view.inUse, tags);
  metrics.slotsTotal.set(view.capacity, tags);
  metrics.queueLength.set(view.queue.length, tags);
  const hosts = view.hosts
    .map(
      (h) =>
        `${h.name} ${h.inUse}/${h.capacity}${h.health === 'healthy' ? '' : ` (${h.health})`}${h.removed ? ' (removed)' : ''}${h.servesMachines ? ' (machines)' : ''}${h.drained ? ` (drained${h.drainedBecause ? `: ${h.drainedBecause}` : ''})` : ''}`,
    )
    .join(', ');
  const waitingOn = trouble
    ? `\n\n**Cannot read host-config** (try ${trouble.attempt}, next in ` +
      `${Math.max(0, Math.round((trouble.retryAt - Date.now()) / 1000))} s): ${trouble.cause}. ` +
      'Serving with the hosts read last.'
    : '';
  setCurrentDetails(
    `**${platform}**: ${view.inUse}/${view.capacity} slots in use; ` +
      `${view.queue.length} waiting${view.queue.length ? `: ${view.queue.slice(0, 5).join(', ')}` : ''}.\n\n` +
      `Hosts: ${hosts || 'none configured'}` +
      (poolVms ? `\n\nPool VMs: ${poolVms}` : '') +
      (locks ? `\n\n${locks}` : '') +
      waitingOn,
  );
}
