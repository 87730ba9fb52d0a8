// What a failed Kubernetes API call says, for activities and the OTP service alike. The client
// (@kubernetes/client-node 2, on undici) throws an ApiException with the HTTP status in `code`
// and the raw response in `body`; a call that never got an answer throws undici's
// "fetch failed" TypeError, with the socket error (ECONNREFUSED, ...) in its `cause`.

/** The HTTP status the API server answered with; undefined when no answer came. */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Why no answer came (`connect ECONNREFUSED 127.0.0.1:6443`), or undefined for an answer. */
export function transportFailure(err: unknown): string | undefined {
  if (statusCode(err) !== undefined) return undefined;
  let current = err as { code?: unknown; message?: string; cause?: unknown } | undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') return current.message ?? current.code;
    current = current.cause as typeof current;
  }
  const message = (err as Error)?.message;
  return err instanceof TypeError && message === 'fetch failed' ? message : undefined;
}

/** The API server's `Status` in a refusal: its reason (`AlreadyExists`) and message. */
function refusal(err: unknown): { reason?: string; message?: string } {
  const body = (err as { body?: unknown })?.body;
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as {
      reason?: unknown;
      message?: unknown;
    };
    return {
      ...(typeof parsed?.reason === 'string' ? { reason: parsed.reason } : {}),
      ...(typeof parsed?.message === 'string' ? { message: parsed.message } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * A failed API call in one line, without the raw HTTP exchange the client's error carries:
 * `the API server answered 409 AlreadyExists: secrets "x" already exists`, or why no answer came.
 */
export function kubeErrorLine(err: unknown): string {
  const transport = transportFailure(err);
  if (transport) return `no answer from the API server: ${transport}`;
  const code = statusCode(err);
  if (code === undefined) return err instanceof Error ? err.message : String(err);
  const { reason, message } = refusal(err);
  return `the API server answered ${code}${reason ? ` ${reason}` : ''}: ${message ?? 'no message'}`;
}

/**
 * `err`'s message in one line, each failed API call in its causes told by `kubeErrorLine`: what
 * the wrappers say was being done stays, the client's raw body and headers go.
 */
export function oneLineError(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err);
  for (let cause: unknown = err, depth = 0; cause && depth < 8; depth++) {
    if (statusCode(cause) !== undefined || transportFailure(cause)) {
      const raw = cause instanceof Error ? cause.message : String(cause);
      // A wrapper that told the call already (local-stack/upsert.ts) left no raw text to replace.
      if (text.includes(raw)) text = text.replace(raw, kubeErrorLine(cause));
      else if (cause === err) text = kubeErrorLine(cause);
      break;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
