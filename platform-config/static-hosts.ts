// Static hosts: `host.<name>.<field>` keys of the `host-config` ConfigMap (docs/architecture.md, "host-config").
// Every value ends up in an SSH command line, a Kubernetes label or a Secret lookup, so each is
// checked against the narrowest grammar that still accepts real configs. A bad entry is reported
// against its own platform, so it fails only that platform (the original broke every static one).
import { z } from 'zod';
import { parseHostKey } from './host-key.js';
import { checkPlatform, printable } from './platform.js';
import type { ConfigProblem } from './config-fields.js';
import type { Host } from './host.js';

/** A `host.<name>.*` entry: a host (concurrency 1..8) and the platform it serves. */
export interface StaticHost extends Host {
  platform: string;
}

/** What a host is for: build users (TaskRuns) or Cluster API Machines, whose bootstrap runs as root. */
const HOST_USES = ['builds', 'machines'] as const;
export type HostUse = (typeof HOST_USES)[number];

const KEY_PREFIX = 'host.';
const MAX_CONCURRENCY = 8;

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const POSIX_USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const ABSOLUTE_COMMAND = /^\/[A-Za-z0-9._/+-]+$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const RFC1123_LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;

function isIPv6(value: string): boolean {
  // An embedded IPv4 tail (::ffff:1.2.3.4) counts as two groups.
  let groups = value.split(':');
  const last = groups[groups.length - 1];
  if (last.includes('.')) {
    if (!IPV4.test(last)) return false;
    groups = [...groups.slice(0, -1), '0', '0'];
  }
  const text = groups.join(':');
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const parts = halves.map((half) => (half === '' ? [] : half.split(':')));
  if (!parts.every((half) => half.every((group) => HEX_GROUP.test(group)))) return false;
  const count = parts.reduce((sum, half) => sum + half.length, 0);
  return halves.length === 2 ? count < 8 : count === 8;
}

function isHostName(value: string): boolean {
  const labels = value.split('.');
  // An all-numeric last label would make "1.2.3.999" a host name rather than a bad IPv4 address.
  return (
    value.length <= 253 &&
    labels.every((label) => RFC1123_LABEL.test(label)) &&
    !/^\d+$/.test(labels[labels.length - 1])
  );
}

function isAddress(value: string): boolean {
  return IPV4.test(value) || isIPv6(value) || isHostName(value);
}

/** A trimmed string field: one reason when missing, one when malformed (never both). */
function field(required: string, valid: (value: string) => boolean, expected: string) {
  return z
    .string({ error: `required, ${required}` })
    .trim()
    .refine(valid, {
      error: (issue) => `"${printable(String(issue.input))}" is not valid; expected ${expected}`,
    });
}

const CONCURRENCY = `an integer from 1 to ${MAX_CONCURRENCY} (the number of builds the host runs at once)`;

