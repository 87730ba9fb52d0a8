// Lock denials as the API server reports them: in its audit events (deploy/locks/audit-policy.yaml),
// a write the Lock policy refused carries the annotation locks.kotas.tech/denied-by with the
// Lock's name. Everything else in a batch is dropped. The server may send a batch again after a
// failed delivery, so events already counted (by audit ID) are skipped.
import { z } from 'zod';
import { CLUSTER_LOCKS_NAMESPACE } from './api.js';

export const DENIED_BY_ANNOTATION = 'locks.kotas.tech/denied-by';
/** The same from the policy for Nodes, whose Locks live in CLUSTER_LOCKS_NAMESPACE. */
export const CLUSTER_DENIED_BY_ANNOTATION = 'cluster-locks.kotas.tech/denied-by';

export interface LockDenial {
  namespace: string;
  lock: string;
  user: string;
  /** update, patch, delete or deletecollection. */
  verb: string;
  /** e.g. `configmaps`, `deployments/scale`. */
  resource: string;
  /** RFC 3339. */
  at: string;
}

const AuditEvent = z.object({
  auditID: z.string(),
  stage: z.string(),
  verb: z.string(),
  user: z.object({ username: z.string().default('') }).default({ username: '' }),
  /** Set when the request impersonated someone (kubectl --as): the one who was refused. */
  impersonatedUser: z.object({ username: z.string() }).optional(),
  objectRef: z
    .object({
      resource: z.string().default(''),
      subresource: z.string().optional(),
      namespace: z.string().optional(),
    })
    .optional(),
  responseStatus: z.object({ code: z.number().optional() }).optional(),
  stageTimestamp: z.string().optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const EventList = z.object({ kind: z.literal('EventList'), items: z.array(z.unknown()) });

const REMEMBERED_IDS = 50_000;

export class LockDenials {
  private readonly seen = new Set<string>();

  /** The Lock denials in an audit EventList; throws when the body is not one. */
  read(body: unknown): LockDenial[] {
    const list = EventList.safeParse(body);
    if (!list.success) throw new Error('expected an audit.k8s.io/v1 EventList');
    const denials: LockDenial[] = [];
    for (const item of list.data.items) {
      const event = AuditEvent.safeParse(item);
      if (!event.success) continue;
      const { auditID, stage, verb, objectRef, responseStatus, annotations } = event.data;
      const user = event.data.impersonatedUser ?? event.data.user;
      const clusterLock = annotations?.[CLUSTER_DENIED_BY_ANNOTATION];
      const lock = annotations?.[DENIED_BY_ANNOTATION] || clusterLock;
      const namespace = clusterLock ? CLUSTER_LOCKS_NAMESPACE : objectRef?.namespace;
      if (!lock || !namespace || !objectRef || stage !== 'ResponseComplete') continue;
      if ((responseStatus?.code ?? 0) < 400 || this.seen.has(auditID)) continue;
      this.remember(auditID);
      const sub = objectRef.subresource;
      denials.push({
        namespace,
        lock,
        user: user.username,
        verb,
        resource: sub ? `${objectRef.resource}/${sub}` : objectRef.resource,
        at: event.data.stageTimestamp ?? new Date().toISOString(),
      });
    }
    return denials;
  }

  private remember(auditID: string): void {
    this.seen.add(auditID);
    if (this.seen.size > REMEMBERED_IDS) {
      this.seen.delete(this.seen.values().next().value!); // the oldest: Sets keep insertion order
    }
  }
}
