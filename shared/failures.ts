// Who is to blame for a failure (docs/architecture.md, "Blame only what failed"). Activities
// throw ApplicationFailures whose `type` names what failed; workflows read the blame from it.
// A host's health and a TaskRun's failed-hosts count only failures of the host itself.

/** Failures that happened on a host: connecting, authenticating, or the remote script. */
export const HOST_FAILURE_TYPES: readonly string[] = [
  'SshUnavailable',
  'SshAuthRejected',
  'SshHostKeyMismatch',
  'HostKeyUnknown',
  'SshHandshakeFailed',
  'SshCommandFailed',
  'SshSudoRejected',
  'SudoersRejected',
];

/**
 * Failures of one host's entry in host-config (its admin key Secret is missing or unusable, a
 * value is unsafe): the host did nothing wrong, but it cannot serve until an operator acts.
 */
export const HOST_CONFIG_FAILURE_TYPES: readonly string[] = [
  'AdminKeyMissing',
  'AdminKeyInvalid',
  'SshAdminKeyInvalid',
  'UnsafeRemoteValue',
  'HostKeyInvalid',
  'HostKeyRequired',
];

/**
 * A write into the tenant's namespace refused with 403 (see activities/kubernetes/errors.ts):
 * a full quota may clear as the namespace's objects go, and a missing permission once an
 * operator grants it; an admission policy or webhook refuses for good. All are non-retryable for
 * the activity; the TaskRun answers them within a bounded time.
 */
export const FORBIDDEN_FAILURE_TYPES = {
  quota: 'KubernetesQuotaExceeded',
  permission: 'KubernetesPermissionDenied',
  denied: 'KubernetesAdmissionDenied',
} as const;

export type ForbiddenKind = keyof typeof FORBIDDEN_FAILURE_TYPES;

/** Which kind of 403 refusal `err` is, if it is one. */
export function forbiddenKindOf(err: unknown): ForbiddenKind | undefined {
  const type = failureType(err);
  const kinds = Object.keys(FORBIDDEN_FAILURE_TYPES) as ForbiddenKind[];
  return kinds.find((kind) => FORBIDDEN_FAILURE_TYPES[kind] === type);
}

/**
 * - `host`: the host failed; count it against the host and try another.
 * - `host-config`: this host cannot serve until its config is fixed; try another, blame nobody.
 * - `wait`: something else (Kubernetes, the OTP service, the worker) failed in a way retrying
 *   can fix; keep what is held and try again later.
 * - `final`: retrying cannot help; answer the build with an error naming the cause.
 */
export type Blame = 'host' | 'host-config' | 'wait' | 'final';

interface FailureLike {
  type?: unknown;
  nonRetryable?: unknown;
  cause?: unknown;
  name?: unknown;
}

/** The innermost application failure in a chain (ActivityFailure → ApplicationFailure). */
function applicationFailure(err: unknown): FailureLike | undefined {
  let current = err as FailureLike | undefined;
  let found: FailureLike | undefined;
  for (let depth = 0; current && depth < 10; depth++) {
    if (typeof current.type === 'string') found = current;
    current = current.cause as FailureLike | undefined;
  }
  return found;
}

/** The failure's type name, as an activity threw it (`undefined` for timeouts and the like). */
export function failureType(err: unknown): string | undefined {
  return applicationFailure(err)?.type as string | undefined;
}

export function blameOf(err: unknown): Blame {
  const failure = applicationFailure(err);
  const type = failure?.type as string | undefined;
  if (type !== undefined && HOST_FAILURE_TYPES.includes(type)) return 'host';
  if (type !== undefined && HOST_CONFIG_FAILURE_TYPES.includes(type)) return 'host-config';
  // Timeouts, a lost worker, cancellation of an attempt: nothing says the cause is permanent.
  if (!failure) return 'wait';
  return failure.nonRetryable === true ? 'final' : 'wait';
}

/** What a waiting TaskRun is waiting on, for its details, Events and metrics. */
export function dependencyOf(err: unknown): 'otp' | 'kubernetes' | 'cloud' | 'worker' {
  const type = failureType(err) ?? '';
  if (type.startsWith('Otp')) return 'otp';
  if (type.startsWith('Kubernetes') || type.startsWith('AdminKey')) return 'kubernetes';
  if (type.startsWith('Aws') || type.startsWith('Ibm')) return 'cloud';
  return 'worker';
}

/** The innermost failure's message: what actually went wrong, not the activity wrapper. */
export function innermostMessage(err: unknown): string {
  let current = err as { message?: string; cause?: unknown } | undefined;
  while (current?.cause) current = current.cause as typeof current;
  return current?.message ?? String(err);
}
