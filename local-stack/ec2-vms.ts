// Makes moto's EC2 instances behave like VMs (docs/architecture.md, "Testing against real components"): a supervisor polls DescribeInstances
// and, a boot delay after an instance in its subnet is running, starts an SSH test host at the
// instance's private address; an instance that stops, terminates or disappears loses its host.
// The subnet lies inside the SSH hosts' bridge network (hfbr0, 10.231.0.0/16), in the upper half
// that host pools never hand out, so moto's private addresses are reachable from the machine.
// The host presents the SSH host key the instance's user data gives (cloud-init-stand-in.ts).
// Failure injection: a boot that hangs, an instance that fails (stopped), an impostor at an
// instance's address, and API throttling through a small proxy in front of moto.
import {
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeInstanceAttributeCommand,
  EC2Client,
  ModifySubnetAttributeCommand,
  StopInstancesCommand,
  paginateDescribeInstances,
} from '@aws-sdk/client-ec2';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { hostKeyFromUserData } from './cloud-init-stand-in.js';
import { addressSlot } from './netns.js';
import { startSshHostAt, type SshHost } from './ssh-hosts.js';

/** moto accepts any credentials; these are not secrets. */
/** Tries at the instance's user data before its host is given up (errors()). */
const USER_DATA_ATTEMPTS = 5;
const MOTO_CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };
/**
 * Every call to moto ends: without a request timeout the SDK waits for ever on a connection moto
 * stopped answering, and one such call in the reconcile loop would stop every later VM from
 * booting (seen as TaskRuns that wait out their whole test, late in a busy whole-suite run).
 */
export const MOTO_REQUEST_HANDLER = { connectionTimeout: 3_000, requestTimeout: 20_000 };

export interface Ec2VmNetwork {
  vpcId: string;
  subnetId: string;
}

/**
 * A VPC and a subnet without public addresses in moto, inside the bridge network: instances
 * launched into the subnet get a private address (the one AwsProvider then reports) that an SSH
 * host can take. The subnet must lie in 10.231.128.0/17 (never handed out to host pools).
 */
export async function createEc2VmNetwork(
  ec2: EC2Client,
  { vpcCidr = '10.231.0.0/16', subnetCidr = '10.231.128.0/20' } = {},
): Promise<Ec2VmNetwork> {
  const [base] = subnetCidr.split('/');
  const slot = addressSlot(base ?? '');
  if (slot === undefined || slot < 32_768) {
    throw new Error(`ec2 vms: subnet ${subnetCidr} is not inside 10.231.128.0/17`);
  }
  const vpc = (await ec2.send(new CreateVpcCommand({ CidrBlock: vpcCidr }))).Vpc;
  const subnet = (
    await ec2.send(new CreateSubnetCommand({ VpcId: vpc?.VpcId, CidrBlock: subnetCidr }))
  ).Subnet;
  if (!vpc?.VpcId || !subnet?.SubnetId) throw new Error('ec2 vms: moto created no VPC or subnet');
  await ec2.send(
    new ModifySubnetAttributeCommand({
      SubnetId: subnet.SubnetId,
      MapPublicIpOnLaunch: { Value: false },
    }),
  );
  return { vpcId: vpc.VpcId, subnetId: subnet.SubnetId };
}

export interface Ec2VmsOptions {
  /** moto's endpoint. */
  endpoint: string;
  region?: string;
  /** Hosts' state dirs go here; removed and recreated at start, removed at stop. */
  stateDir: string;
  /** From first seeing an instance running to starting its SSH host. Default 2000. */
  bootDelayMs?: number;
  /** DescribeInstances interval. Default 250. */
  pollMs?: number;
  /** Default 10.231.128.0/20; give parallel supervisors on one moto different subnets. */
  subnetCidr?: string;
  /** Default `ec2-user`, the admin user of the original's AMIs (AwsProvider.sshUser). */
  adminUser?: string;
  /** Called when an instance's SSH host answers (benchmarks time the engine from here). */
  onHostReady?: (instanceId: string, at: number) => void;
  /** Called for each EC2 call through the proxy, with its form parameters. */
  onProxiedCall?: (params: URLSearchParams, at: number) => void;
}

