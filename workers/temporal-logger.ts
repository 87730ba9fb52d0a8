// The Temporal SDK's logs (the worker's own, workflow `log` through its sink, activity `log`,
// and Temporal core's forwarded at WARN and above) as the process's JSON lines.
import type { LogLevel as SdkLogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import type { Logger } from '../runtime/logger.js';

const LEVEL = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
} as const satisfies Record<SdkLogLevel, string>;

/**
 * The resource a workflow serves, read from its ID (the shapes of WORKFLOW_ID in
 * shared/workflow-ids.ts: `taskrun/<ns>/<name>/<uid>`, `allocator/<platform>`, …), so an
 * operator finds every line about one TaskRun, Machine or platform by field. The search
 * attributes hold the same, but reading them would cost a call per log line.
 */
export function workflowIdFields(workflowId: string): Record<string, string> {
  const [family = '', ...rest] = workflowId.split('/');
  switch (family) {
    case 'taskrun':
    case 'provisioning':
    case 'software':
    case 'bpa-cluster':
    case 'hostflow-machine':
      return rest.length >= 2 ? { k8sNamespace: rest[0]!, k8sName: rest[1]! } : {};
    case 'allocator':
      return rest.length > 0 ? { platform: rest.join('/') } : {};
    case 'rollout':
      return rest.length >= 2 ? { pool: rest[0]!, node: rest[1]! } : { pool: rest[0] ?? '' };
    case 'hostconfig':
    case 'cloud-gc':
    case 'taskrun-gc':
      return rest.length === 1 ? { k8sNamespace: rest[0]! } : {};
    default:
      return {};
  }
}

/**
 * Errors in metadata keep their type, message and stack (JSON.stringify would give `{}`).
 * Fields the caller gave win over those read from the workflow ID.
 */
function plain(meta: LogMetadata | undefined): Record<string, unknown> {
  const workflowId: unknown = meta?.workflowId;
  const fields: Record<string, unknown> =
    typeof workflowId === 'string' ? workflowIdFields(workflowId) : {};
  for (const [key, value] of Object.entries(meta ?? {})) {
    fields[key] =
      value instanceof Error
        ? { type: value.name, message: value.message, stack: value.stack }
        : value;
  }
  return fields;
}

/** For `Runtime.install({ logger })`. */
export function temporalLogger(log: Logger): SdkLogger {
  const write = (level: SdkLogLevel, message: string, meta?: LogMetadata): void =>
    log[LEVEL[level]](plain(meta), message);
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}
