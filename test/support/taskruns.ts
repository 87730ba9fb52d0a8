// Creating, finishing and inspecting TaskRuns and their Secrets in the real API server.
import type { CoreV1Api, CustomObjectsApi, V1Secret } from '@kubernetes/client-node';
import { TASKRUN_API } from '../../shared/taskrun-api.js';
import { secretNameFor } from '../../platform-config/contract.js';
import { waitFor } from '../../local-stack/process.js';
import { MERGE_PATCH } from '../../shared/merge-patch.js';

export interface TaskRunSpec {
  name: string;
  platform?: string;
  /** Mount the contract's secret volume (default true). */
  mountSecret?: boolean;
  /** Put the volume in spec.taskSpec (inline) rather than status.taskSpec. */
  inline?: boolean;
  apiVersion?: 'tekton.dev/v1' | 'tekton.dev/v1beta1';
}

export interface CreatedTaskRun {
  name: string;
  namespace: string;
  uid: string;
}

function volumesOf(spec: TaskRunSpec): object[] {
  return spec.mountSecret === false
    ? [{ name: 'workspace', emptyDir: {} }]
    : [{ name: 'ssh', secret: { secretName: secretNameFor(spec.name), optional: false } }];
}

export function taskRunManifest(namespace: string, spec: TaskRunSpec) {
  const taskSpec = {
    steps: [{ name: 'build', image: 'busybox', script: 'true' }],
    volumes: volumesOf(spec),
  };
  return {
    apiVersion: spec.apiVersion ?? 'tekton.dev/v1',
    kind: 'TaskRun',
    metadata: { name: spec.name, namespace },
    spec: {
      params: spec.platform === undefined ? [] : [{ name: 'PLATFORM', value: spec.platform }],
      ...(spec.inline ? { taskSpec } : { taskRef: { name: 'buildah-remote' } }),
    },
  };
}

export class TaskRuns {
  constructor(
    private readonly core: CoreV1Api,
    private readonly custom: CustomObjectsApi,
    readonly namespace: string,
  ) {}

  /** Creates a TaskRun and, like Tekton's controller would, copies the referenced taskSpec into status. */
  async create(spec: TaskRunSpec): Promise<CreatedTaskRun> {
    const manifest = taskRunManifest(this.namespace, spec);
    const version = (spec.apiVersion ?? 'tekton.dev/v1').split('/')[1]!;
    const created = (await this.custom.createNamespacedCustomObject({
      ...TASKRUN_API,
      version,
      namespace: this.namespace,
      body: manifest,
    })) as { metadata: { uid: string } };
    if (!spec.inline) await this.patchStatus(spec.name, { taskSpec: { volumes: volumesOf(spec) } });
    return { name: spec.name, namespace: this.namespace, uid: created.metadata.uid };
  }

  async complete(name: string, succeeded = true): Promise<void> {
    await this.patchStatus(name, {
      conditions: [
        {
          type: 'Succeeded',
          status: succeeded ? 'True' : 'False',
          reason: succeeded ? 'Succeeded' : 'Failed',
        },
      ],
      completionTime: new Date().toISOString(),
    });
  }

  /**
   * Deletes the TaskRun; `orphan` as `kubectl delete --cascade=orphan` does, so that its Secret is
   * left for the engine's garbage collection to find, not Kubernetes' (which collects dependents).
   */
  async delete(name: string, options: { orphan?: boolean } = {}): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({
      ...TASKRUN_API,
      namespace: this.namespace,
      name,
      ...(options.orphan ? { propagationPolicy: 'Orphan' } : {}),
    });
  }

  async get(name: string): Promise<{
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  }> {
    return (await this.custom.getNamespacedCustomObject({
      ...TASKRUN_API,
      namespace: this.namespace,
      name,
    })) as never;
  }

  async secret(name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({
        name: secretNameFor(name),
        namespace: this.namespace,
      });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** Waits for the Secret and returns its decoded data. */
  async waitForSecret(name: string, timeoutMs = 20_000): Promise<Record<string, string>> {
    const secret = await waitFor(
      `Secret for TaskRun ${this.namespace}/${name}`,
      () => this.secret(name),
      {
        timeoutMs,
        intervalMs: 50,
      },
    );
    return decode(secret);
  }

  async waitForSecretGone(name: string, timeoutMs = 20_000): Promise<void> {
    await waitFor(
      `Secret for TaskRun ${this.namespace}/${name} to be deleted`,
      async () => ((await this.secret(name)) ? undefined : true),
      { timeoutMs, intervalMs: 100 },
    );
  }

  private async patchStatus(name: string, status: object): Promise<void> {
    await this.custom.patchNamespacedCustomObjectStatus(
      { ...TASKRUN_API, namespace: this.namespace, name, body: { status } },
      MERGE_PATCH,
    );
  }
}

export function decode(secret: V1Secret): Record<string, string> {
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString('utf8'),
    ]),
  );
}
