// `hostflow describe <kind> <ns>/<name>`: one object's workflow (found by its workflow ID, or by
// the K8sNamespace and K8sName search attributes on this engine's task queue where the ID carries
// a uid), what it says of itself (status query, current details, pending activities), the object
// as Kubernetes has it, and its history told as steps. Every kind the same way; what differs is
// a row of describe-kinds.ts.
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  WorkflowNotFoundError,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
} from '@temporalio/client';
import { statusCode } from '../shared/kube-errors.js';
import { SA } from '../shared/search-attributes.js';
import { loadKubeConfig } from '../runtime/settings.js';
import {
  DESCRIBED_KINDS,
  describedKind,
  type DescribedKind,
  type KubeObject,
  type RelatedWorkflow,
} from './describe-kinds.js';
import { describeText } from './describe-text.js';
import type { Description } from './description.js';
import { UsageError, duration, type TemporalContext, reportCommand } from './oncall.js';
import { quoted } from '../shared/visibility-query.js';
import { waitingFor } from './progress.js';
import { decode, timeline, tsIso } from './timeline.js';

const KIND_LIST = DESCRIBED_KINDS.map((k) => k.names[0]).join(', ');

export const DESCRIBE_USAGE = `
describe options:
  hostflow describe KIND NAMESPACE/NAME [-o json] [--kubeconfig PATH] [--context NAME]
  hostflow describe pool NAME [-o json] [--kubeconfig PATH] [--context NAME]
      KIND is one of ${KIND_LIST}; a pool (MachineConfigPool) is cluster-scoped.
      The object's workflow (ID, run, status), phase, what it waits for now, the kind's facts
      (a Provisioning's cluster and hosts, a HostflowMachine's Machine, host and providerID, a pool's nodes
      and target image, an operation's Provisioning, action, steps and failure), where a running
      activity last said it was (a playbook's play and task), its steps from the workflow
      history, and the last error. Workflows on HOSTFLOW_TASK_QUEUE; the object is read with the
      kubeconfig where it can be.`;

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** Queries need a worker; one that is down must not hang on-call. */
const QUERY_MS = 15_000;

export type { Description };

interface Target {
  kind: DescribedKind;
  namespace: string;
  name: string;
}

export function describeCommand(args: string[]): Promise<number> {
  return reportCommand('hostflow describe', DESCRIBE_USAGE, args, {
    check: parseTarget,
    read: describeObject,
    text: describeText,
  });
}

function parseTarget(positionals: string[]): Target {
  const [kindName, target, ...extra] = positionals;
  if (!kindName) throw new UsageError(`say what to describe: ${KIND_LIST}, then its name`);
  const kind = describedKind(kindName);
  if (!kind) throw new UsageError(`cannot describe "${kindName}": the kinds are ${KIND_LIST}`);
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const form = kind.clusterScoped ? 'NAME' : 'NAMESPACE/NAME';
  const example = kind.clusterScoped ? kind.sample : `demo/${kind.sample}`;
  const parts = (target ?? '').split('/');
  const [namespace, name] = kind.clusterScoped ? ['', parts[0]] : parts;
  const valid =
    parts.length === (kind.clusterScoped ? 1 : 2) &&
    !!name &&
    NAME.test(name) &&
    (kind.clusterScoped || (!!namespace && NAMESPACE.test(namespace)));
  if (!valid) {
    throw new UsageError(
      target
        ? `"${target}" is not ${form} of a ${kind.kind} (e.g. ${example})`
        : `give the ${kind.kind} as ${form} (e.g. ${example})`,
    );
  }
  return { kind, namespace: namespace!, name: name! };
}

