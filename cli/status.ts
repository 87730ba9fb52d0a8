// `hostflow status`: every platform's slots as its allocator sees them. The running allocators
// of this engine are found by visibility (HostflowKind and the engine's task queue) and asked
// their `allocatorState`; host-config adds the local platforms (no allocator) and the platforms
// no TaskRun has asked for yet.
import type { Client } from '@temporalio/client';
import { parseTaskRunWorkflowId } from '../shared/workflow-ids.js';
import { allocatorState } from '../shared/contracts/allocator.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { VM_SLOTS_HOST, workflowIdOfRequest } from '../shared/slot-requests.js';
import type { AllocationSummary } from '../shared/contracts/allocator.js';
import { UsageError, type TemporalContext, reportCommand } from './oncall.js';
import { quoted } from '../shared/visibility-query.js';
import { readDeclaredPlatforms, type DeclaredPlatforms, type PlatformKind } from './platforms.js';
import { waitingFor } from './progress.js';
import type { EngineStatus, PlatformStatus } from './engine-status.js';
import { statusText } from './status-text.js';

export const STATUS_USAGE = `
status options:
  hostflow status [-o json] [--kubeconfig PATH] [--context NAME]
      Every platform of this engine (HOSTFLOW_TASK_QUEUE, HOSTFLOW_NAMESPACE's host-config):
      slots in use and capacity, TaskRuns waiting, hosts out of rotation and their next probe,
      and live VMs. Exits 1 if an allocator did not answer or host-config could not be read.`;

/** How long an allocator may take to answer; a worker that is down never does. */
const QUERY_MS = 15_000;

export type { EngineStatus, PlatformStatus };

export function statusCommand(args: string[]): Promise<number> {
  return reportCommand('hostflow status', STATUS_USAGE, args, {
    check: (positionals) => {
      if (positionals.length > 0) {
        throw new UsageError(`status takes no arguments (got "${positionals.join(' ')}")`);
      }
    },
    read: (ctx, _none, flags) => engineStatus(ctx, flags),
    text: statusText,
    exitCode: (status) => (status.problems.length > 0 ? 1 : 0),
  });
}

async function engineStatus(
  ctx: TemporalContext,
  flags: { kubeconfig?: string; context?: string },
): Promise<EngineStatus> {
  const { settings, client } = ctx;
  const problems: string[] = [];
  const [declared, allocators] = await Promise.all([
    readDeclaredPlatforms(settings, flags).catch((err: unknown) => {
      problems.push(`${(err as Error).message}; local and idle platforms are not listed`);
      return undefined;
    }),
    waitingFor('hostflow status', 'the allocators to answer', () =>
      runningAllocators(ctx, settings.HOSTFLOW_TASK_QUEUE),
    ),
  ]);
  for (const a of allocators) if (a.problem) problems.push(`${a.allocator}: ${a.problem}`);
  const platforms = new Map(allocators.map((a) => [a.platform, a]));
  for (const a of allocators) a.kind = declared?.kinds.get(a.platform) ?? guessKind(a);
  for (const [platform, kind] of declared?.kinds ?? []) {
    if (!platforms.has(platform)) platforms.set(platform, idle(platform, kind, declared!));
  }
  const dynamic = [...platforms.values()].filter((p) => p.kind === 'dynamic');
  if (dynamic.length > 0) await addTaskRunVms(client, settings.HOSTFLOW_TASK_QUEUE, dynamic);
  const hostConfigProblems = declared?.missing
    ? [
        `there is no ConfigMap ${settings.HOSTFLOW_NAMESPACE}/host-config: only local platforms are served`,
      ]
    : (declared?.problems ?? []);
  return {
    temporalNamespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.HOSTFLOW_TASK_QUEUE,
    engineNamespace: settings.HOSTFLOW_NAMESPACE,
    platforms: [...platforms.values()].sort((a, b) => a.platform.localeCompare(b.platform)),
    hostConfigProblems,
    problems,
  };
}

