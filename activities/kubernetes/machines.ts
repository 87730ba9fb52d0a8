// Kubernetes adapter for Cluster API Machines: their finalizer, status, providerID and Events;
// the HostflowMachine a Machine's infrastructureRef names (what it asks for, what was made);
// and the bootstrap Secret, whose presence gates everything and whose data never leaves here.
import { ApplicationFailure } from '@temporalio/common';
import type { CoreV1Api, CustomObjectsApi, V1ObjectMeta } from '@kubernetes/client-node';
import {
  BOOTSTRAP_DATA_KEY,
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_KIND,
  MACHINE_API,
  MACHINE_FINALIZER,
  type HostflowMachineSpec,
  type ObjectReference,
} from '../../shared/machine-api.js';
import { markedFor, type Owner } from '../../shared/ownership.js';
import { isConflict, isNotFound, rethrowKube, rethrowTenantWrite } from './errors.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { setObjectFinalizer } from './object-finalizers.js';
import { customRef } from './object-ref.js';
import type { MachineRef } from '../../shared/contracts/machine.js';
import { writeObjectStatus } from './object-status.js';
import { deleteIfOurs } from './owned-objects.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

const machine = (ref: MachineRef) => customRef(MACHINE_API, 'Machine', ref);

const where = (ref: { namespace: string; name: string }) => `Machine ${ref.namespace}/${ref.name}`;

export type InfrastructureLookup =
  | { found: true; name: string; uid: string; spec: HostflowMachineSpec }
  /** Why it cannot be used, in words for the Machine's status. */
  | { found: false; reason: string; final: boolean };

export type BootstrapData = 'ready' | 'missing' | 'no-value';

const MACHINE_API_VERSION = `${MACHINE_API.group}/${MACHINE_API.version}`;

const machineOwner = (ref: MachineRef): Owner => ({
  apiVersion: MACHINE_API_VERSION,
  kind: 'Machine',
  ...ref,
});

interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

/** The Machine whose infrastructure an object is, by its controller ownerReference. */
const controllingMachine = (refs: OwnerReference[] | undefined) =>
  (refs ?? []).find((r) => r.controller && r.kind === 'Machine');

