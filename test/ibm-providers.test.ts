// The ibmz (VPC) and ibmp (Power VS) providers against the local IBM Cloud double: the requests
// they send are the documented ones, and their answers and failures follow the CloudProvider
// contract (idempotent launch and terminate, owner-scoped lists, classified errors).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ApplicationFailure } from '@temporalio/common';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IamTokenSource } from '../activities/cloud/ibm-iam.js';
import { IbmpProvider } from '../activities/cloud/ibmp.js';
import { IbmzProvider } from '../activities/cloud/ibmz.js';
import {
  OWNER_TAG_KEY,
  TASKRUN_TAG_KEY,
  type CloudProvider,
  type Instance,
  type LaunchRequest,
} from '../activities/cloud/provider.js';
import { parseIbmpConfig, parseIbmzConfig } from '../platform-config/ibm-config.js';
import {
  startIbmCloudDouble,
  type IbmCloudDouble,
  type LoggedRequest,
} from '../local-stack/ibm-cloud-double.js';
import { waitFor } from '../local-stack/process.js';

const API_KEY = 'hostflow-test-api-key';
const WRONG_KEY = 'wrong-key-7c1d9e';
const USER_DATA = '#cloud-config\nruncmd:\n  - echo hello\n';
const failures: ApplicationFailure[] = [];
let double: IbmCloudDouble;
let hookAddress: string | undefined;

beforeAll(async () => {
  double = await startIbmCloudDouble({
    apiKeys: [API_KEY],
    bootDelayMs: 100,
    maxPageSize: 2,
    onRunning: async () => hookAddress,
  });
});
afterAll(() => double?.stop());
beforeEach(() => {
  double.bootDelayMs = 100;
  hookAddress = undefined;
});

interface Harness {
  kind: 'ibmz' | 'ibmp';
  prefix: string;
  imageKey: string;
  make(
    overrides?: Record<string, string>,
    options?: { apiKey?: string; tokens?: IamTokenSource; on?: IbmCloudDouble },
  ): CloudProvider;
  creates(request: LoggedRequest): boolean;
}

function config<T>(
  parser: (
    r: (k: string) => string | undefined,
    p: (k: string, r: string) => void,
  ) => T | undefined,
  data: Record<string, string>,
): T {
  const problems: string[] = [];
  const parsed = parser(
    (key) => data[key],
    (key, reason) => problems.push(`${key}: ${reason}`),
  );
  if (!parsed) throw new Error(problems.join('\n'));
  return parsed;
}

const ibmz: Harness = {
  kind: 'ibmz',
  prefix: 'dynamic.linux-s390x.',
  imageKey: 'image-id',
  make: (overrides = {}, { apiKey = API_KEY, tokens, on = double } = {}) =>
    new IbmzProvider({
      config: config(parseIbmzConfig, {
        region: on.vpc.zone,
        key: on.vpc.key,
        subnet: on.vpc.subnet,
        vpc: on.vpc.vpc,
        'image-id': on.vpc.image,
        secret: 'ibm-api-key',
        url: on.vpcUrl,
        profile: on.vpc.profile,
        disk: '120',
        ...overrides,
      }),
      apiKey,
      keyPrefix: 'dynamic.linux-s390x.',
      iamUrl: on.iamUrl,
      timeoutMs: 5000,
      ...(tokens ? { tokens } : {}),
    }),
  creates: (r) => r.method === 'POST' && r.path === '/v1/instances',
};

const ibmp: Harness = {
  kind: 'ibmp',
  prefix: 'dynamic.linux-ppc64le.',
  imageKey: 'image',
  make: (overrides = {}, { apiKey = API_KEY, tokens, on = double } = {}) =>
    new IbmpProvider({
      config: config(parseIbmpConfig, {
        key: on.power.key,
        image: on.power.image,
        secret: 'ibm-api-key',
        url: on.powerUrl,
        crn: on.power.crn,
        network: on.power.network,
        system: 'e980',
        cores: '0.5',
        memory: '4',
        'user-data': USER_DATA,
        ...overrides,
      }),
      apiKey,
      keyPrefix: 'dynamic.linux-ppc64le.',
      iamUrl: on.iamUrl,
      timeoutMs: 5000,
      ...(tokens ? { tokens } : {}),
    }),
  creates: (r) => r.method === 'POST' && r.path.endsWith('/pvm-instances'),
};

