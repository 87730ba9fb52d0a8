// Machines in tests, under the real Cluster API core the suite runs: the Cluster they join (the
// local cluster itself, local-stack/workload-cluster.ts), a HostflowMachine with its Machine and
// bootstrap Secret, MachineDeployments of a HostflowMachineTemplate; reading them back; and a
// watch that records every phase the Machine's status passes through, in order (as
// `kubectl get machines -w` would show it).
import { Watch, type CoreV1Event } from '@kubernetes/client-node';
import { waitFor } from '../../local-stack/process.js';
import { ensureWorkloadCluster } from '../../local-stack/workload-cluster.js';
import {
  CLUSTER_NAME_LABEL,
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_KIND,
  HOSTFLOW_MACHINE_TEMPLATE_KIND,
  MACHINE_API,
  type HostflowMachineSpec,
  type HostflowMachineStatus,
} from '../../shared/machine-api.js';
import type { ObservedCondition } from '../../shared/conditions.js';
import { statusCode } from '../../shared/kube-errors.js';
import { startBridge, startWorker } from './engine.js';
import { testEnv } from './env.js';
import { createNodeJoiner } from './node-join.js';
import type { TestScope } from './scope.js';
import type { VmCloud } from './vm-cloud.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

/** The Cluster every test Machine joins, in the test file's namespace. */
export const CLUSTER = 'workload';
const VERSION = 'v1.34.1';
const INFRA_REF = { apiGroup: HOSTFLOW_MACHINE_API.group, kind: HOSTFLOW_MACHINE_KIND };

/** A Machine as Cluster API core writes it (v1beta2). */
export interface MachineObject {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec: {
    providerID?: string;
    clusterName?: string;
    infrastructureRef?: { name?: string };
    failureDomain?: string;
  };
  status?: {
    phase?: string;
    nodeRef?: { name?: string };
    addresses?: Array<{ type: string; address: string }>;
    conditions?: ObservedCondition[];
  };
}

export interface HostflowMachineObject {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; name?: string; uid?: string; controller?: boolean }>;
  };
  spec: HostflowMachineSpec;
  status?: HostflowMachineStatus;
}

const orUndefined = <T>(call: Promise<unknown>) =>
  call.then(
    (found) => found as T,
    (err: unknown) => (statusCode(err) === 404 ? undefined : Promise.reject(err)),
  );

export class Machines {
  private readonly watches: Array<() => void> = [];
  private cluster: Promise<void> | undefined;

  constructor(private readonly scope: TestScope) {}

  private get ns() {
    return this.scope.namespace;
  }

  /** The Cluster, made once per test file. */
  ensureCluster(): Promise<void> {
    return (this.cluster ??= ensureWorkloadCluster(this.scope.kube.kc, {
      namespace: this.ns,
      name: CLUSTER,
      kubeconfigPath: testEnv('kubeconfig'),
    }));
  }

  /** A HostflowMachine and a Machine whose infrastructure it is (both named `name`). */
  async create(
    name: string,
    options: {
      platform: string;
      secret?: string;
      /** On the Machine. */
      annotations?: Record<string, string>;
      /** An existing HostflowMachine to name instead of making one of the Machine's name. */
      infrastructure?: string;
      spec?: Record<string, unknown>;
    },
  ): Promise<void> {
    await this.ensureCluster();
    const { custom } = this.scope.kube;
    if (!options.infrastructure) {
      await custom.createNamespacedCustomObject({
        ...HOSTFLOW_MACHINE_API,
        namespace: this.ns,
        body: {
          apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
          kind: HOSTFLOW_MACHINE_KIND,
          metadata: { name },
          spec: { platform: options.platform },
        },
      });
    }
    await custom.createNamespacedCustomObject({
      ...MACHINE_API,
      namespace: this.ns,
      body: {
        apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
        kind: 'Machine',
        metadata: { name, ...(options.annotations ? { annotations: options.annotations } : {}) },
        spec: {
          clusterName: CLUSTER,
          bootstrap: { dataSecretName: options.secret ?? `${name}-bootstrap` },
          infrastructureRef: { ...INFRA_REF, name: options.infrastructure ?? name },
          version: VERSION,
          ...options.spec,
        },
      },
    });
  }