export interface Ec2Vms extends Ec2VmNetwork {
  /** `ec2-user` unless configured: the admin user on every VM's host. */
  adminUser: string;
  /** OpenSSH private key authorized for the admin user on every VM: put it in the ssh-secret. */
  adminPrivateKey: string;
  /** Proxy in front of moto, for providers: passes everything through unless throttling. */
  proxyEndpoint: string;
  /** Instances whose SSH host is up, by instance id. */
  hosts(): Map<string, SshHost>;
  /** Host start failures so far (e.g. an address taken by someone else), oldest first. */
  errors(): string[];
  /** That instance (or the next one first seen from now on) runs but never gets an SSH host. */
  hangBoot(instanceId: string | 'next'): void;
  /**
   * The next instance first seen from now on gets an impostor at its address: an SSH host with
   * a host key of its own, not the one its user data gives (admin login still works).
   */
  impostorNext(): void;
  /**
   * The users that logged in to an impostor's sshd (its log's `Accepted publickey for <user>`),
   * read when its host stops; undefined until then.
   */
  impostorLogins(instanceId: string): string[] | undefined;
  /** Instances made impostors so far (as each is first seen, before its host starts). */
  impostors(): string[];
  /**
   * Stops the instance in moto (StopInstances): EC2 then reports `stopped`, which AwsProvider
   * maps to InstanceState 'stopped' — a VM that is not coming up, for the allocator to
   * terminate and replace. Its SSH host, if any, stops with it.
   */
  failInstance(instanceId: string): Promise<void>;
  /**
   * The next `n` requests through the proxy get EC2's `RequestLimitExceeded` (HTTP 503) instead
   * of reaching moto. Returns the proxy endpoint.
   */
  throttle(n: number): string;
  /** Refuses every call of this EC2 action (RequestLimitExceeded) until turned off. */
  throttleAction(action: string, on: boolean): void;
  /** Stops polling, every host and the proxy. */
  stop(): Promise<void>;
}

interface Vm {
  id: string;
  address: string;
  /** When the supervisor first saw it running; reset when it stops running. */
  runningSince?: number;
  host?: SshHost;
  /** A host start in flight. */
  starting?: Promise<void>;
}

