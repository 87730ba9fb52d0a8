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
