// Kubernetes adapter for TaskRuns and their Secrets.
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  ANNOTATIONS,
  LABELS,
  LOCALHOST,
  ORIGINAL_FINALIZER,
  SECRET_KEYS,
  secretNameFor,
} from '../../platform-config/contract.js';
import { isConflict, isNotFound, rethrowKube, rethrowTenantWrite, statusCode } from './errors.js';
import { deleteIfOurs, warnNotOwned } from './owned-objects.js';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  markedFor,
  type MarkedMetadata,
  type Owner,
} from '../../shared/ownership.js';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import type { EarlierDelivery, TaskRunRef } from '../../shared/contracts/taskrun.js';
import { buildUserName, legacyBuildUserName } from '../ssh/build-user-names.js';
import { nudgeBuildPods } from './build-pods.js';
import { changeObjectFinalizer } from './object-finalizers.js';
import { customRef } from './object-ref.js';
import type { KubeClients } from './clients.js';
import type { LocalAnswer } from './host-config.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

export type { KubeClients };

export interface TaskRunMetadataPatch extends TaskRunRef {
  /** `null` removes a label or annotation. */
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
}

/** Why a Secret of a TaskRun's name is not the engine's, in the words its Events use. */
const NOT_MARKED =
  'it has neither an ownerReference to a TaskRun nor the annotation ' +
  `${ANNOTATIONS.ownerUid}, as the Secrets hostflow and the multi-platform controller make have`;

const taskRunOwner = (ref: TaskRunRef): Owner => ({
  apiVersion: `${TASKRUN_API.group}/${TASKRUN_API.version}`,
  kind: 'TaskRun',
  ...ref,
});

/**
 * A Secret hostflow (or the original controller, before a migration) made for this TaskRun, or
 * for a same-named predecessor that is gone since: the name is this TaskRun's now, so replacing
 * that one only does early what the predecessor's clean-up (or garbage collection) would do.
 */
function isTaskRunSecret(meta: MarkedMetadata | undefined, uid: string): boolean {
  if (markedFor(meta, uid)) return true;
  if (meta?.labels?.[LABELS.multiPlatformSecret] !== 'true') return false;
  return (
    meta.annotations?.[ANNOTATIONS.ownerUid] !== undefined ||
    (meta.ownerReferences ?? []).some((ref) => ref.kind === 'TaskRun')
  );
}

/** Reads and writes of a Secret that another TaskRun's workflow changes meanwhile, per try. */
const SECRET_WRITE_ATTEMPTS = 3;

