// Never two runs for one cluster at once, across worker replicas: a Lease per cluster in the
// runner namespace, held by the run's name. A retried activity (a worker killed mid-run) finds
// the Lease its own, and goes on; a Lease whose run has finished or gone is taken over.
import type { BatchV1Api, CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { createHash } from 'node:crypto';
import { COMPONENT_LABELS } from './manifests.js';

const status = (err: unknown) => (err as { code?: number }).code;
/** When the holder took it: until its Job exists, a young Lease is still being acted on. */
const ACQUIRED = 'hostflow.dev/acquired';
/** Longer than any run takes from its Lease to its Job (the bundle is a few API calls). */
const STARTING_MS = 60_000;

function justTaken(lease: V1Lease): boolean {
  const at = Date.parse(lease.metadata?.annotations?.[ACQUIRED] ?? '');
  return Number.isFinite(at) && Date.now() - at < STARTING_MS;
}

export interface LeaseDeps {
  coordination: CoordinationV1Api;
  batch: BatchV1Api;
  namespace: string;
}

export const leaseName = (cluster: string) =>
  `hostflow-cluster-${createHash('sha256').update(cluster).digest('hex').slice(0, 20)}`;

/** Takes the cluster's Lease for `run`, or fails retryably while another run holds it. */
export async function takeClusterLease(
  deps: LeaseDeps,
  cluster: string,
  run: string,
  what: string,
) {
  const name = leaseName(cluster);
  const body: V1Lease = {
    metadata: {
      name,
      namespace: deps.namespace,
      labels: COMPONENT_LABELS,
      annotations: { 'hostflow.dev/cluster': cluster, [ACQUIRED]: new Date().toISOString() },
    },
    spec: { holderIdentity: run },
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await deps.coordination.createNamespacedLease({ namespace: deps.namespace, body });
      return;
    } catch (err) {
      if (status(err) !== 409) throw err;
    }
    const held = await deps.coordination.readNamespacedLease({ name, namespace: deps.namespace });
    const holder = held.spec?.holderIdentity;
    if (holder === run) return;
    if (holder && (justTaken(held) || (await stillRunning(deps, holder)))) {
      throw ApplicationFailure.retryable(
        `another run for cluster ${cluster} (${holder}) is still going; ${what} waits for it`,
        'PlaybookBusy',
      );
    }
    try {
      await deps.coordination.replaceNamespacedLease({
        name,
        namespace: deps.namespace,
        body: {
          ...body,
          metadata: { ...body.metadata, resourceVersion: held.metadata?.resourceVersion },
        },
      });
      return;
    } catch (err) {
      if (status(err) !== 409 && status(err) !== 404) throw err;
    }
  }
  throw ApplicationFailure.retryable(
    `the Lease of cluster ${cluster} keeps changing`,
    'PlaybookBusy',
  );
}

/** Gives the Lease up, if `run` still holds it. */
export async function releaseClusterLease(deps: LeaseDeps, cluster: string, run: string) {
  const name = leaseName(cluster);
  try {
    const held = await deps.coordination.readNamespacedLease({ name, namespace: deps.namespace });
    if (held.spec?.holderIdentity !== run) return;
    await deps.coordination.deleteNamespacedLease({
      name,
      namespace: deps.namespace,
      body: { preconditions: { resourceVersion: held.metadata?.resourceVersion } },
    });
  } catch (err) {
    if (status(err) !== 404 && status(err) !== 409) throw err;
  }
}

/** The holder's Job exists and has not finished. */
async function stillRunning(deps: LeaseDeps, job: string): Promise<boolean> {
  try {
    const found = await deps.batch.readNamespacedJob({ name: job, namespace: deps.namespace });
    const done = found.status?.conditions?.some(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    return !done;
  } catch (err) {
    if (status(err) === 404) return false;
    throw err;
  }
}
