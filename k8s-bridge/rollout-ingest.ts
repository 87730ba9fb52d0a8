// Ingests MachineConfigPools and MachineConfigs: each pool has its rollout workflow
// (`rollout/<pool>`), started or signalled whenever what it acts on changes: its spec, hostflow's
// settings on it, and its effective image, rendered as MCO renders it (the base image from the
// machine-config-osimageurl ConfigMap, overridden by the last MachineConfig by name that the
// pool's machineConfigSelector selects and that sets osImageURL). The relist sends every pool
// again, so a change missed while the bridge was down (or of the ConfigMap) is caught.
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { innermostMessage } from '../shared/failures.js';
import { statusCode } from '../shared/kube-errors.js';
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
import { poolObserved, type PoolObservation } from '../shared/messages.js';
import { effectiveOsImage } from '../shared/os-image.js';
import { KIND, SA } from '../shared/search-attributes.js';
import type { ListWatch } from './list-watch.js';
import { resourceWatch, type NamespacedObject } from './resource-watch.js';
import type { LineLog } from '../runtime/logger.js';

interface PoolObject extends NamespacedObject {
  spec?: MachineConfigPoolSpec;
}

export interface RolloutIngestOptions {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  temporal: Client;
  taskQueue: string;
  engineNamespace: string;
  resyncMs: number;
  log?: LineLog;
}

export class RolloutIngest {
  private readonly pools = new Map<string, PoolObject>();
  private readonly sent = new Map<string, string>();
  /** Sends that failed in a row, by pool, and the retries waiting. */
  private readonly failures = new Map<string, number>();
  private readonly retries = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly watches: ListWatch<NamespacedObject>[];
  private running?: Promise<unknown>;
  private readonly log: LineLog;

  constructor(private readonly options: RolloutIngestOptions) {
    this.log = options.log ?? ((m) => console.log(m));
    // Pools and MachineConfigs are cluster-scoped: watched everywhere, whatever the namespace.
    const watchOptions = { ...options, watchNamespace: undefined, log: this.log };
    this.watches = [
      resourceWatch<PoolObject>(
        'MachineConfigPool',
        MACHINE_CONFIG_POOL_API,
        watchOptions,
        (item, gone, relisted) => this.poolSeen(item, gone, relisted),
      ) as ListWatch<NamespacedObject>,
      resourceWatch(
        'MachineConfig',
        MACHINE_CONFIG_API,
        watchOptions,
        async (_item, _gone, relisted) => {
          if (!relisted) await this.sendAll(false);
        },
      ),
    ];
  }

  start(): void {
    this.running ??= Promise.all(this.watches.map((w) => w.run()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.retries.forEach((t) => clearTimeout(t));
    this.watches.forEach((w) => w.stop());
    await this.running;
  }

  private async poolSeen(item: PoolObject, gone: boolean, relisted: boolean): Promise<void> {
    const engine = item.metadata.labels?.[POOL_ENGINE_LABEL];
    if (engine && engine !== this.options.engineNamespace) return; // another engine's pool
    if (gone) this.pools.delete(item.metadata.name);
    else this.pools.set(item.metadata.name, item);
    await this.send(item, gone, relisted);
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

  private async send(pool: PoolObject, gone: boolean, relisted: boolean): Promise<void> {
    const name = pool.metadata.name;
    const workflowId = WORKFLOW_ID.rollout(name);
    try {
      const observation = await this.observe(pool, gone);
      const text = JSON.stringify(observation);
      if (!relisted && this.sent.get(workflowId) === text) return;
      this.sent.set(workflowId, text);
      if (gone) {
        this.sent.delete(workflowId);
        await this.options.temporal.workflow
          .getHandle(workflowId)
          .signal(poolObserved, observation);
        return;
      }
      await this.options.temporal.workflow.signalWithStart('rolloutWorkflow', {
        workflowId,
        taskQueue: this.options.taskQueue,
        args: [{ pool: name }],
        signal: poolObserved,
        signalArgs: [observation],
        typedSearchAttributes: [
          { key: SA.kind, value: KIND.rollout },
          { key: SA.name, value: name },
        ],
        staticSummary: `MachineConfigPool ${name}`,
        staticDetails:
          'Rolls the pool’s OS image out within maxUnavailable: preflight, then per node ' +
          'cordon, drain, rpm-ostree rebase, reboot, check, uncordon; stops on a failure.',
      });
      this.failures.delete(name);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      this.sent.delete(workflowId);
      // Told again soon, not only at the next change or relist (minutes away).
      const failures = (this.failures.get(name) ?? 0) + 1;
      this.failures.set(name, failures);
      const delayMs = Math.min(30_000, 1_000 * 2 ** (failures - 1));
      this.log(
        `MachineConfigPool ${name}: could not signal ${workflowId}: ${innermostMessage(err)}; again in ${delayMs / 1000}s`,
        'warn',
      );
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        const current = this.pools.get(name);
        if (current && !this.stopped) void this.send(current, false, true);
      }, delayMs);
      this.retries.add(timer);
    }
  }
}