async function describeObject(
  ctx: TemporalContext,
  target: Target,
  flags: { kubeconfig?: string; context?: string },
): Promise<Description> {
  const { client, settings, bounded } = ctx;
  const { kind, namespace, name } = target;
  const object = kind.clusterScoped ? name : `${namespace}/${name}`;
  const notes: string[] = [];
  const { latest, earlier } = await findWorkflow(ctx, target);
  const handle = client.workflow.getHandle(latest.workflowId, latest.runId);
  const [description, history, answers, kube, related] = await waitingFor(
    'hostflow describe',
    `the history of ${latest.workflowId}`,
    () =>
      Promise.all([
        latest.described ?? handle.describe(),
        handle.fetchHistory(),
        bounded(QUERY_MS, () =>
          Promise.all([
            handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata'),
            kind.query ? handle.query(kind.query) : Promise.resolve(undefined),
          ]),
        ).catch((err: unknown) => err as Error),
        readObject(kind, namespace, name, ctx, flags),
        kind.related
          ? listWorkflows(ctx, kind.related(name, settings.HOSTFLOW_TASK_QUEUE))
          : Promise.resolve([]),
      ]),
  );
  const steps = timeline(history);
  if (answers instanceof Error) notes.push(`the workflow did not answer: ${answers.message}`);
  if (kube.note) notes.push(kube.note);
  const details = answers instanceof Error ? null : answers[0].currentDetails || null;
  const answer =
    answers instanceof Error
      ? undefined
      : (answers[1] as unknown as Record<string, unknown> | undefined);
  const attrs = description.typedSearchAttributes;
  const phases: Array<[Description['phaseFrom'], string | undefined]> = [
    ['query', answer?.phase as string | undefined],
    ['object', kube.object && (kind.objectPhase ?? statusPhase)(kube.object)],
    ['search attributes', attrs.get(SA.phase)],
    ['details', kind.phaseInDetails?.exec(details ?? '')?.[1]],
  ];
  const [phaseFrom, phase] = phases.find(([, p]) => p) ?? [null, null];
  const lastFailure = [...steps].reverse().find((s) => s.error)?.error;
  return {
    kind: kind.kind,
    object,
    workflowId: latest.workflowId,
    runId: description.runId,
    status: description.status.name,
    taskQueue: description.taskQueue,
    startTime: description.startTime.toISOString(),
    closeTime: description.closeTime?.toISOString() ?? null,
    phase: phase ?? null,
    phaseFrom,
    facts: kind.facts({ object: kube.object, attrs, details, answer, related }),
    details,
    // A closed run waits on nothing, whatever steps it left open.
    waiting: description.closeTime
      ? []
      : waitingOn(steps, description.raw.pendingActivities ?? [], Date.now()),
    error: (answer?.error as string | undefined) ?? lastFailure ?? null,
    summary: (await description.staticSummary()) ?? null,
    earlierWorkflows: earlier,
    notes,
    timeline: steps,
  };
}

/**
 * The object's most recent workflow, and how many older ones a same-named object left. A workflow
 * found by its id comes with its description, which need not be asked for again.
 */
async function findWorkflow(
  ctx: TemporalContext,
  { kind, namespace, name }: Target,
): Promise<{
  latest: { workflowId: string; runId?: string; described?: WorkflowExecutionDescription };
  earlier: number;
}> {
  const { client, settings } = ctx;
  const where =
    `on task queue ${settings.HOSTFLOW_TASK_QUEUE} in Temporal namespace ` +
    settings.TEMPORAL_NAMESPACE;
  if (kind.workflowId) {
    const workflowId = kind.workflowId(namespace, name);
    try {
      const described = await waitingFor('hostflow describe', `workflow ${workflowId}`, () =>
        client.workflow.getHandle(workflowId).describe(),
      );
      return { latest: { workflowId, runId: described.runId, described }, earlier: 0 };
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      throw new Error(
        `no workflow ${workflowId} for ${kind.kind} ${kind.clusterScoped ? name : `${namespace}/${name}`} ` +
          `in Temporal namespace ${settings.TEMPORAL_NAMESPACE}. ${kind.missing}`,
        { cause: err },
      );
    }
  }
  const query =
    `${SA.kind.name} = '${kind.searchKind}' AND ${SA.namespace.name} = ${quoted(namespace)} ` +
    `AND ${SA.name.name} = ${quoted(name)} AND TaskQueue = ${quoted(settings.HOSTFLOW_TASK_QUEUE)}`;
  const runs = await listWorkflows(ctx, query);
  const latest = runs.sort((a, b) => b.startTime.getTime() - a.startTime.getTime())[0];
  if (!latest) {
    throw new Error(
      `no workflow for ${kind.kind} ${namespace}/${name} ${where} (looked for ` +
        `${kind.searchKind}/${namespace}/${name}/<uid> by ${SA.kind.name}, ${SA.namespace.name} ` +
        `and ${SA.name.name}). ${kind.missing}`,
    );
  }
  return {
    latest: { workflowId: latest.workflowId, runId: latest.runId },
    earlier: runs.length - 1,
  };
}

