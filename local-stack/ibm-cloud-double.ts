// A local HTTP double of the IBM Cloud endpoints the ibmz and ibmp adapters call (docs/architecture.md,
// "Testing against real components": IBM VPC and Power VS have no emulator). Only those endpoints, with the request and
// response shapes of the public API docs: IAM token exchange; VPC instances, vpcs, subnets, keys
// and floating IPs; Power VS pvm-instances and volume resize. A request missing a required field
// gets a 400 in that API's error format. Tests steer it: boot delay (Infinity hangs), failed
// boots, throttling, 5xx, and a log of every request. `onRunning` picks a booted instance's
// address, so a test can make it a real SSH host; a floating IP bound to it takes that address.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DoubleInstance {
  api: 'vpc' | 'power';
  id: string;
  name: string;
  /** VPC: pending/running/failed; Power VS: BUILD/ACTIVE/ERROR; `deleted` once gone. */
  status: string;
  address?: string;
  /** The request body that created it. */
  request: unknown;
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: { authorization?: string; crn?: string; contentType?: string };
  /** Parsed JSON, or the form fields of the IAM request. */
  body: unknown;
}

export interface IbmCloudDoubleOptions {
  apiKeys?: string[];
  tokenTtlSeconds?: number;
  /** Time from create to running; Infinity makes boots hang. */
  bootDelayMs?: number;
  /** Largest page the VPC lists return, whatever `limit` asks (to exercise pagination). */
  maxPageSize?: number;
  onRunning?: (instance: DoubleInstance) => Promise<string | undefined>;
  /** Called for each request as it arrives, before it is answered. */
  onRequest?: (request: LoggedRequest) => void;
  /** Called when an instance is deleted through the API. */
  onDeleted?: (instance: DoubleInstance) => void;
}

export interface IbmCloudDouble {
  readonly url: string;
  readonly iamUrl: string;
  readonly vpcUrl: string;
  readonly powerUrl: string;
  /** Seeded VPC resources, by the names a host-config gives. */
  readonly vpc: typeof VPC;
  /** Seeded Power VS workspace (the multi-platform-controller docs' example CRN and network). */
  readonly power: typeof POWER;
  readonly requests: LoggedRequest[];
  bootDelayMs: number;
  /** The next n API (non-IAM) requests get 429 with Retry-After. */
  throttle(n: number): void;
  /** The next n API requests get this server error. */
  serverErrors(n: number, status?: number): void;
  /** The next n instances created fail at the end of their boot instead of running. */
  failBoots(n: number): void;
  failInstance(id: string): void;
  instances(): DoubleInstance[];
  /** Creates an instance directly, as another tool would (not logged). */
  seedInstance(api: 'vpc' | 'power', name: string): DoubleInstance;
  stop(): Promise<void>;
}

export const VPC = {
  zone: 'us-east-2',
  vpc: 'us-east-default-vpc',
  subnet: 'us-east-2-default-subnet',
  key: 'hostflow-key',
  image: 'r014-s390x-image',
  profile: 'bz2-1x4',
};
const WORKSPACE = '8c9ef568-16a5-4aa2-bfd5-946349c9aeac';
export const POWER = {
  crn: `crn:v1:bluemix:public:power-iaas:dal10:a/934e118c399b4a28a70afdf2210d708f:${WORKSPACE}::`,
  cloudInstanceId: WORKSPACE,
  image: 'ppc64le-image-0001',
  network: 'dff71085-73da-49f5-9bf2-5ea60c66c99b',
  key: 'hostflow-key',
};
const RG = { id: 'rg-hostflow' };
const VPC_REF = { id: 'r014-vpc-0001', name: VPC.vpc, resource_group: RG };
const SUBNET_REF = { id: '0757-subnet-0001', name: VPC.subnet, vpc: { id: VPC_REF.id } };
const KEY_REF = { id: 'r014-key-0001', name: VPC.key, type: 'rsa' };
const PROFILES = ['bz2-1x4', 'bz2-2x8', 'bz2-4x16'];
const SYSTEMS = ['s922', 'e980', 'e1050', 'e1080', 's1022'];
const VPC_NAME = /^-?([a-z]|[a-z][-a-z0-9]*[a-z0-9])$/;
const TAG = /^[A-Za-z0-9 _.:-]{1,128}$/;

