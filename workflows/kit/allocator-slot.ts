// Asking a platform's allocator (`allocator/<platform>`) for a slot, the one way every family
// does it (TaskRuns, Machines): ask; when every slot is taken, wait in line until the allocator
// grants one by signal, says none will ever come, or the asker's object ends. An allocator that
// was lost and rebuilt itself asks its waiters to ask again (same request id), so nobody waits on
// an allocator that no longer exists. And giving the slot back.
import type { Host } from '../../platform-config/host.js';
import type { SlotRequestInput } from '../../shared/contracts/allocator.js';
import { condition, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { TemporalActivities } from '../../activities/temporal/workflows.js';
import { ALLOCATOR_CALL, ALLOCATOR_MAIL } from './activity-options.js';

const allocatorApi = proxyActivities<TemporalActivities>(ALLOCATOR_CALL);
const allocatorMail =
  proxyLocalActivities<Pick<TemporalActivities, 'tellAllocator'>>(ALLOCATOR_MAIL);

/** What the allocator said by signal about a request; the family's signal handlers fill it in. */
export interface SlotMail {
  grant?: Host;
  exhausted?: string;
  /** Set when the allocator asks waiters to ask again (it was lost and rebuilt itself). */
  askAgain?: boolean;
}

export type SlotAnswer =
  | { granted: Host }
  | { exhausted: string }
  /** The asker's object ended while it waited in line. */
  | { ended: true };

export interface SlotRequest {
  platform: string;
  request: SlotRequestInput;
  /** The requestSlot activity's summary in the UI. */
  summary: string;
  /** Where the asker's signal handlers put the allocator's answers for `request.requestId`. */
  mail: SlotMail;
  /** True once the asker's object has ended: waiting in line stops. */
  ended: () => boolean;
  /** Told each time the allocator puts the request in line (`first`: the first time). */
  inLine: (position: number, first: boolean) => void | Promise<void>;
}

/** Asks for a slot and waits in line until it is granted, none will come, or the asker ends. */
export async function requestSlot(slot: SlotRequest): Promise<SlotAnswer> {
  const { mail } = slot;
  mail.grant = mail.exhausted = undefined;
  for (let first = true; ; first = false) {
    mail.askAgain = false;
    const answer = await allocatorApi.requestSlot.executeWithOptions({ summary: slot.summary }, [
      { platform: slot.platform, ...slot.request },
    ]);
    if (answer.status === 'granted') return { granted: answer.host };
    if (answer.status === 'exhausted') return { exhausted: answer.reason };
    await slot.inLine(answer.position, first);
    for (;;) {
      await condition(
        () =>
          mail.grant !== undefined ||
          mail.exhausted !== undefined ||
          mail.askAgain === true ||
          slot.ended(),
      );
      if (mail.grant) return { granted: mail.grant };
      if (mail.exhausted !== undefined) return { exhausted: mail.exhausted };
      if (slot.ended()) return { ended: true };
      // The allocator was rebuilt and no longer knows this request: the same id asks again.
      mail.askAgain = false;
      break;
    }
  }
}

/** Gives a slot back; best effort: no allocator, no slot held. */
export async function giveSlotBack(platform: string, requestId: string): Promise<void> {
  await tellAllocator(platform, { releaseSlot: { requestId } });
}

/**
 * Tells the platform's allocator a host's outcome or gives a slot back, best effort: an allocator
 * that cannot be told is rebuilt from the running workflows, or sweeps holders whose run ended.
 */
export async function tellAllocator(
  platform: string,
  mail: { hostOutcome: { host: string; ok: boolean } } | { releaseSlot: { requestId: string } },
): Promise<void> {
  await allocatorMail.tellAllocator({ platform, ...mail }).catch(() => undefined);
}
