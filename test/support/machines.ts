// Machines in tests: creating a HostflowMachine, its Machine and the bootstrap Secret; reading
// them back; and a watch that records every phase the Machine's status passes through, in order
// (as `kubectl get machines -w` would show it).
import { Watch, type CoreV1Event } from '@kubernetes/client-node';
import { waitFor } from '../../local-stack/process.js';
import {
  HOSTFLOW_MACHINE_API,
  MACHINE_API,
  type MachineSpec,
  type MachineStatus,
} from '../../shared/machine-api.js';
import { statusCode } from '../../shared/kube-errors.js';
import { startBridge, startWorker } from './engine.js';
import { createNodeJoiner } from './node-join.js';
import type { TestScope } from './scope.js';
import type { VmCloud } from './vm-cloud.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

export interface MachineObject {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  spec: MachineSpec;
  status?: MachineStatus;
}

export class Machines {
  private readonly watches: Array<() => void> = [];

  constructor(private readonly scope: TestScope) {}

  private get ns() {
    return this.scope.namespace;
  }

  async create(
    name: string,
    options: {
      platform: string;
      secret?: string;
      annotations?: Record<string, string>;
      spec?: Partial<MachineSpec>;
      nodeStartupTimeout?: string;
      /** An existing HostflowMachine to name instead of making one of the Machine's name. */
      infrastructure?: string;
    },
  ): Promise<void> {
    const { custom } = this.scope.kube;
    if (!options.infrastructure) {
      await custom.createNamespacedCustomObject({
        ...HOSTFLOW_MACHINE_API,
        namespace: this.ns,
        body: {
          apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
          kind: 'HostflowMachine',
          metadata: { name },
          spec: {
            platform: options.platform,
            ...(options.nodeStartupTimeout
              ? { nodeStartupTimeout: options.nodeStartupTimeout }
              : {}),
          },
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
          clusterName: 'workload',
          bootstrap: { dataSecretName: options.secret ?? `${name}-bootstrap` },
          infrastructureRef: {
            apiVersion: `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`,
            kind: 'HostflowMachine',
            name: options.infrastructure ?? name,
          },
          version: 'v1.34.1',
          ...options.spec,
        },
      },
    });
  }

  /**
   * The bootstrap data Secret: as a person writes it, or, with `owner` (a Machine's name), as a
   * bootstrap provider makes it for that Machine (an ownerReference to it).
   */
  async bootstrapSecret(name: string, script: string, owner?: string): Promise<void> {
    const machine = owner ? await this.get(owner) : undefined;
    const ownerReferences = machine
      ? [
          {
            apiVersion: `${MACHINE_API.group}/${MACHINE_API.version}`,
            kind: 'Machine',
            name: machine.metadata.name,
            uid: machine.metadata.uid,
            controller: true,
          },
        ]
      : undefined;
    await this.scope.kube.core.createNamespacedSecret({
      namespace: this.ns,
      body: {
        metadata: {
          name,
          labels: { 'cluster.x-k8s.io/cluster-name': 'workload' },
          ...(ownerReferences ? { ownerReferences } : {}),
        },
        stringData: { value: script },
      },
    });
  }

  get(name: string): Promise<MachineObject | undefined> {
    return this.scope.kube.custom
      .getNamespacedCustomObject({ ...MACHINE_API, namespace: this.ns, name })
      .then(
        (found) => found as MachineObject,
        (err: unknown) => (statusCode(err) === 404 ? undefined : Promise.reject(err)),
      );
  }

  /** Waits until `check` holds for the Machine's state. */
  until(
    name: string,
    what: string,
    check: (machine: MachineObject) => boolean,
    timeoutMs = 90_000,
  ): Promise<MachineObject> {
    let last: MachineObject | undefined;
    return waitFor(
      `Machine ${name} ${what}`,
      async () => {
        const machine = (last = await this.get(name));
        return machine && check(machine) ? machine : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    ).catch((err: unknown) => {
      // What it did say, to tell where it stopped.
      throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(last?.status)}`);
    });
  }

  phase(name: string, phase: string, timeoutMs?: number): Promise<MachineObject> {
    return this.until(name, `to be ${phase}`, (m) => m.status?.phase === phase, timeoutMs);
  }

  gone(name: string, timeoutMs = 90_000): Promise<true> {
    return waitFor(
      `Machine ${name} to go`,
      async () => ((await this.get(name)) ? undefined : true),
      { timeoutMs, intervalMs: 200 },
    );
  }

  async annotate(name: string, annotations: Record<string, string | null>): Promise<void> {
    await this.scope.kube.custom.patchNamespacedCustomObject(
      { ...MACHINE_API, namespace: this.ns, name, body: { metadata: { annotations } } },
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

  condition(machine: MachineObject, type: string) {
    return machine.status?.conditions?.find((c) => c.type === type);
  }

  /** Every phase the Machine's status takes from now on, in order. */
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
    const phases = await this.recordPhases(name);
    await this.bootstrapSecret(`${name}-bootstrap`, script);
    await this.create(name, { platform });
    const running = await this.phase(name, 'Running', 120_000);
    return { running, phases: await phases.upTo('Running') };
  }

  /**
   * Records the deletions of the Machine `name` and of the HostflowMachine `name`; `upTo(count)`
   * waits for `count` of them and returns their kinds in the order the API server deleted them
   * (by the resourceVersion of each deletion, which etcd orders), whichever watch told first.
   */
  async recordDeletions(name: string): Promise<{ upTo(count: number): Promise<string[]> }> {
    const deleted: Array<{ kind: string; version: number }> = [];
    const ended: unknown[] = [];
    for (const [kind, api, plural] of [
      ['Machine', MACHINE_API, 'machines'],
      ['HostflowMachine', HOSTFLOW_MACHINE_API, 'hostflowmachines'],
    ] as const) {
      const request = await new Watch(this.scope.kube.kc).watch(
        `/apis/${api.group}/${api.version}/namespaces/${this.ns}/${plural}`,
        { fieldSelector: `metadata.name=${name}` },
        (type, obj: { metadata: { resourceVersion: string } }) => {
          if (type === 'DELETED')
            deleted.push({ kind, version: Number(obj.metadata.resourceVersion) });
        },
        (err: unknown) => ended.push(err ?? `the watch of ${kind} ${name} ended`),
      );
      this.watches.push(() => request.abort());
    }
    return {
      upTo: (count) =>
        waitFor(`${count} deletions of Machine/HostflowMachine ${name}`, () => {
          if (deleted.length >= count)
            return [...deleted].sort((a, b) => a.version - b.version).map((d) => d.kind);
          if (ended.length) throw new Error(String(ended[0]));
          return undefined;
        }),
    };
  }

  /** The reasons of this Machine's Events, oldest first. */
  /**
   * Waits until the Machine's Events include every one of `reasons`, and returns them all. An
   * Event is recorded after the status write it goes with, so a read right after a status
   * change can come too early.
   */
  async eventsInclude(name: string, ...reasons: string[]): Promise<string[]> {
    return waitFor(`Events ${reasons.join(', ')} on Machine ${name}`, async () => {
      const seen = await this.eventReasons(name);
      return reasons.every((r) => seen.includes(r)) ? seen : undefined;
    });
  }

  async eventReasons(name: string): Promise<string[]> {
    const events = await this.scope.kube.core.listNamespacedEvent({
      namespace: this.ns,
      fieldSelector: `involvedObject.name=${name},involvedObject.kind=Machine`,
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
  return { worker, bridge, machines: new Machines(scope), joiner: await createNodeJoiner(scope) };
}
