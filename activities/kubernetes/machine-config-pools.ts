// Kubernetes adapter for OS image rollouts: a MachineConfigPool (its spec, its status), the
// Nodes it selects (readiness, zone, kubelet, MCO's per-node annotations), the annotations the
// rollout writes on them, and Events on both.
import type { CoreV1Api, CustomObjectsApi, V1Node } from '@kubernetes/client-node';
import { RETRY_ANNOTATION } from '../../shared/bpa-api.js';
import { labelSelectorQuery } from '../../shared/label-selector.js';
import {
  MACHINE_CONFIG_POOL_API,
  NODE_ANNOTATIONS,
  POOL_NOT_SERVED,
  ZONE_LABEL,
  type MachineConfigPoolSpec,
  type NodeUpdateState,
  type PoolNode,
} from '../../shared/mco-api.js';
import { isConflict, isNotFound, rethrowKube } from './errors.js';
import { recordObjectEvent, type ObjectEvent } from './object-events.js';
import { customRef } from './object-ref.js';
import { writeObjectStatus } from './object-status.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

export interface PoolNodeDetail extends PoolNode {
  /** InternalIP, else the first address. */
  address?: string;
  kubeletVersion?: string;
  /** The retry annotation's value: a new one asks to retry a Degraded node. */
  retry?: string;
  reason?: string;
}

export interface PoolObject {
  name: string;
  uid: string;
  generation: number;
  spec: MachineConfigPoolSpec;
  annotations: Record<string, string>;
}

function poolNode(node: V1Node): PoolNodeDetail {
  const a = node.metadata?.annotations ?? {};
  const addresses = node.status?.addresses ?? [];
  const address = (addresses.find((x) => x.type === 'InternalIP') ?? addresses[0])?.address;
  return {
    name: node.metadata!.name!,
    zone: node.metadata?.labels?.[ZONE_LABEL] ?? '',
    ready: node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
    unschedulable: node.spec?.unschedulable === true,
    ...(a[NODE_ANNOTATIONS.currentImage] ? { currentImage: a[NODE_ANNOTATIONS.currentImage] } : {}),
    ...(a[NODE_ANNOTATIONS.desiredImage] ? { desiredImage: a[NODE_ANNOTATIONS.desiredImage] } : {}),
    ...(a[NODE_ANNOTATIONS.state] ? { state: a[NODE_ANNOTATIONS.state] as NodeUpdateState } : {}),
    ...(a[NODE_ANNOTATIONS.reason] ? { reason: a[NODE_ANNOTATIONS.reason] } : {}),
    ...(a[RETRY_ANNOTATION] ? { retry: a[RETRY_ANNOTATION] } : {}),
    ...(address ? { address } : {}),
    ...(node.status?.nodeInfo?.kubeletVersion
      ? { kubeletVersion: node.status.nodeInfo.kubeletVersion }
      : {}),
  };
}

interface PoolStatusObject {
  metadata: { uid: string; resourceVersion: string };
  status?: {
    conditions?: Array<{
      type: string;
      status: string;
      message?: string;
      lastTransitionTime?: string;
    }>;
  };
}

const pool = (ref: { name: string; uid?: string }) =>
  customRef(MACHINE_CONFIG_POOL_API, 'MachineConfigPool', ref);

