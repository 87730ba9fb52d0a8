// What the local kubelet and its containerd change on the machine outside their own folder, and
// how a stop (or the next start, after a run killed with -9) puts all of it back:
// - containers and their runc shims (which outlive containerd), found by their runc root and
//   their containerd socket, stopped by PID;
// - mounts under the kubelet's and containerd's folders (the kubelet's rshared bind of its root,
//   pod volumes, overlay snapshots, pod network namespaces);
// - the pod bridge and its veths, and the CNI plugins' cache in /var/lib/cni;
// - iptables chains: the kubelet's KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT, and
//   the bridge plugin's CNI-* masquerade chains for POD_BRIDGE;
// - `kubepods` cgroups in every hierarchy;
// - net.ipv4.ip_forward, which the bridge plugin turns on (put back as it was found);
// - fixed paths: /var/lib/kubelet/device-plugins (its socket's path is fixed: hence one kubelet
//   per host), /var/log/containers, /run/containerd (the shims' sockets).
import { execFile } from 'node:child_process';
import {
  existsSync,
  readFileSync,
  readdirSync,
  rmSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { POD_BRIDGE } from './containerd.js';

const run = promisify(execFile);

const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';
/** Made by the kubelet, containerd or the CNI plugins at paths they fix: removed if not there before. */
const FIXED_PATHS = [
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/log/pods',
  '/run/containerd',
  '/var/lib/cni',
];
const KUBELET_CHAINS = ['KUBE-FIREWALL', 'KUBE-KUBELET-CANARY', 'KUBE-IPTABLES-HINT'];

/** What the machine looked like before the kubelet first started: what a clean-up restores. */
export interface HostBefore {
  ipForward: string;
  /** FIXED_PATHS that did not exist. */
  absentPaths: string[];
  /** Kubelet-like and CNI chains already there (another CNI user's): not the node's. */
  chains?: string[];
}

export async function recordHostBefore(): Promise<HostBefore> {
  return {
    ipForward: readFileSync(IP_FORWARD, 'utf8').trim(),
    absentPaths: FIXED_PATHS.filter((path) => !existsSync(path)),
    chains: await nodeLikeChains(),
  };
}

/** `<iptables> <table> <chain>` of every KUBELET_CHAINS or CNI-* chain on the machine. */
async function nodeLikeChains(): Promise<string[]> {
  const found: string[] = [];
  for (const iptables of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const { stdout } = await run(iptables, ['-w', '-t', table, '-S']).catch(() => ({
        stdout: '',
      }));
      for (const line of stdout.split('\n')) {
        const chain = /^-N (\S+)/.exec(line)?.[1];
        if (chain && (KUBELET_CHAINS.includes(chain) || chain.startsWith('CNI-'))) {
          found.push(`${iptables} ${table} ${chain}`);
        }
      }
    }
  }
  return found;
}

export interface NodeDirs {
  /** Folders whose mounts are the node's: the kubelet's root, containerd's root and state. */
  mountRoots: string[];
  runcRoot: string;
  containerdSocket: string;
}

/**
 * What a stopped node left on the machine, as `before` did not have it: its processes, mounts,
 * kubepods cgroups, iptables chains, pod bridge, ip_forward and fixed paths. Empty when clean.
 */
export async function hostLeftovers(dirs: NodeDirs, before: HostBefore): Promise<string[]> {
  const left: string[] = [];
  const processes = processesWhere(
    (args) =>
      args.some((arg) => arg.includes(dirs.containerdSocket)) ||
      dirs.mountRoots.some((root) => args.some((arg) => arg.startsWith(root))),
  );
  if (processes.length) left.push(`processes ${processes.join(', ')}`);
  const mounts = mountsUnder(dirs.mountRoots);
  if (mounts.length) left.push(`mounts ${mounts.join(', ')}`);
  const cgroups = kubepodsCgroups();
  if (cgroups.length) left.push(`cgroups ${cgroups.join(', ')}`);
  const chains = (await nodeLikeChains()).filter((chain) => !before.chains?.includes(chain));
  if (chains.length) left.push(`iptables chains ${chains.join(', ')}`);
  const bridge = await run('ip', ['link', 'show', POD_BRIDGE]).then(
    () => true,
    () => false,
  );
  if (bridge) left.push(`link ${POD_BRIDGE}`);
  const forward = readFileSync(IP_FORWARD, 'utf8').trim();
  if (forward !== before.ipForward) left.push(`ip_forward ${forward} (was ${before.ipForward})`);
  const paths = before.absentPaths.filter((path) => existsSync(path));
  if (paths.length) left.push(`paths ${paths.join(', ')}`);
  return left;
}

/** Puts the machine back as `before` found it; each step goes on whatever the others hit. */
export async function cleanUpHost(dirs: NodeDirs, before: HostBefore): Promise<string[]> {
  const problems: string[] = [];
  const step = async (what: string, action: () => Promise<void> | void) => {
    try {
      await action();
    } catch (err) {
      problems.push(`${what}: ${(err as Error).message.split('\n')[0]}`);
    }
  };
  await step('stop containers', () => stopContainers(dirs.runcRoot));
  await step('stop runc shims', () => killShims(dirs.containerdSocket));
  await step('unmount', () => unmountUnder(dirs.mountRoots));
  await step('remove the pod bridge', () => removeBridge());
  await step('remove iptables chains', () => removeChains());
  await step('remove kubepods cgroups', () => removeCgroups());
  await step('restore ip_forward', () => {
    if (readFileSync(IP_FORWARD, 'utf8').trim() !== before.ipForward) {
      writeFileSync(IP_FORWARD, before.ipForward);
    }
  });
  await step('remove fixed paths', () => {
    for (const path of before.absentPaths) rmSync(path, { recursive: true, force: true });
  });
  return problems;
}

