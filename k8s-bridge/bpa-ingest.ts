// Ingests the BPA resources through the one ingest (ingest.ts). Each Provisioning, Software and
// Cluster has its workflow (`provisioning/…`, `software/…`, `bpa-cluster/…`), signalled on every create,
// change and delete, and started if need be; the periodic relist sends every one again (the
// workflows ignore what they have seen). A Software is sent the state of its cluster (its
// Provisioning's phase and nodes) whenever that changes, and a Cluster the state of its members.
// A member a Cluster names is started by that Cluster's workflow, as its child.
import type { SignalDefinition } from '@temporalio/client';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import {
  BPA_CLUSTER_API,
  CLUSTER_LABEL,
  PROVISIONING_API,
  SOFTWARE_API,
  type BpaClusterSpec,
  type BpaKind,
} from '../shared/bpa-api.js';
import {
  bpaClusterObserved,
  bpaClusterStart,
  type BpaClusterObservation,
} from '../shared/contracts/bpa-cluster.js';
import { provisioningObserved, provisioningStart } from '../shared/contracts/provisioning.js';
import { softwareObserved, softwareStart, type ClusterView } from '../shared/contracts/software.js';
import {
  clusterView,
  provisioningObservation,
  softwareObservation,
  type ProvisioningObject,
  type SoftwareObject,
} from './bpa-observations.js';
import { Ingest, type IngestOptions } from './ingest.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

interface ClusterObject extends NamespacedObject {
  spec?: BpaClusterSpec;
}

export interface BpaIngestOptions extends IngestOptions {
  /** A Provisioning workflow's history limit (HOSTFLOW_PROVISIONING_MAX_HISTORY), for tests. */
  provisioningMaxHistory?: number;
}