export function createMachineConfigPoolActivities({
  core,
  custom,
}: {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}) {
  return {
    async readPool(input: { name: string }): Promise<PoolObject | undefined> {
      try {
        const pool = (await custom.getClusterCustomObject({
          ...MACHINE_CONFIG_POOL_API,
          name: input.name,
        })) as {
          metadata: { uid: string; generation?: number; annotations?: Record<string, string> };
          spec?: MachineConfigPoolSpec;
        };
        return {
          name: input.name,
          uid: pool.metadata.uid,
          generation: pool.metadata.generation ?? 0,
          spec: pool.spec ?? {},
          annotations: pool.metadata.annotations ?? {},
        };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        rethrowKube(`read MachineConfigPool ${input.name}`, err);
      }
    },

    /**
     * Says on the pool why hostflow does not serve it: its one condition (POOL_NOT_SERVED) is
     * added to the conditions the pool has, which another controller (the MCO) owns, by a write
     * that fails if the pool changed since it was read, and is then read again. A pool that is
     * gone, or another of the same name, is left alone.
     */
    async sayPoolNotServed(input: { name: string; uid: string; message: string }): Promise<void> {
      for (let attempt = 1; ; attempt += 1) {
        let read: PoolStatusObject;
        try {
          read = (await custom.getClusterCustomObject({
            ...MACHINE_CONFIG_POOL_API,
            name: input.name,
          })) as PoolStatusObject;
        } catch (err) {
          if (isNotFound(err)) return;
          rethrowKube(`read MachineConfigPool ${input.name}`, err);
        }
        if (read.metadata.uid !== input.uid) return;
        const others = (read.status?.conditions ?? []).filter(
          (c) => c.type !== POOL_NOT_SERVED.type,
        );
        const previous = read.status?.conditions?.find((c) => c.type === POOL_NOT_SERVED.type);
        if (previous?.status === 'False' && previous.message === input.message) return;
        const condition = {
          ...POOL_NOT_SERVED,
          status: 'False',
          message: input.message,
          lastTransitionTime:
            previous?.status === 'False' && previous.lastTransitionTime
              ? previous.lastTransitionTime
              : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        };
        try {
          await custom.patchClusterCustomObjectStatus(
            {
              ...MACHINE_CONFIG_POOL_API,
              name: input.name,
              body: {
                metadata: { resourceVersion: read.metadata.resourceVersion },
                status: { conditions: [...others, condition] },
              },
            },
            MERGE_PATCH,
          );
          return;
        } catch (err) {
          if (isNotFound(err)) return;
          if (isConflict(err) && attempt < 5) continue;
          rethrowKube(`write the status of MachineConfigPool ${input.name}`, err);
        }
      }
    },

    writePoolStatus: (input: { name: string; status: Record<string, unknown> }) =>
      writeObjectStatus(custom, pool(input), input.status),

    /** The pool's Nodes, by its nodeSelector, in name order. */
    async listPoolNodes(input: { spec: MachineConfigPoolSpec }): Promise<PoolNodeDetail[]> {
      let list;
      try {
        list = await core.listNode({ labelSelector: labelSelectorQuery(input.spec.nodeSelector) });
      } catch (err) {
        rethrowKube('list the Nodes of a MachineConfigPool', err);
      }
      return list.items.map(poolNode).sort((a, b) => a.name.localeCompare(b.name));
    },

    /** Whether the Node is Ready; undefined when it is gone. */
    async nodeReady(input: { name: string }): Promise<boolean | undefined> {
      try {
        return poolNode(await core.readNode({ name: input.name })).ready;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        rethrowKube(`read Node ${input.name}`, err);
      }
    },

    /** Merges annotations into the Node's (`null` removes one); false when the Node is gone. */
    async annotateNode(input: {
      name: string;
      annotations: Record<string, string | null>;
    }): Promise<boolean> {
      try {
        await core.patchNode(
          { name: input.name, body: { metadata: { annotations: input.annotations } } },
          MERGE_PATCH,
        );
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        rethrowKube(`annotate Node ${input.name}`, err);
      }
    },

    /** The uid does not scope the key here: a rollout's keys name their pass already. */
    recordRolloutEvent: ({
      kind,
      name,
      uid,
      ...event
    }: ObjectEvent & { kind: 'Node' | 'MachineConfigPool'; name: string; uid?: string }) =>
      recordObjectEvent(
        core,
        kind === 'Node' ? { kind, name, ...(uid ? { uid } : {}) } : pool({ name, uid }),
        event,
        { keyByUid: false },
      ),
  };
}

export type MachineConfigPoolActivities = ReturnType<typeof createMachineConfigPoolActivities>;
