// metal3 BareMetalHosts as Provisionings use them: what each offers (NICs, CPUs, memory,
// features), and which Provisioning consumes it (spec.consumerRef, as Cluster API's metal3
// provider marks it). Claims are written with resourceVersion checks, so two Provisionings
// never take one host.
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  BAREMETALHOST_API,
  BPA_GROUP,
  BPA_VERSION,
  HOST_FEATURE_LABELS,
  HOST_SSH_ANNOTATIONS,
  type HostInventory,
} from '../../shared/bpa-api.js';
import { isConflict, isNotFound, rethrowKube } from './errors.js';

interface BareMetalHost {
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { consumerRef?: { kind?: string; namespace?: string; name?: string; uid?: string } };
  status?: {
    hardware?: {
      cpu?: { count?: number };
      ramMebibytes?: number;
      nics?: Array<{ mac?: string; ip?: string }>;
    };
  };
}

export interface HostRef {
  namespace: string;
  name: string;
}

export interface Consumer extends HostRef {
  uid: string;
}

const consumerOf = (host: BareMetalHost): string | undefined => {
  const ref = host.spec?.consumerRef;
  return ref?.kind === 'Provisioning' && ref.name ? `${ref.namespace}/${ref.name}` : undefined;
};

/** `namespace`: where Provisionings find hosts; every namespace when unset, as in the original. */
export function createBareMetalHostActivities({
  custom,
  namespace,
}: {
  custom: CustomObjectsApi;
  namespace?: string | undefined;
}) {
  async function list(): Promise<BareMetalHost[]> {
    try {
      const all = (await (namespace
        ? custom.listNamespacedCustomObject({ ...BAREMETALHOST_API, namespace })
        : custom.listClusterCustomObject({ ...BAREMETALHOST_API }))) as {
        items: BareMetalHost[];
      };
      return all.items;
    } catch (err) {
      rethrowKube('list BareMetalHosts', err);
    }
  }

  async function setConsumer(ref: HostRef, consumer: Consumer | undefined): Promise<void> {
    const where = `BareMetalHost ${ref.namespace}/${ref.name}`;
    let host: BareMetalHost;
    try {
      host = (await custom.getNamespacedCustomObject({
        ...BAREMETALHOST_API,
        ...ref,
      })) as BareMetalHost;
    } catch (err) {
      if (isNotFound(err) && !consumer) return;
      rethrowKube(`read ${where}`, err);
    }
    const current = consumerOf(host);
    const wanted = consumer && `${consumer.namespace}/${consumer.name}`;
    if (current === wanted) return;
    if (consumer && current) {
      throw ApplicationFailure.nonRetryable(
        `${where} was taken by Provisioning ${current} meanwhile`,
        'HostTaken',
      );
    }
    const spec = { ...(host.spec ?? {}) } as Record<string, unknown>;
    if (consumer) {
      spec.consumerRef = {
        apiVersion: `${BPA_GROUP}/${BPA_VERSION}`,
        kind: 'Provisioning',
        namespace: consumer.namespace,
        name: consumer.name,
        uid: consumer.uid,
      };
    } else delete spec.consumerRef;
    try {
      await custom.replaceNamespacedCustomObject({
        ...BAREMETALHOST_API,
        ...ref,
        body: { ...host, spec },
      });
    } catch (err) {
      if (isConflict(err))
        throw ApplicationFailure.retryable(`${where} changed meanwhile`, 'KubernetesHttp409');
      rethrowKube(`write ${where}`, err);
    }
  }

  return {
    /** Every BareMetalHost, as role assignment sees it. */
    async listBareMetalHosts(): Promise<HostInventory[]> {
      return (await list()).map((host) => {
        const { labels = {}, annotations = {} } = host.metadata;
        const hardware = host.status?.hardware ?? {};
        const sshSecret = annotations[HOST_SSH_ANNOTATIONS.secret];
        return {
          namespace: host.metadata.namespace,
          name: host.metadata.name,
          nics: (hardware.nics ?? [])
            .filter((nic) => nic.mac)
            .map((nic) => ({ mac: nic.mac!.toLowerCase(), ...(nic.ip ? { ip: nic.ip } : {}) })),
          ...(hardware.cpu?.count !== undefined ? { cpus: hardware.cpu.count } : {}),
          ...(hardware.ramMebibytes !== undefined ? { ramMebibytes: hardware.ramMebibytes } : {}),
          sriov: labels[HOST_FEATURE_LABELS.sriov] === 'true',
          qat: labels[HOST_FEATURE_LABELS.qat] === 'true',
          ...(consumerOf(host) ? { consumer: consumerOf(host) } : {}),
          ...(sshSecret ? { sshSecret: `${host.metadata.namespace}/${sshSecret}` } : {}),
          ...(annotations[HOST_SSH_ANNOTATIONS.user]
            ? { sshUser: annotations[HOST_SSH_ANNOTATIONS.user] }
            : {}),
        };
      });
    },

    /** Marks the hosts as the Provisioning's; fails when another took one meanwhile. */
    async claimBareMetalHosts(input: { consumer: Consumer; hosts: HostRef[] }): Promise<void> {
      for (const host of input.hosts) await setConsumer(host, input.consumer);
    },

    /**
     * Frees the hosts the Provisioning consumes, for other clusters: all of them, or all but
     * `keep` (the nodes it still has after a scale-down or a re-assignment).
     */
    async releaseBareMetalHosts(input: { consumer: HostRef; keep?: HostRef[] }): Promise<string[]> {
      const mine = `${input.consumer.namespace}/${input.consumer.name}`;
      const keep = new Set((input.keep ?? []).map((host) => `${host.namespace}/${host.name}`));
      const released: string[] = [];
      for (const host of await list()) {
        if (consumerOf(host) !== mine) continue;
        if (keep.has(`${host.metadata.namespace}/${host.metadata.name}`)) continue;
        await setConsumer(host.metadata, undefined);
        released.push(`${host.metadata.namespace}/${host.metadata.name}`);
      }
      return released;
    },
  };
}

export type BareMetalHostActivities = ReturnType<typeof createBareMetalHostActivities>;
