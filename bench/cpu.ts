// CPU time of every process in the bench's tree (Linux /proc): where a burst's time goes, per
// process. A process's utime + stime covers all its threads; live children are counted on their
// own, and children it has reaped (an sshd's sessions, the commands they ran) are counted with it.
// (A child that exits within a window brings its earlier CPU along: negligible for short ones.)
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  cpuSeconds: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm is in parentheses and may hold spaces: the fields after it are space-separated.
    const close = raw.lastIndexOf(')');
    const comm = raw.slice(raw.indexOf('(') + 1, close);
    const fields = raw.slice(close + 2).split(' ');
    // utime, stime, then cutime and cstime: what its reaped children used
    const ticks = fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0);
    return { pid, comm, ppid: Number(fields[1]), cpuSeconds: ticks / TICKS_PER_SECOND };
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * CPU seconds so far of each process under `root` (this process by default), named by `known`
 * where given (the worker and the bridge are both `node`), else by their command name.
 */
export function cpuByProcess(
  known: Record<string, number>,
  root = process.pid,
): Record<string, number> {
  const stats = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => readStat(Number(entry)))
    .filter((stat): stat is ProcStat => stat !== undefined);
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const names = new Map(Object.entries(known).map(([name, pid]) => [pid, name]));
  const result: Record<string, number> = {};
  const visit = (stat: ProcStat) => {
    const name = stat.pid === root ? 'bench' : (names.get(stat.pid) ?? stat.comm);
    result[name] = (result[name] ?? 0) + stat.cpuSeconds;
    for (const child of children.get(stat.pid) ?? []) visit(child);
  };
  const self = stats.find((stat) => stat.pid === root);
  if (self) visit(self);
  return result;
}

/** What each process spent between two samples, rounded to 0.1 s, busiest first. */
export function cpuSpent(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(
        ([name, seconds]) => [name, Math.round((seconds - (before[name] ?? 0)) * 10) / 10] as const,
      )
      .filter(([, seconds]) => seconds > 0)
      .sort((a, b) => b[1] - a[1]),
  );
}
