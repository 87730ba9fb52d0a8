// What every host-config parser shares (docs/architecture.md, "host-config"): the problem it
// reports, the callbacks a provider's parser reads keys and reports problems through, and typed
// readers over them. Split out of host-config.ts and dynamic.ts so that the parsers of static
// hosts and of each cloud provider import it downward instead of importing their caller back.
import { printable } from './platform.js';

export interface ConfigProblem {
  key: string;
  reason: string;
  /** The platform the problem belongs to; undefined for global keys that affect every platform. */
  platform?: string;
}

/**
 * The raw (untrimmed) value of `dynamic.<cfg>.<key>`, undefined when absent. `key` is e.g.
 * `region`; the full `dynamic.<cfg>.region` is accepted too. Every key a parser accepts must be
 * read through this, even when unused: keys nobody read are reported as unknown.
 */
export type ConfigRead = (key: string) => string | undefined;
/** Reports a problem with `dynamic.<cfg>.<key>`. */
export type ConfigProblemSink = (key: string, reason: string) => void;
/** Parses one provider's keys; returns undefined (or anything) when it reported a problem. */
export type ProviderParser<T> = (read: ConfigRead, problem: ConfigProblemSink) => T | undefined;

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

interface IntegerRule {
  min: number;
  max?: number;
  /** What the number means, quoted in problems. */
  what: string;
  default?: number;
  optional?: boolean;
}

/** Typed readers over `read`/`problem`: each reports its own problem and returns undefined. */
export function configFields(read: ConfigRead, problem: ConfigProblemSink) {
  const value = (key: string): string | undefined => {
    const raw = read(key)?.trim();
    return raw ? raw : undefined;
  };
  function text(
    key: string,
    rule: { required?: string; expected?: string; valid?: RegExp | ((raw: string) => boolean) },
  ) {
    const raw = value(key);
    if (raw === undefined) {
      if (rule.required) problem(key, `required, ${rule.required}`);
      return undefined;
    }
    const valid = rule.valid instanceof RegExp ? rule.valid.test(raw) : (rule.valid?.(raw) ?? true);
    if (!valid) {
      problem(key, `"${printable(raw)}" is not valid; expected ${rule.expected}`);
      return undefined;
    }
    return raw;
  }
  /** Required unless it has a default or is optional. */
  function integer(key: string, rule: IntegerRule) {
    const raw = value(key);
    if (raw === undefined) {
      if (rule.default === undefined && !rule.optional) {
        problem(key, `required, ${describeRange(rule)}`);
      }
      return rule.default;
    }
    const n = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
    if (!(n >= rule.min && n <= (rule.max ?? Infinity))) {
      problem(key, `"${printable(raw)}" is not ${describeRange(rule)}`);
      return undefined;
    }
    return n;
  }
  function flag(key: string): boolean {
    const raw = value(key)?.toLowerCase();
    if (raw === undefined || raw === 'false') return false;
    if (raw === 'true') return true;
    problem(key, `"${printable(read(key) ?? '')}" is not valid; expected true or false`);
    return false;
  }
  const secretName = (key: string, required: string) =>
    text(key, {
      required,
      valid: (raw) => raw.length <= 253 && DNS1123_SUBDOMAIN.test(raw),
      expected: 'a Kubernetes Secret name (lowercase letters, digits, "-" and ".")',
    });
  return { value, text, integer, flag, secretName };
}

function describeRange(rule: IntegerRule): string {
  const range =
    rule.max === undefined ? `of at least ${rule.min}` : `from ${rule.min} to ${rule.max}`;
  return `an integer ${range} (${rule.what})`;
}
