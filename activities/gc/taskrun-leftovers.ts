// One pass of garbage collection for what TaskRun workflows leave behind when they cannot clean
// up themselves (an operator terminated one): build users on static hosts, and TaskRun Secrets
// whose TaskRun is gone; and of Lock holders whose workflow ended without releasing. One activity, so the GC workflow's history holds only what was removed.
//
// Owned means: a running TaskRun workflow is this TaskRun's (its id carries the uid), and for a
// build user, holds the host the user is on (its Host search attribute). A TaskRun that still
// exists owns its Secret, and while it has not finished, its build user too: the bridge starts a
// new workflow for it within its resync period, which takes the build over (a build may be
// running as that user). A user created less than the grace period ago is never removed (the
// check runs on the host, under its lock, so it cannot race a provisioning), nor is a Secret
// younger than that. When TaskRuns cannot be listed, nothing is removed.
//
// Leftover Secrets are found from the engine's own records, not by listing tenants' Secrets
// (the worker may not list them): the TaskRun workflows Temporal says ended unfinished, each
// Secret read by name and deleted only when it carries that TaskRun's uid.
import type { CoreV1Api, CustomObjectsApi, V1Secret } from '@kubernetes/client-node';
import { Context, log } from '@temporalio/activity';
import { ANNOTATIONS, LABELS, secretNameFor } from '../../platform-config/contract.js';
import { innermostMessage } from '../../shared/failures.js';
import { isCompleted, type TaskRunObject } from '../../platform-config/taskrun-contract.js';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import type { Host } from '../../platform-config/host.js';
import type { TaskRunRef } from '../../shared/contracts/taskrun.js';
import { isConflict, isNotFound, rethrowKube } from '../kubernetes/errors.js';
import type { createLockActivities } from '../../locks/adapter.js';
import { warnOnHostConfig } from '../kubernetes/events.js';
import { buildUserName, legacyBuildUserName } from '../ssh/build-user-names.js';
import { listBuildUsers, removeBuildUser, type SshDeps } from '../ssh/build-users.js';

const HEARTBEAT_MS = 10_000;
const LIST_PAGE_SIZE = 500;

export interface LeftoversGcDeps {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  engineNamespace: string;
  /** Serve one namespace only, as the bridge does; every namespace when undefined. */
  watchNamespace?: string;
  ssh: SshDeps;
  loadStaticHosts(): Promise<Host[]>;
  /** Running TaskRun workflows: their TaskRun and the host each holds. */
  runningTaskRuns(): Promise<Array<TaskRunRef & { host?: string }>>;
  /** TaskRun workflows of this engine that ended without cleaning up (Temporal visibility). */
  endedTaskRuns(): Promise<TaskRunRef[]>;
  closedWorkflows(input: { workflowIds: string[] }): Promise<string[]>;
  locks: Pick<ReturnType<typeof createLockActivities>, 'releaseLocksOfEnded'>;
}

interface ExistingTaskRun extends TaskRunRef {
  completed: boolean;
}

export interface LeftoversPass {
  users: Array<{ host: string; user: string }>;
  secrets: Array<{ namespace: string; name: string }>;
  /** Holders dropped from Locks (`<namespace>/<name>`) because their workflow ended. */
  locks?: Array<{ lock: string; holder: string }>;
  /** What could not be looked at this time (a host that is down, say). */
  failures: string[];
}

