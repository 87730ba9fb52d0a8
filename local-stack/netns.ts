// Network plumbing for the SSH test hosts: one bridge in the root namespace, and per host a
// network namespace joined to it by a veth pair. Addresses come from 10.231.0.0/16 and are shared
// by every pool on the machine (parallel jest workers, the dev stack), so they are handed out as
// slot files under /run/hostflow-ssh, guarded by one machine-wide lock.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export const BRIDGE = 'hfbr0';
const BRIDGE_CIDR = '10.231.0.1/16';
const RUN_DIR = '/run/hostflow-ssh';
const SLOTS_DIR = `${RUN_DIR}/slots`;
const LOCK_DIR = `${RUN_DIR}/lock`;
const FIRST_SLOT = 2; // 10.231.0.0 is the network, 10.231.0.1 the bridge
const LAST_SLOT = 65_534; // 10.231.255.255 is broadcast
/**
 * Pools count slots up to here only (10.231.0.2–10.231.127.255): the upper half of the bridge
 * network is left to hosts at caller-chosen addresses (createHostNetAt), e.g. the EC2 VM double.
 */
const LAST_POOL_SLOT = 32_767;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command without a shell; resolves with its exit code, never rejects on failure. */
export function run(cmd: string, args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', (err) => resolve({ code: 127, stdout, stderr: stderr + err.message }));
    child.on('close', (code, signal) =>
      resolve({ code: code ?? 128, stdout, stderr: stderr + (signal ?? '') }),
    );
  });
}

/** Like `run`, but throws with the command and its stderr on a non-zero exit. */
export async function must(cmd: string, args: string[]): Promise<string> {
  const r = await run(cmd, args);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

export interface HostNet {
  /** Network namespace name, also the host's name. */
  netns: string;
  address: string;
  /** Also names the veth pair: hfv<slot> in the root namespace, eth0 in the host's. */
  slot: number;
}

interface SlotRecord {
  owner: number; // pid of the process that started the pool
  prefix: string;
  netns: string;
  stateDir: string; // removed when a dead owner's slot is reclaimed, unless
  keep?: boolean; // the host keeps its disk across restarts
  /**
   * A kept host that is stopped: its address stays its own until its pool (same prefix) comes
   * back, so no other pool takes it meanwhile and what was installed there finds it again.
   */
  parked?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A zombie counts as dead: this machine's init reaps orphans only now and then. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Machine-wide mutex: a directory holding its owner's pid; a dead owner's lock is broken. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(RUN_DIR, { recursive: true });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner: number | undefined;
    try {
      owner = Number(readFileSync(`${LOCK_DIR}/owner`, 'utf8'));
    } catch {
      // just created, owner not written yet; or left by a crash in between (then it ages)
    }
    const stale = owner ? !alive(owner) : Date.now() - mtime(LOCK_DIR) > 10_000;
    if (stale) rmSync(LOCK_DIR, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`ssh hosts: ${LOCK_DIR} held by pid ${owner}`);
    else await sleep(20);
  }
  writeFileSync(`${LOCK_DIR}/owner`, String(process.pid));
  try {
    return await fn();
  } finally {
    rmSync(LOCK_DIR, { recursive: true, force: true });
  }
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Date.now();
  }
}

/** The bridge-network address of a slot (the inverse of addressSlot). */
export function slotAddress(slot: number): string {
  return `10.231.${slot >> 8}.${slot & 255}`;
}

export async function netnsPids(netns: string): Promise<number[]> {
  const r = await run('ip', ['netns', 'pids', netns]);
  return r.stdout.split('\n').filter(Boolean).map(Number);
}

