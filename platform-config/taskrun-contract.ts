// The TaskRun contract (docs/architecture.md, "The TaskRun contract"): which TaskRuns hostflow acts on, and whether
// they have finished. Reads only the few fields it needs, so callers can drop the object.
import { ORIGINAL_FINALIZER, PLATFORM_PARAM, secretNameFor } from './contract.js';

export interface TaskRunObject {
  apiVersion?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  spec?: {
    params?: Array<{ name?: string; value?: unknown }>;
    taskSpec?: { volumes?: Volume[] };
  };
  status?: {
    taskSpec?: { volumes?: Volume[] };
    conditions?: Array<{ type?: string; status?: string }>;
    completionTime?: string;
  };
}

interface Volume {
  name?: string;
  secret?: { secretName?: string };
}

/** A TaskRun hostflow serves, reduced to what the bridge keeps in memory. */
export interface ContractTaskRun {
  namespace: string;
  name: string;
  uid: string;
  platform: string;
  completed: boolean;
  /** Being deleted: another finalizer (Tekton Results', the original controller's) holds it. */
  deleting: boolean;
  /** It carries the original controller's finalizer, which its workflow releases at the end. */
  originalFinalizer: boolean;
}

export function matchContract(taskRun: TaskRunObject): ContractTaskRun | undefined {
  const { name, namespace, uid } = taskRun.metadata ?? {};
  if (!name || !namespace || !uid) return undefined;
  const param = taskRun.spec?.params?.find((p) => p?.name === PLATFORM_PARAM);
  if (!param || typeof param.value !== 'string') return undefined;
  // Inline specs may still hold Tekton's variable, which Tekton substitutes only in status.
  const secretNames = [secretNameFor(name), secretNameFor('$(context.taskRun.name)')];
  const volumes = [
    ...(taskRun.status?.taskSpec?.volumes ?? []),
    ...(taskRun.spec?.taskSpec?.volumes ?? []),
  ];
  if (!volumes.some((v) => secretNames.includes(v?.secret?.secretName ?? ''))) return undefined;
  return {
    namespace,
    name,
    uid,
    platform: param.value,
    completed: isCompleted(taskRun),
    deleting: Boolean(taskRun.metadata?.deletionTimestamp),
    originalFinalizer: taskRun.metadata?.finalizers?.includes(ORIGINAL_FINALIZER) === true,
  };
}

/** What the bridge tells its workflow: a TaskRun being deleted has ended, whatever holds it. */
export function observedState(taskRun: ContractTaskRun): 'active' | 'completed' | 'deleted' {
  if (taskRun.deleting) return 'deleted';
  return taskRun.completed ? 'completed' : 'active';
}

/** Finished when the Succeeded condition is decided, or a completion time is set. */
export function isCompleted(taskRun: TaskRunObject): boolean {
  if (taskRun.status?.completionTime) return true;
  const succeeded = taskRun.status?.conditions?.find((c) => c?.type === 'Succeeded');
  return succeeded?.status === 'True' || succeeded?.status === 'False';
}