const HOST_FIELDS = z.strictObject({
  address: field(
    'the SSH address of the host',
    isAddress,
    'an IPv4 or IPv6 address or a DNS host name (letters, digits, "-" and ".")',
  ),
  user: field(
    'the user hostflow logs in as',
    (value) => POSIX_USER.test(value),
    'a POSIX user name (lowercase letters, digits, "_" and "-", starting with a letter or "_", at most 32 characters)',
  ),
  platform: z
    .string({ error: "required, the host's platform (for example linux/ppc64le)" })
    .trim()
    .refine((value) => checkPlatform(value).ok, {
      error: (issue) => {
        const check = checkPlatform(String(issue.input));
        return check.ok ? 'invalid' : check.reason;
      },
    }),
  secret: field(
    "the Secret in the engine namespace holding the host's SSH key (key id_rsa)",
    (value) => value.length <= 253 && DNS1123_SUBDOMAIN.test(value),
    'a Kubernetes object name (lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters)',
  ),
  concurrency: z
    .string({ error: `required, ${CONCURRENCY}` })
    .trim()
    .refine((value) => /^\d{1,3}$/.test(value) && +value >= 1 && +value <= MAX_CONCURRENCY, {
      error: (issue) => `"${printable(String(issue.input))}" is not ${CONCURRENCY}`,
    })
    .transform(Number),
  'sudo-commands': z
    .string()
    .optional()
    .transform((value, ctx) => {
      const commands = (value ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
      for (const command of commands.filter((item) => !ABSOLUTE_COMMAND.test(item))) {
        ctx.addIssue({
          code: 'custom',
          message: `"${printable(command)}" is not an absolute command path; expected a comma list of paths such as /usr/bin/podman`,
        });
      }
      return commands;
    }),
  // Optional so that configs written before Machines existed stay valid: they serve builds.
  serves: z
    .string()
    .trim()
    .refine((value): value is HostUse => (HOST_USES as readonly string[]).includes(value), {
      error: (issue) =>
        `"${printable(String(issue.input))}" is not valid; expected builds (TaskRuns' build users, ` +
        'the default) or machines (Cluster API Machines, whose bootstrap data runs as root)',
    })
    .optional(),
  /** Checked on its own: a bad key refuses only its host (see parseStaticHosts). */
  'host-key': z.string().optional(),
});

const FIELD_NAMES = Object.keys(HOST_FIELDS.shape).join(', ');

function checkHostKey(
  value: string | undefined,
  required: boolean,
): { key?: string; problem?: string } {
  if (value === undefined || value.trim() === '') {
    return required
      ? {
          problem:
            'required, because require-host-keys is "true": the host\'s public SSH host key in ' +
            'known_hosts form (the contents of its /etc/ssh/ssh_host_ed25519_key.pub)',
        }
      : {};
  }
  const key = parseHostKey(value);
  // type and key only: a comment is nobody's business past this point
  return key.ok ? { key: `${key.type} ${key.base64}` } : { problem: key.reason };
}

/**
 * `requireHostKeys`: host-config's `require-host-keys` is "true", so a host without `host-key`
 * is refused (reported, left out) instead of trusted on first use.
 */
export function parseStaticHosts(
  data: Record<string, string>,
  requireHostKeys = false,
): {
  hosts: StaticHost[];
  problems: ConfigProblem[];
} {
  const problems: ConfigProblem[] = [];
  const entries = new Map<string, Record<string, string>>();
  for (const key of Object.keys(data).sort()) {
    if (!key.startsWith(KEY_PREFIX)) continue;
    const rest = key.slice(KEY_PREFIX.length);
    const dot = rest.lastIndexOf('.');
    if (dot < 0) {
      problems.push({
        key: printable(key),
        reason: `not of the form host.<name>.<field> (fields: ${FIELD_NAMES})`,
      });
      continue;
    }
    const name = rest.slice(0, dot);
    const fields = entries.get(name) ?? {};
    fields[rest.slice(dot + 1)] = data[key];
    entries.set(name, fields);
  }

  const hosts: StaticHost[] = [];
  for (const [name, fields] of entries) {
    const prefix = `${KEY_PREFIX}${printable(name)}`;
    const candidate = (fields.platform ?? '').trim();
    // Problems follow the host's platform only when that is itself known and valid.
    const platform = checkPlatform(candidate).ok ? candidate : undefined;
    const report = (key: string, reason: string) =>
      problems.push(platform === undefined ? { key, reason } : { key, reason, platform });

    let valid = true;
    if (!LABEL_VALUE.test(name)) {
      valid = false;
      report(
        `${prefix}.*`,
        `host name "${printable(name)}" is not usable as the assigned-host label value; expected ` +
          'letters, digits, "-", "_" and ".", starting and ending with a letter or digit, at most 63 characters',
      );
    }
    const parsed = HOST_FIELDS.safeParse(fields);
    if (!parsed.success) {
      valid = false;
      for (const issue of parsed.error.issues) {
        if (issue.code === 'unrecognized_keys') {
          for (const unknown of issue.keys) {
            report(
              `${prefix}.${printable(unknown)}`,
              `unknown field "${printable(unknown)}"; expected one of ${FIELD_NAMES}`,
            );
          }
        } else {
          report(`${prefix}.${String(issue.path[0])}`, issue.message);
        }
      }
    }
    if (!valid || !parsed.success) continue;

    const { address, user, secret, concurrency, serves } = parsed.data;
    const hostKey = checkHostKey(parsed.data['host-key'], requireHostKeys);
    // Reported for the host alone (no platform): the SSH activities refuse this one host with it,
    // and the platform's other hosts serve on.
    if (hostKey.problem) problems.push({ key: `${prefix}.host-key`, reason: hostKey.problem });
    if (serves === 'machines' && concurrency !== 1) {
      // Bootstrap data runs as root: two Machines on one host would each own the other.
      report(
        `${prefix}.concurrency`,
        `"${concurrency}" is not valid for a host that serves machines; expected 1 (one Machine per host)`,
      );
      continue;
    }
    const twin = hosts.find(
      (host) =>
        host.platform === parsed.data.platform &&
        host.user === user &&
        host.address.toLowerCase() === address.toLowerCase(),
    );
    if (twin) {
      report(
        `${prefix}.address`,
        `${user}@${address} is already configured as host.${twin.name} for ${twin.platform}; ` +
          'list each host once, with its whole concurrency',
      );
      continue;
    }
    hosts.push({
      name,
      address,
      user,
      platform: parsed.data.platform,
      secret,
      concurrency,
      sudoCommands: parsed.data['sudo-commands'],
      ...(serves === 'machines' ? { serves } : {}),
      ...(hostKey.key && { hostKey: hostKey.key }),
    });
  }
  return { hosts, problems };
}