export function createLeftoversGcActivities(deps: LeftoversGcDeps) {
  const event = (reason: string, message: string, dedupKey: string) =>
    warnOnHostConfig(deps.core, deps.engineNamespace, { reason, message, dedupKey });

  async function collectUsers(
    running: Array<TaskRunRef & { host?: string }>,
    existing: ExistingTaskRun[],
    graceSeconds: number,
    pass: LeftoversPass,
  ): Promise<void> {
    const owned = new Set<string>();
    for (const taskRun of running) {
      if (!taskRun.host) continue;
      owned.add(`${taskRun.host}/${buildUserName(taskRun)}`);
      owned.add(`${taskRun.host}/${legacyBuildUserName(taskRun.namespace, taskRun.name)}`);
    }
    // Per uid, so unique on every host: the host its next workflow adopts is not known here.
    const awaitingRestart = new Set(
      existing.filter((taskRun) => !taskRun.completed).map((taskRun) => buildUserName(taskRun)),
    );
    for (const host of await deps.loadStaticHosts()) {
      try {
        for (const { user, ageSeconds } of await listBuildUsers(deps.ssh, host)) {
          if (owned.has(`${host.name}/${user}`) || awaitingRestart.has(user)) continue;
          if (ageSeconds !== undefined && ageSeconds < graceSeconds) continue;
          const outcome = await removeBuildUser(deps.ssh, host, user, {
            minAgeSeconds: graceSeconds,
          });
          if (outcome !== 'removed') continue;
          pass.users.push({ host: host.name, user });
          log.warn('removed a build user no running workflow owns', { host: host.name, user });
          await event(
            'OrphanUserCollected',
            `Removed build user ${user} from host ${host.name} (${host.address}): no running ` +
              'TaskRun workflow owns it',
            `orphan-user/${host.name}/${user}/${ageSeconds ?? 'unknown'}`,
          );
        }
      } catch (err) {
        pass.failures.push(`host ${host.name}: ${innermostMessage(err)}`);
      }
    }
  }

  /** Every TaskRun the engine may serve, read once per pass. */
  async function listTaskRuns(): Promise<ExistingTaskRun[]> {
    const found: ExistingTaskRun[] = [];
    let continueToken: string | undefined;
    do {
      const page = { ...TASKRUN_API, limit: LIST_PAGE_SIZE, _continue: continueToken };
      let list: { items: TaskRunObject[]; metadata?: { continue?: string } };
      try {
        list = (await (deps.watchNamespace
          ? deps.custom.listNamespacedCustomObject({ ...page, namespace: deps.watchNamespace })
          : deps.custom.listClusterCustomObject(page))) as typeof list;
      } catch (err) {
        rethrowKube('list TaskRuns', err);
      }
      for (const item of list.items) {
        const { namespace, name, uid } = item.metadata ?? {};
        if (namespace && name && uid) {
          found.push({ namespace, name, uid, completed: isCompleted(item) });
        }
      }
      continueToken = list.metadata?.continue || undefined;
    } while (continueToken);
    return found;
  }

  async function collectSecrets(
    running: Array<TaskRunRef & { host?: string }>,
    existing: ExistingTaskRun[],
    graceSeconds: number,
    pass: LeftoversPass,
  ): Promise<void> {
    // A TaskRun still there gets a new workflow from the bridge, which takes its Secret over.
    const owned = new Set([...running, ...existing].map((taskRun) => taskRun.uid));
    for (const taskRun of await deps.endedTaskRuns()) {
      if (owned.has(taskRun.uid)) continue;
      if (deps.watchNamespace && taskRun.namespace !== deps.watchNamespace) continue;
      const name = secretNameFor(taskRun.name);
      const { namespace } = taskRun;
      let secret: V1Secret;
      try {
        secret = await deps.core.readNamespacedSecret({ name, namespace });
      } catch (err) {
        if (isNotFound(err)) continue;
        rethrowKube(`read Secret ${namespace}/${name}`, err);
      }
      const { uid, resourceVersion, labels, annotations, creationTimestamp } =
        secret.metadata ?? {};
      // Only the Secret the engine wrote for this very TaskRun: a same-named successor's, or one
      // a person made, is not this workflow's to collect.
      if (labels?.[LABELS.multiPlatformSecret] !== 'true') continue;
      if (annotations?.[ANNOTATIONS.ownerUid] !== taskRun.uid) continue;
      const age = creationTimestamp
        ? (Date.now() - new Date(creationTimestamp).getTime()) / 1000
        : 0;
      if (age < graceSeconds) continue;
      try {
        await deps.core.deleteNamespacedSecret({
          name,
          namespace,
          // Only as read: a same-named successor may have replaced it since (409).
          body: { preconditions: { uid, resourceVersion } },
        });
      } catch (err) {
        if (isNotFound(err) || isConflict(err)) continue;
        throw err;
      }
      pass.secrets.push({ namespace, name });
      await event(
        'OrphanSecretCollected',
        `Deleted Secret ${namespace}/${name}: its TaskRun is gone and no running workflow owns it`,
        `orphan-secret/${uid}`,
      );
    }
  }

  return {
    async collectTaskRunLeftovers(input: {
      userGraceSeconds: number;
      secretGraceSeconds: number;
    }): Promise<LeftoversPass> {
      const pass: LeftoversPass = { users: [], secrets: [], failures: [] };
      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
      try {
        const running = await deps.runningTaskRuns();
        let existing: ExistingTaskRun[];
        try {
          existing = await listTaskRuns();
        } catch (err) {
          pass.failures.push(`TaskRuns: ${innermostMessage(err)}; nothing removed`);
          return pass;
        }
        await collectUsers(running, existing, input.userGraceSeconds, pass);
        try {
          await collectSecrets(running, existing, input.secretGraceSeconds, pass);
        } catch (err) {
          pass.failures.push(`Secrets: ${innermostMessage(err)}`);
        }
        try {
          pass.locks = await deps.locks.releaseLocksOfEnded((workflowIds) =>
            deps.closedWorkflows({ workflowIds }),
          );
        } catch (err) {
          pass.failures.push(`Locks: ${innermostMessage(err)}`);
        }
        return pass;
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type LeftoversGcActivities = ReturnType<typeof createLeftoversGcActivities>;
