// metal3 BareMetalHosts as Provisionings use them: what each offers (NICs, CPUs, memory,
// features), and which Provisioning consumes it (spec.consumerRef, as Cluster API's metal3
// provider marks it). Claims are written with resourceVersion checks, so two Provisionings
// never take one host. A Provisioning sees the hosts of its own namespace and of the namespaces
// the engine's setting allows; a host another kind of consumer holds (a Metal3Machine), or one
// metal3 is not done with (any provisioning state but available), is never free.
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  BAREMETALHOST_API,
  BPA_GROUP,
  BPA_VERSION,
  HOST_FEATURE_LABELS,
  HOST_SSH_ANNOTATIONS,
  type HostInventory,
  type HostSearch,
} from '../../shared/bpa-api.js';
import { parseHostKey } from '../../platform-config/host-key.js';
import { printable } from '../../platform-config/platform.js';
import { isConflict, isNotFound, rethrowKube } from './errors.js';
import { namespaceMatcher } from '../../platform-config/namespace-patterns.js';
import type { ListedMetadata } from './object-ref.js';

interface BareMetalHost {
  metadata: ListedMetadata;
  spec?: {
    consumerRef?: {
      apiVersion?: string;
      kind?: string;
      namespace?: string;
      name?: string;
      uid?: string;
    };
  };
  status?: {
    provisioning?: { state?: string };
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

/**
 * metal3's states in which a host waits for a consumer: `available` (named `ready` before
 * baremetal-operator 0.5). Every other state means metal3 or someone else is at work on it, or
 * has not inspected it yet (no state at all).
 */
const FREE_STATES = new Set(['available', 'ready']);

const isProvisioning = (ref: NonNullable<BareMetalHost['spec']>['consumerRef']): boolean =>
  ref?.kind === 'Provisioning' && (ref.apiVersion ?? '').startsWith(`${BPA_GROUP}/`);

const consumerOf = (host: BareMetalHost): string | undefined => {
  const ref = host.spec?.consumerRef;
  return ref && isProvisioning(ref) && ref.name ? `${ref.namespace}/${ref.name}` : undefined;
};

/** Why no Provisioning may take the host, when none may (a host a Provisioning holds: never). */
function unavailable(host: BareMetalHost): string | undefined {
  const ref = host.spec?.consumerRef;
  if (ref && !isProvisioning(ref)) {
    const kind = printable(ref.kind ?? 'an object of unknown kind', 60);
    const name = printable(`${ref.namespace ?? host.metadata.namespace}/${ref.name ?? '?'}`, 120);
    return `is consumed by ${kind} ${name}`;
  }
  if (consumerOf(host)) return undefined;
  const state = host.status?.provisioning?.state;
  if (state === undefined || state === '') {
    return 'has no metal3 provisioning state yet (the baremetal-operator has not registered and inspected it)';
  }
  if (!FREE_STATES.has(state)) {
    return `is in metal3 provisioning state "${printable(state, 40)}", not available`;
  }
  return undefined;
}

/** The host key the platform team gave in the annotation, checked as host-config's are. */
function givenHostKey(
  value: string | undefined,
): Pick<HostInventory, 'hostKey' | 'hostKeyProblem'> {
  if (value === undefined) return {};
  const parsed = parseHostKey(value);
  return parsed.ok
    ? { hostKey: `${parsed.type} ${parsed.base64}` }
    : { hostKeyProblem: `annotation ${HOST_SSH_ANNOTATIONS.hostKey}: ${parsed.reason}` };
}

/**
 * `allowedNamespaces`: patterns (whole names, as host-config's allowed-namespaces) of the
 * namespaces whose hosts any Provisioning may take, besides its own namespace's.
 */
export function createBareMetalHostActivities({
  custom,
  allowedNamespaces,
}: {
  custom: CustomObjectsApi;
  allowedNamespaces: string[];
}) {
  const matches = namespaceMatcher(allowedNamespaces);
  const allowed = (namespace: string, own: string | undefined) =>
    namespace === own || matches(namespace);

  async function list(): Promise<BareMetalHost[]> {
    try {
      const all = (await custom.listClusterCustomObject({ ...BAREMETALHOST_API })) as {
        items: BareMetalHost[];
      };
      return all.items;
    } catch (err) {
      rethrowKube('list BareMetalHosts', err);
    }
  }

  /** Claims the host for `consumer`, or (undefined) frees it if `releasing` still consumes it. */
  async function setConsumer(
    ref: HostRef,
    consumer: Consumer | undefined,
    releasing?: string,
  ): Promise<void> {
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
    if (!consumer && current !== releasing) return; // another Provisioning's now: not ours to free
    if (consumer && current) {
      throw ApplicationFailure.nonRetryable(
        `${where} was taken by Provisioning ${current} meanwhile`,
        'HostTaken',
      );
    }
    const why = consumer && unavailable(host);
    if (why) throw ApplicationFailure.nonRetryable(`${where} ${why}`, 'HostTaken');
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

  async function visibleHosts(own: HostRef | undefined): Promise<HostInventory[]> {
    const mine = own && `${own.namespace}/${own.name}`;
    const visible = (host: BareMetalHost) =>
      allowed(host.metadata.namespace, own?.namespace) ||
      (mine ? consumerOf(host) === mine : consumerOf(host) !== undefined);
    return (await list()).filter(visible).map((host) => {
      const why = unavailable(host);
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
        ...(why ? { unavailable: why } : {}),
        ...(sshSecret ? { sshSecret: `${host.metadata.namespace}/${sshSecret}` } : {}),
        ...(annotations[HOST_SSH_ANNOTATIONS.user]
          ? { sshUser: annotations[HOST_SSH_ANNOTATIONS.user] }
          : {}),
        ...givenHostKey(annotations[HOST_SSH_ANNOTATIONS.hostKey]),
      };
    });
  }

  return {
    /**
     * The BareMetalHosts the Provisioning may see, as role assignment sees them: those of its
     * own namespace and the allowed ones, and any it consumes already. Without `consumer` (runs
     * from before it was passed): the allowed namespaces' and those Provisionings consume.
     */
    async listBareMetalHosts(input?: { consumer?: HostRef }): Promise<HostInventory[]> {
      return visibleHosts(input?.consumer);
    },

    /**
     * The same hosts as listBareMetalHosts, and where they were looked for, so that a refusal can
     * say which namespaces were searched (a result of its own: runs that list read an array).
     */
    async searchBareMetalHosts(input: { consumer: HostRef }): Promise<HostSearch> {
      return {
        hosts: await visibleHosts(input.consumer),
        searched: { own: input.consumer.namespace, allowed: allowedNamespaces },
      };
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
        await setConsumer(host.metadata, undefined, mine);
        released.push(`${host.metadata.namespace}/${host.metadata.name}`);
      }
      return released;
    },
  };
}

export type BareMetalHostActivities = ReturnType<typeof createBareMetalHostActivities>;
