// Go's time.Duration text (`10m`, `1h30m`, `1.5s`, `0s`), as Cluster API writes metav1.Duration
// fields such as nodeDrainTimeout. Pure, so workflows parse it deterministically.
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};
const WHOLE = /^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$/;
const PART = /([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)/g;

/** Milliseconds, or an error saying what a duration looks like. `0` alone is Go's zero. */
export function parseGoDuration(text: string): { ms: number } | { error: string } {
  const value = text.trim();
  if (value === '0') return { ms: 0 };
  if (!WHOLE.test(value)) {
    return {
      error: `"${value}" is not a duration: write a number and a unit (h, m, s, ms), e.g. 10m or 1h30m`,
    };
  }
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit!]!;
  return { ms: Math.round(ms) };
}
