// A step's hosts as its status lists them, from ansible's recap: tasks done and changed on each,
// and in a dry run what would change. A recap can name any number of hosts (a tenant's playbook
// adds its own), so the status lists MAX_STATUS_HOSTS of them, those with changes or failures
// first, and counts the rest (docs/provisionings.md, "Limits").
import type { HostRecap } from '../../activities/ansible/progress.js';
import { MAX_STATUS_HOSTS } from '../../shared/cluster-operation-limits.js';
import type { StepReport } from './report.js';

/** What a run reports of its hosts; `recapOmitted`: hosts its recap named beyond what it kept. */
export interface RecapOutcome {
  recap: Record<string, HostRecap>;
  recapOmitted?: number;
}

export function stepHosts(
  outcome: RecapOutcome,
  dryRun: boolean | undefined,
): Pick<StepReport, 'hosts' | 'wouldChange' | 'hostsNotShown'> {
  let entries = Object.entries(outcome.recap);
  const omitted = outcome.recapOmitted ?? 0;
  let notShown = 0;
  if (entries.length > MAX_STATUS_HOSTS || omitted) {
    // Marked only where the list is cut, as it was recorded.
    const first = (r: HostRecap) => (r.changed || r.failed || r.unreachable ? 0 : 1);
    const shown = [...entries]
      .sort(([, a], [, b]) => first(a) - first(b))
      .slice(0, MAX_STATUS_HOSTS);
    notShown = entries.length - shown.length + omitted;
    entries = shown;
  }
  return {
    hosts: Object.fromEntries(entries.map(([host, r]) => [host, { ok: r.ok, changed: r.changed }])),
    ...(dryRun
      ? { wouldChange: Object.fromEntries(entries.map(([host, r]) => [host, r.changed])) }
      : {}),
    ...(notShown ? { hostsNotShown: notShown } : {}),
  };
}
