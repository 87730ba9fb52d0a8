// Every activity log line (the activity's own `log` calls and the SDK's "Activity started/
// completed") carries what it works on: the SDK adds workflowId and activityType, the Runtime
// logger (temporal-logger.ts) the resource read from the workflow ID, and this interceptor the
// platform, host and TaskRun from the activity's input.
import type { ActivityInterceptors } from '@temporalio/worker';

/**
 * Only these named string fields are read from the input, never anything else: an input may
 * hold a key or an OTP, and what is not picked cannot be logged.
 */
export function inputLogFields(args: readonly unknown[]): Record<string, string> {
  const input = args[0];
  if (typeof input !== 'object' || input === null) return {};
  const { platform, host, taskRun } = input as Record<string, unknown>;
  const fields: Record<string, string> = {};
  if (typeof platform === 'string') fields.platform = platform;
  const hostName = typeof host === 'string' ? host : (host as { name?: unknown } | null)?.name;
  if (typeof hostName === 'string') fields.host = hostName;
  const ref = taskRun as { namespace?: unknown; name?: unknown } | null | undefined;
  if (typeof ref?.namespace === 'string' && typeof ref.name === 'string') {
    fields.k8sNamespace = ref.namespace;
    fields.k8sName = ref.name;
  }
  return fields;
}

/** For `Worker.create({ interceptors: { activity: [activityLogFields] } })`. */
export function activityLogFields(): ActivityInterceptors {
  let fields: Record<string, string> = {};
  return {
    inbound: {
      execute: (input, next) => {
        fields = inputLogFields(input.args);
        return next(input);
      },
    },
    outbound: {
      // A log call's own fields (`{ host }` in a GC sweep) still win over these. The task token
      // goes: it is a capability to complete the activity, and noise in a log.
      getLogAttributes: (attributes, next) => {
        const merged = { ...fields, ...attributes };
        delete merged.taskToken;
        return next(merged);
      },
    },
  };
}
