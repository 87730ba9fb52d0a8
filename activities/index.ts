// The activities the worker registers, built over the clients one process owns.
import type { KubeConfig } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { createRunner } from './runner/job.js';
import type { RunnerSettings } from '../shared/runner-settings.js';
import { createKubeconfigFetcher } from './ssh/admin-kubeconfig.js';
import { createClusterLogActivities } from './ansible/cluster-logs.js';
import { createPlaybookActivities, type KubesprayCheck } from './ansible/playbook.js';
import { createCloudActivities } from './cloud/instances.js';
import { createDhcpActivities } from './dhcp/leases.js';
import { createBareMetalHostActivities } from './kubernetes/baremetalhosts.js';
import { createKubeconfigStore } from './kubernetes/kubeconfig-secret.js';
import { createProvisioningActivities } from './kubernetes/provisionings.js';
import { createClusterOperationActivities } from './kubernetes/cluster-operations.js';
import { createInstallerKeyActivities } from './ssh/installer-key.js';
import { createPackageActivities } from './ssh/packages.js';
import { createBootstrapActivities } from './ssh/bootstrap.js';
import { createMachineActivities } from './kubernetes/machines.js';
import { createNodeActivities } from './kubernetes/nodes.js';
import { createMachineConfigPoolActivities } from './kubernetes/machine-config-pools.js';
import { createOsImageActivities } from './ssh/os-image.js';
import { createImageLabelActivities } from './registry/image-labels.js';
import { createBpaResourceActivities } from './kubernetes/bpa-resources.js';
import { createDeliveryActivities, type OtpDelivery } from './delivery.js';
import { createCloudGcActivities } from './gc/cloud-vms.js';
import { createLeftoversGcActivities } from './gc/taskrun-leftovers.js';
import { createAdminKeyReader } from './kubernetes/admin-keys.js';
import { createEventActivities } from './kubernetes/events.js';
import { createHostConfigActivities } from './kubernetes/host-config.js';
import { createLockActivities } from '../locks/adapter.js';
import { createPlatformLockActivities } from '../locks/platform-secrets.js';
import { createKubernetesActivities, type KubeClients } from './kubernetes/taskruns.js';
import { createSshActivities } from './ssh/build-users.js';
import { createHostKeys, type HostKeys } from './ssh/host-keys.js';
import { createTemporalActivities, type TemporalDeps } from './temporal/workflows.js';
import type { ActivityGroupTypes } from './activity-group-types.js';
import { activityGroupsFor, type ActivityGroup } from './family-activities.js';
import { FAMILIES, type Family } from '../shared/families.js';

export interface ActivityDeps {
  kube: KubeClients & { watchNamespace?: string };
  temporal: TemporalDeps;
  otp?: OtpDelivery;
  /** Cloud endpoint overrides (moto, the IBM double) and orphan collection's grace period. */
  cloud?: { awsEndpoint?: string; ibmIamEndpoint?: string; gcGraceSeconds?: number };
  /** Provisionings: kubespray and where clusters' files live. */
  provisioning?: {
    /** kubespray checkouts; the first serves Provisionings that pin no release. */
    kubesprayDirs?: string[];
    /** Where runs' logs are kept on the worker. */
    workDir: string;
    /** The runner Jobs every run of ansible is; none set: nothing can run. */
    runner?: RunnerSettings;
    /** The client the runner makes its Jobs with (its namespace is RunnerSettings'). */
    kc?: KubeConfig;
    leasesFile?: string;
    /** Namespace patterns Provisionings may take BareMetalHosts from besides their own. */
    bareMetalNamespaces?: string[];
  };
  /** Softwares: the package manager on the nodes. */
  packageManager?: string;
  /** Rollouts: the registries preflight may ask about images (base URLs). */
  imageRegistries?: string[];
  /** Whether the install runs the locks family (default true); without it nothing is locked. */
  locksEnabled?: boolean;
}

/**
 * The activities of the families the install runs (`families`, default all): each group is made
 * only when one of them calls it (family-activities.ts), so an activity of another family is not
 * registered and its call fails saying so.
 */