export function createMachineActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  const api = {
    /** Added before any external action; false when the Machine (this uid) is gone. */
    addMachineFinalizer: (ref: MachineRef) =>
      setObjectFinalizer(custom, machine(ref), MACHINE_FINALIZER, true),

    removeMachineFinalizer: async (ref: MachineRef): Promise<void> =>
      void (await setObjectFinalizer(custom, machine(ref), MACHINE_FINALIZER, false)),

    /** Merges `status` into the Machine's status (lists and conditions replace as a whole). */
    writeMachineStatus: (input: { ref: MachineRef; status: Record<string, unknown> }) =>
      writeObjectStatus(custom, machine(input.ref), input.status),

    /** Copies the infrastructure's providerID into the Machine's spec, as Cluster API does. */
    async setMachineProviderId(input: { ref: MachineRef; providerID: string }): Promise<void> {
      const { namespace, name } = input.ref;
      try {
        await custom.patchNamespacedCustomObject(
          { ...MACHINE_API, namespace, name, body: { spec: { providerID: input.providerID } } },
          MERGE_PATCH,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowTenantWrite(`set spec.providerID of ${where(input.ref)}`, err);
      }
    },

    recordMachineEvent: ({ ref, ...event }: ObjectEvent & { ref: MachineRef }) =>
      recordObjectEvent(core, machine(ref), event),

    /** The HostflowMachine `ref` names in the Machine's namespace, or why it cannot be used. */
    async readMachineInfrastructure(input: {
      namespace: string;
      ref: ObjectReference;
      /** The Machine reading it: set as its controller owner, as Cluster API does. */
      machine?: MachineRef;
    }): Promise<InfrastructureLookup> {
      const { ref, namespace } = input;
      const wanted = `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`;
      if (ref.kind !== HOSTFLOW_MACHINE_KIND || (ref.apiVersion && ref.apiVersion !== wanted)) {
        return {
          found: false,
          final: true,
          reason:
            `spec.infrastructureRef names ${ref.apiVersion ?? '?'} ${ref.kind ?? '?'}: ` +
            `hostflow provides ${wanted} ${HOSTFLOW_MACHINE_KIND}`,
        };
      }
      try {
        const obj = (await custom.getNamespacedCustomObject({
          ...HOSTFLOW_MACHINE_API,
          namespace: ref.namespace ?? namespace,
          name: ref.name ?? '',
        })) as {
          metadata: {
            name: string;
            uid: string;
            resourceVersion?: string;
            ownerReferences?: OwnerReference[];
          };
          spec?: HostflowMachineSpec;
        };
        if (input.machine) {
          const taken = await claimInfrastructure(input.machine, obj.metadata);
          if (taken) return { found: false, final: true, reason: taken };
        }
        return {
          found: true,
          name: obj.metadata.name,
          uid: obj.metadata.uid,
          spec: obj.spec ?? {},
        };
      } catch (err) {
        if (!isNotFound(err)) rethrowKube(`read ${HOSTFLOW_MACHINE_KIND} ${ref.name}`, err);
        return {
          found: false,
          final: false,
          reason: `${HOSTFLOW_MACHINE_KIND} ${ref.namespace ?? namespace}/${ref.name} does not exist yet`,
        };
      }
    },

    /** What was made for the Machine, where its infrastructure object shows it. */
    async writeInfrastructureStatus(input: {
      namespace: string;
      name: string;
      status: Record<string, unknown>;
    }): Promise<void> {
      const { status, ...ref } = input;
      await writeObjectStatus(
        custom,
        customRef(HOSTFLOW_MACHINE_API, HOSTFLOW_MACHINE_KIND, ref),
        status,
        {
          tenant: true,
        },
      );
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

    /**
     * Deletes the bootstrap Secret only when its bootstrap provider made it for this Machine (an
     * ownerReference to the Machine, or to the object its spec.bootstrap.configRef names) or
     * hostflow marked it as the Machine's. A Secret a person named in dataSecretName, maybe for
     * several Machines, is theirs: Cluster API leaves it too. It stays, and an Event says so.
     */
    async deleteBootstrapSecret(input: {
      namespace: string;
      name: string;
      machine: MachineRef;
      configRef?: ObjectReference;
    }): Promise<'deleted' | 'absent' | 'not-ours'> {
      const { namespace, name, machine, configRef } = input;
      return deleteIfOurs(
        core,
        machineOwner(machine),
        {
          what: `Secret ${namespace}/${name}`,
          read: () => core.readNamespacedSecret({ namespace, name }),
          delete: (preconditions) =>
            core.deleteNamespacedSecret({ namespace, name, body: { preconditions } }),
        },
        {
          isOurs: (meta) =>
            markedFor(meta, machine.uid) ||
            (configRef?.kind !== undefined &&
              (meta?.ownerReferences ?? []).some(
                (r) => r.controller && r.kind === configRef.kind && r.name === configRef.name,
              )),
          why:
            'spec.bootstrap.dataSecretName names it, but no bootstrap provider made it for this ' +
            'Machine (no ownerReference to the Machine or to its spec.bootstrap.configRef): a ' +
            'Secret a person names there is theirs, and other Machines may use it',
        },
      );
    },

    /**
     * Deletes the HostflowMachine, as Cluster API deletes its infra object, when it is this
     * Machine's: its controller ownerReference names the Machine. One made before hostflow set
     * that reference (no controlling Machine) is the Machine's when `madeInfrastructure` says
     * the Machine's own workflow made infrastructure from it.
     */
    async deleteInfrastructure(input: {
      namespace: string;
      name: string;
      machine: MachineRef;
      madeInfrastructure?: boolean;
    }): Promise<'deleted' | 'absent' | 'not-ours'> {
      const { namespace, name, machine } = input;
      const target = {
        what: `${HOSTFLOW_MACHINE_KIND} ${namespace}/${name}`,
        read: () =>
          custom.getNamespacedCustomObject({
            ...HOSTFLOW_MACHINE_API,
            namespace,
            name,
          }) as Promise<{
            metadata?: V1ObjectMeta;
          }>,
        delete: (preconditions: { uid?: string }) =>
          custom.deleteNamespacedCustomObject({
            ...HOSTFLOW_MACHINE_API,
            namespace,
            name,
            body: { preconditions: { uid: preconditions.uid } },
          }),
      };
      return deleteIfOurs(core, machineOwner(machine), target, {
        isOurs: (meta) => {
          const controller = controllingMachine(meta?.ownerReferences as OwnerReference[]);
          return controller ? controller.uid === machine.uid : input.madeInfrastructure === true;
        },
        why: "it is not this Machine's infrastructure (its controller ownerReference names another Machine, or none)",
      });
    },
  };
  return api;

  /**
   * Makes `machine` the controller owner of its HostflowMachine, as Cluster API's Machine
   * controller does with its infra object; why not, when another Machine already is.
   */
  async function claimInfrastructure(
    machine: MachineRef,
    meta: { name: string; resourceVersion?: string; ownerReferences?: OwnerReference[] },
  ): Promise<string | undefined> {
    const controller = controllingMachine(meta.ownerReferences);
    if (controller?.uid === machine.uid) return undefined;
    if (controller) {
      return (
        `${HOSTFLOW_MACHINE_KIND} ${machine.namespace}/${meta.name} is the infrastructure of ` +
        `Machine ${controller.name}: give this Machine a ${HOSTFLOW_MACHINE_KIND} of its own`
      );
    }
    const ownerReferences = [
      ...(meta.ownerReferences ?? []),
      {
        apiVersion: MACHINE_API_VERSION,
        kind: 'Machine',
        name: machine.name,
        uid: machine.uid,
        controller: true,
      },
    ];
    try {
      await custom.patchNamespacedCustomObject(
        {
          ...HOSTFLOW_MACHINE_API,
          namespace: machine.namespace,
          name: meta.name,
          // The resourceVersion read: a claim by another Machine meanwhile is a conflict.
          body: { metadata: { resourceVersion: meta.resourceVersion, ownerReferences } },
        },
        MERGE_PATCH,
      );
    } catch (err) {
      if (isConflict(err)) {
        throw ApplicationFailure.retryable(
          `${HOSTFLOW_MACHINE_KIND} ${meta.name} changed: read again`,
        );
      }
      rethrowKube(
        `set the owner of ${HOSTFLOW_MACHINE_KIND} ${machine.namespace}/${meta.name}`,
        err,
      );
    }
    return undefined;
  }
}

export type MachineActivities = ReturnType<typeof createMachineActivities>;
