// `hostflow status` for people: one line per platform, then what needs a look — hosts out of
// rotation and when they are probed next, who waits, and the VMs.
import { VM_SLOTS_HOST } from '../shared/slot-requests.js';
import { duration, table } from './oncall.js';
import type { EngineStatus, PlatformStatus } from './engine-status.js';

export function statusText(status: EngineStatus): string {
  const lines = [
    `Temporal namespace ${status.temporalNamespace}, task queue ${status.taskQueue}; ` +
      `host-config in ${status.engineNamespace}`,
    '',
  ];
  const rows = [['PLATFORM', 'KIND', 'IN USE', 'CAPACITY', 'QUEUE', 'UNHEALTHY', 'VMS']];
  for (const p of status.platforms) {
    const local = p.kind === 'local';
    rows.push([
      p.platform,
      p.kind,
      local ? '-' : (p.inUse?.toString() ?? '?'),
      local ? '-' : (p.capacity?.toString() ?? '?'),
      local ? '-' : p.queue.length.toString(),
      local ? '-' : unhealthy(p).length.toString(),
      p.vms ? p.vms.length.toString() : '-',
    ]);
  }
  lines.push(table(rows));
  for (const p of status.platforms) {
    const detail = details(p);
    if (detail.length > 0)
      lines.push('', `${p.platform} (${p.allocator ?? 'no allocator'})`, ...detail);
  }
  if (status.hostConfigProblems.length > 0) {
    lines.push('', 'host-config problems:', ...status.hostConfigProblems.map((p) => `  ${p}`));
  }
  if (status.problems.length > 0) {
    lines.push('', 'could not look at everything:', ...status.problems.map((p) => `  ${p}`));
  }
  return lines.join('\n');
}

function unhealthy(p: PlatformStatus): PlatformStatus['hosts'] {
  return p.hosts.filter((h) => h.health !== 'healthy');
}

function details(p: PlatformStatus): string[] {
  if (p.problem) return [`  ${p.problem}`];
  const lines: string[] = [];
  const hosts = p.hosts.filter((h) => h.name !== VM_SLOTS_HOST && !(p.kind === 'pool'));
  if (hosts.length > 0) {
    lines.push(
      '  hosts:',
      ...hosts.map(
        (h) =>
          `    ${h.name} ${h.inUse}/${h.capacity} ${health(h)}${h.removed ? ', removed from host-config' : ''}`,
      ),
    );
  }
  if (p.queue.length > 0) {
    lines.push(
      '  waiting, next first:',
      ...p.queue.map((w, i) => `    ${i + 1}. ${w.taskRun ?? w.requestId}`),
    );
  }
  if (p.vms && p.vms.length > 0) {
    lines.push(
      '  VMs:',
      ...p.vms.map(
        (vm) =>
          `    ${vm.id}` +
          (vm.phase ? ` ${vm.phase}` : '') +
          (vm.inUse !== undefined ? `, ${vm.inUse} in use` : '') +
          (vm.taskRun ? `, serving ${vm.taskRun}` : ''),
      ),
    );
  }
  const poolUnhealthy = p.kind === 'pool' ? unhealthy(p) : [];
  if (poolUnhealthy.length > 0) {
    lines.push('  VMs out of rotation:', ...poolUnhealthy.map((h) => `    ${h.name} ${health(h)}`));
  }
  return lines;
}

function health(h: PlatformStatus['hosts'][number]): string {
  // Drained by an operator (`hostflow host drain`); allocators from before drains do not say.
  const because = 'drainedBecause' in h && h.drainedBecause ? `: ${h.drainedBecause}` : '';
  const drained = 'drained' in h && h.drained === true ? `, drained${because}` : '';
  return `${circuit(h)}${drained}`;
}

function circuit(h: PlatformStatus['hosts'][number]): string {
  if (h.health === 'healthy') return 'healthy';
  const failures = `${h.consecutiveFailures} failure${h.consecutiveFailures === 1 ? '' : 's'} in a row`;
  if (h.health === 'probing') return `unhealthy (${failures}), being probed now`;
  return `unhealthy (${failures}), next probe in ${duration(h.probeInMs ?? 0)}`;
}