  /** A HostflowMachineTemplate of `platform`, and a MachineDeployment of `replicas` from it. */
  async createDeployment(
    name: string,
    options: { platform: string; replicas: number; secret: string },
  ): Promise<void> {
    await this.ensureCluster();
    const { custom } = this.scope.kube;
    await custom.createNamespacedCustomObject({
      ...HOSTFLOW_MACHINE_API,
      plural: 'hostflowmachinetemplates',
      namespace: this.ns,
      body: {
        apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
        kind: HOSTFLOW_MACHINE_TEMPLATE_KIND,
        metadata: { name },
        spec: { template: { spec: { platform: options.platform } } },
      },
    });
    await custom.createNamespacedCustomObject({
      ...MACHINE_API,
      plural: 'machinedeployments',
      namespace: this.ns,
      body: {
        apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
        kind: 'MachineDeployment',
        metadata: { name },
        spec: {
          clusterName: CLUSTER,
          replicas: options.replicas,
          selector: { matchLabels: { deployment: name } },
          template: {
            metadata: { labels: { deployment: name } },
            spec: {
              clusterName: CLUSTER,
              version: VERSION,
              bootstrap: { dataSecretName: options.secret },
              infrastructureRef: {
                apiGroup: HOSTFLOW_MACHINE_API.group,
                kind: HOSTFLOW_MACHINE_TEMPLATE_KIND,
                name,
              },
            },
          },
        },
      },
    });
  }

  async scaleDeployment(name: string, replicas: number): Promise<void> {
    await this.scope.kube.custom.patchNamespacedCustomObject(
      {
        ...MACHINE_API,
        plural: 'machinedeployments',
        namespace: this.ns,
        name,
        body: { spec: { replicas } },
      },
      MERGE_PATCH,
    );
  }

  /** The Machines of a MachineDeployment (by its label), by name. */
  async ofDeployment(name: string): Promise<MachineObject[]> {
    const list = (await this.scope.kube.custom.listNamespacedCustomObject({
      ...MACHINE_API,
      namespace: this.ns,
      labelSelector: `deployment=${name}`,
    })) as { items: MachineObject[] };
    return list.items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }

  /**
   * The bootstrap data Secret, as a person writes it (a bootstrap provider would own it; these
   * Machines name it in spec.bootstrap.dataSecretName).
   */
  async bootstrapSecret(name: string, script: string): Promise<void> {
    await this.scope.kube.core.createNamespacedSecret({
      namespace: this.ns,
      body: {
        metadata: { name, labels: { [CLUSTER_NAME_LABEL]: CLUSTER } },
        stringData: { value: script },
      },
    });
  }

  get(name: string): Promise<MachineObject | undefined> {
    return orUndefined(
      this.scope.kube.custom.getNamespacedCustomObject({
        ...MACHINE_API,
        namespace: this.ns,
        name,
      }),
    );
  }

  infrastructure(name: string): Promise<HostflowMachineObject | undefined> {
    return orUndefined(
      this.scope.kube.custom.getNamespacedCustomObject({
        ...HOSTFLOW_MACHINE_API,
        namespace: this.ns,
        name,
      }),
    );
  }

  /** Waits until `check` holds for the Machine's state; when not, says what both objects said. */
  until(
    name: string,
    what: string,
    check: (machine: MachineObject) => boolean,
    timeoutMs = 90_000,
  ): Promise<MachineObject> {
    return this.waitForObject(`Machine ${name} ${what}`, () => this.get(name), check, timeoutMs);
  }

