// Kubernetes adapter for Cluster API Machines: their finalizer, status, providerID and Events;
// the HostflowMachine a Machine's infrastructureRef names (what it asks for, what was made);
// and the bootstrap Secret, whose presence gates everything and whose data never leaves here.
import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
} from '@kubernetes/client-node';
import {
  BOOTSTRAP_DATA_KEY,
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_KIND,
  MACHINE_API,
  MACHINE_FINALIZER,
  type HostflowMachineSpec,
  type ObjectReference,
} from '../../shared/machine-api.js';
import { setFinalizer, type CustomResourceRef } from './custom-finalizer.js';
import { isNotFound, rethrowKube } from './errors.js';
import { recordEvent } from './events.js';

export type MachineRef = CustomResourceRef;

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const where = (ref: { namespace: string; name: string }) => `Machine ${ref.namespace}/${ref.name}`;

export type InfrastructureLookup =
  | { found: true; name: string; uid: string; spec: HostflowMachineSpec }
  /** Why it cannot be used, in words for the Machine's status. */
  | { found: false; reason: string; final: boolean };

export type BootstrapData = 'ready' | 'missing' | 'no-value';

export function createMachineActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  return {
    /** Added before any external action; false when the Machine (this uid) is gone. */
    addMachineFinalizer: (ref: MachineRef) =>
      setFinalizer(custom, MACHINE_API, ref, MACHINE_FINALIZER, true, where(ref)),

    removeMachineFinalizer: async (ref: MachineRef): Promise<void> =>
      void (await setFinalizer(custom, MACHINE_API, ref, MACHINE_FINALIZER, false, where(ref))),

    /** Merges `status` into the Machine's status (lists and conditions replace as a whole). */
    async writeMachineStatus(input: {
      ref: MachineRef;
      status: Record<string, unknown>;
    }): Promise<void> {
      const { namespace, name } = input.ref;
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { ...MACHINE_API, namespace, name, body: { status: input.status } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`write the status of ${where(input.ref)}`, err);
      }
    },

    /** Copies the infrastructure's providerID into the Machine's spec, as Cluster API does. */
    async setMachineProviderId(input: { ref: MachineRef; providerID: string }): Promise<void> {
      const { namespace, name } = input.ref;
      try {
        await custom.patchNamespacedCustomObject(
          { ...MACHINE_API, namespace, name, body: { spec: { providerID: input.providerID } } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`set spec.providerID of ${where(input.ref)}`, err);
      }
    },

    async recordMachineEvent(input: {
      ref: MachineRef;
      type: 'Normal' | 'Warning';
      reason: string;
      message: string;
      /** Same key, same Event: a retried call does not repeat it. */
      dedupKey: string;
    }): Promise<void> {
      const { namespace, name, uid } = input.ref;
      await recordEvent(core, {
        involvedObject: {
          apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
          kind: 'Machine',
          namespace,
          name,
          uid,
        },
        type: input.type,
        reason: input.reason,
        message: input.message,
        dedupKey: `${uid}/${input.dedupKey}`,
      });
    },

    /** The HostflowMachine `ref` names in the Machine's namespace, or why it cannot be used. */
    async readMachineInfrastructure(input: {
      namespace: string;
      ref: ObjectReference;
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
        })) as { metadata: { name: string; uid: string }; spec?: HostflowMachineSpec };
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
      const { namespace, name, status } = input;
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { ...HOSTFLOW_MACHINE_API, namespace, name, body: { status } },
          mergePatch,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`write the status of ${HOSTFLOW_MACHINE_KIND} ${namespace}/${name}`, err);
      }
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

    async deleteBootstrapSecret(input: { namespace: string; name: string }): Promise<void> {
      try {
        await core.deleteNamespacedSecret(input);
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`delete Secret ${input.namespace}/${input.name}`, err);
      }
    },

    /** Deletes the HostflowMachine once what it made is gone, as Cluster API deletes its infra object. */
    async deleteInfrastructure(input: { namespace: string; name: string }): Promise<void> {
      try {
        await custom.deleteNamespacedCustomObject({ ...HOSTFLOW_MACHINE_API, ...input });
      } catch (err) {
        if (isNotFound(err)) return;
        rethrowKube(`delete ${HOSTFLOW_MACHINE_KIND} ${input.namespace}/${input.name}`, err);
      }
    },
  };
}

export type MachineActivities = ReturnType<typeof createMachineActivities>;