/** Every container under the runc root (one folder per containerd namespace), killed. */
async function stopContainers(runcRoot: string) {
  if (!existsSync(runcRoot)) return;
  for (const namespace of readdirSync(runcRoot)) {
    const root = join(runcRoot, namespace);
    if (!statSync(root).isDirectory()) continue;
    for (const id of readdirSync(root)) {
      await run('runc', ['--root', root, 'kill', id, 'KILL']).catch(() => undefined);
      await run('runc', ['--root', root, 'delete', '--force', id]).catch(() => undefined);
    }
  }
}

/** The runc shims of the containerd at `socket`: they outlive containerd, so stopped by PID. */
async function killShims(socket: string) {
  const shims = processesWhere(
    (args) => args[0]?.endsWith('containerd-shim-runc-v2') && args.includes(socket),
  );
  for (const pid of shims) killQuietly(pid);
  await waitGone(shims);
}

/** PIDs of processes whose command line passes `match`. */
export function processesWhere(match: (args: string[]) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (args.length && match(args)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL') {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export async function waitGone(pids: number[], timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (pids.some((pid) => existsSync(`/proc/${pid}`)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Mount points under `roots` (mountinfo's field 5, octal-escaped), deepest first. */
export function mountsUnder(roots: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => !!point)
    .map((point) =>
      point.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))),
    )
    .filter((point) => roots.some((root) => point === root || point.startsWith(`${root}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

async function unmountUnder(roots: string[]) {
  // A bind can be mounted several times over one point: go round until none is left.
  for (let round = 0; round < 5; round++) {
    const points = mountsUnder(roots);
    if (!points.length) return;
    for (const point of points) await run('umount', ['--lazy', point]).catch(() => undefined);
  }
  const left = mountsUnder(roots);
  if (left.length) throw new Error(`still mounted: ${left.join(', ')}`);
}

async function removeBridge() {
  const { stdout } = await run('ip', ['-o', 'link', 'show', 'master', POD_BRIDGE]).catch(() => ({
    stdout: '',
  }));
  for (const line of stdout.split('\n')) {
    const name = /^\d+: ([^@:]+)/.exec(line)?.[1];
    if (name) await run('ip', ['link', 'delete', name]).catch(() => undefined);
  }
  await run('ip', ['link', 'delete', POD_BRIDGE]).catch((err: { stderr?: string }) => {
    if (!/Cannot find device/.test(err.stderr ?? '')) throw err;
  });
}

/** The kubelet's chains and the bridge plugin's for POD_BRIDGE, with the rules that jump to them. */
async function removeChains() {
  for (const iptables of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const { stdout } = await run(iptables, ['-w', '-t', table, '-S']).catch(() => ({
        stdout: '',
      }));
      const lines = stdout.split('\n');
      const ours = new Set(
        lines
          .map((line) => /^-N (\S+)/.exec(line)?.[1])
          .filter((chain): chain is string => !!chain)
          .filter((chain) => KUBELET_CHAINS.includes(chain) || isOurCniChain(chain, lines)),
      );
      if (!ours.size) continue;
      for (const line of lines) {
        const rule = /^-A (\S+) (.*)$/.exec(line);
        if (!rule || ours.has(rule[1]!)) continue;
        const target = /-j (\S+)/.exec(rule[2]!)?.[1];
        if (target && ours.has(target)) {
          await iptablesRule(iptables, table, ['-D', rule[1]!, ...shellWords(rule[2]!)]);
        }
      }
      for (const chain of ours) {
        await run(iptables, ['-w', '-t', table, '-F', chain]);
        await run(iptables, ['-w', '-t', table, '-X', chain]);
      }
    }
  }
}

/** A CNI-* chain whose jump carries the bridge plugin's comment naming our network. */
function isOurCniChain(chain: string, lines: string[]): boolean {
  if (!chain.startsWith('CNI-')) return false;
  return lines.some(
    (line) => line.includes(`-j ${chain}`) && line.includes(`name: \\"${POD_BRIDGE}\\"`),
  );
}

async function iptablesRule(iptables: string, table: string, args: string[]) {
  await run(iptables, ['-w', '-t', table, ...args]);
}

/** iptables -S quotes a comment with double quotes and backslash-escapes quotes inside it. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  const pattern = /"((?:\\.|[^"\\])*)"|(\S+)/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    words.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2]!);
  }
  return words;
}

/** `kubepods` trees in every cgroup v1 hierarchy (and the unified one), removed leaves first. */
export function kubepodsCgroups(): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: string[];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = join(dir, name);
      if (name.startsWith('kubepods')) found.push(path);
      else if (depth < 3) walk(path, depth + 1);
    }
  };
  walk('/sys/fs/cgroup', 0);
  return found;
}

function removeCgroups() {
  const leavesFirst = (dir: string): string[] => {
    const children = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => leavesFirst(join(dir, entry.name)));
    return [...children, dir];
  };
  const left: string[] = [];
  for (const tree of kubepodsCgroups()) {
    for (const dir of leavesFirst(tree)) {
      try {
        rmdirSync(dir);
      } catch {
        left.push(dir);
      }
    }
  }
  if (left.length) throw new Error(`cannot remove ${left.length} cgroups, e.g. ${left[0]}`);
}
