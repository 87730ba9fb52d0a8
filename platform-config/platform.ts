// PLATFORM param validation (docs/architecture.md, "host-config"). Pure: used by the workflow itself.

/** Accepted without any config lookup, as the original did. */
const ALWAYS_VALID: readonly string[] = ['local', 'localhost', 'linux/x86_64'];
const RFC1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** The platform with `/` as `-` is the target-platform label value: at most 63 characters. */
const MAX_LABEL_VALUE = 63;

export type PlatformCheck = { ok: true } | { ok: false; reason: string };

export function checkPlatform(platform: string): PlatformCheck {
  if (ALWAYS_VALID.includes(platform)) return { ok: true };
  const parts = platform.split('/');
  if (parts.length !== 2) {
    return {
      ok: false,
      reason: `PLATFORM "${printable(platform)}" must have the form os/arch (for example linux/arm64)`,
    };
  }
  for (const part of parts) {
    if (!RFC1035_LABEL.test(part)) {
      return {
        ok: false,
        reason:
          `PLATFORM "${printable(platform)}": "${printable(part)}" is not a valid name ` +
          '(lowercase letters, digits and "-", starting with a letter, at most 63 characters)',
      };
    }
  }
  if (platform.length > MAX_LABEL_VALUE) {
    return {
      ok: false,
      reason:
        `PLATFORM "${printable(platform)}" is ${platform.length} characters long; at most ` +
        `${MAX_LABEL_VALUE} fit the target-platform label`,
    };
  }
  return { ok: true };
}

/** Cuts text to at most `maxBytes` of UTF-8, marking the cut: for size-limited fields. */
export function clipBytes(text: string, maxBytes: number): string {
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  if (bytes(text) <= maxBytes) return text;
  const chars = [...text];
  while (chars.length > 0 && bytes(`${chars.join('')}…`) > maxBytes) chars.pop();
  return `${chars.join('')}…`;
}

/** Quotes user input safely into messages: control characters escaped, length bounded. */
export function printable(value: string, max = 80): string {
  const escaped = JSON.stringify(value).slice(1, -1);
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}