export function createKubernetesActivities({ core, custom }: KubeClients) {
  async function taskRunExists(ref: TaskRunRef): Promise<boolean> {
    try {
      const obj = (await custom.getNamespacedCustomObject({
        ...TASKRUN_API,
        namespace: ref.namespace,
        name: ref.name,
      })) as { metadata?: { uid?: string } };
      return obj.metadata?.uid === ref.uid;
    } catch (err) {
      if (isNotFound(err)) return false;
      rethrowKube(`read TaskRun ${ref.namespace}/${ref.name}`, err);
    }
  }

  /**
   * The build-facing part of a served Secret this TaskRun already has (`host` = user@address and
   * `user-dir`): what a delivery that may have written it already, or an adopting run, needs.
   * Undefined when there is none, it is an error Secret, or it belongs to another TaskRun.
   */
  async function readServedSecret(
    ref: TaskRunRef,
  ): Promise<{ host: string; userDir?: string } | undefined> {
    const name = secretNameFor(ref.name);
    try {
      const secret = await core.readNamespacedSecret({ name, namespace: ref.namespace });
      if (secret.metadata?.annotations?.[ANNOTATIONS.ownerUid] !== ref.uid) return undefined;
      const decode = (key: string) => {
        const value = secret.data?.[key];
        return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
      };
      const host = decode(SECRET_KEYS.host);
      if (!host || !host.includes('@')) return undefined;
      return { host, userDir: decode(SECRET_KEYS.userDir) };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      rethrowKube(`read Secret ${ref.namespace}/${name}`, err);
    }
  }

  /** A served Secret of this TaskRun for one of its own build users (see EarlierDelivery). */
  async function earlierDelivery(ref: TaskRunRef): Promise<EarlierDelivery | undefined> {
    const served = await readServedSecret(ref);
    if (!served) return undefined;
    const at = served.host.lastIndexOf('@');
    const user = served.host.slice(0, at);
    const own = [buildUserName(ref), legacyBuildUserName(ref.namespace, ref.name)];
    return own.includes(user) ? { user, address: served.host.slice(at + 1) } : undefined;
  }

  /**
   * Creates or replaces the TaskRun's Secret, returning its resourceVersion ('gone': the namespace
   * is). A same-named predecessor's Secret is replaced; if that one's clean-up deletes it in
   * between, the Secret is created again.
   */
  async function writeSecret(
    input: TaskRunRef & { data: Record<string, string> },
  ): Promise<string | 'gone'> {
    const name = secretNameFor(input.name);
    const what = `Secret ${input.namespace}/${name}`;
    const body = secretBody(input, input.data);
    for (let attempt = 1; ; attempt += 1) {
      try {
        const created = await core.createNamespacedSecret({ namespace: input.namespace, body });
        return created.metadata?.resourceVersion ?? '';
      } catch (err) {
        if (isNotFound(err)) return 'gone'; // the namespace is gone, and the TaskRun with it
        if (!isConflict(err)) rethrowTenantWrite(`create Secret ${input.namespace}/${name}`, err);
      }
      try {
        const existing = await core.readNamespacedSecret({ name, namespace: input.namespace });
        if (!isTaskRunSecret(existing.metadata, input.uid)) {
          await warnNotOwned(core, taskRunOwner(input), what, 'replace', NOT_MARKED);
          throw ApplicationFailure.nonRetryable(
            `${what} exists and was not made for this TaskRun (${NOT_MARKED}): hostflow ` +
              'leaves it alone, so the build cannot be given its host. Delete that Secret, ' +
              'then run the build again',
            'KubernetesSecretNotOwned',
          );
        }
        // Replace wholesale so stale keys (say an old `error`) cannot survive; the
        // resourceVersion read makes a Secret written in between be read again.
        const replaced = await core.replaceNamespacedSecret({
          name,
          namespace: input.namespace,
          body: {
            ...body,
            metadata: { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion },
          },
        });
        return replaced.metadata?.resourceVersion ?? '';
      } catch (err) {
        if (err instanceof ApplicationFailure) throw err;
        if (isConflict(err) && attempt < SECRET_WRITE_ATTEMPTS) continue;
        if (!isNotFound(err)) rethrowTenantWrite(`replace Secret ${input.namespace}/${name}`, err);
        // Deleted since the create found it: create it again, a few times, then retry later.
        if (attempt >= SECRET_WRITE_ATTEMPTS) {
          throw ApplicationFailure.retryable(
            `write Secret ${input.namespace}/${name}: deleted each time it was to be replaced`,
            'KubernetesHttp404',
          );
        }
      }
    }
  }

  const activities = {
    readServedSecret,
    earlierDelivery,

    /**
     * Whether the TaskRun's Secret, with these keys, would be admitted (a dry run through
     * quota and admission): asked before anything is made for it (a build user, an OTP record),
     * so a tenant namespace that refuses it costs nothing. Throws the write's own failure.
     */
    async admitsTaskRunSecret(input: TaskRunRef & { keys: string[] }): Promise<void> {
      const name = secretNameFor(input.name);
      const body = secretBody(input, Object.fromEntries(input.keys.map((key) => [key, ''])));
      try {
        await core.createNamespacedSecret({ namespace: input.namespace, body, dryRun: 'All' });
        return;
      } catch (err) {
        if (isNotFound(err)) return; // the namespace is gone: the write will say so
        if (!isConflict(err)) rethrowTenantWrite(`create Secret ${input.namespace}/${name}`, err);
      }
      try {
        await core.replaceNamespacedSecret({
          name,
          namespace: input.namespace,
          body,
          dryRun: 'All',
        });
      } catch (err) {
        if (!isNotFound(err)) rethrowTenantWrite(`replace Secret ${input.namespace}/${name}`, err);
      }
    },

    /**
     * Creates or replaces the TaskRun's Secret, and tells the build's pods. Idempotent:
     * a retry after a lost response finds its own Secret and rewrites the same data.
     */
    async writeTaskRunSecret(
      input: TaskRunRef & { data: Record<string, string> },
    ): Promise<'written' | 'gone'> {
      const version = await writeSecret(input);
      if (version === 'gone') return 'gone';
      // The build's pod may already wait for this Secret (build-pods.ts).
      const ref = { namespace: input.namespace, name: input.name, uid: input.uid };
      const refused = await nudgeBuildPods(core, ref, version);
      if (refused) log.warn('the build pods were not told of their Secret', { reason: refused });
      return 'written';
    },

    /**
     * Deletes the Secret only if it carries this TaskRun's mark: a same-named successor keeps its
     * own, even one that replaced this TaskRun's Secret after it was read (the resourceVersion
     * precondition refuses a delete of what was not read, and the Secret is read again), and a
     * Secret nobody marked (a person's) stays, with a Warning Event on the TaskRun.
     */
    async deleteTaskRunSecret(input: TaskRunRef): Promise<'deleted' | 'absent' | 'not-ours'> {
      const name = secretNameFor(input.name);
      const secret = { name, namespace: input.namespace };
      return deleteIfOurs(
        core,
        taskRunOwner(input),
        {
          what: `Secret ${input.namespace}/${name}`,
          read: () => core.readNamespacedSecret(secret),
          delete: (preconditions) =>
            core.deleteNamespacedSecret({ ...secret, body: { preconditions } }),
        },
        { why: NOT_MARKED, quietIfAnother: true },
      );
    },

    /**
     * Answers a TaskRun served on the cluster itself: its Secret says `localhost`, its labels the
     * platform and host. Labels refused for good (say by a policy) do not stop the build: they
     * are returned as a reason, for a Warning Event. Idempotent, as both writes are.
     */
    async answerLocalTaskRun(
      input: TaskRunRef & { labels: Record<string, string> },
    ): Promise<LocalAnswer> {
      const { labels, ...ref } = input;
      const [, labelled] = await Promise.all([
        activities.writeTaskRunSecret({ ...ref, data: { host: LOCALHOST } }),
        activities
          .patchTaskRunMetadata({ ...ref, labels: { ...labels, [LABELS.assignedHost]: LOCALHOST } })
          .then(() => undefined)
          .catch((err: unknown) => {
            if (err instanceof ApplicationFailure && err.nonRetryable) return err.message;
            throw err;
          }),
      ]);
      return labelled === undefined ? {} : { labelsNotWritten: labelled };
    },

    /**
     * Removes the original controller's finalizer from this TaskRun (by uid): 'released' when it
     * was there, 'absent' when not, 'gone' when the TaskRun is. Idempotent.
     */
    async releaseOriginalFinalizer(input: TaskRunRef): Promise<'released' | 'absent' | 'gone'> {
      const ref = customRef(TASKRUN_API, 'TaskRun', input);
      const change = await changeObjectFinalizer(custom, ref, ORIGINAL_FINALIZER, false);
      return change === 'changed' ? 'released' : change === 'gone' ? 'gone' : 'absent';
    },

    /** Merge-patches labels/annotations; the uid in the patch makes it fail on a successor. */
    async patchTaskRunMetadata(input: TaskRunMetadataPatch): Promise<'patched' | 'gone'> {
      try {
        await custom.patchNamespacedCustomObject(
          {
            ...TASKRUN_API,
            namespace: input.namespace,
            name: input.name,
            body: {
              metadata: { uid: input.uid, labels: input.labels, annotations: input.annotations },
            },
          },
          MERGE_PATCH,
        );
        return 'patched';
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        if ((isConflict(err) || statusCode(err) === 422) && !(await taskRunExists(input))) {
          return 'gone'; // replaced by a same-named TaskRun with another uid
        }
        rethrowKube(`patch TaskRun ${input.namespace}/${input.name}`, err);
      }
    },
  };
  return activities;
}

/** The TaskRun's Secret as the engine writes it: owned by the TaskRun, marked as the engine's. */
function secretBody(input: TaskRunRef, data: Record<string, string>) {
  const name = secretNameFor(input.name);
  return {
    metadata: {
      name,
      namespace: input.namespace,
      labels: { [LABELS.multiPlatformSecret]: 'true', [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: { [ANNOTATIONS.ownerUid]: input.uid },
      ownerReferences: [
        {
          apiVersion: `${TASKRUN_API.group}/${TASKRUN_API.version}`,
          kind: 'TaskRun',
          name: input.name,
          uid: input.uid,
        },
      ],
    },
    type: 'Opaque',
    stringData: data,
  };
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;
