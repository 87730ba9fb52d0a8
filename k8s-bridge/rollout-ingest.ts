// Ingests MachineConfigPools and MachineConfigs: each pool has its rollout workflow
// (`rollout/<pool>`), started or signalled whenever what it acts on changes: its spec, hostflow's
// settings on it, and its effective image, rendered as MCO renders it (the base image from the
// machine-config-osimageurl ConfigMap, overridden by the last MachineConfig by name that the
// pool's machineConfigSelector selects and that sets osImageURL). The relist sends every pool
// again, so a change missed while the bridge was down (or of the ConfigMap) is caught.
//
// A good neighbour: only pools labelled for this engine are served (POOL_ENGINE_LABEL), and none
// where the MCO runs (mco-presence.ts), which is said once in the log, in readiness, and on each
// pool labelled for this engine (its workflow writes a condition of hostflow's own). A pool that
// stops being this engine's (its label changed, the MCO came) is told it is let go, as a deleted
// one is: updates under way finish, nothing new starts, and its workflow ends.
import type { CoreV1Api } from '@kubernetes/client-node';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { statusCode } from '../shared/kube-errors.js';
import { withDeadline } from '../shared/deadline.js';
import { labelSelectorQuery } from '../shared/label-selector.js';
import {
  MACHINE_CONFIG_API,
  MACHINE_CONFIG_POOL_API,
  OS_IMAGE_CONFIGMAP,
  POOL_ENGINE_LABEL,
  ROLLOUT_SETTINGS,
  type MachineConfigPoolSpec,
  type MachineConfigSpec,
} from '../shared/mco-api.js';
import { poolObserved, rolloutStart, type PoolObservation } from '../shared/contracts/rollout.js';
import { effectiveOsImage } from '../shared/os-image.js';
import { Ingest, type IngestOptions, type WorkflowMessage } from './ingest.js';
import { whereTheMcoRuns, type McoClients } from './mco-presence.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';

interface PoolObject extends NamespacedObject {
  spec?: MachineConfigPoolSpec;
}

export interface RolloutIngestOptions extends IngestOptions {
  core: CoreV1Api;
  apps: McoClients['apps'];
  engineNamespace: string;
}

const FOR_FLEETS = "hostflow's rollouts are for rpm-ostree and bootc fleets without it";

/** How long an answer on the MCO's presence stands at most before it is asked again. */
const MCO_CHECK_MS = 30_000;
/** How long the question may take before the last answer stands for now. */
const MCO_ANSWER_MS = 10_000;

export class RolloutIngest {
  /** The pools this engine serves, as last seen. */
  private readonly pools = new Map<string, PoolObject>();
  private readonly ingest: Ingest;
  /** Why no pool is served (the MCO runs here), once known; and when that was last asked. */
  private mco: string | undefined;
  private mcoAskedAt = 0;
  private asking: Promise<boolean> | undefined;
  /** The pools labelled for this engine told they are not served, while the MCO runs. */
  private readonly toldNotServed = new Set<string>();

  constructor(private readonly options: RolloutIngestOptions) {
    // Pools and MachineConfigs are cluster-scoped: watched everywhere, whatever the namespace.
    this.ingest = new Ingest({ ...options, watchNamespace: undefined });
    const watchOptions = this.ingest.watchOptions;
    this.ingest.watch(
      resourceWatch<PoolObject>(
        'MachineConfigPool',
        MACHINE_CONFIG_POOL_API,
        watchOptions,
        (item, gone, relisted) => this.poolSeen(item, gone, relisted),
        // Asked at every relist too, so a cluster with no pool yet hears it as well.
        () => void this.mcoRuns().catch(() => undefined), // said in the log already
      ),
    );
    this.ingest.watch(
      resourceWatch(
        'MachineConfig',
        MACHINE_CONFIG_API,
        watchOptions,
        async (_item, _gone, relisted) => {
          if (!relisted) await this.sendAll(false);
        },
      ),
    );
  }

  start(): void {
    this.ingest.start();
  }

  stop(): Promise<void> {
    return this.ingest.stop();
  }

  /** Why this engine serves no pool, for the bridge's readiness; undefined while it serves. */
  get notServing(): string | undefined {
    return this.mco && `rollouts: serving no MachineConfigPool: the MCO runs here (${this.mco})`;
  }

  private async poolSeen(item: PoolObject, gone: boolean, relisted: boolean): Promise<void> {
    const name = item.metadata.name;
    const ours = item.metadata.labels?.[POOL_ENGINE_LABEL] === this.options.engineNamespace;
    if (await this.mcoRuns()) {
      // A pool that leaves (or loses its label) is told again should it come back labelled.
      if (gone || !ours) this.toldNotServed.delete(name);
      else await this.sayNotServed(item);
      return;
    }
    if (!ours || gone) {
      // Never ours, or no longer: a pool served until now is let go.
      const served = this.pools.get(name);
      this.pools.delete(name);
      if (served) await this.send(served, true, relisted);
      return;
    }
    this.pools.set(name, item);
    await this.send(item, false, relisted);
  }

