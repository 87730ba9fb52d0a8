// Operators take a static host out of rotation for maintenance and put it back (`hostflow host
// drain|undrain`, the `setHostDrained` update). A drained host is treated like one removed from
// host-config: its builds run to the end and clean up there, and nothing new is granted on it;
// unlike a removed one it stays configured, so undraining serves waiters on it at once. The
// drain lives in the allocator's state, so it is carried across continue-as-new with the rest.
import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { setHostDrained, type HostDrainOutcome } from '../../shared/contracts/allocator.js';
import { VM_SLOTS_HOST } from '../../shared/slot-requests.js';
import { isDrained, setDrained, summary, type AllocationState } from './allocation.js';

export interface DrainPort {
  platform: string;
  state: AllocationState;
  /** The allocator has read its hosts (the first read may still be under way). */
  loaded(): boolean;
  /** The platform's hosts are cloud VMs the allocator runs itself: nothing to drain. */
  cloudVms(): boolean;
  /** Something changed: the allocator serves its waiters again. */
  changed(): void;
}

export function handleDrains(port: DrainPort): void {
  const { platform, state } = port;
  setHandler(
    setHostDrained,
    async ({ host, drained }): Promise<HostDrainOutcome> => {
      // Marks histories that may hold drains.
      await condition(port.loaded);
      const refusal = refuse(port, host, drained);
      if (refusal) throw ApplicationFailure.nonRetryable(refusal, 'HostNotDrainable');
      const changed = setDrained(state, host, drained);
      if (changed) port.changed();
      const view = summary(state, Date.now()).hosts.find((h) => h.name === host);
      return {
        platform,
        host,
        drained: isDrained(state, host),
        changed,
        ...(view?.drainedBecause ? { drainedBecause: view.drainedBecause } : {}),
        inUse: view?.inUse ?? 0,
        capacity: view?.capacity ?? 0,
        waiting: state.queue.length,
      };
    },
    {
      validator: (input) => {
        if (typeof input?.host !== 'string' || !input.host || typeof input.drained !== 'boolean') {
          throw new Error('setHostDrained needs { host: "<host name>", drained: true|false }');
        }
        // Before the first read the hosts are unknown: the handler checks once they are.
        const refusal = port.loaded() ? refuse(port, input.host, input.drained) : undefined;
        if (refusal) throw new Error(refusal);
      },
    },
  );
}

/** Why this host cannot be drained (or undrained) on this platform, if it cannot. */
function refuse(port: DrainPort, host: string, drained: boolean): string | undefined {
  const { platform, state } = port;
  if (port.cloudVms() || state.hosts[VM_SLOTS_HOST]) {
    return (
      `platform ${platform} runs on cloud VMs that hostflow starts and retires itself; ` +
      'only static hosts (host.<name>.* in host-config) can be drained'
    );
  }
  // Undraining a host that left host-config while drained is allowed: it clears the drain.
  if (state.hosts[host] || (!drained && isDrained(state, host))) return undefined;
  const known = Object.keys(state.hosts).sort();
  return (
    `host "${host}" is not a host of platform ${platform}: ` +
    (known.length
      ? `its hosts are ${known.join(', ')}`
      : 'it has no hosts (host.<name>.platform in host-config)')
  );
}
