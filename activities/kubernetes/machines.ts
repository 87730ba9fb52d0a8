// Kubernetes adapter for HostflowMachines, hostflow's InfraMachine kind: their finalizer, status,
// providerID and Events; and what it reads, never writes, of Cluster API core's objects: the
// Machine that owns one (its bootstrap data, cluster and failure domain) and that Machine's
// Cluster (paused or not). The bootstrap Secret's data never leaves activities/ssh/bootstrap.ts.
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  BOOTSTRAP_DATA_KEY,
  CLUSTER_API,
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_FINALIZER,
  HOSTFLOW_MACHINE_KIND,
  MACHINE_API,
  PAUSED_ANNOTATION,
  isHostflowInfrastructure,
  type MachineSpec,
} from '../../shared/machine-api.js';
import type { MachineRef } from '../../shared/contracts/machine.js';
import { isConflict, isNotFound, rethrowKube, rethrowTenantWrite } from './errors.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { setObjectFinalizer } from './object-finalizers.js';
import { customRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

const hostflowMachine = (ref: MachineRef) =>
  customRef(HOSTFLOW_MACHINE_API, HOSTFLOW_MACHINE_KIND, ref);

export type BootstrapData = 'ready' | 'missing' | 'no-value';

/** What a HostflowMachine's owner Machine says, or why it cannot be followed. */
export type OwnerMachine =
  | {
      found: true;
      clusterName: string;
      dataSecretName?: string;
      failureDomain?: string;
      /** Its Cluster's spec.paused, or the paused annotation on the Cluster. */
      clusterPaused: boolean;
    }
  /** Gone, replaced by a namesake, or not naming this HostflowMachine: why, in words. */
  | { found: false; reason: string };

interface Metadata {
  uid?: string;
  annotations?: Record<string, string>;
}

export function createMachineActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  return {
    /** Added before anything is taken for it; false when it (this uid) is gone. */
    addHostflowMachineFinalizer: (ref: MachineRef) =>
      setObjectFinalizer(custom, hostflowMachine(ref), HOSTFLOW_MACHINE_FINALIZER, true),

    removeHostflowMachineFinalizer: async (ref: MachineRef): Promise<void> =>
      void (await setObjectFinalizer(
        custom,
        hostflowMachine(ref),
        HOSTFLOW_MACHINE_FINALIZER,
        false,
      )),

    /** Merges `status` into its status (lists and conditions replace as a whole). */
    writeHostflowMachineStatus: (input: { ref: MachineRef; status: Record<string, unknown> }) =>
      writeObjectStatus(custom, hostflowMachine(input.ref), input.status, { tenant: true }),

    recordHostflowMachineEvent: ({ ref, ...event }: ObjectEvent & { ref: MachineRef }) =>
      recordObjectEvent(core, hostflowMachine(ref), event),

    /** Sets spec.providerID, which Cluster API core copies to the Machine (the contract's). */
    async setHostflowMachineProviderId(input: {
      ref: MachineRef;
      providerID: string;
    }): Promise<void> {
      const { namespace, name, uid } = input.ref;
      try {
        await custom.patchNamespacedCustomObject(
          {
            ...HOSTFLOW_MACHINE_API,
            namespace,
            name,
            // The uid in a merge patch is a precondition: never a namesake's spec.
            body: { metadata: { uid }, spec: { providerID: input.providerID } },
          },
          MERGE_PATCH,
        );
      } catch (err) {
        if (isNotFound(err) || isConflict(err)) return;
        rethrowTenantWrite(`set spec.providerID of HostflowMachine ${namespace}/${name}`, err);
      }
    },

    /**
     * The Machine that owns the HostflowMachine, read as it is now: only when it has the uid of
     * the ownerReference and its spec.infrastructureRef names this HostflowMachine (an
     * ownerReference alone is anyone's to write), with its Cluster's pause.
     */
    async readOwnerMachine(input: {
      namespace: string;
      hostflowMachine: string;
      owner: { name: string; uid: string };
    }): Promise<OwnerMachine> {
      const { namespace, owner } = input;
      const machine = await readOrUndefined<{ metadata: Metadata; spec?: MachineSpec }>(
        `Machine ${namespace}/${owner.name}`,
        () => custom.getNamespacedCustomObject({ ...MACHINE_API, namespace, name: owner.name }),
      );
      if (!machine || machine.metadata.uid !== owner.uid)
        return { found: false, reason: `its owner Machine ${owner.name} is gone` };
      const spec = machine.spec ?? {};
      const ref = spec.infrastructureRef;
      if (!isHostflowInfrastructure(ref) || ref?.name !== input.hostflowMachine) {
        return {
          found: false,
          reason:
            `Machine ${owner.name} is named as its owner, but its spec.infrastructureRef ` +
            `names ${ref?.kind ?? 'nothing'} ${ref?.name ?? ''}: a HostflowMachine serves only ` +
            'the Machine whose infrastructure it is',
        };
      }
      const clusterName = spec.clusterName ?? '';
      const cluster = await readOrUndefined<{ metadata: Metadata; spec?: { paused?: boolean } }>(
        `Cluster ${namespace}/${clusterName}`,
        () => custom.getNamespacedCustomObject({ ...CLUSTER_API, namespace, name: clusterName }),
      );
      return {
        found: true,
        clusterName,
        ...(spec.bootstrap?.dataSecretName
          ? { dataSecretName: spec.bootstrap.dataSecretName }
          : {}),
        ...(spec.failureDomain ? { failureDomain: spec.failureDomain } : {}),
        clusterPaused:
          cluster?.spec?.paused === true ||
          cluster?.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined,
      };
    },

    /** Whether the bootstrap Secret exists with its `value` key. Never returns the data. */
    async bootstrapDataState(input: { namespace: string; name: string }): Promise<BootstrapData> {
      try {
        const secret = await core.readNamespacedSecret(input);
        return secret.data?.[BOOTSTRAP_DATA_KEY] ? 'ready' : 'no-value';
      } catch (err) {
        if (isNotFound(err)) return 'missing';
        rethrowKube(`read Secret ${input.namespace}/${input.name}`, err);
      }
    },
  };
}

async function readOrUndefined<T>(what: string, read: () => Promise<unknown>) {
  try {
    return (await read()) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    rethrowKube(`read ${what}`, err);
  }
}

export type MachineActivities = ReturnType<typeof createMachineActivities>;