export function createActivities(deps: ActivityDeps, families: readonly Family[] = FAMILIES) {
  const kubernetes = createKubernetesActivities(deps.kube);
  const hostConfig = createHostConfigActivities(deps.kube, kubernetes);
  const temporal = createTemporalActivities(deps.temporal);
  const hostKeys = createHostKeys(deps.kube);
  const ssh = { adminKey: createAdminKeyReader(deps.kube), hostKeys };
  const { engineNamespace, watchNamespace } = deps.kube;
  const locks = createLockActivities({
    custom: deps.kube.custom,
    engineNamespace,
    // Serving one namespace, the engine reads Locks only where it works.
    ...(watchNamespace ? { namespaces: [...new Set([engineNamespace, watchNamespace])] } : {}),
    enabled: deps.locksEnabled ?? true,
  });
  const cloud = createCloudActivities({
    core: deps.kube.core,
    engineNamespace: deps.kube.engineNamespace,
    ...deps.cloud,
  });
  const readKey = (namespace: string, secret: string) =>
    createAdminKeyReader({ core: deps.kube.core, engineNamespace: namespace })(secret);
  let playbooks: ReturnType<typeof playbookActivities> | undefined;
  const groups: { [G in ActivityGroup]: () => ActivityGroupTypes[G] } = {
    KubernetesActivities: () => kubernetes,
    HostConfigActivities: () => hostConfig,
    EventActivities: () => createEventActivities(deps.kube),
    LockActivities: () => ({ syncLocks: locks.syncLocks }),
    PlatformLockActivities: () =>
      createPlatformLockActivities({ core: deps.kube.core, engineNamespace, locks }),
    TemporalActivities: () => temporal,
    SshActivities: () => createSshActivities(ssh),
    CloudActivities: () => cloud,
    DeliveryActivities: () => createDeliveryActivities({ ssh, otp: deps.otp, kube: kubernetes }),
    CloudGcActivities: () => createCloudGcActivities({ ...hostConfig, ...temporal, ...cloud }),
    LeftoversGcActivities: () =>
      createLeftoversGcActivities({ ...deps.kube, ...hostConfig, ...temporal, ssh, locks }),
    ProvisioningActivities: () => createProvisioningActivities(deps.kube),
    ClusterOperationActivities: () => createClusterOperationActivities(deps.kube),
    BareMetalHostActivities: () =>
      createBareMetalHostActivities({
        ...deps.kube,
        allowedNamespaces: deps.provisioning?.bareMetalNamespaces ?? [],
      }),
    InstallerKeyActivities: () => createInstallerKeyActivities({ ...deps.kube, hostKeys }),
    BpaResourceActivities: () => createBpaResourceActivities(deps.kube),
    PackageActivities: () =>
      createPackageActivities({
        packageManager: deps.packageManager ?? 'apt-get',
        hostKeys,
        readKey,
      }),
    DhcpActivities: () => createDhcpActivities({ leasesFile: deps.provisioning?.leasesFile }),
    MachineActivities: () => createMachineActivities(deps.kube),
    NodeActivities: () => createNodeActivities(deps.kube),
    MachineConfigPoolActivities: () => createMachineConfigPoolActivities(deps.kube),
    OsImageActivities: () => createOsImageActivities({ ...deps.kube, hostKeys }),
    ImageLabelActivities: () =>
      createImageLabelActivities({ registries: deps.imageRegistries ?? [] }),
    BootstrapActivities: () => createBootstrapActivities({ ...deps.kube, hostKeys }),
    // Made once for both: a run's logs are kept where its playbooks ran.
    PlaybookActivities: () => (playbooks ??= playbookActivities(deps, hostKeys, readKey)),
    ClusterLogActivities: () => (playbooks ??= playbookActivities(deps, hostKeys, readKey)),
  };
  const wanted = activityGroupsFor(families);
  return Object.assign(
    {},
    ...(Object.keys(groups) as ActivityGroup[])
      .filter((group) => wanted.has(group))
      .map((group) => groups[group]()),
  ) as Record<string, (...args: never[]) => Promise<unknown>>;
}

/** Without a kubespray directory, a Provisioning's install fails saying which setting to set. */
function playbookActivities(
  deps: ActivityDeps,
  hostKeys: HostKeys,
  readKey: (namespace: string, secret: string) => Promise<string>,
) {
  const settings = deps.provisioning;
  const problem = !settings?.kubesprayDirs?.length
    ? 'no kubespray to run: set HOSTFLOW_KUBESPRAY_DIR on the worker to a kubespray checkout'
    : !settings.runner || !settings.kc
      ? 'no runner to run ansible in: set HOSTFLOW_RUNNER_IMAGE on the worker (deploy/runner-image)'
      : undefined;
  if (!settings?.kubesprayDirs?.length || !settings.runner || !settings.kc || problem) {
    const refuse = async (): Promise<never> => {
      throw ApplicationFailure.nonRetryable(problem!, 'KubesprayNotConfigured');
    };
    return {
      checkKubespray: async (): Promise<KubesprayCheck> => ({ problem: problem! }),
      runPlaybook: refuse,
      runCustomAction: refuse,
      // No run, so no log, was ever kept here.
      removeClusterLogs: async (): Promise<string[]> => [],
    };
  }
  const { core, custom } = deps.kube;
  return {
    ...createClusterLogActivities({ workDir: settings.workDir }),
    ...createPlaybookActivities({
      ansibleCore: settings.runner.ansibleCore,
      kubesprayDirs: settings.kubesprayDirs,
      workDir: settings.workDir,
      readKey,
      fetchKubeconfig: createKubeconfigFetcher({ hostKeys, readKey }),
      storeKubeconfig: createKubeconfigStore(core, custom),
      hostKeys,
      runner: createRunner({ kc: settings.kc, settings: settings.runner }),
      deadlineSeconds: settings.runner.deadlineSeconds,
    }),
  };
}