let serial = 0;
function request(owner: string, key = `taskrun/team-a/build-${++serial}/uid`): LaunchRequest {
  return {
    name: 'team-a:build',
    owner: { key: OWNER_TAG_KEY, value: owner },
    tags: { [TASKRUN_TAG_KEY]: 'team-a:build-1' },
    idempotencyKey: key,
  };
}

async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  failures.push(err as ApplicationFailure);
  return err as ApplicationFailure;
}

function logSince<T>(action: () => Promise<T>): Promise<{ result: T; log: LoggedRequest[] }> {
  const mark = double.requests.length;
  return action().then((result) => ({ result, log: double.requests.slice(mark) }));
}

const until = (provider: CloudProvider, id: string, state: Instance['state']) =>
  waitFor(
    `instance ${id} ${state}`,
    async () => {
      const instance = await provider.describe(id);
      return instance?.state === state ? instance : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );

describe('ibmz launch request (IBM VPC)', () => {
  it('exchanges the API key for a token, then sends the documented instance prototype', async () => {
    const { result, log } = await logSince(() => ibmz.make().launch(request('zshape')));
    const iam = log.filter((r) => r.path === '/identity/token');
    expect(iam).toHaveLength(1);
    expect(iam[0].headers.contentType).toBe('application/x-www-form-urlencoded');
    expect(iam[0].body).toEqual({
      grant_type: 'urn:ibm:params:oauth:grant-type:apikey',
      apikey: API_KEY,
    });
    const api = log.filter((r) => r.path !== '/identity/token');
    expect(log.indexOf(iam[0])).toBe(0);
    expect(new Set(api.map((r) => r.headers.authorization)).size).toBe(1);
    expect(api[0].headers.authorization).toMatch(/^Bearer double-/);
    const create = api.find(ibmz.creates)!;
    expect(create.query).toEqual({
      version: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      generation: '2',
    });
    const name = (create.body as { name: string }).name;
    expect(name).toMatch(/^zshape-[0-9a-f]{16}$/);
    expect(create.body).toEqual({
      name,
      zone: { name: 'us-east-2' },
      resource_group: { id: 'rg-hostflow' },
      vpc: { id: 'r014-vpc-0001' },
      profile: { name: 'bz2-1x4' },
      image: { id: double.vpc.image },
      keys: [{ id: 'r014-key-0001' }],
      primary_network_interface: { name: 'eth0', subnet: { id: '0757-subnet-0001' } },
      boot_volume_attachment: {
        delete_volume_on_instance_delete: true,
        volume: {
          name: `${name}-boot`,
          capacity: 120,
          profile: { name: 'general-purpose' },
          user_tags: ['team-a:build-1'],
        },
      },
      availability_policy: { host_failure: 'stop' },
    });
    expect(result).toMatchObject({
      state: 'pending',
      tags: { [OWNER_TAG_KEY]: 'zshape', Name: name },
    });
  });

  it('binds a floating IP for the address, and reuses an unbound one before reserving another', async () => {
    const provider = ibmz.make();
    hookAddress = '127.0.0.77';
    const first = await provider.launch(request('zfip'));
    const { result: running, log } = await logSince(() => until(provider, first.id, 'running'));
    expect(running.address).toBe('127.0.0.77');
    const reserve = log.find((r) => r.method === 'POST' && r.path === '/v1/floating_ips')!;
    expect(reserve.body).toEqual({
      name: expect.stringMatching(/^hostflow-fip-[0-9a-f]{12}$/),
      target: { id: expect.any(String) },
      resource_group: { id: 'rg-hostflow' },
    });
    await provider.terminate(first.id);
    hookAddress = '127.0.0.78';
    const second = await provider.launch(request('zfip'));
    const { result: again, log: later } = await logSince(() =>
      until(provider, second.id, 'running'),
    );
    expect(again.address).toBe('127.0.0.78');
    expect(later.some((r) => r.method === 'POST' && r.path === '/v1/floating_ips')).toBe(false);
    expect(later.some((r) => r.method === 'PUT' && r.path.includes('/floating_ips/'))).toBe(true);
    await provider.terminate(second.id);
  });

  it('uses the primary private address with private-ip', async () => {
    const provider = ibmz.make({ 'private-ip': 'true' });
    hookAddress = '127.0.0.79';
    const launched = await provider.launch(request('zprivate'));
    expect((await until(provider, launched.id, 'running')).address).toBe('127.0.0.79');
    await provider.terminate(launched.id);
  });

  it('names the key to fix when a VPC, subnet or key name is not found', async () => {
    const err = await failure(ibmz.make({ subnet: 'no-such-subnet' }).launch(request('zbad')));
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toMatch(/dynamic\.linux-s390x\.subnet: no subnet named "no-such-subnet"/);
  });
});

describe('ibmp launch request (Power VS)', () => {
  it('sends the documented PVMInstanceCreate with the workspace CRN header and a bearer token', async () => {
    const { result, log } = await logSince(() => ibmp.make().launch(request('pshape')));
    expect(log[0]).toMatchObject({ path: '/identity/token', body: { apikey: API_KEY } });
    const create = log.find(ibmp.creates)!;
    expect(create.path).toBe(
      `/pcloud/v1/cloud-instances/${double.power.cloudInstanceId}/pvm-instances`,
    );
    expect(create.headers.crn).toBe(double.power.crn);
    expect(create.headers.authorization).toMatch(/^Bearer double-/);
    const serverName = (create.body as { serverName: string }).serverName;
    expect(serverName).toMatch(/^pshape-[0-9a-f]{16}$/);
    expect(create.body).toEqual({
      serverName,
      imageID: double.power.image,
      processors: 0.5,
      procType: 'shared',
      memory: 4,
      networks: [{ networkID: double.power.network }],
      keyPairName: double.power.key,
      sysType: 'e980',
      userData: Buffer.from(USER_DATA).toString('base64'),
      userTags: ['team-a:build-1'],
    });
    expect(
      log
        .filter((r) => r.path !== '/identity/token')
        .every((r) => r.headers.crn === double.power.crn),
    ).toBe(true);
    expect(result).toMatchObject({ state: 'pending', tags: { [OWNER_TAG_KEY]: 'pshape' } });
  });

  it('grows the boot volume to disk before the instance reads as running', async () => {
    const provider = ibmp.make({ disk: '120' });
    hookAddress = '127.0.0.80';
    const launched = await provider.launch(request('pdisk'));
    const { result, log } = await logSince(() => until(provider, launched.id, 'running'));
    expect(result.address).toBe('127.0.0.80');
    const resize = log.filter((r) => r.method === 'PUT');
    expect(resize).toHaveLength(1);
    expect(resize[0].path).toMatch(
      new RegExp(`^/pcloud/v1/cloud-instances/${double.power.cloudInstanceId}/volumes/`),
    );
    expect(resize[0].body).toEqual({ size: 120 });
    await provider.terminate(launched.id);
  });
});

describe.each([ibmz, ibmp])('$kind provider contract', (h) => {
  it('launches once per idempotency key', async () => {
    const provider = h.make();
    const req = request(`${h.kind}-idem`);
    const {
      result: [a, b],
      log,
    } = await logSince(async () => [await provider.launch(req), await provider.launch(req)]);
    expect(b.id).toBe(a.id);
    expect(log.filter(h.creates)).toHaveLength(1);
    expect(double.instances().filter((i) => i.id === a.id)).toHaveLength(1);
  });

  it('describes pending, then running with an address', async () => {
    const provider = h.make();
    double.bootDelayMs = 300;
    const launched = await provider.launch(request(`${h.kind}-boot`));
    expect((await provider.describe(launched.id))?.state).toBe('pending');
    const running = await until(provider, launched.id, 'running');
    expect(running.address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(running.launchedAt).toEqual(expect.any(String));
  });

  it('lists and counts only the instances carrying its owner tag, across pages', async () => {
    const provider = h.make();
    const owner = `${h.kind}-list`;
    const mine = await Promise.all([1, 2, 3].map(() => provider.launch(request(owner))));
    await provider.launch(request(`${owner}x`));
    // another install whose tag starts with ours and a dash: its VMs are not ours either
    await provider.launch(request(`${owner}-b`));
    double.seedInstance(h.kind === 'ibmz' ? 'vpc' : 'power', `someone-else-${h.kind}`);
    const { result: listed, log } = await logSince(() =>
      provider.listByOwner({ key: OWNER_TAG_KEY, value: owner }),
    );
    expect(listed.map((i) => i.id).sort()).toEqual(mine.map((i) => i.id).sort());
    expect(listed.every((i) => i.tags[OWNER_TAG_KEY] === owner)).toBe(true);
    expect(await provider.countByOwner({ key: OWNER_TAG_KEY, value: owner })).toBe(3);
    if (h.kind === 'ibmz') expect(log.some((r) => r.query.start)).toBe(true);
  });

  it('terminates idempotently; a gone instance describes as undefined', async () => {
    const provider = h.make();
    const launched = await provider.launch(request(`${h.kind}-term`));
    const { log } = await logSince(async () => {
      await provider.terminate(launched.id);
      await provider.terminate(launched.id);
    });
    const deletes = log.filter((r) => r.method === 'DELETE');
    expect(deletes).toHaveLength(2);
    if (h.kind === 'ibmp') expect(deletes[0].query).toEqual({ delete_data_volumes: 'true' });
    expect(await provider.describe(launched.id)).toBeUndefined();
    expect(await provider.describe('00000000-0000-0000-0000-000000000000')).toBeUndefined();
    expect(await provider.countByOwner({ key: OWNER_TAG_KEY, value: `${h.kind}-term` })).toBe(0);
  });

  it('reports a failed boot, and an instance failed later, as failed', async () => {
    const provider = h.make();
    double.failBoots(1);
    const broken = await provider.launch(request(`${h.kind}-fail`));
    await until(provider, broken.id, 'failed');
    const healthy = await provider.launch(request(`${h.kind}-fail`));
    await until(provider, healthy.id, 'running');
    double.failInstance(healthy.id);
    expect((await provider.describe(healthy.id))?.state).toBe('failed');
  });

  it('throttling and server errors are retryable', async () => {
    const provider = h.make();
    const launched = await provider.launch(request(`${h.kind}-retry`));
    double.throttle(1);
    const throttled = await failure(provider.describe(launched.id));
    expect(throttled).toMatchObject({ nonRetryable: false, type: 'IbmHttp429' });
    expect(throttled.nextRetryDelay).toBeDefined();
    double.serverErrors(1, 503);
    expect(await failure(provider.listByOwner({ key: OWNER_TAG_KEY, value: 'x' }))).toMatchObject({
      nonRetryable: false,
      type: 'IbmHttp503',
    });
    expect((await provider.describe(launched.id))?.id).toBe(launched.id);
  });

  it('an unknown image is non-retryable and names the key to fix', async () => {
    const err = await failure(
      h.make({ [h.imageKey]: 'missing-image' }).launch(request(`${h.kind}-img`)),
    );
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toContain(`${h.prefix}${h.imageKey}`);
  });

  it('a rejected API key is non-retryable, names the Secret and its key, and is never quoted', async () => {
    const err = await failure(h.make({}, { apiKey: WRONG_KEY }).launch(request(`${h.kind}-auth`)));
    expect(err).toMatchObject({ nonRetryable: true, type: 'IbmIamRejected' });
    expect(err.message).toContain(`Secret "ibm-api-key" (${h.prefix}secret)`);
    expect(err.message).not.toContain(WRONG_KEY);
  });

  it('a token the API refuses is exchanged once more, then non-retryable naming the Secret', async () => {
    const expiring = await startIbmCloudDouble({ apiKeys: [API_KEY], tokenTtlSeconds: 0 });
    try {
      const err = await failure(h.make({}, { on: expiring }).describe('any'));
      expect(err).toMatchObject({ nonRetryable: true, type: 'IbmHttp401' });
      expect(err.message).toContain(`Secret "ibm-api-key" (${h.prefix}secret)`);
      expect(expiring.requests.filter((r) => r.path === '/identity/token')).toHaveLength(2);
    } finally {
      await expiring.stop();
    }
  });

  it('caches the IAM token, and exchanges again once 80% of its lifetime has passed', async () => {
    let clock = 1_000_000;
    const tokens = new IamTokenSource({
      apiKey: API_KEY,
      secretName: 'ibm-api-key',
      url: double.iamUrl,
      now: () => clock,
    });
    const provider = h.make({}, { tokens });
    const exchanges = async (action: () => Promise<unknown>) =>
      (await logSince(action)).log.filter((r) => r.path === '/identity/token').length;
    expect(await exchanges(() => provider.describe('a'))).toBe(1);
    expect(
      await exchanges(() =>
        Promise.all([
          provider.describe('b'),
          provider.countByOwner({ key: OWNER_TAG_KEY, value: 'c' }),
        ]),
      ),
    ).toBe(0);
    clock += 3600_000 * 0.79;
    expect(await exchanges(() => provider.describe('d'))).toBe(0);
    clock += 3600_000 * 0.02;
    expect(await exchanges(() => provider.describe('e'))).toBe(1);
  });

  it('rejects an owner tag that cannot start an instance name, naming instance-tag', async () => {
    const err = await failure(h.make().launch(request('Not_A_Name')));
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toMatch(/^instance-tag "Not_A_Name" cannot start an IBM instance name/);
  });
});

describe('the double answers malformed requests as the APIs do', () => {
  it('rejects a VPC create missing a required field, or a call without version', async () => {
    const token = await new IamTokenSource({
      apiKey: API_KEY,
      secretName: 'x',
      url: double.iamUrl,
    }).token();
    const call = (path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${double.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => [r.status, await r.json()] as const);
    const prototype = { zone: { name: 'us-east-2' }, image: { id: double.vpc.image } };
    expect(await call('/v1/instances?version=2024-11-12&generation=2', prototype)).toEqual([
      400,
      expect.objectContaining({
        errors: [
          expect.objectContaining({
            code: 'missing_field',
            target: { name: 'profile', type: 'field' },
          }),
        ],
      }),
    ]);
    expect((await call('/v1/instances?generation=2'))[0]).toBe(400);
    const workspace = `/pcloud/v1/cloud-instances/${double.power.cloudInstanceId}/pvm-instances`;
    const pvm = { serverName: 'x', imageID: double.power.image, processors: 0.25, memory: 2 };
    expect(await call(workspace, pvm, { CRN: double.power.crn })).toEqual([
      400,
      { description: 'Missing required field: procType', error: 'bad request' },
    ]);
    expect((await call(workspace, { ...pvm, procType: 'shared' }))[0]).toBe(400);
  });
});

describe('network', () => {
  it('an endpoint that does not answer in time, or refuses the connection, is retryable', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const url = `http://127.0.0.1:${port}/identity/token`;
      const tokens = new IamTokenSource({ apiKey: API_KEY, secretName: 'x', url, timeoutMs: 200 });
      const slow = await failure(tokens.token());
      expect(slow).toMatchObject({ nonRetryable: false, type: 'IbmUnavailable' });
      expect(slow.message).toMatch(/no answer from 127\.0\.0\.1:\d+ within 200 ms/);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
    const down = await failure(ibmp.make({ url: `http://127.0.0.1:${port}` }).describe('x'));
    expect(down).toMatchObject({ nonRetryable: false, type: 'IbmUnavailable' });
    expect(down.message).toMatch(/could not reach 127\.0\.0\.1:\d+: ECONNREFUSED/);
  });
});

describe('credentials', () => {
  it('no failure the tests provoked quotes the API key (or the rejected one)', () => {
    expect(failures.length).toBeGreaterThan(10);
    for (const err of failures) {
      expect(`${err.message} ${JSON.stringify(err.details ?? [])}`).not.toContain(API_KEY);
      expect(err.message).not.toContain(WRONG_KEY);
    }
  });
});
