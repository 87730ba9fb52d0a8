// What each Lock's status says (deploy/families/locks/kotas-lock.yaml): whether it is enforced, and
// how many requests it refused, last by whom. A Lock whose namespace has not opted in, or whose
// policy binding is missing, locks nothing: its Enforced condition says so and how to fix it, so a
// lock never stops applying silently. Its transition time follows shared/conditions.ts's rule, like
// every status hostflow writes.
import type {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
} from '@kubernetes/client-node';
import {
  withCondition,
  type ConditionChange,
  type ObservedCondition,
} from '../shared/conditions.js';
import { statusCode } from '../shared/kube-errors.js';
import { LOCK_API, LOCKABLE_LABEL } from './api.js';
import type { LockDenial } from './denials.js';

export const LOCK_POLICY_BINDING = 'locks.kotas.tech';
const MAX_CONFLICTS = 5;

export interface LockStatus {
  conditions?: ObservedCondition[];
  blockedAttempts?: number;
  lastBlocked?: { time: string; user: string; operation: string; resource: string };
}

export interface LockObject {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  status?: LockStatus;
}

export interface LockStatusDeps {
  custom: CustomObjectsApi;
  core: CoreV1Api;
  admission: AdmissionregistrationV1Api;
}

export class LockStatusWriter {
  constructor(private readonly deps: LockStatusDeps) {}

  /** Adds the denials to their Locks' counts. A Lock deleted meanwhile is skipped. */
  async recordDenials(denials: LockDenial[]): Promise<void> {
    const byLock = new Map<string, LockDenial[]>();
    for (const denial of denials) {
      const key = `${denial.namespace}/${denial.lock}`;
      byLock.set(key, [...(byLock.get(key) ?? []), denial]);
    }
    for (const list of byLock.values()) {
      const last = list[list.length - 1]!;
      await this.update(last.namespace, last.lock, (status) => ({
        ...status,
        blockedAttempts: (status.blockedAttempts ?? 0) + list.length,
        lastBlocked: {
          time: last.at,
          user: last.user,
          operation: last.verb,
          resource: last.resource,
        },
      }));
    }
  }

  /** Sets the Lock's Enforced condition from its namespace and the policy binding. */
  async reconcile(lock: LockObject): Promise<void> {
    const wanted = await this.enforced(lock.metadata.namespace);
    const current = lock.status?.conditions?.find((c) => c.type === 'Enforced');
    if (current && sameCondition(current, wanted)) return;
    await this.update(lock.metadata.namespace, lock.metadata.name, (status) => status);
  }

  private async enforced(namespace: string): Promise<ConditionChange> {
    try {
      await this.deps.admission.readValidatingAdmissionPolicyBinding({ name: LOCK_POLICY_BINDING });
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
      return {
        type: 'Enforced',
        status: 'False',
        reason: 'PolicyNotInstalled',
        message:
          `ValidatingAdmissionPolicyBinding ${LOCK_POLICY_BINDING} is missing: no Lock is ` +
          'enforced. Install deploy/locks/ (kubectl apply -k deploy/).',
      };
    }
    const ns = await this.deps.core.readNamespace({ name: namespace });
    if (ns.metadata?.labels?.[LOCKABLE_LABEL.key] !== LOCKABLE_LABEL.value) {
      return {
        type: 'Enforced',
        status: 'False',
        reason: 'NamespaceNotLockable',
        message:
          `namespace ${namespace} has not opted in to Locks, so nothing is locked: ` +
          `kubectl label namespace ${namespace} ${LOCKABLE_LABEL.key}=${LOCKABLE_LABEL.value}`,
      };
    }
    return {
      type: 'Enforced',
      status: 'True',
      reason: 'PolicyBound',
      message: `the API server refuses what this Lock covers (policy ${LOCK_POLICY_BINDING})`,
    };
  }

  /** Read-modify-write of the status, with the Enforced condition brought up to date. */
  private async update(
    namespace: string,
    name: string,
    change: (status: LockStatus) => LockStatus,
  ): Promise<void> {
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      let lock: LockObject;
      try {
        lock = (await this.deps.custom.getNamespacedCustomObject({
          ...LOCK_API,
          namespace,
          name,
        })) as LockObject;
      } catch (err) {
        if (statusCode(err) === 404) return;
        throw err;
      }
      const status = change(lock.status ?? {});
      const condition = await this.enforced(namespace);
      status.conditions = withCondition(
        status.conditions ?? [],
        condition,
        new Date().toISOString(),
      );
      try {
        await this.deps.custom.replaceNamespacedCustomObjectStatus({
          ...LOCK_API,
          namespace,
          name,
          body: { ...lock, status },
        });
        return;
      } catch (err) {
        if (statusCode(err) === 404) return;
        if (statusCode(err) !== 409) throw err;
      }
    }
    throw new Error(
      `Lock ${namespace}/${name}: status kept changing under ${MAX_CONFLICTS} writes`,
    );
  }
}

function sameCondition(a: ConditionChange, b: ConditionChange): boolean {
  return a.status === b.status && a.reason === b.reason && a.message === b.message;
}
