// `hostflow upgrade check`: whether an install that runs without Worker Versioning may roll out
// the next release of the 0.x → 1.0 path (docs/workflow-versioning.md, "Upgrading a 0.x install").
// Each step is safe once no run its workers could replay took what the step removes; the command
// counts those runs in visibility, open ones and closed ones still within retention.
import { RETIRED_PATCHES } from '../shared/retired-patches.js';
import { quoted } from '../shared/visibility-query.js';
import { FAMILIES } from '../shared/families.js';
import { familyWorkflowTypes } from '../workers/workflow-code.js';
import {
  duration,
  outputFormat,
  OUTPUT_OPTION,
  parseCommandArgs,
  runCommand,
  table,
  UsageError,
  withTemporal,
} from './oncall.js';

export const UPGRADE_USAGE = `
upgrade options:
  hostflow upgrade check --to 0.9|1.0 --since <RFC 3339 time> [-o text|json]
      Without Worker Versioning, 0.x reaches 1.0 through 0.9, each rolled out only when this
      says so (exit 0; 1 while runs remain). --to 0.9: --since is when the last worker older
      than the newest 0.1 stopped; no hostflow run started before then may remain.
      --to 1.0: --since is when the last 0.1 worker stopped (0.9 rolled out); no run started
      before then with a 0.x patch marker may remain. With Worker Versioning, roll out 1.0 as a
      new build instead (docs/deploy.md).`;

/** Every workflow type hostflow has run: each family's today, and those only 0.x had. */
export const HOSTFLOW_WORKFLOW_TYPES: readonly string[] = [
  ...familyWorkflowTypes(FAMILIES),
  // 0.x only: their runs count until they are gone.
  'clusterOperationWorkflow',
  'machineWorkflow',
];

const STEPS = {
  '0.9': {
    what: 'hostflow runs started before it',
    query: (since: string) =>
      `WorkflowType IN (${HOSTFLOW_WORKFLOW_TYPES.map(quoted).join(', ')}) AND StartTime < ${quoted(since)}`,
  },
  '1.0': {
    what: 'runs started before it with a 0.x patch marker',
    query: (since: string) =>
      `TemporalChangeVersion IN (${RETIRED_PATCHES.map(quoted).join(', ')}) AND StartTime < ${quoted(since)}`,
  },
} as const;
type Step = keyof typeof STEPS;

export interface UpgradeCheck {
  to: Step;
  since: string;
  namespace: string;
  query: string;
  running: number;
  /** The running ones by workflow type: long-lived ones stay until they continue as new. */
  runningByType: Record<string, number>;
  closed: number;
  /** The namespace's retention: how long a closed run stays replayable. */
  retention: string;
  ready: boolean;
}

export function upgradeCommand(args: string[]): Promise<number> {
  return runCommand('upgrade', UPGRADE_USAGE, async () => {
    const { values, positionals } = parseCommandArgs(args, {
      ...OUTPUT_OPTION,
      to: { type: 'string' },
      since: { type: 'string' },
    });
    if (positionals.length !== 1 || positionals[0] !== 'check') {
      throw new UsageError('say what to do: check');
    }
    const format = outputFormat(values.output);
    const to = values.to;
    if (to !== '0.9' && to !== '1.0') {
      throw new UsageError(`--to must be 0.9 or 1.0, not ${to === undefined ? 'missing' : to}`);
    }
    const since = sinceTime(values.since);
    const found = await checkUpgrade(to, since);
    console.log(format === 'json' ? JSON.stringify(found, null, 2) : upgradeText(found));
    return found.ready ? 0 : 1;
  });
}

/** --since as the RFC 3339 time visibility compares StartTime with. */
function sinceTime(value: string | undefined): string {
  if (value === undefined) throw new UsageError('--since is required: an RFC 3339 time');
  const parsed = Date.parse(value);
  if (!/^\d{4}-\d\d-\d\dT/.test(value) || Number.isNaN(parsed)) {
    throw new UsageError(`--since must be an RFC 3339 time (2026-11-30T12:00:00Z), not ${value}`);
  }
  return new Date(parsed).toISOString();
}

async function checkUpgrade(to: Step, since: string): Promise<UpgradeCheck> {
  return withTemporal('upgrade check', async ({ client, settings, bounded }) => {
    const namespace = settings.TEMPORAL_NAMESPACE;
    const query = STEPS[to].query(since);
    const count = (q: string) =>
      bounded(30_000, () => client.workflow.count(q)).then((c) => c.count);
    const [running, all, described] = await Promise.all([
      count(`${query} AND ExecutionStatus = 'Running'`),
      count(query),
      bounded(30_000, () => client.workflowService.describeNamespace({ namespace })),
    ]);
    const ttl = described.config?.workflowExecutionRetentionTtl?.seconds;
    const byType = await Promise.all(
      HOSTFLOW_WORKFLOW_TYPES.map(async (type) => {
        const n = running
          ? await count(
              `${query} AND ExecutionStatus = 'Running' AND WorkflowType = ${quoted(type)}`,
            )
          : 0;
        return [type, n] as const;
      }),
    );
    return {
      to,
      since,
      namespace,
      query,
      running,
      runningByType: Object.fromEntries(byType.filter(([, n]) => n > 0)),
      closed: all - running,
      retention: ttl === undefined || ttl === null ? 'unknown' : duration(Number(ttl) * 1000),
      ready: all === 0,
    };
  });
}

export function upgradeText(found: UpgradeCheck): string {
  const rows = table([
    ['running', String(found.running)],
    ...Object.entries(found.runningByType).map(([type, n]) => [`  ${type}`, String(n)]),
    ['closed, within retention', String(found.closed)],
  ]);
  const head = `${STEPS[found.to].what} (${found.since}), in Temporal namespace ${found.namespace}:`;
  const verdict = found.ready
    ? `ready: roll out ${found.to}.`
    : `not yet: wait until the running ones end and the closed ones pass the namespace's ` +
      `retention (${found.retention}), then check again.`;
  return `${head}\n${rows}\n${verdict}`;
}
