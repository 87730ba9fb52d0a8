// Worker Versioning (docs/deploy.md, "Upgrading and rolling back"): a worker with
// HOSTFLOW_WORKER_DEPLOYMENT set polls as one version of that Worker Deployment, its build id
// HOSTFLOW_BUILD_ID or a digest of the workflow code it runs. Every workflow is PINNED to the
// build it started on, so no build ever replays another's history; long-lived entities move to
// the current build when they continue as new (workflows/kit/new-build.ts). Which build is
// current is the operator's call, made through Temporal (docs/deploy.md); only a deployment that
// has none yet (a first install) is given this one, so that it serves at all.
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../runtime/logger.js';
import { KIND, SA } from '../shared/search-attributes.js';
import { quoted } from '../shared/visibility-query.js';
import { buildChanged } from '../shared/build-changed.js';

export type DeploymentVersion = WorkerDeploymentVersion;

/** The worker's deployment version, or undefined for an unversioned worker. */
export function deploymentVersion(
  settings: { HOSTFLOW_WORKER_DEPLOYMENT?: string; HOSTFLOW_BUILD_ID?: string },
  code: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>,
): DeploymentVersion | undefined {
  if (!settings.HOSTFLOW_WORKER_DEPLOYMENT) return undefined;
  return {
    deploymentName: settings.HOSTFLOW_WORKER_DEPLOYMENT,
    buildId: settings.HOSTFLOW_BUILD_ID ?? workflowCodeDigest(code),
  };
}

/** For Worker.create: this version, its workflows PINNED unless they say otherwise. */
export function workerDeploymentOptions(
  version: DeploymentVersion | undefined,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return {
    workerDeploymentOptions: {
      version,
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

/**
 * The first 16 hex digits of a SHA-256 over the workflow code: the prebuilt bundle, or every
 * module under the folder the workflows are bundled from (its imports live beside it).
 */
function workflowCodeDigest(code: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>): string {
  const hash = createHash('sha256');
  const bundle = code.workflowBundle;
  if (bundle && 'codePath' in bundle) hash.update(readFileSync(bundle.codePath));
  else if (bundle && 'code' in bundle) hash.update(bundle.code);
  else if (code.workflowsPath) {
    const root = dirname(dirname(code.workflowsPath)); // dist/, beside workflows/
    for (const file of modulesUnder(root)) hash.update(file).update(readFileSync(join(root, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** The .js files under `root` (not node_modules), sorted, relative to it. */
function modulesUnder(root: string, dir = ''): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory() && entry.name !== 'node_modules')
      found.push(...modulesUnder(root, path));
    else if (entry.isFile() && entry.name.endsWith('.js')) found.push(path);
  }
  return found.sort();
}

/** How often a worker looks at which build is current. */
const FOLLOW_MS = 10_000;
/** Workflows that end on the build they started on; every other kind is a long-lived entity. */
const ENDS_WHERE_STARTED = [KIND.taskRun, KIND.clusterOperation, KIND.rolloutNode];

/**
 * Follows which build of the deployment is current, for as long as the worker runs:
 * - a deployment with none serves nothing, so the install's first build makes itself current,
 *   once Temporal knows it (its pollers have reached it); any later build waits for the operator
 *   to make it current;
 * - when this build becomes current, the long-lived workflows of its task queue are woken: each
 *   sees another build is current and continues as new onto it (workflows/kit/new-build.ts),
 *   rather than idling on the old build until something else wakes it.
 */
export async function followDeployment(
  client: Client,
  version: DeploymentVersion,
  taskQueue: string,
  log: Logger,
  { stopped, intervalMs = FOLLOW_MS }: { stopped: () => boolean; intervalMs?: number },
): Promise<void> {
  const { namespace } = client.options;
  const service = client.workflowService;
  const { deploymentName, buildId } = version;
  let seen: string | undefined;
  let waitMs = 1_000; // quickly at first: Temporal learns of the version as it polls
  while (!stopped()) {
    try {
      const { workerDeploymentInfo, conflictToken } = await service.describeWorkerDeployment({
        namespace,
        deploymentName,
      });
      const current =
        workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
      if (!current) {
        await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName,
          buildId,
          conflictToken,
          identity: client.options.identity,
        });
        log.info(
          `hostflow worker: build ${buildId} made current in ${deploymentName}, which had none`,
        );
      } else if (current !== seen) {
        if (current !== buildId) {
          log.info(
            `hostflow worker: build ${buildId} of ${deploymentName} is not current (${current} ` +
              'is): it serves the workflows pinned to it until it is made current',
          );
        } else if (seen !== undefined) {
          const woken = await wakeEntities(client, taskQueue);
          log.info(
            `hostflow worker: build ${buildId} is current in ${deploymentName} (was ${seen}); ` +
              `${woken} long-lived workflow(s) woken to continue as new onto it`,
          );
        }
        seen = current;
      }
      waitMs = intervalMs;
    } catch {
      // Not known yet (no poller has reached the server), another build won the race to be
      // current, or Temporal is away: looked at again next time.
    }
    await new Promise((r) => setTimeout(r, waitMs));
  }
}

/** Signals every running long-lived workflow of the task queue; returns how many. */
async function wakeEntities(client: Client, taskQueue: string): Promise<number> {
  const kinds = ENDS_WHERE_STARTED.map(quoted).join(', ');
  const query =
    `TaskQueue = ${quoted(taskQueue)} AND ExecutionStatus = 'Running' AND ` +
    `${SA.kind.name} NOT IN (${kinds})`;
  let woken = 0;
  for await (const execution of client.workflow.list({ query })) {
    // No handler needed: the signal is only a workflow task, in which the workflow sees
    // that another build is current.
    await client.workflow
      .getHandle(execution.workflowId)
      .signal(buildChanged)
      .then(() => woken++)
      .catch(() => undefined); // it ended meanwhile
  }
  return woken;
}
