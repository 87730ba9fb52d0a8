// IBM System Z on IBM Cloud VPC (`type: ibmz`), over the VPC REST API (IBM Cloud API docs,
// "VPC API": every call carries `version=<date>&generation=2`). Config values `vpc`, `subnet` and
// `key` are names, as in the original (pkg/ibm/ibmz.go looks each up by listing), resolved once.
// Ownership is the instance name: the owner tag and its launch hash (see instanceName); the TaskRun id is a user tag on the
// boot volume, which is where the original's orphan collector read it (ibmz_helpers.go).
// The SSH address is the primary private IP with `private-ip`, otherwise a floating IP bound to
// the primary network interface: an unbound one this engine created earlier is reused before a
// new one is reserved, as the original did because a reserved floating IP is billed per month.
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { IBMZ_PROVIDER, type IbmzConfig } from '../../platform-config/ibm-config.js';
import {
  ibmConnection,
  instanceName,
  isInstanceNameOf,
  ownerOfName,
  type IbmClient,
  type IbmProviderOptions,
} from './ibm-iam.js';
import type { IbmResponse } from './ibm-iam.js';
import { OWNER_TAG_KEY, TASKRUN_TAG_KEY } from './provider.js';
import type { CloudProvider, Instance, InstanceState, LaunchRequest } from './provider.js';

export type IbmzProviderOptions = IbmProviderOptions<IbmzConfig>;

const API_VERSION = '2024-11-12';
const MAX_NAME = 63;
const FLOATING_IP_PREFIX = 'hostflow-fip-';
const STATES: Record<string, InstanceState> = {
  pending: 'pending',
  starting: 'pending',
  restarting: 'pending',
  running: 'running',
  stopping: 'stopping',
  stopped: 'stopped',
  failed: 'failed',
  deleting: 'terminated',
};
// Request fields (VPC error `target.name`, else words of the message) and the key that sets each.
const FIELD_KEYS: [RegExp, string][] = [
  [/image/i, 'image-id'],
  [/profile/i, 'profile'],
  [/zone/i, 'region'],
  [/^vpc|\bvpc\b/i, 'vpc'],
  [/subnet/i, 'subnet'],
  [/^keys|\bkeys?\b/i, 'key'],
  [/capacity|volume/i, 'disk'],
];

interface Ref {
  id: string;
  name: string;
}
interface VpcInstance extends Ref {
  status: string;
  created_at?: string;
  resource_group?: { id: string };
  primary_network_interface?: { id: string; primary_ip?: { address?: string } };
  zone?: { name: string };
}
interface FloatingIp extends Ref {
  address: string;
  status: string;
  target?: { id: string };
  zone?: { name: string };
}
interface Resolved {
  vpc: Ref & { resource_group: { id: string } };
  subnet: Ref & { vpc?: { id: string } };
  key: Ref;
}

export class IbmzProvider implements CloudProvider {
  readonly sshUser = IBMZ_PROVIDER.adminUser;
  readonly kind = 'ibmz' as const;
  private readonly client: IbmClient;
  private readonly base: string;
  private readonly config: IbmzConfig;
  private readonly prefix: string;
  private resolved?: Promise<Resolved>;

  constructor(options: IbmzProviderOptions) {
    this.config = options.config;
    ({ base: this.base, prefix: this.prefix, client: this.client } = ibmConnection(options));
  }

  /** Instance names are derived from the key, so the name is the mark. */
  launchRef(idempotencyKey: string, owner: { key: string; value: string }): string {
    return instanceName(owner.value, idempotencyKey, MAX_NAME, 'instance-tag');
  }

