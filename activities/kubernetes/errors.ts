// Maps Kubernetes API errors onto Temporal retry semantics: what retrying can fix is thrown as
// is (and retried with back-off); what it cannot is a non-retryable failure with the reason.
import { ApplicationFailure } from '@temporalio/common';
import { statusCode, transportFailure } from '../../shared/kube-errors.js';
import { FORBIDDEN_FAILURE_TYPES, type ForbiddenKind } from '../../shared/failures.js';

export { statusCode };

export const isNotFound = (err: unknown): boolean => statusCode(err) === 404;
export const isConflict = (err: unknown): boolean => statusCode(err) === 409;

/** A create refused because its namespace is being deleted: nothing new goes in there any more. */
export function isNamespaceTerminating(err: unknown): boolean {
  if (statusCode(err) !== 403) return false;
  const body = (err as { body?: unknown })?.body;
  try {
    const parsed = JSON.parse(String(body)) as { details?: { causes?: Array<{ type?: string }> } };
    return parsed.details?.causes?.some((cause) => cause.type === 'NamespaceTerminating') ?? false;
  } catch {
    return false;
  }
}

/** The API server's own message, not the raw body; why no answer came, when none did. */
export function apiMessage(err: unknown): string {
  const transport = transportFailure(err);
  if (transport) return `no answer from the API server: ${transport}`;
  const body = (err as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: string };
      if (parsed.message) return parsed.message;
    } catch {
      // not JSON: fall through
    }
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Client errors that an operator fixes without touching the request: credentials (401) and
 * permissions (403). Callers wait them out, saying what they wait for, instead of giving up.
 */
const RETRYABLE_CLIENT_ERRORS = new Set([401, 403, 409, 429]);

/** Rethrows `err`, as non-retryable when it is a client error retrying cannot fix. */
export function rethrowKube(action: string, err: unknown): never {
  const code = statusCode(err);
  const message = `${action}: ${apiMessage(err)}`;
  if (code !== undefined && code >= 400 && code < 500 && !RETRYABLE_CLIENT_ERRORS.has(code)) {
    throw ApplicationFailure.nonRetryable(message, `KubernetesHttp${code}`);
  }
  throw ApplicationFailure.retryable(
    message,
    code ? `KubernetesHttp${code}` : 'KubernetesUnavailable',
  );
}

/**
 * Why a write was refused with 403: a full ResourceQuota (it may clear as the namespace's
 * objects go), a missing permission (until an operator grants it), or an admission policy or
 * webhook (for good). Undefined for anything else; a terminating namespace is its own case.
 */
function forbiddenCause(err: unknown): ForbiddenKind | undefined {
  if (statusCode(err) !== 403 || isNamespaceTerminating(err)) return undefined;
  const message = apiMessage(err);
  // "status unknown": the quota controller has not counted the namespace yet.
  if (/exceeded quota|status unknown for quota/i.test(message)) return 'quota';
  // RBAC's own wording: `User "…" cannot create resource "secrets" in API group "" …`.
  if (/ cannot [a-z]+ resource "/.test(message)) return 'permission';
  return 'denied';
}

/**
 * A write into a tenant's namespace refused with 403, as a failure the activity does not retry
 * itself: each retry would make what goes into the write again (a build user, an OTP record).
 * The workflow decides how long to wait (a quota, briefly) and then answers. Undefined when
 * `err` is no such refusal.
 */
export function forbiddenFailure(action: string, err: unknown): ApplicationFailure | undefined {
  const cause = forbiddenCause(err);
  if (!cause) return undefined;
  return ApplicationFailure.nonRetryable(
    `${action}: ${apiMessage(err)}`,
    FORBIDDEN_FAILURE_TYPES[cause],
  );
}

/**
 * Rethrows a failed write into a tenant's namespace: a 403 refusal as the non-retryable failure
 * above (the workflow answers it on the object, within a bounded time); the rest as usual.
 */
export function rethrowTenantWrite(action: string, err: unknown): never {
  const forbidden = forbiddenFailure(action, err);
  if (forbidden) throw forbidden;
  rethrowKube(action, err);
}
