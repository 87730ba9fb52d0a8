// Only one kubelet can run on a host (its device-plugin socket's path is fixed, and two would
// share iptables chains and cgroups), so the local stack claims the machine before it starts one:
// a record in /run naming the process that owns the kubelet, the PIDs it started, its folders,
// and how the machine looked before. Within `npm test` the suite's global setup holds the claim,
// and every test file's runner Jobs go to that one kubelet (they share the suite's API server).
// A claim whose owner is gone (killed with -9) is taken over: its processes are stopped by PID
// and the machine is put back (kubelet-host.ts) before a new kubelet starts.
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import {
  cleanUpHost,
  killQuietly,
  recordHostBefore,
  waitGone,
  type HostBefore,
  type NodeDirs,
} from './kubelet-host.js';

export const CLAIM_FILE = process.env.HOSTFLOW_KUBELET_CLAIM ?? '/run/hostflow-kubelet.json';

export interface KubeletClaim {
  /** The process that started the kubelet and stops it. */
  owner: number;
  /** Its state dir, for the message a second stack gets. */
  stateDir: string;
  pids: number[];
  dirs: NodeDirs;
  before: HostBefore;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

function readClaim(): KubeletClaim | undefined {
  try {
    return JSON.parse(readFileSync(CLAIM_FILE, 'utf8')) as KubeletClaim;
  } catch {
    return undefined;
  }
}

/**
 * Claims the machine for a kubelet of this process, or fails saying which stack holds it. A
 * stale claim is cleaned up first. The claim's `before` is the first claim's: a stale run's
 * changes are not taken for how the machine was.
 */
export async function claimMachine(stateDir: string, dirs: NodeDirs): Promise<KubeletClaim> {
  let before: HostBefore | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const held = readClaim();
    if (held && held.owner !== process.pid && alive(held.owner)) {
      throw new Error(
        `a kubelet already runs on this machine for the stack in ${held.stateDir} (process ` +
          `${held.owner}); only one kubelet can run per host: stop that stack first`,
      );
    }
    if (held) {
      await releaseStale(held);
      before = held.before;
      continue;
    }
    if (existsSync(CLAIM_FILE)) rmSync(CLAIM_FILE, { force: true }); // unreadable: a torn write
    const claim: KubeletClaim = {
      owner: process.pid,
      stateDir,
      pids: [],
      dirs,
      before: before ?? (await recordHostBefore()),
    };
    try {
      const fd = openSync(CLAIM_FILE, 'wx', 0o600);
      writeSync(fd, JSON.stringify(claim));
      closeSync(fd);
      return claim;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  throw new Error(`cannot claim this machine's kubelet: ${CLAIM_FILE} keeps changing`);
}

/** Records the PIDs the claim's kubelet runs as, so a later start can stop them. */
export function recordPids(claim: KubeletClaim, pids: number[]) {
  claim.pids = pids;
  rmSync(`${CLAIM_FILE}.tmp`, { force: true });
  const fd = openSync(`${CLAIM_FILE}.tmp`, 'w', 0o600);
  writeSync(fd, JSON.stringify(claim));
  closeSync(fd);
  // Whole or not at all: a reader never sees half a record.
  renameSync(`${CLAIM_FILE}.tmp`, CLAIM_FILE);
}

/** Puts the machine back and gives the claim up; the problems met on the way, if any. */
export async function releaseMachine(claim: KubeletClaim): Promise<string[]> {
  const problems = await cleanUpHost(claim.dirs, claim.before);
  if (readClaim()?.owner === claim.owner) rmSync(CLAIM_FILE, { force: true });
  return problems;
}

async function releaseStale(claim: KubeletClaim) {
  for (const pid of claim.pids) killQuietly(pid);
  await waitGone(claim.pids);
  const problems = await cleanUpHost(claim.dirs, claim.before);
  if (problems.length) {
    throw new Error(
      `cannot clean up after the kubelet a stopped stack left (${claim.stateDir}): ${problems.join('; ')}`,
    );
  }
  rmSync(CLAIM_FILE, { force: true });
}
