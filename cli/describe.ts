// `hostflow describe taskrun <ns>/<name>`: the TaskRun's workflow (its most recent run, found by
// the K8sNamespace and K8sName search attributes on this engine's task queue), what it says of
// itself (status query, current details), and its history told as steps.
import { taskRunStatus, type TaskRunStatus } from '../shared/messages.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { describeText } from './describe-text.js';
import {
  OUTPUT_OPTION,
  UsageError,
  parseCommandArgs,
  outputFormat,
  quoted,
  runCommand,
  withTemporal,
  type TemporalContext,
} from './oncall.js';
import { waitingFor } from './progress.js';
import type { TaskRunDescription } from './taskrun-description.js';
import { timeline } from './timeline.js';

export const DESCRIBE_USAGE = `
describe options:
  hostflow describe taskrun NAMESPACE/NAME [-o json]
      The TaskRun's workflow (ID, run, status), phase, host, its steps from the workflow history,
      and the last error. Finds the most recent workflow of that TaskRun on HOSTFLOW_TASK_QUEUE.`;

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const KINDS = ['taskrun', 'taskruns', 'tr'];
/** Queries need a worker; one that is down must not hang on-call. */
const QUERY_MS = 15_000;

export type { TaskRunDescription };

export function describeCommand(args: string[]): Promise<number> {
  return runCommand('hostflow describe', DESCRIBE_USAGE, async () => {
    const { values, positionals } = parseCommandArgs(args, OUTPUT_OPTION);
    const [kind, target, ...extra] = positionals;
    if (!kind) throw new UsageError('say what to describe: taskrun NAMESPACE/NAME');
    if (!KINDS.includes(kind)) {
      throw new UsageError(`cannot describe "${kind}": only taskrun NAMESPACE/NAME is supported`);
    }
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
    const [namespace, name, ...rest] = (target ?? '').split('/');
    if (!namespace || !name || rest.length > 0 || !NAMESPACE.test(namespace) || !NAME.test(name)) {
      throw new UsageError(
        target
          ? `"${target}" is not NAMESPACE/NAME of a TaskRun (e.g. demo/build-arm64)`
          : 'give the TaskRun as NAMESPACE/NAME (e.g. demo/build-arm64)',
      );
    }
    const format = outputFormat(values.output);
    const found = await withTemporal('hostflow describe', (ctx) =>
      describeTaskRun(ctx, namespace, name),
    );
    console.log(format === 'json' ? JSON.stringify(found, null, 2) : describeText(found));
    return 0;
  });
}

async function describeTaskRun(
  ctx: TemporalContext,
  namespace: string,
  name: string,
): Promise<TaskRunDescription> {
  const { client, settings, bounded } = ctx;
  const taskQueue = settings.HOSTFLOW_TASK_QUEUE;
  const query =
    `${SA.kind.name} = '${KIND.taskRun}' AND ${SA.namespace.name} = ${quoted(namespace)} ` +
    `AND ${SA.name.name} = ${quoted(name)} AND TaskQueue = ${quoted(taskQueue)}`;
  const runs = await waitingFor('hostflow describe', 'Temporal visibility', async () => {
    const found = [];
    for await (const execution of client.workflow.list({ query })) found.push(execution);
    return found.sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
  });
  const latest = runs[0];
  if (!latest) {
    throw new Error(
      `no workflow for TaskRun ${namespace}/${name} on task queue ${taskQueue} in Temporal ` +
        `namespace ${settings.TEMPORAL_NAMESPACE}. The bridge starts one only for TaskRuns with ` +
        'a PLATFORM param that mount the multi-platform-ssh Secret; a TaskRun created seconds ago ' +
        'may not be listed yet (visibility lags a little).',
    );
  }
  const handle = client.workflow.getHandle(latest.workflowId, latest.runId);
  const [description, history, answers] = await waitingFor(
    'hostflow describe',
    `the history of ${latest.workflowId}`,
    () =>
      Promise.all([
        handle.describe(),
        handle.fetchHistory(),
        bounded(QUERY_MS, () =>
          Promise.all([
            handle.query(taskRunStatus),
            handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata'),
          ]),
        ).catch((err: unknown) => err as Error),
      ]),
  );
  const steps = timeline(history);
  const answered = !(answers instanceof Error);
  const status: Partial<TaskRunStatus> = answered ? answers[0] : {};
  const attrs = description.typedSearchAttributes;
  const lastFailure = [...steps].reverse().find((s) => s.error)?.error;
  const details = answered ? answers[1].currentDetails || null : null;
  return {
    taskRun: `${namespace}/${name}`,
    workflowId: latest.workflowId,
    runId: latest.runId,
    status: description.status.name,
    taskQueue: description.taskQueue,
    startTime: description.startTime.toISOString(),
    closeTime: description.closeTime?.toISOString() ?? null,
    platform: attrs.get(SA.platform) ?? null,
    phase: status.phase ?? attrs.get(SA.phase) ?? null,
    host: status.host ?? attrs.get(SA.host) ?? null,
    failedHosts: status.failedHosts ?? [],
    observed: status.observed ?? null,
    error: status.error ?? lastFailure ?? null,
    source: answered ? 'query' : 'search attributes',
    ...(answered ? {} : { unanswered: `the workflow did not answer: ${answers.message}` }),
    summary: (await description.staticSummary()) ?? null,
    details,
    earlierWorkflows: runs.length - 1,
    timeline: steps,
  };
}
