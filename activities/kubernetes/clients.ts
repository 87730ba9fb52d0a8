// The Kubernetes clients the adapters of this folder are made from (activities/index.ts builds
// them once per worker). Its own file so that events.ts and host-config.ts import it downward
// instead of from taskruns.ts, which imports events.ts.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

export interface KubeClients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  engineNamespace: string;
}
