// The ClusterOperations a Provisioning ran, kept to its operationHistoryLimit: the ended ones
// beyond the newest go, with their logs.
import { isCancellation, log } from '@temporalio/workflow';
import type { ProvisioningRef } from '../../shared/contracts/provisioning.js';
import { innermostMessage } from '../../shared/failures.js';
import { operationApi, operationLogs } from '../cluster-operation/activity-proxies.js';

/** Deletes the ended operations it `ran` beyond the newest `keep`, and their logs. */
export async function pruneOperations(
  history: { provisioning: ProvisioningRef; ran: string[]; keep: number },
  cluster: string,
): Promise<void> {
  try {
    const { deleted, logs } = await operationApi.pruneClusterOperations(history);
    if (logs.length) {
      const { namespace } = history.provisioning;
      await operationLogs.removeClusterLogs({ namespace, cluster, logs });
    }
    if (deleted.length) log.info('pruned cluster operations', { deleted });
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The next operation's end tries again; nothing waits on this.
    log.warn('could not prune cluster operations', { error: innermostMessage(err) });
  }
}
