// Maps Kubernetes API errors onto Temporal retry semantics: what retrying can fix is thrown as
// is (and retried with back-off); what it cannot is a non-retryable failure with the reason.
import { ApplicationFailure } from '@temporalio/common';
import { statusCode, transportFailure } from '../../shared/kube-errors.js';

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
