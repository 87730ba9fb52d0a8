// Every activity the worker registers, built over the clients one process owns.
import type { Client } from '@temporalio/client';
import { createCloudActivities } from './cloud/instances.js';
import { createDeliveryActivities, type OtpDelivery } from './delivery.js';
import { createHostConfigActivities } from './kubernetes/host-config.js';
import { createAdminKeyReader } from './kubernetes/admin-keys.js';
import { createEventActivities } from './kubernetes/events.js';
import { createKubernetesActivities, type KubeClients } from './kubernetes/taskruns.js';
import { createSshActivities } from './ssh/build-users.js';
import { createTemporalActivities } from './temporal/workflows.js';

export interface ActivityDeps {
  kube: KubeClients;
  temporal: { client: Client; taskQueue: string };
  otp?: OtpDelivery;
  /** Cloud endpoint overrides (moto, the IBM double) and orphan collection's grace period. */
  cloud?: { awsEndpoint?: string; ibmIamEndpoint?: string; gcGraceSeconds?: number };
}

export function createActivities(deps: ActivityDeps) {
  const kubernetes = createKubernetesActivities(deps.kube);
  const ssh = { adminKey: createAdminKeyReader(deps.kube) };
  return {
    ...kubernetes,
    ...createHostConfigActivities(deps.kube),
    ...createEventActivities(deps.kube),
    ...createTemporalActivities(deps.temporal),
    ...createSshActivities(ssh),
    ...createCloudActivities({
      core: deps.kube.core,
      engineNamespace: deps.kube.engineNamespace,
      ...deps.cloud,
    }),
    ...createDeliveryActivities({
      ssh,
      otp: deps.otp,
      writeTaskRunSecret: kubernetes.writeTaskRunSecret,
    }),
  };
}