async function listWorkflows(
  ctx: TemporalContext,
  query: string,
): Promise<Array<RelatedWorkflow & { runId: string }>> {
  return waitingFor('hostflow describe', 'Temporal visibility', async () => {
    const found: WorkflowExecutionInfo[] = [];
    for await (const execution of ctx.client.workflow.list({ query })) found.push(execution);
    return found.map((e) => ({
      workflowId: e.workflowId,
      runId: e.runId,
      status: e.status.name,
      startTime: e.startTime,
      attrs: e.typedSearchAttributes,
    }));
  });
}

/** The object as Kubernetes has it; a note instead when it cannot be read. */
async function readObject(
  kind: DescribedKind,
  namespace: string,
  name: string,
  { settings }: TemporalContext,
  flags: { kubeconfig?: string; context?: string },
): Promise<{ object?: KubeObject; note?: string }> {
  if (!kind.api) return {};
  const what = `${kind.kind} ${kind.clusterScoped ? name : `${namespace}/${name}`}`;
  try {
    const kc = loadKubeConfig(
      flags.kubeconfig ?? settings.KUBECONFIG,
      flags.context ?? settings.HOSTFLOW_KUBE_CONTEXT,
      { context: '--context or HOSTFLOW_KUBE_CONTEXT', file: '--kubeconfig or KUBECONFIG' },
    );
    const custom = kc.makeApiClient(CustomObjectsApi);
    const object = await (kind.clusterScoped
      ? custom.getClusterCustomObject({ ...kind.api, name })
      : custom.getNamespacedCustomObject({ ...kind.api, namespace, name }));
    return { object: object as KubeObject };
  } catch (err) {
    if (statusCode(err) === 404) {
      return { note: `there is no ${what} in Kubernetes: its facts are the workflow's only` };
    }
    return { note: `could not read ${what}: ${(err as Error).message}` };
  }
}

function statusPhase(object: KubeObject): string | undefined {
  const phase = object.status?.phase;
  return typeof phase === 'string' && phase ? phase : undefined;
}

type PendingActivity = NonNullable<
  WorkflowExecutionDescription['raw']['pendingActivities']
>[number];

/**
 * What the run waits on now: its open steps, with a pending activity's attempt, where its last
 * heartbeat said it was (a playbook's play and task) and when, and its last failure.
 */
function waitingOn(
  steps: ReturnType<typeof timeline>,
  pending: PendingActivity[],
  now: number,
): string[] {
  return steps
    .filter((s) => s.outcome === 'running')
    .map((s) => {
      const activity = pending.find((p) => p.activityType?.name === s.name);
      const attempt =
        activity?.attempt && activity.attempt > 1 ? `, attempt ${activity.attempt}` : '';
      const failure = activity?.lastFailure?.message
        ? `, last failure: ${activity.lastFailure.message}`
        : '';
      return `${s.kind} ${s.text}${attempt}${heartbeat(activity, now)}${failure}`;
    });
}

/** `, at play "…", task "…" (heartbeat 4 s ago)`: only words, as activities heartbeat them. */
function heartbeat(activity: PendingActivity | undefined, now: number): string {
  const said = decode(activity?.heartbeatDetails?.payloads?.[0]);
  if (typeof said !== 'string' || !said) return '';
  const at = tsIso(activity?.lastHeartbeatTime);
  return `, at ${said}${at ? ` (heartbeat ${duration(now - Date.parse(at))} ago)` : ''}`;
}
