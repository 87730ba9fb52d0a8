// What makes a Machine's spec unusable before anything is made, each said precisely.
import { parseGoDuration } from '../../shared/go-duration.js';
import {
  HOSTFLOW_MACHINE_API,
  HOSTFLOW_MACHINE_KIND,
  type MachineSpec,
} from '../../shared/machine-api.js';

const DURATIONS = ['nodeDrainTimeout', 'nodeVolumeDetachTimeout', 'nodeDeletionTimeout'] as const;

export function checkMachineSpec(spec: MachineSpec): string[] {
  const problems: string[] = [];
  const ref = spec.infrastructureRef;
  const provided = `${HOSTFLOW_MACHINE_API.group}/${HOSTFLOW_MACHINE_API.version}`;
  if (!ref?.name) problems.push('spec.infrastructureRef.name is not set');
  if (
    ref &&
    (ref.kind !== HOSTFLOW_MACHINE_KIND || (ref.apiVersion && ref.apiVersion !== provided))
  ) {
    problems.push(
      `spec.infrastructureRef names ${ref.apiVersion ?? '?'} ${ref.kind ?? '?'}: ` +
        `hostflow provides ${provided} ${HOSTFLOW_MACHINE_KIND}`,
    );
  }
  for (const field of DURATIONS) {
    const value = spec[field];
    if (value === undefined) continue;
    const parsed = parseGoDuration(value);
    if ('error' in parsed) problems.push(`spec.${field}: ${parsed.error}`);
  }
  return problems;
}

/** A spec duration in ms; `fallback` when unset. 0 means no bound. */
export function durationMs(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = parseGoDuration(value);
  return 'ms' in parsed ? parsed.ms : fallback;
}