export async function startEc2Vms(opts: Ec2VmsOptions): Promise<Ec2Vms> {
  const region = opts.region ?? 'us-east-1';
  const bootDelayMs = opts.bootDelayMs ?? 2000;
  const pollMs = opts.pollMs ?? 250;
  const adminUser = opts.adminUser ?? 'ec2-user';
  const stateDir = resolve(opts.stateDir);
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });
  const ec2 = new EC2Client({
    region,
    endpoint: opts.endpoint,
    credentials: MOTO_CREDENTIALS,
    requestHandler: MOTO_REQUEST_HANDLER,
  });
  const network = await createEc2VmNetwork(ec2, { subnetCidr: opts.subnetCidr });
  const adminKey = generateEd25519KeyPair(`${adminUser}@ec2-vms`);
  const prefix = `hfec2${process.pid}`;

  const vms = new Map<string, Vm>();
  const hung = new Set<string>();
  let hangNext = 0;
  const impostors = new Set<string>();
  let impostorsNext = 0;
  const impostorLogins = new Map<string, string[]>();
  const errors: string[] = [];
  /** Hosts being stopped, by address: a reused address waits for its previous host to go. */
  const stopping = new Map<string, Promise<void>>();
  let stopped = false;

  const stopHost = (vm: Vm) => {
    const host = vm.host;
    vm.host = undefined;
    if (!host) return;
    if (impostors.has(vm.id)) {
      let log = '';
      try {
        log = readFileSync(join(stateDir, vm.id, 'sshd.log'), 'utf8');
      } catch {
        // no log: sshd never started, so no one logged in
      }
      const logins = [...log.matchAll(/Accepted publickey for (\S+)/g)].map((m) => m[1]!);
      impostorLogins.set(vm.id, logins);
    }
    const done = host
      .stop()
      .catch((err: unknown) => void errors.push(`${vm.id}: stop: ${(err as Error).message}`))
      .finally(() => {
        if (stopping.get(vm.address) === done) stopping.delete(vm.address);
      });
    stopping.set(vm.address, done);
  };

  /**
   * What cloud-init would install as the VM's host key, from the instance's user data. Asked a
   * few times: a VM whose host never starts would hang its test, on a busy moto.
   */
  const userDataHostKey = async (id: string) => {
    const ask = () =>
      ec2.send(new DescribeInstanceAttributeCommand({ InstanceId: id, Attribute: 'userData' }));
    let attribute: Awaited<ReturnType<typeof ask>> | undefined;
    for (let attempt = 1; !attribute; attempt++) {
      try {
        attribute = await ask();
      } catch (err) {
        if (attempt >= USER_DATA_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
    const encoded = attribute.UserData?.Value;
    return hostKeyFromUserData(
      encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined,
    );
  };

  const inflight = new Set<Promise<void>>();
  const startHost = (vm: Vm) => {
    const start = (async () => {
      await stopping.get(vm.address);
      const hostKey = impostors.has(vm.id) ? undefined : await userDataHostKey(vm.id);
      const host = await startSshHostAt({
        address: vm.address,
        name: `${prefix}-${vm.id}`,
        prefix,
        stateDir: join(stateDir, vm.id),
        adminUser,
        adminKey,
        ...(hostKey ? { hostKey } : {}),
      });
      vm.host = host;
      opts.onHostReady?.(vm.id, performance.now());
      // Stopped, terminated or gone while booting: the host goes at once.
      if (stopped || vms.get(vm.id) !== vm || vm.runningSince === undefined) stopHost(vm);
    })()
      .catch((err: unknown) => {
        errors.push(`${vm.id} at ${vm.address}: ${(err as Error).message}`);
        hung.add(vm.id); // not retried: the address is taken, or sshd cannot start here
      })
      .finally(() => {
        vm.starting = undefined;
        inflight.delete(start);
      });
    vm.starting = start;
    inflight.add(start);
  };

  const reconcile = async () => {
    const seen = new Map<string, { state?: string; address?: string }>();
    const pages = paginateDescribeInstances(
      { client: ec2, pageSize: 1000 },
      { Filters: [{ Name: 'subnet-id', Values: [network.subnetId] }] },
    );
    for await (const page of pages) {
      for (const r of page.Reservations ?? []) {
        for (const i of r.Instances ?? []) {
          if (i.InstanceId) {
            seen.set(i.InstanceId, { state: i.State?.Name, address: i.PrivateIpAddress });
          }
        }
      }
    }
    if (stopped) return;
    const now = Date.now();
    for (const [id, { state, address }] of seen) {
      if (state === 'terminated' || !address) continue;
      let vm = vms.get(id);
      if (!vm) {
        vms.set(id, (vm = { id, address }));
        if (hangNext > 0) {
          hangNext--;
          hung.add(id);
        }
        if (impostorsNext > 0) {
          impostorsNext--;
          impostors.add(id);
        }
      }
      if (state !== 'running') {
        vm.runningSince = undefined;
        stopHost(vm);
        continue;
      }
      vm.runningSince ??= now;
      const due = now - vm.runningSince >= bootDelayMs;
      if (due && !vm.host && !vm.starting && !hung.has(id)) startHost(vm);
    }
    for (const [id, vm] of vms) {
      const state = seen.get(id)?.state;
      if (state === undefined || state === 'terminated') {
        vm.runningSince = undefined;
        stopHost(vm);
        vms.delete(id);
      }
    }
  };

  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  const tick = () => {
    ticking = reconcile()
      .catch(() => undefined) // moto briefly unreachable: the next poll tries again
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, pollMs);
      });
  };
  tick();

  // The proxy: everything passes through to moto unless a throttle is pending, or the call's
  // action is being throttled until further notice.
  let throttled = 0;
  const throttledActions = new Set<string>();
  const target = new URL(opts.endpoint);
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const refuse = () => {
      res.writeHead(503, { 'content-type': 'text/xml' });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>' +
          '<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message>' +
          '</Error></Errors><RequestID>ec2-vms-throttle</RequestID></Response>',
      );
    };
    if (throttled > 0) {
      throttled--;
      req.resume();
      return refuse();
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const params = new URLSearchParams(body.toString('utf8'));
      if (throttledActions.has(params.get('Action') ?? '')) return refuse();
      opts.onProxiedCall?.(params, performance.now());
      forward(req, res, body);
    });
  });
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`ec2 vms proxy: ${err.message}`);
    });
    upstream.end(body);
  };
  await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
  const proxyEndpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  let stopAll: Promise<void> | undefined;
  return {
    ...network,
    adminUser,
    adminPrivateKey: adminKey.privateKey,
    proxyEndpoint,
    hosts: () =>
      new Map([...vms.values()].flatMap((vm) => (vm.host ? [[vm.id, vm.host] as const] : []))),
    errors: () => [...errors],
    impostorNext() {
      impostorsNext++;
    },
    impostorLogins: (id) => impostorLogins.get(id),
    impostors: () => [...impostors],
    hangBoot(instanceId) {
      if (instanceId === 'next') hangNext++;
      else hung.add(instanceId);
    },
    async failInstance(instanceId) {
      await ec2.send(new StopInstancesCommand({ InstanceIds: [instanceId] }));
      const vm = vms.get(instanceId);
      if (vm) {
        vm.runningSince = undefined;
        stopHost(vm);
      }
    },
    throttle(n) {
      throttled = n;
      return proxyEndpoint;
    },
    throttleAction(action, on) {
      if (on) throttledActions.add(action);
      else throttledActions.delete(action);
    },
    stop: () =>
      (stopAll ??= (async () => {
        stopped = true;
        clearTimeout(timer);
        await ticking;
        clearTimeout(timer);
        await Promise.all(inflight);
        for (const vm of vms.values()) stopHost(vm);
        await Promise.all(stopping.values());
        proxy.closeAllConnections();
        await new Promise<void>((done) => proxy.close(() => done()));
        ec2.destroy();
        rmSync(stateDir, { recursive: true, force: true });
      })()),
  };
}