  /** Waits until `check` holds for the HostflowMachine. */
  untilInfrastructure(
    name: string,
    what: string,
    check: (infra: HostflowMachineObject) => boolean,
    timeoutMs = 90_000,
  ): Promise<HostflowMachineObject> {
    return this.waitForObject(
      `HostflowMachine ${name} ${what}`,
      () => this.infrastructure(name),
      check,
      timeoutMs,
    );
  }

  private waitForObject<T extends { metadata: { name: string }; status?: unknown }>(
    what: string,
    read: () => Promise<T | undefined>,
    check: (object: T) => boolean,
    timeoutMs: number,
  ): Promise<T> {
    let last: T | undefined;
    return waitFor(
      what,
      async () => {
        const object = (last = await read());
        return object && check(object) ? object : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    ).catch(async (err: unknown) => {
      // What the Machine and its HostflowMachine did say, to tell where it stopped.
      const name = last?.metadata.name;
      const [machine, infra] = name
        ? await Promise.all([
            this.get(name).catch(() => undefined),
            this.infrastructure(name).catch(() => undefined),
          ])
        : [];
      throw new Error(
        `${(err as Error).message}; the Machine's status: ${JSON.stringify(machine?.status)}; ` +
          `its HostflowMachine's: ${JSON.stringify(infra?.status)}`,
      );
    });
  }

  /** Waits until the HostflowMachine's Ready condition has `reason`. */
  readyReason(name: string, reason: string, timeoutMs?: number): Promise<HostflowMachineObject> {
    return this.untilInfrastructure(
      name,
      `to say Ready ${reason}`,
      (infra) => this.condition(infra, 'Ready')?.reason === reason,
      timeoutMs,
    );
  }

  phase(name: string, phase: string, timeoutMs?: number): Promise<MachineObject> {
    return this.until(name, `to be ${phase}`, (m) => m.status?.phase === phase, timeoutMs);
  }

  gone(name: string, timeoutMs = 120_000): Promise<true> {
    return waitFor(
      `Machine ${name} and its HostflowMachine to go`,
      async () => ((await this.get(name)) || (await this.infrastructure(name)) ? undefined : true),
      { timeoutMs, intervalMs: 250 },
    );
  }

  async annotateInfrastructure(
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<void> {
    await this.scope.kube.custom.patchNamespacedCustomObject(
      { ...HOSTFLOW_MACHINE_API, namespace: this.ns, name, body: { metadata: { annotations } } },
      MERGE_PATCH,
    );
  }

  /** Pauses (or unpauses) the Cluster, as `clusterctl move` does. */
  async pauseCluster(paused: boolean): Promise<void> {
    await this.scope.kube.custom.patchNamespacedCustomObject(
      {
        ...MACHINE_API,
        plural: 'clusters',
        namespace: this.ns,
        name: CLUSTER,
        body: { spec: { paused } },
      },
      MERGE_PATCH,
    );
  }

  async delete(name: string): Promise<void> {
    await this.scope.kube.custom.deleteNamespacedCustomObject({
      ...MACHINE_API,
      namespace: this.ns,
      name,
    });
  }

  condition(object: { status?: { conditions?: ObservedCondition[] } }, type: string) {
    return object.status?.conditions?.find((c) => c.type === type);
  }

  /**
   * Records every phase the Machine's watch shows, in order. `upTo(phase)` waits until the watch
   * has delivered that phase (it may trail a read that already sees it) and returns the list.
   */
  async recordPhases(name: string): Promise<{ upTo(phase: string): Promise<string[]> }> {
    const seen: string[] = [];
    let ended: unknown;
    const watch = new Watch(this.scope.kube.kc);
    const request = await watch.watch(
      `/apis/${MACHINE_API.group}/${MACHINE_API.version}/namespaces/${this.ns}/machines`,
      { fieldSelector: `metadata.name=${name}` },
      (_type, obj: MachineObject) => {
        const phase = obj.status?.phase;
        if (phase && seen.at(-1) !== phase) seen.push(phase);
      },
      (err: unknown) => (ended = err ?? 'the watch ended'),
    );
    this.watches.push(() => request.abort());
    return {
      upTo: (phase) =>
        waitFor(`Machine ${name}'s watch to show ${phase} (it showed ${seen.join(', ')})`, () => {
          if (seen.includes(phase)) return [...seen];
          if (ended) throw new Error(`the watch of Machine ${name} ended: ${String(ended)}`);
          return undefined;
        }),
    };
  }

  /**
   * Creates Machine `name` with its bootstrap data already there, and waits for it to run:
   * the Machine as it runs, and the phases its watch showed on the way.
   */
  async createRunning(
    name: string,
    platform: string,
    script: string,
  ): Promise<{ running: MachineObject; phases: string[] }> {
    await this.ensureCluster();
    const phases = await this.recordPhases(name);
    await this.bootstrapSecret(`${name}-bootstrap`, script);
    await this.create(name, { platform });
    const running = await this.phase(name, 'Running', 150_000);
    return { running, phases: await phases.upTo('Running') };
  }

  /** Waits until the Events hostflow recorded on the HostflowMachine include every one of `reasons`. */
  async eventsInclude(name: string, ...reasons: string[]): Promise<string[]> {
    return waitFor(`Events ${reasons.join(', ')} on HostflowMachine ${name}`, async () => {
      const seen = await this.eventReasons(name);
      return reasons.every((r) => seen.includes(r)) ? seen : undefined;
    });
  }

  /** The reasons of the Events on `kind` `name`, oldest first. */
  async eventReasons(name: string, kind = HOSTFLOW_MACHINE_KIND): Promise<string[]> {
    const events = await this.scope.kube.core.listNamespacedEvent({
      namespace: this.ns,
      fieldSelector: `involvedObject.name=${name},involvedObject.kind=${kind}`,
    });
    // Timestamps have whole seconds: within one, the order of writes (resourceVersion) decides.
    const at = (e: CoreV1Event) => new Date(e.firstTimestamp ?? e.eventTime ?? 0).getTime();
    const written = (e: CoreV1Event) => Number(e.metadata.resourceVersion);
    return events.items
      .sort((a, b) => at(a) - at(b) || written(a) - written(b))
      .map((e) => e.reason ?? '');
  }

  stopWatches(): void {
    this.watches.forEach((stop) => stop());
  }
}

/** host-config keys of a dynamic platform on a test cloud, for Machines' VMs. */
export const machinePlatformKeys = (
  cloud: VmCloud,
  platform: string,
  tag: string,
  own: Record<string, string> = {},
) => {
  const cfg = `dynamic.${platform.replace('/', '-')}`;
  return Object.fromEntries(
    Object.entries({
      type: cloud.kind,
      ...cloud.providerKeys,
      'ssh-secret': `vm-ssh-${cloud.kind}`,
      'instance-tag': tag,
      'max-instances': '2',
      'check-interval': '1',
      'allocation-timeout': '60',
      ...own,
    }).map(([key, value]) => [`${cfg}.${key}`, value]),
  );
};

/** The test cloud's Secrets in the engine namespace; its VM key as `vm-ssh-<kind>`, which machinePlatformKeys names. */
export async function storeCloudSecrets(scope: TestScope, cloud: VmCloud): Promise<void> {
  for (const [name, stringData] of Object.entries(cloud.secrets)) {
    await scope.kube.core.createNamespacedSecret({
      namespace: scope.engineNamespace,
      body: { metadata: { name: name === 'vm-ssh' ? `vm-ssh-${cloud.kind}` : name }, stringData },
    });
  }
}

/** The engine for a Machine test file, with what its tests drive Machines and join Nodes by. */
export async function startMachineEngine(scope: TestScope, workerEnv?: NodeJS.ProcessEnv) {
  const worker = await startWorker(scope, workerEnv);
  const bridge = await startBridge(scope);
  const machines = new Machines(scope);
  await machines.ensureCluster();
  return { worker, bridge, machines, joiner: await createNodeJoiner(scope) };
}