  async launch(request: LaunchRequest): Promise<Instance> {
    const name = this.launchRef(request.idempotencyKey, request.owner);
    const existing = await this.findByName(name);
    if (existing) return this.toInstance(existing, request.owner);
    const { vpc, subnet, key } = await this.resolve();
    const taskRun = request.tags[TASKRUN_TAG_KEY];
    const { status, body } = await this.client.request<VpcInstance>(
      `launching ${name}`,
      this.url('/instances'),
      {
        method: 'POST',
        accept: [400],
        body: {
          name,
          zone: { name: this.config.region },
          resource_group: { id: vpc.resource_group.id },
          vpc: { id: vpc.id },
          profile: { name: this.config.profile },
          image: { id: this.config.imageId },
          keys: [{ id: key.id }],
          ...(request.userData ? { user_data: request.userData } : {}),
          // Without security_groups the VPC's default group applies, which the original passed.
          primary_network_interface: { name: 'eth0', subnet: { id: subnet.id } },
          boot_volume_attachment: {
            delete_volume_on_instance_delete: true,
            volume: {
              name: `${name}-boot`,
              capacity: this.config.disk,
              profile: { name: 'general-purpose' },
              ...(taskRun ? { user_tags: [taskRun] } : {}),
            },
          },
          availability_policy: { host_failure: 'stop' },
        },
        fix: (_status, message, errorBody) => this.fix(message, errorBody),
      },
    );
    if (status === 400) {
      // A concurrent or timed-out attempt created it first: names are unique in a VPC.
      const errors = (body as { errors?: { code?: string }[] }).errors ?? [];
      const again = errors.some((e) => e.code === 'validation_unique_failed')
        ? await this.findByName(name)
        : undefined;
      if (again) return this.toInstance(again, request.owner);
      throw this.client.error(`launching ${name}`, status, body, '', (_s, m, b) => this.fix(m, b));
    }
    return this.toInstance(body, request.owner);
  }

  async describe(id: string): Promise<Instance | undefined> {
    const { status, body } = await this.client.request<VpcInstance>(
      `describing instance ${id}`,
      this.url(`/instances/${encodeURIComponent(id)}`),
      { accept: [404] },
    );
    if (status === 404) return undefined;
    const instance = await this.toInstance(body);
    if (instance.state === 'running' && !instance.address && !this.config.privateIp) {
      instance.address = await this.attachFloatingIp(body);
    }
    return instance;
  }

  async listByOwner(owner: { key: string; value: string }): Promise<Instance[]> {
    const { vpc } = await this.resolve();
    const all = await this.list<VpcInstance>('/instances', 'instances', { 'vpc.id': vpc.id });
    const owned = all.filter(
      (i) => isInstanceNameOf(owner.value, i.name, MAX_NAME) && i.status !== 'deleting',
    );
    return Promise.all(owned.map((i) => this.toInstance(i, owner)));
  }

  async countByOwner(owner: { key: string; value: string }): Promise<number> {
    return (await this.listByOwner(owner)).length;
  }

  async terminate(id: string): Promise<void> {
    await this.client.request(
      `terminating instance ${id}`,
      this.url(`/instances/${encodeURIComponent(id)}`),
      {
        method: 'DELETE',
        accept: [404],
      },
    );
  }

  private url(path: string, query: Record<string, string> = {}): string {
    const params = new URLSearchParams({ version: API_VERSION, generation: '2', ...query });
    return `${this.base}${path}?${params}`;
  }

  /** Every page of a VPC collection (`next.href` carries the `start` token). */
  private async list<T>(
    path: string,
    field: string,
    query: Record<string, string> = {},
  ): Promise<T[]> {
    const items: T[] = [];
    let url: string | undefined = this.url(path, { limit: '100', ...query });
    while (url) {
      const page: IbmResponse<Record<string, unknown>> = await this.client.request(
        `listing ${field}`,
        url,
      );
      items.push(...((page.body[field] as T[]) ?? []));
      const next = (page.body.next as { href?: string } | undefined)?.href;
      const start: string | null = next ? new URL(next).searchParams.get('start') : null;
      url = start ? this.url(path, { limit: '100', ...query, start }) : undefined;
    }
    return items;
  }

  private async findByName(name: string): Promise<VpcInstance | undefined> {
    return (await this.list<VpcInstance>('/instances', 'instances', { name })).find(
      (i) => i.name === name,
    );
  }

  private resolve(): Promise<Resolved> {
    this.resolved ??= this.lookUp().catch((err) => {
      this.resolved = undefined;
      throw err;
    });
    return this.resolved;
  }

