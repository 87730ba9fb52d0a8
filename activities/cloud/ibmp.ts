// IBM Power Virtual Server (`type: ibmp`), over the Power VS REST API (IBM Cloud API docs,
// "Power Cloud API"; models from IBM-Cloud/power-go-client). Every call names the workspace
// twice: in the path (`/pcloud/v1/cloud-instances/<workspace id>/…`, parsed from the `crn` key)
// and in a `CRN` header. Ownership is the serverName prefix, as in the original (pkg/ibm/ibmp.go:
// `strings.HasPrefix(*instance.ServerName, instanceTag)`); the TaskRun id goes in userTags, which
// the original's orphan collector read (ibmp_helpers.go). Power VS creates the boot volume at the
// image's size; like the original (resizeInstanceVolume), a larger `disk` is applied afterwards
// with PUT …/volumes/<boot volume> {size}, and the instance reads as pending until it has been.
import { ApplicationFailure } from '@temporalio/common';
import { IBMP_PROVIDER, type IbmpConfig } from '../../platform-config/ibm-config.js';
import {
  ibmConnection,
  instanceName,
  isInstanceNameOf,
  ownerOfName,
  type IbmClient,
  type IbmProviderOptions,
} from './ibm-iam.js';
import { OWNER_TAG_KEY, TASKRUN_TAG_KEY } from './provider.js';
import type { CloudProvider, Instance, InstanceState, LaunchRequest } from './provider.js';

export type IbmpProviderOptions = IbmProviderOptions<IbmpConfig>;

// The original truncated longer names to 47 characters to avoid Bad Requests (maxPPCNameLength).
const MAX_NAME = 47;
const STATES: Record<string, InstanceState> = {
  BUILD: 'pending',
  PENDING: 'pending',
  RESIZE: 'pending',
  VERIFY_RESIZE: 'pending',
  REBOOT: 'pending',
  HARD_REBOOT: 'pending',
  MIGRATING: 'pending',
  ACTIVE: 'running',
  SHUTOFF: 'stopped',
  ERROR: 'failed',
  DELETING: 'terminated',
};
// Words of a Power VS error description and the host-config key that sets that field.
const FIELD_KEYS: [RegExp, string][] = [
  [/image/i, 'image'],
  [/network/i, 'network'],
  [/key ?pair|ssh key/i, 'key'],
  [/sys ?type|system/i, 'system'],
  [/processor|cores?\b/i, 'cores'],
  [/memory/i, 'memory'],
  [/user ?data/i, 'user-data'],
];

interface PvmInstance {
  pvmInstanceID: string;
  serverName: string;
  status: string;
  creationDate?: string;
  diskSize?: number;
  volumeIDs?: string[];
  userTags?: string[];
  networks?: { ipAddress?: string; externalIP?: string }[];
}

export class IbmpProvider implements CloudProvider {
  readonly sshUser = IBMP_PROVIDER.adminUser;
  readonly kind = 'ibmp' as const;
  private readonly client: IbmClient;
  private readonly workspace: string;
  private readonly config: IbmpConfig;
  private readonly prefix: string;

  constructor(options: IbmpProviderOptions) {
    this.config = options.config;
    const { base, prefix, client } = ibmConnection(options);
    this.prefix = prefix;
    this.client = client;
    this.workspace = `${base}/pcloud/v1/cloud-instances/${encodeURIComponent(options.config.cloudInstanceId)}`;
  }

  /** Instance names are derived from the key, so the name is the mark. */
  launchRef(idempotencyKey: string, owner: { key: string; value: string }): string {
    return instanceName(owner.value, idempotencyKey, MAX_NAME, 'instance-tag');
  }

  async launch(request: LaunchRequest): Promise<Instance> {
    const name = this.launchRef(request.idempotencyKey, request.owner);
    const existing = (await this.all()).find((i) => i.serverName === name);
    if (existing) return this.toInstance(existing, request.owner);
    const { config } = this;
    const taskRun = request.tags[TASKRUN_TAG_KEY];
    const { body } = await this.call<PvmInstance[] | PvmInstance>(
      `launching ${name}`,
      '/pvm-instances',
      {
        method: 'POST',
        body: {
          serverName: name,
          imageID: config.image,
          processors: config.cores,
          procType: 'shared',
          memory: config.memory,
          networks: config.networks.map((networkID) => ({ networkID })),
          keyPairName: config.key,
          ...(config.system ? { sysType: config.system } : {}),
          ...((request.userData ?? config.userData)
            ? {
                userData: Buffer.from(request.userData ?? config.userData ?? '').toString('base64'),
              }
            : {}),
          ...(taskRun ? { userTags: [taskRun] } : {}),
        },
        fix: (_status, message) => this.fix(message),
      },
    );
    // The API answers a list: one PVMInstance per replicant created.
    const created = Array.isArray(body) ? body[0] : body;
    return this.toInstance(created, request.owner);
  }