  /** Whether the MCO runs here, asked again after a while; its arrival lets every pool go. */
  private mcoRuns(): Promise<boolean> {
    const standsMs = Math.min(MCO_CHECK_MS, this.options.resyncMs);
    if (Date.now() - this.mcoAskedAt < standsMs) return Promise.resolve(this.mco !== undefined);
    // One question at a time: the relist's and a pool's would otherwise both tell of a change.
    // Bounded: a request that never answers (a dead pooled connection) must not hold every pool
    // back. Until an answer comes the last one stands; with none yet, nothing is guessed.
    this.asking ??= withDeadline(
      this.askWhetherTheMcoRuns(),
      MCO_ANSWER_MS,
      `no answer within ${MCO_ANSWER_MS / 1000} s`,
    )
      .catch((err: unknown) => {
        this.ingest.log(`rollouts: cannot tell whether the MCO runs: ${String(err)}`, 'warn');
        if (this.mcoAskedAt === 0) throw err;
        return this.mco !== undefined;
      })
      .finally(() => (this.asking = undefined));
    return this.asking;
  }

  private async askWhetherTheMcoRuns(): Promise<boolean> {
    const found = await whereTheMcoRuns({ custom: this.options.custom, apps: this.options.apps });
    this.mcoAskedAt = Date.now();
    if (found !== this.mco) {
      this.mco = found;
      this.ingest.log(
        found
          ? `${this.notServing}; ${FOR_FLEETS}`
          : 'rollouts: the MCO no longer runs here; serving the pools labelled for this engine',
        found ? 'warn' : 'info',
      );
      this.toldNotServed.clear();
      if (found) {
        const served = [...this.pools.values()];
        this.pools.clear();
        for (const pool of served) await this.sayNotServed(pool);
      }
    }
    return found !== undefined;
  }

  /**
   * Tells a pool labelled for this engine, once while the MCO runs, that it is not served and
   * why: its workflow (started for it if it has none) lets it go and says so on the pool.
   */
  private async sayNotServed(pool: PoolObject): Promise<void> {
    const name = pool.metadata.name;
    if (this.toldNotServed.has(name)) return;
    this.toldNotServed.add(name);
    await this.send(pool, true, false, `${this.notServing}; ${FOR_FLEETS}`);
  }

  private async sendAll(relisted: boolean): Promise<void> {
    for (const pool of this.pools.values()) await this.send(pool, false, relisted);
  }

  private async observe(pool: PoolObject, gone: boolean): Promise<PoolObservation> {
    const spec = pool.spec ?? {};
    const annotations = pool.metadata.annotations ?? {};
    let base: string | undefined;
    try {
      const cm = await this.options.core.readNamespacedConfigMap({
        namespace: this.options.engineNamespace,
        name: OS_IMAGE_CONFIGMAP.name,
      });
      base = cm.data?.[OS_IMAGE_CONFIGMAP.key]?.trim() || undefined;
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    const configs = (await this.options.custom.listClusterCustomObject({
      ...MACHINE_CONFIG_API,
      labelSelector: labelSelectorQuery(spec.machineConfigSelector),
    })) as { items: Array<{ metadata: { name: string }; spec?: MachineConfigSpec }> };
    const target = effectiveOsImage(
      base,
      configs.items.map((c) => ({
        name: c.metadata.name,
        ...(c.spec?.osImageURL ? { osImageURL: c.spec.osImageURL } : {}),
      })),
    );
    const setting = (key: keyof typeof ROLLOUT_SETTINGS) =>
      annotations[ROLLOUT_SETTINGS[key].annotation];
    return {
      uid: pool.metadata.uid,
      generation: pool.metadata.generation ?? 1,
      spec,
      ...(target ? { target } : {}),
      settings: {
        sshUser: setting('sshUser') || ROLLOUT_SETTINGS.sshUser.default,
        sshSecret: setting('sshSecret') || ROLLOUT_SETTINGS.sshSecret.default,
        ...(setting('drainTimeout') ? { drainTimeout: setting('drainTimeout') } : {}),
        ...(setting('bootTimeout') ? { bootTimeout: setting('bootTimeout') } : {}),
      },
      deleted: gone,
    };
  }

  /** A failed send composes again from the pool as it is then (as it was, if it is gone). */
  private async send(
    pool: PoolObject,
    gone: boolean,
    relisted: boolean,
    notServed?: string,
  ): Promise<void> {
    const name = pool.metadata.name;
    const target = { workflowId: WORKFLOW_ID.rollout(name), subject: `MachineConfigPool ${name}` };
    const message = async (): Promise<WorkflowMessage<PoolObservation>> => {
      const current = gone ? pool : (this.pools.get(name) ?? pool);
      return {
        signal: poolObserved,
        arg: { ...(await this.observe(current, gone)), ...(notServed ? { notServed } : {}) },
        // A pool not served is told so even when it never had a workflow.
        ...(gone && !notServed ? {} : { start: rolloutStart(name) }),
      };
    };
    await this.ingest.send(target, message, { anyway: relisted, forget: gone });
  }
}
