// Percentiles, rates and process memory for the benchmarks' one-line JSON reports.
import { readFileSync } from 'node:fs';

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, rank)]!;
}

export function summarize(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50: Math.round(percentile(sorted, 50)),
    p90: Math.round(percentile(sorted, 90)),
    p99: Math.round(percentile(sorted, 99)),
    max: Math.round(sorted[sorted.length - 1] ?? NaN),
  };
}

/** Peak resident set (VmHWM) of a live process, in MB. */
export const peakRssMb = (pid: number): number => statusMb(pid, 'VmHWM');

/** Resident set now (VmRSS) of a live process, in MB. */
export const rssMb = (pid: number): number => statusMb(pid, 'VmRSS');

function statusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

/** `ms` in seconds, to one decimal. */
export function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** `count` in `ms`, per second, to one decimal. */
export function perSecond(count: number, ms: number): number {
  return Math.round((count / (ms / 1000)) * 10) / 10;
}
