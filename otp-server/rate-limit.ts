// Per-client token buckets for OTP redemption: each client address may redeem `burst` times at
// once, then `perSecond` times a second. A refused request is answered before anything is read
// from the Kubernetes API, so hammering the endpoint costs the API server nothing.

export interface RateLimitSettings {
  perSecond: number;
  burst: number;
}

/** Clients tracked at most; beyond it, buckets that have refilled (idle clients) are dropped. */
const MAX_CLIENTS = 10_000;

export interface RateLimiter {
  /** 0 when the request may go on, else the seconds until the client's next token. */
  take(client: string): number;
}

export function createRateLimiter(
  settings: RateLimitSettings,
  now: () => number = () => performance.now(),
): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const refill = (bucket: { tokens: number; at: number }, t: number) => {
    bucket.tokens = Math.min(
      settings.burst,
      bucket.tokens + ((t - bucket.at) / 1000) * settings.perSecond,
    );
    bucket.at = t;
  };
  const forgetIdle = (t: number) => {
    for (const [client, bucket] of buckets) {
      refill(bucket, t);
      if (bucket.tokens >= settings.burst) buckets.delete(client);
    }
  };
  return {
    take(client) {
      const t = now();
      let bucket = buckets.get(client);
      if (!bucket) {
        if (buckets.size >= MAX_CLIENTS) forgetIdle(t);
        bucket = { tokens: settings.burst, at: t };
        buckets.set(client, bucket);
      }
      refill(bucket, t);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / settings.perSecond);
    },
  };
}