type Reply = [number, unknown, Record<string, string>?];
type Check = [path: string, valid: (value: unknown) => boolean, status: number, message: string];
interface Nic {
  id: string;
  primary_ip: { address: string };
}
interface VpcRecord extends Record<string, unknown> {
  id: string;
  name: string;
  status: string;
  primary_network_interface: Nic;
}
interface PvmRecord extends Record<string, unknown> {
  pvmInstanceID: string;
  serverName: string;
  status: string;
  diskSize: number;
  volumeIDs: string[];
  networks: { ipAddress: string }[];
}
interface FloatingIp extends Record<string, unknown> {
  id: string;
  address: string;
  target?: { id: string; resource_type: string };
}

/** `at(body, 'a.b')`: a field of untrusted JSON, or undefined. */
const at = (value: unknown, path: string): unknown =>
  path
    .split('.')
    .reduce<unknown>(
      (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      value,
    );
const optional = (valid: (value: unknown) => boolean) => (value: unknown) =>
  value === undefined || valid(value);
const listOf = (valid: (item: unknown) => boolean) =>
  optional((v) => Array.isArray(v) && v.every(valid));

// Create requests (VPC: InstancePrototype; Power VS: PVMInstanceCreate), checked in order.
const VPC_REQUIRED = ['profile', 'zone', 'image', 'primary_network_interface'];
const VPC_CHECKS: Check[] = [
  [
    'name',
    optional((v) => typeof v === 'string' && v.length <= 63 && VPC_NAME.test(v)),
    400,
    'Invalid instance name',
  ],
  ['profile.name', (v) => PROFILES.includes(v as string), 404, 'Instance profile not found'],
  ['zone.name', (v) => v === VPC.zone, 404, 'Zone not found'],
  ['image.id', (v) => v === VPC.image, 404, 'Image not found'],
  ['vpc.id', optional((v) => v === VPC_REF.id), 404, 'VPC not found'],
  ['primary_network_interface.subnet.id', (v) => v === SUBNET_REF.id, 404, 'Subnet not found'],
  ['keys', listOf((k) => at(k, 'id') === KEY_REF.id), 404, 'Key not found'],
  [
    'boot_volume_attachment.volume.capacity',
    optional((v) => Number.isInteger(v) && (v as number) >= 100 && (v as number) <= 250),
    400,
    'Boot volume capacity must be from 100 to 250 GB',
  ],
  [
    'boot_volume_attachment.volume.user_tags',
    listOf((t) => typeof t === 'string' && TAG.test(t)),
    400,
    'Invalid user tag',
  ],
];
const POWER_REQUIRED = ['serverName', 'imageID', 'processors', 'procType', 'memory'];
const POWER_CHECKS: Check[] = [
  [
    'serverName',
    (v) => typeof v === 'string' && v.length <= 47,
    400,
    'serverName: at most 47 characters',
  ],
  [
    'procType',
    (v) => ['dedicated', 'shared', 'capped'].includes(v as string),
    400,
    'procType: one of dedicated, shared, capped',
  ],
  ['processors', (v) => typeof v === 'number' && v >= 0.25, 400, 'processors: at least 0.25'],
  ['memory', (v) => typeof v === 'number' && v >= 2, 400, 'memory: at least 2 GB'],
  ['imageID', (v) => v === POWER.image, 404, 'image does not exist in this cloud instance'],
  ['networks', listOf((n) => at(n, 'networkID') === POWER.network), 404, 'network not found'],
  ['keyPairName', optional((v) => v === POWER.key), 404, 'ssh key pair not found'],
  [
    'sysType',
    optional((v) => SYSTEMS.includes(v as string)),
    400,
    'sysType is not supported in this zone',
  ],
  [
    'userData',
    optional((v) => typeof v === 'string' && Buffer.from(v, 'base64').toString('base64') === v),
    400,
    'userData must be base64 encoded',
  ],
  ['userTags', listOf((t) => typeof t === 'string'), 400, 'userTags must be a list of strings'],
];

const vpcError = (status: number, code: string, message: string, target?: string): Reply => {
  const error = { code, message, ...(target ? { target: { name: target, type: 'field' } } : {}) };
  return [status, { errors: [error], status_code: status, trace: randomUUID() }];
};
const code = (status: number, message: string) =>
  message.startsWith('Missing') ? 'missing_field' : status === 404 ? 'not_found' : 'invalid_value';
const powerError = (status: number, description: string): Reply => [
  status,
  { description, error: status === 404 ? 'not found' : 'bad request' },
];

export async function startIbmCloudDouble(
  options: IbmCloudDoubleOptions = {},
): Promise<IbmCloudDouble> {
  const apiKeys = new Set(options.apiKeys ?? ['hostflow-test-api-key']);
  const tokens = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const requests: LoggedRequest[] = [];
  const faults = { throttle: 0, errors: 0, errorStatus: 500, failBoots: 0 };
  const vpcInstances = new Map<string, VpcRecord>();
  const pvms = new Map<string, PvmRecord>();
  const floatingIps = new Map<string, FloatingIp>();
  const boundTo = new Map<string, string>(); // floating IP id -> instance id
  const views = new Map<string, DoubleInstance>();
  let counter = 0;
  const nextAddress = (prefix: string) => `${prefix}.${(++counter % 250) + 2}`;
  const now = () => new Date().toISOString();

  function page(
    items: unknown[],
    field: string,
    path: string,
    query: Record<string, string>,
  ): Reply {
    const limit = Math.min(Number(query.limit ?? 50) || 50, options.maxPageSize ?? 100);
    const start = Number(query.start ?? 0);
    const href = (from?: number) => ({
      href: `${url}/v1${path}?limit=${limit}${from ? `&start=${from}` : ''}`,
    });
    const next = start + limit < items.length ? { next: href(start + limit) } : {};
    return [
      200,
      {
        [field]: items.slice(start, start + limit),
        limit,
        total_count: items.length,
        first: href(),
        ...next,
      },
    ];
  }

  function track(view: DoubleInstance, running: () => void, failed: () => void) {
    views.set(view.id, view);
    const fails = faults.failBoots > 0;
    if (fails) faults.failBoots--;
    if (!Number.isFinite(api.bootDelayMs)) return;
    const timer = setTimeout(async () => {
      timers.delete(timer);
      if (view.status === 'deleted') return;
      if (fails) return failed();
      view.address = await options.onRunning?.(view);
      running();
    }, api.bootDelayMs);
    timer.unref();
    timers.add(timer);
  }

  function validate(
    body: unknown,
    required: string[],
    checks: Check[],
    error: (c: Check) => Reply,
  ) {
    const missing = required.find((field) => at(body, field) === undefined);
    if (missing) return error([missing, () => false, 400, `Missing required field: ${missing}`]);
    const failed = checks.find(([path, valid]) => !valid(at(body, path)));
    return failed && error(failed);
  }

  function vpcInstance(name: string, request: unknown): VpcRecord {
    const id = `0757_${randomUUID()}`;
    const nic = {
      id: `0757-${randomUUID()}`,
      name: 'eth0',
      primary_ip: { address: '0.0.0.0' },
      subnet: SUBNET_REF,
    };
    const instance: VpcRecord = {
      id,
      href: `${url}/v1/instances/${id}`,
      name,
      status: 'pending',
      created_at: now(),
      resource_group: RG,
      vpc: { id: VPC_REF.id, name: VPC.vpc },
      zone: { name: VPC.zone },
      profile: { name: at(request, 'profile.name') ?? VPC.profile },
      primary_network_interface: nic,
      network_interfaces: [nic],
    };
    vpcInstances.set(id, instance);
    const view: DoubleInstance = { api: 'vpc', id, name, status: 'pending', request };
    track(
      view,
      () => {
        nic.primary_ip.address = view.address ??= nextAddress('10.241.64');
        instance.status = view.status = 'running';
      },
      () => (instance.status = view.status = 'failed'),
    );
    return instance;
  }

  function pvm(request: unknown): PvmRecord {
    const id = randomUUID();
    const network = {
      networkID: POWER.network,
      networkName: 'hostflow-net',
      ipAddress: '',
      type: 'fixed',
    };
    const field = (name: string) => at(request, name);
    const instance: PvmRecord = {
      pvmInstanceID: id,
      serverName: String(field('serverName')),
      imageID: field('imageID'),
      processors: field('processors'),
      procType: field('procType'),
      memory: field('memory'),
      sysType: field('sysType') ?? 's922',
      status: 'BUILD',
      health: { status: 'PENDING' },
      creationDate: now(),
      diskSize: 100,
      volumeIDs: [randomUUID()],
      networks: [network],
      userTags: field('userTags') ?? [],
      href: `${url}/pcloud/v1/cloud-instances/${WORKSPACE}/pvm-instances/${id}`,
    };
    pvms.set(id, instance);
    const view: DoubleInstance = {
      api: 'power',
      id,
      name: instance.serverName,
      status: 'BUILD',
      request,
    };
    track(
      view,
      () => {
        network.ipAddress = view.address ??= nextAddress('192.168.100');
        Object.assign(instance, { status: (view.status = 'ACTIVE'), health: { status: 'OK' } });
      },
      () =>
        Object.assign(instance, {
          status: (view.status = 'ERROR'),
          health: { status: 'CRITICAL' },
        }),
    );
    return instance;
  }

  function bind(fip: FloatingIp, instance: VpcRecord) {
    const address = views.get(instance.id)?.address;
    if (address) fip.address = address;
    fip.target = { id: instance.primary_network_interface.id, resource_type: 'network_interface' };
    boundTo.set(fip.id, instance.id);
  }

  function vpcRoute(
    method: string,
    path: string,
    query: Record<string, string>,
    body: unknown,
  ): Reply {
    const [, collection, id, sub, nicId, , fipId] = path.split('/');
    if (!query.version || query.generation !== '2') {
      return vpcError(
        400,
        'bad_request',
        'version and generation=2 query parameters are required',
        'version',
      );
    }
    if (method === 'GET' && !id) {
      const lists: Record<string, unknown[]> = {
        vpcs: [VPC_REF],
        subnets: [SUBNET_REF],
        keys: [KEY_REF],
        floating_ips: [...floatingIps.values()],
        instances: [...vpcInstances.values()].filter(
          (i) =>
            (!query.name || i.name === query.name) &&
            (query['vpc.id'] ?? VPC_REF.id) === VPC_REF.id,
        ),
      };
      if (lists[collection]) return page(lists[collection], collection, path, query);
    }
    if (collection === 'instances' && method === 'POST' && !id) {
      const invalid = validate(body, VPC_REQUIRED, VPC_CHECKS, ([target, , status, message]) =>
        vpcError(status, code(status, message), message, target),
      );
      if (invalid) return invalid;
      const name =
        (at(body, 'name') as string | undefined) ?? `instance-${randomBytes(4).toString('hex')}`;
      if ([...vpcInstances.values()].some((i) => i.name === name)) {
        return vpcError(
          400,
          'validation_unique_failed',
          `Instance name ${name} is already in use`,
          'name',
        );
      }
      return [201, vpcInstance(name, body)];
    }
    if (collection === 'floating_ips' && method === 'POST' && !id) {
      const targetId = at(body, 'target.id');
      const target = [...vpcInstances.values()].find(
        (i) => i.primary_network_interface.id === targetId,
      );
      if (!target && at(body, 'zone.name') !== VPC.zone) {
        return vpcError(400, 'invalid_value', 'A known target or zone is required', 'target.id');
      }
      const name = at(body, 'name') ?? `fip-${counter}`;
      const fip: FloatingIp = {
        id: `r014-${randomUUID()}`,
        name,
        address: nextAddress('169.63.0'),
        status: 'available',
        zone: { name: VPC.zone },
        resource_group: RG,
      };
      floatingIps.set(fip.id, fip);
      if (target) bind(fip, target);
      return [201, fip];
    }
    const instance = collection === 'instances' ? vpcInstances.get(id ?? '') : undefined;
    if (!instance) return vpcError(404, 'not_found', `Not found: ${method} ${path}`, 'id');
    if (!sub && method === 'GET') return [200, instance];
    if (!sub && method === 'DELETE') {
      vpcInstances.delete(id);
      views.get(id)!.status = 'deleted';
      options.onDeleted?.(views.get(id)!);
      for (const fip of floatingIps.values()) if (boundTo.get(fip.id) === id) delete fip.target;
      return [204, undefined];
    }
    const nic = instance.primary_network_interface;
    if (sub !== 'network_interfaces' || nicId !== nic.id)
      return vpcError(404, 'not_found', 'Network interface not found');
    if (method === 'GET' && !fipId) {
      return [
        200,
        { floating_ips: [...floatingIps.values()].filter((f) => f.target?.id === nic.id) },
      ];
    }
    const fip = floatingIps.get(fipId ?? '');
    if (method !== 'PUT' || !fip) return vpcError(404, 'not_found', 'Floating IP not found');
    if (fip.target) return vpcError(409, 'conflict', 'Floating IP is already bound');
    bind(fip, instance);
    return [201, fip];
  }

  function powerRoute(method: string, path: string, crn: unknown, body: unknown): Reply {
    const [, , , , workspace, collection, id] = path.split('/');
    if (workspace !== WORKSPACE) return powerError(404, `cloud instance ${workspace} not found`);
    if (crn !== POWER.crn)
      return powerError(400, 'the CRN header is missing or is not the workspace CRN');
    if (collection === 'volumes' && method === 'PUT') {
      const instance = [...pvms.values()].find((i) => i.volumeIDs.includes(id));
      const size = at(body, 'size');
      if (!instance) return powerError(404, `volume ${id} not found`);
      if (typeof size !== 'number' || size <= instance.diskSize)
        return powerError(400, 'a volume can only grow');
      instance.diskSize = size;
      return [200, { volumeID: id, size, state: 'in-use', bootable: true }];
    }
    if (collection !== 'pvm-instances') return powerError(404, `no route for ${method} ${path}`);
    if (!id && method === 'GET') {
      // PVMInstanceReference, the list item, has no userTags.
      return [200, { pvmInstances: [...pvms.values()].map(({ userTags: _tags, ...ref }) => ref) }];
    }
    if (!id && method === 'POST') {
      const invalid = validate(body, POWER_REQUIRED, POWER_CHECKS, ([, , status, message]) =>
        powerError(status, message),
      );
      return invalid ?? [201, [pvm(body)]];
    }
    const instance = pvms.get(id ?? '');
    if (!instance) return powerError(404, `pvm instance ${id} not found`);
    if (method === 'GET') return [200, instance];
    if (method !== 'DELETE') return powerError(404, `no route for ${method} ${path}`);
    pvms.delete(id);
    views.get(id)!.status = 'deleted';
    options.onDeleted?.(views.get(id)!);
    return [200, {}];
  }

  function iam(body: unknown): Reply {
    const fail = (errorCode: string, errorMessage: string): Reply => [
      400,
      { errorCode, errorMessage, context: {} },
    ];
    const apikey = at(body, 'apikey');
    if (at(body, 'grant_type') !== 'urn:ibm:params:oauth:grant-type:apikey' || !apikey) {
      return fail('BXNIM0109E', 'Property missing or empty');
    }
    if (!apiKeys.has(apikey as string))
      return fail('BXNIM0415E', 'Provided API key could not be found.');
    const token = `double-${randomBytes(24).toString('base64url')}`;
    const ttl = options.tokenTtlSeconds ?? 3600;
    tokens.set(token, Date.now() + ttl * 1000);
    const expiration = Math.floor(Date.now() / 1000) + ttl;
    return [
      200,
      {
        access_token: token,
        refresh_token: 'not_supported',
        token_type: 'Bearer',
        expires_in: ttl,
        expiration,
      },
    ];
  }

  function route(
    req: IncomingMessage,
    path: string,
    query: Record<string, string>,
    body: unknown,
  ): Reply {
    if (path === '/identity/token' && req.method === 'POST') return iam(body);
    const isPower = path.startsWith('/pcloud/v1/cloud-instances/');
    if (!isPower && !path.startsWith('/v1/'))
      return [404, { errors: [{ code: 'not_found', message: path }] }];
    const error = (status: number, message: string) =>
      isPower
        ? powerError(status, message)
        : vpcError(status, status === 429 ? 'rate_limited' : 'internal_error', message);
    if (faults.throttle > 0) {
      faults.throttle--;
      const [status, payload] = error(429, 'Rate limit exceeded');
      return [status, payload, { 'retry-after': '1' }];
    }
    if (faults.errors > 0) {
      faults.errors--;
      return error(faults.errorStatus, 'The service is temporarily unavailable');
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !((tokens.get(token) ?? 0) > Date.now()))
      return error(401, 'The token is missing, invalid or expired');
    const method = req.method ?? '';
    return isPower
      ? powerRoute(method, path, req.headers.crn, body)
      : vpcRoute(method, path.slice(3), query, body);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { pathname: path, searchParams } = new URL(req.url ?? '/', 'http://double');
      const text = Buffer.concat(chunks).toString('utf8');
      const contentType = req.headers['content-type'] ?? '';
      const query = Object.fromEntries(searchParams);
      let body: unknown;
      let reply: Reply;
      try {
        body = !text
          ? undefined
          : contentType.includes('form-urlencoded')
            ? Object.fromEntries(new URLSearchParams(text))
            : JSON.parse(text);
        reply = route(req, path, query, body);
      } catch {
        reply = vpcError(400, 'bad_request', 'The request body is not valid JSON');
      }
      const headers = {
        authorization: req.headers.authorization,
        crn: req.headers.crn as string | undefined,
        contentType,
      };
      const logged = { method: req.method ?? '', path, query, headers, body };
      requests.push(logged);
      options.onRequest?.(logged);
      const [status, payload, extra] = reply;
      res.writeHead(status, {
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        ...extra,
      });
      res.end(payload === undefined ? undefined : JSON.stringify(payload));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const api: IbmCloudDouble = {
    url,
    iamUrl: `${url}/identity/token`,
    vpcUrl: `${url}/v1`,
    powerUrl: url,
    vpc: VPC,
    power: POWER,
    requests,
    bootDelayMs: options.bootDelayMs ?? 200,
    throttle: (n) => void (faults.throttle = n),
    serverErrors: (n, status = 500) =>
      void Object.assign(faults, { errors: n, errorStatus: status }),
    failBoots: (n) => void (faults.failBoots = n),
    failInstance(id) {
      const view = views.get(id);
      const vpc = vpcInstances.get(id);
      const power = pvms.get(id);
      if (vpc) vpc.status = view!.status = 'failed';
      if (power)
        Object.assign(power, { status: (view!.status = 'ERROR'), health: { status: 'CRITICAL' } });
    },
    instances: () => [...views.values()].filter((v) => v.status !== 'deleted'),
    seedInstance(which, name) {
      const request = { serverName: name, imageID: POWER.image, procType: 'shared', memory: 2 };
      const id = which === 'vpc' ? vpcInstance(name, {}).id : pvm(request).pvmInstanceID;
      return views.get(id)!;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return api;
}
