// What a failed kubespray run left to say, read from the PlaybookFailed failure its activity
// throws (activities/ansible/cluster-run.ts): which host and task failed, and where its log is. A
// Provisioning's and a ClusterOperation's status both name them. Pure.
/** The host, task and log of a failed kubespray run, from its PlaybookFailed details. */
export function failureDetails(err: unknown): Record<string, string> {
  let cause: unknown = err;
  while (cause && typeof cause === 'object') {
    const details = (cause as { details?: unknown[] }).details?.[0];
    if (details && typeof details === 'object') {
      const {
        failedHost,
        failedTask,
        log: logFile,
      } = details as Record<string, string | undefined>;
      return Object.fromEntries(
        Object.entries({ failedHost, failedTask, log: logFile }).filter(([, v]) => v !== undefined),
      ) as Record<string, string>;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return {};
}