  private async lookUp(): Promise<Resolved> {
    const find = async <T extends Ref>(
      path: string,
      field: string,
      wanted: string,
      key: string,
    ) => {
      const match = (await this.list<T>(path, field)).find(
        (r) => r.name === wanted || r.id === wanted,
      );
      if (!match)
        throw this.misconfigured(
          key,
          `no ${field.replace(/s$/, '')} named "${wanted}" in the region`,
        );
      return match;
    };
    const vpc = await find<Resolved['vpc']>('/vpcs', 'vpcs', this.config.vpc, 'vpc');
    const subnet = await find<Resolved['subnet']>(
      '/subnets',
      'subnets',
      this.config.subnet,
      'subnet',
    );
    if (subnet.vpc && subnet.vpc.id !== vpc.id) {
      throw this.misconfigured('subnet', `subnet "${subnet.name}" is not in VPC "${vpc.name}"`);
    }
    const key = await find<Ref>('/keys', 'keys', this.config.key, 'key');
    return { vpc, subnet, key };
  }

  private misconfigured(key: string, reason: string): ApplicationFailure {
    return ApplicationFailure.nonRetryable(`${this.prefix}${key}: ${reason}`, 'IbmMisconfigured');
  }

  private fix(message: string, body: unknown): string {
    const errors = (body as { errors?: { target?: { name?: string } }[] }).errors ?? [];
    const targets = errors.map((e) => e.target?.name ?? '').filter(Boolean);
    const about = (texts: string[]) =>
      FIELD_KEYS.filter(([words]) => texts.some((t) => words.test(t))).map(([, key]) => key);
    const keys = about(targets).length ? about(targets) : about([message]);
    const named = keys.length ? keys : ['image-id', 'profile', 'region', 'disk'];
    return `check ${[...new Set(named)].map((k) => this.prefix + k).join(', ')}`;
  }

  private async toInstance(
    raw: VpcInstance,
    owner?: { key: string; value: string },
  ): Promise<Instance> {
    const state = STATES[raw.status] ?? 'unknown';
    let address: string | undefined;
    if (state === 'running') {
      const nic = raw.primary_network_interface;
      if (this.config.privateIp) {
        const ip = nic?.primary_ip?.address;
        address = ip && ip !== '0.0.0.0' ? ip : undefined;
      } else if (nic) {
        address = (await this.boundFloatingIps(raw.id, nic.id))[0]?.address;
      }
    }
    return {
      id: raw.id,
      state,
      ...(address ? { address } : {}),
      ...(raw.created_at ? { launchedAt: raw.created_at } : {}),
      ...(raw.zone?.name ? { zone: raw.zone.name } : {}),
      launchRef: raw.name,
      tags: {
        Name: raw.name,
        [owner?.key ?? OWNER_TAG_KEY]: owner?.value ?? ownerOfName(raw.name),
      },
    };
  }

  private async boundFloatingIps(instanceId: string, nicId: string): Promise<FloatingIp[]> {
    const path = `/instances/${encodeURIComponent(instanceId)}/network_interfaces/${encodeURIComponent(nicId)}/floating_ips`;
    const { body } = await this.client.request<{ floating_ips?: FloatingIp[] }>(
      `listing floating IPs of ${instanceId}`,
      this.url(path),
    );
    return body.floating_ips ?? [];
  }

  private async attachFloatingIp(instance: VpcInstance): Promise<string | undefined> {
    const nic = instance.primary_network_interface;
    if (!nic) return undefined;
    const group: Record<string, string> = instance.resource_group
      ? { 'resource_group.id': instance.resource_group.id }
      : {};
    const free = (await this.list<FloatingIp>('/floating_ips', 'floating_ips', group)).find(
      (ip) =>
        ip.status === 'available' &&
        !ip.target &&
        ip.name.startsWith(FLOATING_IP_PREFIX) &&
        (!ip.zone || ip.zone.name === this.config.region),
    );
    const action = `binding a floating IP to ${instance.id}`;
    const path = `/instances/${encodeURIComponent(instance.id)}/network_interfaces/${encodeURIComponent(nic.id)}/floating_ips`;
    const { body } = free
      ? await this.client.request<FloatingIp>(
          action,
          this.url(`${path}/${encodeURIComponent(free.id)}`),
          {
            method: 'PUT',
          },
        )
      : await this.client.request<FloatingIp>(action, this.url('/floating_ips'), {
          method: 'POST',
          body: {
            name: `${FLOATING_IP_PREFIX}${randomBytes(6).toString('hex')}`,
            target: { id: nic.id },
            ...(instance.resource_group
              ? { resource_group: { id: instance.resource_group.id } }
              : {}),
          },
        });
    return body.address;
  }
}