/** SIGKILLs everything in the namespace, waits until it is empty, then deletes it. */
async function deleteNetns(netns: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (let pids = await netnsPids(netns); pids.length > 0; pids = await netnsPids(netns)) {
    if (Date.now() > deadline) throw new Error(`ssh hosts: ${netns}: pids ${pids} survive SIGKILL`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await sleep(20);
  }
  await run('ip', ['netns', 'delete', netns]);
}

/** Takes the host's network down: its namespace and veth. */
async function removeNet(slot: number, netns: string): Promise<void> {
  await deleteNetns(netns);
  await run('ip', ['link', 'delete', `hfv${slot}`]); // usually gone with the namespace already
}

async function releaseSlot(slot: number, netns: string): Promise<void> {
  await removeNet(slot, netns);
  rmSync(`${SLOTS_DIR}/${slot}`, { force: true });
}

/**
 * Frees what crashed runs left: slots of this prefix or of dead owners, this prefix's netns. The
 * state dirs of hosts that keep their disks stay: their pool comes back on them.
 */
async function cleanStale(prefix: string): Promise<void> {
  for (const file of readdirSync(SLOTS_DIR)) {
    let record: SlotRecord;
    try {
      record = JSON.parse(readFileSync(`${SLOTS_DIR}/${file}`, 'utf8')) as SlotRecord;
    } catch {
      continue; // unreadable (torn by a crash): stays reserved rather than guessed at
    }
    if (record.prefix === prefix || (!record.parked && !alive(record.owner))) {
      await releaseSlot(Number(file), record.netns);
      if (record.keep) continue;
      rmSync(record.stateDir, { recursive: true, force: true });
      try {
        rmdirSync(dirname(record.stateDir)); // the pool's dir, once its last host is gone
      } catch {
        // not empty, or gone
      }
    }
  }
  const names = (await run('ip', ['netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0]);
  for (const name of names) if (name?.startsWith(`${prefix}-`)) await deleteNetns(name);
}

/** `preferred` when it is free, else the first free slot. */
function claimSlot(record: SlotRecord, preferred?: number): number {
  if (preferred !== undefined && takeSlot(preferred, record)) return preferred;
  for (let slot = FIRST_SLOT; slot <= LAST_POOL_SLOT; slot++) {
    if (takeSlot(slot, record)) return slot;
  }
  throw new Error(`ssh hosts: all ${LAST_POOL_SLOT - FIRST_SLOT + 1} addresses in use`);
}

/** Writes the slot's record if nobody holds the slot; false if somebody does. */
function takeSlot(slot: number, record: SlotRecord): boolean {
  try {
    const fd = openSync(`${SLOTS_DIR}/${slot}`, 'wx');
    writeFileSync(fd, JSON.stringify(record));
    closeSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  }
}

/**
 * A MAC of the slot's own (locally administered, from its address): a host that comes back at
 * its address comes back with its NIC, as a rebooted machine does.
 */
function slotMac(slot: number): string {
  return ['02', '00', '0a', 'e7', slot >> 8, slot & 255]
    .map((b) => (typeof b === 'number' ? b.toString(16).padStart(2, '0') : b))
    .join(':');
}

async function ensureBridge(): Promise<void> {
  if ((await run('ip', ['link', 'show', BRIDGE])).code !== 0) {
    await must('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  }
  await must('ip', ['addr', 'replace', BRIDGE_CIDR, 'dev', BRIDGE]);
  await must('ip', ['link', 'set', BRIDGE, 'up']);
}

/**
 * Brings the bridge up (if no host has yet), so a service for the hosts can listen on its
 * address. A socket bound there outlives the bridge's removal and serves again once it is back.
 */
export function bridgeUp(): Promise<string> {
  return withLock(async () => {
    await ensureBridge();
    return BRIDGE_CIDR.split('/')[0]!;
  });
}

async function addHostNet(slot: number, netns: string, fixedMac = false): Promise<HostNet> {
  const veth = `hfv${slot}`;
  const address = slotAddress(slot);
  await must('ip', ['netns', 'add', netns]);
  await run('ip', ['link', 'delete', veth]); // a leftover nobody recorded
  const peer = ['peer', 'name', `hfp${slot}`, 'netns', netns]; // born inside the namespace
  await must('ip', ['link', 'add', veth, 'type', 'veth', ...peer]);
  await must('ip', ['link', 'set', veth, 'master', BRIDGE, 'up']);
  const inNs = (...args: string[]) => must('ip', ['-n', netns, ...args]);
  await inNs('link', 'set', `hfp${slot}`, 'name', 'eth0');
  if (fixedMac) await inNs('link', 'set', 'eth0', 'address', slotMac(slot));
  await inNs('addr', 'add', `${address}/16`, 'dev', 'eth0');
  await inNs('link', 'set', 'eth0', 'up');
  await inNs('link', 'set', 'lo', 'up');
  // A reused address may still map to the previous host's MAC in the root namespace's
  // neighbour cache for up to a minute: forget it, or the new sshd looks unreachable.
  await run('ip', ['neigh', 'flush', 'to', address, 'dev', BRIDGE]);
  return { netns, address, slot };
}

/**
 * Creates namespaces `<prefix>-1` … `<prefix>-<count>`, each with its own address on the bridge.
 * With `comeBack`, a host gets the address it had (`comeBack(netns)`, when still free) and a MAC
 * of that address, and the last run's state dirs of the prefix are kept.
 */
export function createHostNets(
  prefix: string,
  count: number,
  hostStateDir: (netns: string) => string,
  comeBack?: (netns: string) => string | undefined,
): Promise<HostNet[]> {
  return withLock(async () => {
    mkdirSync(SLOTS_DIR, { recursive: true });
    await cleanStale(prefix);
    await ensureBridge();
    const nets: HostNet[] = [];
    try {
      for (let i = 1; i <= count; i++) {
        const netns = `${prefix}-${i}`;
        const record: SlotRecord = {
          owner: process.pid,
          prefix,
          netns,
          stateDir: hostStateDir(netns),
          ...(comeBack ? { keep: true } : {}),
        };
        const had = comeBack?.(netns);
        const slot = claimSlot(record, had === undefined ? undefined : addressSlot(had));
        try {
          nets.push(await addHostNet(slot, netns, comeBack !== undefined));
        } catch (err) {
          await releaseSlot(slot, netns);
          throw err;
        }
      }
      return nets;
    } catch (err) {
      for (const net of nets) await releaseSlot(net.slot, net.netns);
      await deleteBridgeIfUnused();
      throw new Error(`ssh hosts: network setup failed: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** The slot of an address on the bridge network, or undefined if it is not a host address. */
export function addressSlot(address: string): number | undefined {
  const m = /^10\.231\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!m) return undefined;
  const [hi, lo] = [Number(m[1]), Number(m[2])];
  const slot = hi * 256 + lo;
  return hi <= 255 && lo <= 255 && slot >= FIRST_SLOT && slot <= LAST_SLOT ? slot : undefined;
}

/**
 * Creates one namespace `netns` at exactly `address` (in 10.231.0.0/16, best in its upper half,
 * which pools never hand out). Fails if a live owner holds the address; a dead owner's is reclaimed.
 */
export function createHostNetAt(
  prefix: string,
  netns: string,
  address: string,
  stateDir: string,
): Promise<HostNet> {
  const slot = addressSlot(address);
  if (slot === undefined) {
    throw new Error(`ssh hosts: ${address} is not a host address in ${BRIDGE_CIDR}`);
  }
  return withLock(async () => {
    mkdirSync(SLOTS_DIR, { recursive: true });
    const file = `${SLOTS_DIR}/${slot}`;
    if (existsSync(file)) {
      let record: SlotRecord | undefined;
      try {
        record = JSON.parse(readFileSync(file, 'utf8')) as SlotRecord;
      } catch {
        // torn by a crash: stays reserved, as in cleanStale
      }
      if (!record || alive(record.owner) || (record.parked && record.prefix !== prefix)) {
        const by = record ? `${record.netns} (pid ${record.owner})` : 'an unreadable slot file';
        throw new Error(`ssh hosts: ${address} is in use by ${by}`);
      }
      await releaseSlot(slot, record.netns);
      if (!record.keep) rmSync(record.stateDir, { recursive: true, force: true });
    }
    await ensureBridge();
    const fd = openSync(file, 'wx');
    writeFileSync(fd, JSON.stringify({ owner: process.pid, prefix, netns, stateDir }));
    closeSync(fd);
    try {
      return await addHostNet(slot, netns);
    } catch (err) {
      await releaseSlot(slot, netns);
      await deleteBridgeIfUnused();
      throw new Error(`ssh hosts: network setup at ${address} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
  });
}

/** Deletes the bridge once no host is on it (parked addresses have none). */
async function deleteBridgeIfUnused(): Promise<void> {
  const inUse = readdirSync(SLOTS_DIR).some((file) => {
    try {
      return !(JSON.parse(readFileSync(`${SLOTS_DIR}/${file}`, 'utf8')) as SlotRecord).parked;
    } catch {
      return true; // unreadable: counted as in use, as everywhere
    }
  });
  if (!inUse) await run('ip', ['link', 'delete', BRIDGE]);
}

/**
 * Kills whatever still runs in the namespace, deletes it and its veth, and the bridge if unused.
 * With `park`, the address stays reserved for the host's pool (a kept host that comes back).
 */
export function destroyHostNet(net: HostNet, park = false): Promise<void> {
  return withLock(async () => {
    mkdirSync(SLOTS_DIR, { recursive: true });
    const file = `${SLOTS_DIR}/${net.slot}`;
    if (park && existsSync(file)) {
      await removeNet(net.slot, net.netns);
      const record = JSON.parse(readFileSync(file, 'utf8')) as SlotRecord;
      writeFileSync(file, JSON.stringify({ ...record, parked: true }));
    } else {
      await releaseSlot(net.slot, net.netns);
    }
    await deleteBridgeIfUnused();
  });
}
