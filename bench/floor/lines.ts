// What the floor's worker (worker.ts) prints for the bench (temporal-floor.ts), one line each.
export type FloorLine =
  { kind: 'ready' } | { kind: 'served' | 'ended'; workflowId: string; at: number };

const PREFIX = 'floor';

export function formatFloorLine(line: FloorLine): string {
  return line.kind === 'ready'
    ? `${PREFIX} ready\n`
    : `${PREFIX} ${line.kind} ${line.workflowId} ${line.at}\n`;
}

/** The floor line in one line of the worker's output, if it is one (the SDK logs there too). */
export function parseFloorLine(text: string): FloorLine | undefined {
  const [prefix, kind, workflowId, at] = text.trim().split(' ');
  if (prefix !== PREFIX) return undefined;
  if (kind === 'ready') return { kind };
  if ((kind === 'served' || kind === 'ended') && workflowId && at) {
    return { kind, workflowId, at: Number(at) };
  }
  return undefined;
}