const keyOf = (o: NamespacedObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const MEMBER_FIELD = { Provisioning: 'provisioningCR', Software: 'softwareCR' } as const;

export class BpaIngest {
  private readonly provisionings = new Map<string, ProvisioningObject>();
  private readonly softwares = new Map<string, SoftwareObject>();
  private readonly clusters = new Map<string, ClusterObject>();
  /** Sends, and remembers what each Software and Cluster workflow was sent last. */
  private readonly ingest: Ingest;

  constructor(private readonly options: BpaIngestOptions) {
    this.ingest = new Ingest(options);
    const watch = this.ingest.watchOptions;
    let listed!: () => void;
    const clustersListed = new Promise<void>((resolve) => (listed = resolve));
    this.ingest.watch(
      resourceWatch<ClusterObject>(
        'Cluster',
        BPA_CLUSTER_API,
        watch,
        (item, gone, relisted) => this.clusterSeen(item, gone, relisted),
        () => listed(),
      ),
    );
    // Clusters are listed first, so that a member is started by its Cluster, not on its own.
    this.ingest.watch(
      resourceWatch<ProvisioningObject>('Provisioning', PROVISIONING_API, watch, (item, gone, r) =>
        this.provisioningSeen(item, gone, r),
      ),
      clustersListed,
    );
    this.ingest.watch(
      resourceWatch<SoftwareObject>('Software', SOFTWARE_API, watch, (item, gone, r) =>
        this.softwareSeen(item, gone, r),
      ),
      clustersListed,
    );
  }

  start(): void {
    this.ingest.start();
  }

  stop(): Promise<void> {
    return this.ingest.stop();
  }

  private async provisioningSeen(item: ProvisioningObject, gone: boolean, relisted: boolean) {
    remember(this.provisionings, item, gone);
    await this.sendMember('Provisioning', item, gone, provisioningObserved, [
      provisioningObservation(item, gone),
    ]);
    // The Softwares of its cluster see its phase and nodes.
    const cluster = item.metadata.labels?.[CLUSTER_LABEL];
    if (cluster === undefined) return;
    for (const software of [...this.softwares.values()]) {
      const { namespace, labels } = software.metadata;
      if (namespace === item.metadata.namespace && labels?.[CLUSTER_LABEL] === cluster)
        await this.softwareSeen(software, false, relisted, true);
    }
  }

  /** `clusterChanged`: sent again because its cluster changed, if what it is sent did. */
  private async softwareSeen(
    item: SoftwareObject,
    gone: boolean,
    relisted: boolean,
    clusterChanged = false,
  ) {
    if (!clusterChanged) remember(this.softwares, item, gone);
    const observation = softwareObservation(item, gone, this.clusterOf(item));
    const { namespace, name } = item.metadata;
    if (
      !this.ingest.changed(
        WORKFLOW_ID.software(namespace, name),
        observation,
        relisted || !clusterChanged,
      )
    )
      return;
    await this.sendMember('Software', item, gone, softwareObserved, [observation]);
  }

  private async clusterSeen(item: ClusterObject, gone: boolean, relisted: boolean) {
    remember(this.clusters, item, gone);
    const { namespace, name } = item.metadata;
    const observation = this.clusterObservation(item, gone);
    if (!this.ingest.changed(WORKFLOW_ID.bpaCluster(namespace, name), observation, relisted))
      return;
    await this.deliver('Cluster', item, bpaClusterObserved, [observation], !gone);
  }

  /**
   * A member no Cluster names is started here if need be. One a Cluster names goes to its
   * workflow if that runs; if not, the Cluster's workflow is told (even of nothing new), and
   * starts it as its child. Either way the Clusters naming it see its new state.
   */
  private async sendMember<A>(
    kind: 'Provisioning' | 'Software',
    item: NamespacedObject,
    gone: boolean,
    signal: SignalDefinition<[A]>,
    args: [A],
  ): Promise<void> {
    const { namespace, name } = item.metadata;
    const owners = [...this.clusters.values()].filter(
      (c) => c.metadata.namespace === namespace && c.spec?.[MEMBER_FIELD[kind]] === name,
    );
    const delivered = await this.deliver(kind, item, signal, args, !owners.length && !gone);
    for (const owner of owners) {
      await this.clusterSeen(owner, false, !delivered && !gone);
    }
  }

  private clusterObservation(item: ClusterObject, gone: boolean): BpaClusterObservation {
    const { namespace } = item.metadata;
    const member = <T>(map: Map<string, T>, name?: string) =>
      name ? map.get(`${namespace}/${name}`) : undefined;
    const p = member(this.provisionings, item.spec?.provisioningCR);
    const s = member(this.softwares, item.spec?.softwareCR);
    const phase = (o: { status?: { phase?: string } }) =>
      o.status?.phase ? { phase: o.status.phase } : {};
    return {
      uid: item.metadata.uid,
      generation: item.metadata.generation ?? 1,
      spec: item.spec ?? {},
      deleting: gone || item.metadata.deletionTimestamp !== undefined,
      ...(p
        ? { provisioning: { ...phase(p), observation: provisioningObservation(p, false) } }
        : {}),
      ...(s
        ? {
            software: {
              ...phase(s),
              observation: softwareObservation(s, false, this.clusterOf(s)),
            },
          }
        : {}),
    };
  }

  /** The cluster a Software names: the Provisioning with its label in its namespace. */
  private clusterOf(item: SoftwareObject): ClusterView | undefined {
    const label = item.metadata.labels?.[CLUSTER_LABEL];
    if (!label) return undefined;
    const candidates = [...this.provisionings.values()]
      .filter(
        (p) =>
          p.metadata.namespace === item.metadata.namespace &&
          p.metadata.labels?.[CLUSTER_LABEL] === label,
      )
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const chosen = candidates.find((p) => p.status?.phase === 'Ready') ?? candidates[0];
    return chosen ? clusterView(chosen) : undefined;
  }

  /** Signals the resource's workflow, starting it when `start`; false when none runs. */
  private async deliver<A>(
    kind: BpaKind,
    item: NamespacedObject,
    signal: SignalDefinition<[A]>,
    [arg]: [A],
    start: boolean,
  ): Promise<boolean> {
    const { namespace, name, labels } = item.metadata;
    const how = this.workflowStart(kind, namespace, name, labels?.[CLUSTER_LABEL]);
    const message = { signal, arg, ...(start ? { start: how } : {}) };
    // What was sent is compared above, by the member or Cluster; a failure forgets it.
    const target = { workflowId: how.workflowId, subject: `${kind} ${namespace}/${name}` };
    return (await this.ingest.send(target, () => message, { dedupe: false })) === 'sent';
  }

  private workflowStart(kind: BpaKind, namespace: string, name: string, cluster?: string) {
    if (kind === 'Cluster') return bpaClusterStart(namespace, name);
    if (kind === 'Software') return softwareStart(namespace, name, cluster);
    return provisioningStart(namespace, name, cluster, this.options.provisioningMaxHistory);
  }
}

function remember<T extends NamespacedObject>(cache: Map<string, T>, item: T, gone: boolean) {
  if (gone) cache.delete(keyOf(item));
  else cache.set(keyOf(item), item);
}
