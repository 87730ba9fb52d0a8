// The Locks an allocator holds on what its platform's work in progress needs (docs/architecture.md,
// "Locks"): while its VMs live, the cloud credentials and ssh-secret; while builds run on a static
// host, that host's admin key (locks/platform-secrets.ts), taken through the kit (locks/hold.ts).
// Level-triggered: the wanted set is derived from the slots and VMs, synced when it changes and
// at every config read, so a Lock deleted by hand comes back. A failing sync never holds a grant
// back: it is tried again with back-off on the allocator's own clock, and the details say so.
// Only the allocator's main loop calls sync (docs/architecture.md, "Local activities: one
// coroutine at a time").
import { isCancellation } from '@temporalio/workflow';
import { takePlatformLocks } from '../../locks/hold.js';
import type { PlatformLockInput } from '../../locks/platform-secrets.js';
import { innermostMessage } from '../../shared/failures.js';
import { VM_SLOTS_HOST } from '../../shared/slot-requests.js';
import { metrics } from '../metrics.js';
import { backoffMs } from '../kit/retry.js';
import type { AllocationState } from './allocation.js';

export class DependencyLocks {
  private synced: string | undefined;
  private held: string[] = [];
  private trouble: { attempt: number; cause: string; retryAt: number } | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly platform: string) {}

  /** host-config was read again: the Secrets' names may have changed. */
  stale(): void {
    this.synced = undefined;
  }

  /**
   * Takes and releases Locks so they match the work now in progress. One sync at a time: a
   * caller arriving meanwhile waits for it, then syncs what changed since.
   */
  async sync(state: AllocationState, poolVmsLive: boolean): Promise<void> {
    while (this.running) await this.running;
    const input: Omit<PlatformLockInput, 'holder'> = {
      platform: this.platform,
      busyHosts: Object.keys(state.holders)
        .filter((host) => host !== VM_SLOTS_HOST && (state.holders[host]?.length ?? 0) > 0)
        .sort(),
      vmsLive: poolVmsLive || (state.holders[VM_SLOTS_HOST]?.length ?? 0) > 0,
    };
    const key = JSON.stringify(input);
    if (key === this.synced) return;
    if (this.trouble && Date.now() < this.trouble.retryAt) return;
    this.running = this.write(input, key);
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  private async write(input: Omit<PlatformLockInput, 'holder'>, key: string): Promise<void> {
    try {
      const result = await takePlatformLocks(input);
      this.synced = key;
      this.held = result.held;
      this.trouble = undefined;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const attempt = (this.trouble?.attempt ?? 0) + 1;
      this.trouble = {
        attempt,
        cause: innermostMessage(err),
        retryAt: Date.now() + backoffMs(attempt),
      };
      metrics.waits.add(1, { platform: this.platform, dependency: 'locks' });
    }
  }

  /** Epoch ms of the next try of a failed sync. */
  wakeUp(): number | undefined {
    return this.trouble?.retryAt;
  }

  describe(): string {
    const held = this.held.length ? `Locked: ${this.held.join(', ')}` : '';
    const trouble = this.trouble
      ? `**Cannot write Locks** (try ${this.trouble.attempt}): ${this.trouble.cause}. Serving anyway.`
      : '';
    return [held, trouble].filter(Boolean).join('\n\n');
  }
}