  async describe(id: string): Promise<Instance | undefined> {
    const { status, body } = await this.call<PvmInstance>(
      `describing instance ${id}`,
      `/pvm-instances/${encodeURIComponent(id)}`,
      { accept: [404, 410] },
    );
    if (status !== 200) return undefined;
    const instance = this.toInstance(body);
    if (instance.state === 'pending' && body.status === 'ACTIVE') await this.resizeBootVolume(body);
    return instance;
  }

  async listByOwner(owner: { key: string; value: string }): Promise<Instance[]> {
    return (await this.all())
      .filter((i) => isInstanceNameOf(owner.value, i.serverName, MAX_NAME))
      .map((i) => this.toInstance(i, owner))
      .filter((i) => i.state !== 'terminated');
  }

  async countByOwner(owner: { key: string; value: string }): Promise<number> {
    return (await this.listByOwner(owner)).length;
  }

  async terminate(id: string): Promise<void> {
    await this.call(`terminating instance ${id}`, `/pvm-instances/${encodeURIComponent(id)}`, {
      method: 'DELETE',
      query: { delete_data_volumes: 'true' },
      accept: [404, 410],
    });
  }

  private call<T>(
    action: string,
    path: string,
    options: Parameters<IbmClient['request']>[2] & { query?: Record<string, string> } = {},
  ) {
    const query = options.query ? `?${new URLSearchParams(options.query)}` : '';
    return this.client.request<T>(action, `${this.workspace}${path}${query}`, {
      ...options,
      headers: { CRN: this.config.crn },
    });
  }

  private async all(): Promise<PvmInstance[]> {
    const { body } = await this.call<{ pvmInstances?: PvmInstance[] }>(
      'listing instances',
      '/pvm-instances',
    );
    return body.pvmInstances ?? [];
  }

  /** Best effort, retried at the next describe: the original found this API "quite unstable". */
  private async resizeBootVolume(instance: PvmInstance): Promise<void> {
    const volume = instance.volumeIDs?.[0];
    if (!volume) return;
    try {
      await this.call(
        `resizing the boot volume of ${instance.pvmInstanceID}`,
        `/volumes/${encodeURIComponent(volume)}`,
        {
          method: 'PUT',
          body: { size: this.config.disk },
        },
      );
    } catch (err) {
      // A rejected key is worth saying; anything else leaves the instance pending, and the
      // allocation timeout bounds a resize that never succeeds.
      if (err instanceof ApplicationFailure && /^IbmHttp40[13]$/.test(err.type ?? '')) throw err;
    }
  }

  private fix(message: string): string {
    const keys = FIELD_KEYS.filter(([words]) => words.test(message)).map(
      ([, key]) => this.prefix + key,
    );
    const fallback = ['image', 'key', 'network', 'system', 'cores', 'memory'].map(
      (k) => this.prefix + k,
    );
    return `check ${(keys.length ? keys : fallback).join(', ')}`;
  }

  private toInstance(raw: PvmInstance, owner?: { key: string; value: string }): Instance {
    const mapped = STATES[raw.status?.toUpperCase()] ?? 'unknown';
    // Not ready for builds until the boot volume has its configured size (see resizeBootVolume).
    const state =
      mapped === 'running' && (raw.diskSize ?? 0) < this.config.disk ? 'pending' : mapped;
    // The first network's external IP (public networks), else its private address: the
    // original's retrieveInstanceIp.
    const network = raw.networks?.[0];
    const address = state === 'running' ? network?.externalIP || network?.ipAddress : undefined;
    const taskRun = raw.userTags?.find((tag) => /^[^:]+:[^:]+$/.test(tag));
    return {
      id: raw.pvmInstanceID,
      state,
      ...(address ? { address } : {}),
      ...(raw.creationDate ? { launchedAt: raw.creationDate } : {}),
      zone: this.config.zone,
      launchRef: raw.serverName,
      tags: {
        Name: raw.serverName,
        [owner?.key ?? OWNER_TAG_KEY]: owner?.value ?? ownerOfName(raw.serverName),
        ...(taskRun ? { [TASKRUN_TAG_KEY]: taskRun } : {}),
      },
    };
  }
}