async function runningAllocators(ctx: TemporalContext, taskQueue: string) {
  const query =
    `${SA.kind.name} = '${KIND.allocator}' AND ExecutionStatus = 'Running' ` +
    `AND TaskQueue = ${quoted(taskQueue)}`;
  const found: Array<{ workflowId: string; platform: string }> = [];
  for await (const execution of ctx.client.workflow.list({ query })) {
    const platform =
      execution.typedSearchAttributes.get(SA.platform) ??
      execution.workflowId.replace(/^allocator\//, '');
    found.push({ workflowId: execution.workflowId, platform });
  }
  return Promise.all(found.map(({ workflowId, platform }) => allocator(ctx, workflowId, platform)));
}

async function allocator(
  ctx: TemporalContext,
  workflowId: string,
  platform: string,
): Promise<PlatformStatus> {
  const base: PlatformStatus = {
    platform,
    kind: 'unknown',
    allocator: workflowId,
    capacity: null,
    inUse: null,
    queue: [],
    hosts: [],
    vms: null,
  };
  const handle = ctx.client.workflow.getHandle(workflowId);
  try {
    const [summary, metadata] = await ctx.bounded(QUERY_MS, () =>
      Promise.all([
        handle.query(allocatorState) as Promise<AllocationSummary>,
        handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata'),
      ]),
    );
    const now = Date.now();
    const poolVms = parsePoolVms(metadata.currentDetails ?? '');
    return {
      ...base,
      capacity: summary.capacity,
      inUse: summary.inUse,
      queue: summary.queue.map((requestId) => {
        const taskRun = parseTaskRunWorkflowId(workflowIdOfRequest(requestId));
        return { taskRun: taskRun ? `${taskRun.namespace}/${taskRun.name}` : null, requestId };
      }),
      hosts: summary.hosts.map((host) =>
        host.probeInMs === undefined
          ? host
          : { ...host, nextProbeAt: new Date(now + host.probeInMs).toISOString() },
      ),
      vms: poolVms,
    };
  } catch (err) {
    return {
      ...base,
      problem: `did not answer (is the worker running?): ${(err as Error).message}`,
    };
  }
}

/** Without host-config: a dynamic allocator's one host is its VM slots; a pool lists its VMs. */
function guessKind(status: PlatformStatus): PlatformStatus['kind'] {
  if (status.hosts.length === 1 && status.hosts[0]!.name === VM_SLOTS_HOST) return 'dynamic';
  if (status.vms) return 'pool';
  return status.hosts.length > 0 ? 'static' : 'unknown';
}

/** A platform host-config declares whose allocator is not running (nothing asked for it yet). */
function idle(platform: string, kind: PlatformKind, declared: DeclaredPlatforms): PlatformStatus {
  const local = kind === 'local';
  return {
    platform,
    kind,
    allocator: null,
    capacity: kind === 'static' ? (declared.staticCapacity.get(platform) ?? 0) : null,
    inUse: local ? null : 0,
    queue: [],
    hosts: [],
    vms: kind === 'dynamic' || kind === 'pool' ? [] : null,
  };
}

/**
 * A pool's VMs, from the allocator's details ("Pool VMs: i-1 ready (2 in use), i-2 booting"):
 * `allocatorState` holds only the ready ones (as hosts), the details every VM it runs.
 */
export function parsePoolVms(details: string): PlatformStatus['vms'] {
  const line = details.split('\n').find((l) => l.startsWith('Pool VMs: '));
  if (!line) return null;
  const text = line.slice('Pool VMs: '.length).trim();
  if (text === 'no VMs') return [];
  return text.split(', ').map((item) => {
    const match = /^(\S+) (\S+?)(?: \((\d+) in use\))?$/.exec(item);
    if (!match) return { id: item };
    return {
      id: match[1]!,
      phase: match[2]!,
      ...(match[3] !== undefined ? { inUse: Number(match[3]) } : {}),
    };
  });
}

/** A dynamic platform's VMs are its TaskRuns' own: each running one that holds a host. */
async function addTaskRunVms(
  client: Client,
  taskQueue: string,
  platforms: PlatformStatus[],
): Promise<void> {
  const byPlatform = new Map(platforms.map((p) => [p.platform, p]));
  const query =
    `${SA.kind.name} = '${KIND.taskRun}' AND ExecutionStatus = 'Running' ` +
    `AND TaskQueue = ${quoted(taskQueue)} AND ${SA.host.name} IS NOT NULL ` +
    `AND ${SA.platform.name} IN (${platforms.map((p) => quoted(p.platform)).join(', ')})`;
  for await (const execution of client.workflow.list({ query })) {
    const status = byPlatform.get(execution.typedSearchAttributes.get(SA.platform) ?? '');
    const taskRun = parseTaskRunWorkflowId(execution.workflowId);
    const vm = execution.typedSearchAttributes.get(SA.host);
    if (!status || !vm) continue;
    (status.vms ??= []).push({
      id: vm,
      ...(taskRun ? { taskRun: `${taskRun.namespace}/${taskRun.name}` } : {}),
    });
  }
}
