// What `hostflow describe` knows of each kind, one row per kind: the names it accepts, how the
// workflow is found (its ID from the object's name, or visibility where the ID carries a uid),
// the object it reads from Kubernetes, and the kind's own facts. describe.ts does the rest the
// same way for every kind.
import type { TypedSearchAttributes } from '@temporalio/common';
import {
  BPA_CLUSTER_API,
  CLUSTER_LABEL,
  PROVISIONING_API,
  SOFTWARE_API,
} from '../shared/bpa-api.js';
import { CLUSTER_OPERATION_API } from '../shared/cluster-operation-api.js';
import { CLUSTER_NAME_LABEL, HOSTFLOW_MACHINE_API } from '../shared/machine-api.js';
import { MACHINE_CONFIG_POOL_API } from '../shared/mco-api.js';
import { taskRunStatus, type TaskRunStatus } from '../shared/contracts/taskrun.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import type { Fact } from './description.js';
import { duration } from './oncall.js';

/** An object as the API server returns it; only the fields read here are typed. */
export interface KubeObject {
  metadata?: { labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** Another workflow the kind's facts draw on (a pool's per-node updates). */
export interface RelatedWorkflow {
  workflowId: string;
  status: string;
  startTime: Date;
  attrs: TypedSearchAttributes;
}

export interface FactSources {
  /** The object from Kubernetes; undefined when it could not be read (see the notes). */
  object: KubeObject | undefined;
  attrs: TypedSearchAttributes;
  /** The workflow's current details. */
  details: string | null;
  /** The workflow's answer to the kind's status query (TaskRuns). */
  answer: Record<string, unknown> | undefined;
  related: RelatedWorkflow[];
}

export interface DescribedKind {
  kind: string;
  /** What on-call may type: the kind, its plural and kubectl's short name. */
  names: readonly string[];
  /** Cluster-scoped objects are named NAME, the others NAMESPACE/NAME. */
  clusterScoped?: boolean;
  sample: string;
  /** The workflow's ID; absent where it carries a uid: then found by K8sNamespace and K8sName. */
  workflowId?: (namespace: string, name: string) => string;
  searchKind: string;
  api?: { group: string; version: string; plural: string };
  /** The workflow's own status query, where it has one. */
  query?: typeof taskRunStatus;
  /** The phase in the object's status, where it is not `status.phase`. */
  objectPhase?: (object: KubeObject) => string | undefined;
  /** The phase in the workflow's current details (the first group), when nothing else says. */
  phaseInDetails?: RegExp;
  /** Visibility query for the related workflows, by object name and task queue. */
  related?: (name: string, taskQueue: string) => string;
  facts(from: FactSources): Record<string, Fact>;
  /** Why there may be no workflow, for the not-found message. */
  missing: string;
}

const BRIDGE_STARTS = (what: string) =>
  `The bridge starts it at the first event of the ${what}, if this engine watches its namespace.`;

export const DESCRIBED_KINDS: readonly DescribedKind[] = [
  {
    kind: 'TaskRun',
    names: ['taskrun', 'taskruns', 'tr'],
    sample: 'build-arm64',
    searchKind: KIND.taskRun,
    query: taskRunStatus,
    missing:
      'The bridge starts one only for TaskRuns with a PLATFORM param that mount the ' +
      'multi-platform-ssh Secret; a TaskRun created seconds ago may not be listed yet ' +
      '(visibility lags a little).',
    facts: ({ attrs, answer }) => {
      const status = (answer ?? {}) as Partial<TaskRunStatus>;
      return {
        platform: attrs.get(SA.platform) ?? null,
        host: status.host ?? attrs.get(SA.host) ?? null,
        failedHosts: status.failedHosts ?? [],
        observed: status.observed ?? null,
      };
    },
  },
  {
    kind: 'Provisioning',
    names: ['provisioning', 'provisionings', 'bpa'],
    sample: 'bpa-sample',
    workflowId: WORKFLOW_ID.provisioning,
    searchKind: KIND.provisioning,
    api: PROVISIONING_API,
    // `**ns/name** (cluster c): Phase. step` (provisioning/report.ts)
    phaseInDetails: /^\*\*[^*]+\*\* \(cluster [^)]*\): (\w+)\./,
    missing: BRIDGE_STARTS('Provisioning'),
    facts: ({ object, details }) => {
      const status = object?.status as ProvisioningStatus | undefined;
      return {
        cluster:
          object?.metadata?.labels?.[CLUSTER_LABEL] ??
          /\(cluster ([^)?]+)\)/.exec(details ?? '')?.[1] ??
          null,
        step: status?.step ?? null,
        hosts: (status?.nodes ?? []).map(
          (n) => `${n.label}: ${n.host ?? '?'} ${n.ip ?? ''} (${(n.roles ?? []).join(', ')})`,
        ),
        failedStep: status?.failedStep ?? null,
        failedHost: status?.install?.failedHost ?? null,
        failedTask: status?.install?.failedTask ?? null,
        log: status?.install?.log ?? null,
      };
    },
  },
  {
    kind: 'Software',
    names: ['software', 'softwares', 'sw'],
    sample: 'software-sample',
    workflowId: WORKFLOW_ID.software,
    searchKind: KIND.software,
    api: SOFTWARE_API,
    // `**Software ns/name**: Phase. details` (kit/bpa-report.ts, software.ts)
    phaseInDetails: /^\*\*[^*]+\*\*: (\w+)\./,
    missing: BRIDGE_STARTS('Software'),
    facts: ({ object }) => {
      const nodes = (object?.status?.nodes ?? []) as SoftwareNode[];
      return {
        cluster: object?.metadata?.labels?.[CLUSTER_LABEL] ?? null,
        nodes: nodes.map(
          (n) =>
            `${n.label} ${n.ip ?? ''}: ` +
            (n.error
              ? `failed: ${n.error}`
              : `installed ${(n.installed ?? []).join(', ') || 'nothing'}`),
        ),
      };
    },
  },
  {
    kind: 'Cluster',
    names: ['cluster', 'clusters'],
    sample: 'cluster-sample',
    workflowId: WORKFLOW_ID.bpaCluster,
    searchKind: KIND.bpaCluster,
    api: BPA_CLUSTER_API,
    // `**Cluster ns/name**: Phase: message` (bpa-cluster/cluster.ts)
    phaseInDetails: /^\*\*[^*]+\*\*: (\w+):/,
    missing: BRIDGE_STARTS('Cluster'),
    facts: ({ object }) => {
      const spec = (object?.spec ?? {}) as { provisioningCR?: string; softwareCR?: string };
      const status = (object?.status ?? {}) as { provisioning?: string; software?: string };
      const part = (name: string | undefined, phase: string | undefined) =>
        name ? `${name} (${phase ?? '?'})` : null;
      return {
        provisioning: part(spec.provisioningCR, status.provisioning),
        software: part(spec.softwareCR, status.software),
      };
    },
  },
  {
    kind: 'HostflowMachine',
    names: ['machine', 'machines', 'hostflowmachine', 'hostflowmachines', 'hfm'],
    sample: 'worker-0',
    workflowId: WORKFLOW_ID.hostflowMachine,
    searchKind: KIND.machine,
    api: HOSTFLOW_MACHINE_API,
    // `**HostflowMachine ns/name** (Phase): details` (machine/report.ts)
    phaseInDetails: /^\*\*HostflowMachine [^*]+\*\* \((\w+)\)/,
    missing: BRIDGE_STARTS('HostflowMachine'),
    facts: ({ object, attrs }) => {
      const meta = (object?.metadata ?? {}) as {
        labels?: Record<string, string>;
        ownerReferences?: Array<{ kind?: string; name?: string }>;
      };
      const spec = (object?.spec ?? {}) as { providerID?: string };
      const status = (object?.status ?? {}) as {
        conditions?: Array<{ type?: string; status?: string; message?: string }>;
      };
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      return {
        cluster: attrs.get(SA.clusterName) ?? meta.labels?.[CLUSTER_NAME_LABEL] ?? null,
        machine: meta.ownerReferences?.find((r) => r.kind === 'Machine')?.name ?? null,
        host: attrs.get(SA.host) ?? null,
        providerID: attrs.get(SA.providerId) ?? spec.providerID ?? null,
        failure: ready?.status === 'False' ? (ready.message ?? null) : null,
      };
    },
  },
  {
    kind: 'MachineConfigPool',
    names: ['pool', 'pools', 'machineconfigpool', 'machineconfigpools', 'mcp'],
    clusterScoped: true,
    sample: 'worker',
    workflowId: (_namespace, name) => WORKFLOW_ID.rollout(name),
    searchKind: KIND.rollout,
    api: MACHINE_CONFIG_POOL_API,
    objectPhase: (pool) => {
      const conditions = (pool.status?.conditions ?? []) as Array<{ type: string; status: string }>;
      return ['Degraded', 'Updating', 'Updated'].find((type) =>
        conditions.some((c) => c.type === type && c.status === 'True'),
      );
    },
    related: (name, taskQueue) =>
      `${SA.kind.name} = '${KIND.rolloutNode}' AND ${SA.name.name} = '${name}' ` +
      `AND TaskQueue = '${taskQueue}'`,
    missing: BRIDGE_STARTS('MachineConfigPool'),
    facts: ({ object, details, related }) => {
      const status = (object?.status ?? {}) as PoolStatus;
      const counts =
        status.machineCount === undefined
          ? null
          : `${status.updatedMachineCount ?? 0}/${status.machineCount} updated, ` +
            `${status.degradedMachineCount ?? 0} degraded`;
      return {
        targetImage:
          status.configuration?.osImageURL ?? /→ `([^`]+)`/.exec(details ?? '')?.[1] ?? null,
        machines: counts,
        nodes: latestPerHost(related).map(
          (w) => `${w.attrs.get(SA.host)}: ${w.status} (${w.workflowId})`,
        ),
      };
    },
  },
  {
    kind: 'ClusterOperation',
    names: ['operation', 'operations', 'clusteroperation', 'clusteroperations', 'clusterop'],
    sample: 'upgrade-1-35-1',
    workflowId: WORKFLOW_ID.clusterOperation,
    searchKind: KIND.clusterOperation,
    api: CLUSTER_OPERATION_API,
    // `**ClusterOperation ns/name** (cluster c): Phase. message` (cluster-operation/report.ts)
    phaseInDetails: /^\*\*[^*]+\*\* \(cluster [^)]*\): (\w+)\./,
    missing: BRIDGE_STARTS('ClusterOperation'),
    facts: ({ object, attrs }) => {
      const spec = (object?.spec ?? {}) as { provisioning?: string; dryRun?: boolean };
      const status = (object?.status ?? {}) as OperationStatus;
      return {
        provisioning: spec.provisioning ?? null,
        cluster: attrs.get(SA.clusterName) ?? null,
        action:
          `${attrs.get(SA.action) ?? (object?.spec?.action as string | undefined) ?? '?'}` +
          (spec.dryRun ? ' (dry run: --check)' : ''),
        message: status.message ?? null,
        // Left in the status from its wait; it means something only while it is Pending.
        queuePosition:
          status.phase === 'Pending' && status.queuePosition !== undefined
            ? String(status.queuePosition)
            : null,
        // It waits for its Provisioning's maintenance window, which opens then.
        notBefore: status.phase === 'Pending' ? (status.notBefore ?? null) : null,
        steps: (status.steps ?? []).map(operationStep),
        failedStep: status.failedStep ?? null,
        failedHost: status.failedHost ?? null,
        failedTask: status.failedTask ?? null,
        log: status.log ?? null,
      };
    },
  },
];

interface ProvisioningStatus {
  step?: string;
  failedStep?: string;
  nodes?: Array<{ label: string; host?: string; ip?: string; roles?: string[] }>;
  install?: { failedHost?: string; failedTask?: string; log?: string };
}

interface SoftwareNode {
  label: string;
  ip?: string;
  installed?: string[];
  error?: string;
}

interface PoolStatus {
  machineCount?: number;
  updatedMachineCount?: number;
  degradedMachineCount?: number;
  configuration?: { osImageURL?: string };
}

interface OperationStatus {
  phase?: string;
  message?: string;
  queuePosition?: number;
  notBefore?: string;
  steps?: OperationStepStatus[];
  failedStep?: string;
  failedHost?: string;
  failedTask?: string;
  log?: string;
}

interface OperationStepStatus {
  name: string;
  action: string;
  phase: string;
  startTime?: string;
  completionTime?: string;
  message?: string;
  wouldChange?: Record<string, number>;
  hosts?: Record<string, { ok?: number; changed?: number }>;
}

/** `action upgrade-cluster.yml: Succeeded 10:01:02 → 10:01:09 (7 s)`, then what it said. */
function operationStep(step: OperationStepStatus): string {
  const time = (iso: string) => iso.slice(11, 19);
  const { startTime: start, completionTime: end } = step;
  const when = !start
    ? ''
    : end
      ? ` ${time(start)} → ${time(end)} (${duration(Date.parse(end) - Date.parse(start))})`
      : ` since ${time(start)}`;
  const changes = Object.entries(step.wouldChange ?? {});
  const would = changes.length
    ? `, would change ${changes.map(([host, n]) => `${host} ${n}`).join(', ')}`
    : '';
  const hosts = Object.entries(step.hosts ?? {});
  const done = hosts.length
    ? `; ${hosts.map(([host, r]) => `${host} ${r.ok ?? 0} ok, ${r.changed ?? 0} changed`).join('; ')}`
    : '';
  return (
    `${step.name} ${step.action}: ${step.phase}${when}${would}${done}` +
    (step.message ? `: ${step.message}` : '')
  );
}

/** Each node's most recent update workflow, by node name. */
function latestPerHost(workflows: RelatedWorkflow[]): RelatedWorkflow[] {
  const latest = new Map<string, RelatedWorkflow>();
  for (const w of workflows) {
    const host = w.attrs.get(SA.host);
    if (!host) continue;
    const seen = latest.get(host);
    if (!seen || seen.startTime < w.startTime) latest.set(host, w);
  }
  return [...latest.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, w]) => w);
}

/** The kind a name on the command line means. */
export function describedKind(name: string): DescribedKind | undefined {
  return DESCRIBED_KINDS.find((k) => k.names.includes(name.toLowerCase()));
}
