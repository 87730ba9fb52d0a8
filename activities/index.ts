// Every activity the worker registers, built over the clients one process owns.
import { createKubernetesActivities, type KubeClients } from './kubernetes.js';

export interface ActivityDeps {
  kube: KubeClients;
}

export function createActivities(deps: ActivityDeps) {
  return { ...createKubernetesActivities(deps.kube) };
}
