// Whether the Machine Config Operator runs on this cluster (shared/mco-api.ts, MCO_SIGNS): its
// ClusterOperator, or its daemon's DaemonSet. A cluster that does not serve ClusterOperators at
// all answers 404, as one without the object does. Any other failure is thrown: the caller asks
// again rather than guess that the MCO is absent.
import type { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { statusCode } from '../shared/kube-errors.js';
import { MCO_SIGNS } from '../shared/mco-api.js';

export interface McoClients {
  custom: CustomObjectsApi;
  apps: AppsV1Api;
}

/** Undefined where the MCO does not run; else which sign says it does, as a phrase. */
export async function whereTheMcoRuns(clients: McoClients): Promise<string | undefined> {
  const { clusterOperator, daemonSet } = MCO_SIGNS;
  const absent = (err: unknown) => {
    if (statusCode(err) !== 404) throw err;
    return undefined;
  };
  const operator = await clients.custom
    .getClusterCustomObject({ ...clusterOperator })
    .catch(absent);
  if (operator) return `its ClusterOperator ${clusterOperator.name} is there`;
  const daemon = await clients.apps
    .readNamespacedDaemonSet({ namespace: daemonSet.namespace, name: daemonSet.name })
    .catch(absent);
  if (daemon) return `its DaemonSet ${daemonSet.namespace}/${daemonSet.name} is there`;
  return undefined;
}
