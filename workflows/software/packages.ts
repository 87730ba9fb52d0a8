// A Software's package lists as the node's package manager takes them: `name` or `name=version`,
// checked against Debian's rules for names and versions so that nothing but a package reaches a
// host's command line. What each node gets is the lists of its roles; what it still needs is
// what it wants less what it already has.
import type { SoftwarePackage, SoftwareSpec } from '../../shared/bpa-api.js';
import type { ClusterNode } from '../../shared/contracts/software.js';

/** Debian policy §5.6.1 (names) and §5.6.12 (versions: epoch, upstream, revision). */
const NAME = /^[a-z0-9][a-z0-9+.-]+$/;
const VERSION = /^([0-9]+:)?[0-9A-Za-z][0-9A-Za-z.+~-]*$/;

export interface RolePackages {
  master: string[];
  worker: string[];
}

/** `name` or `name=version` for each entry of both lists; or what is wrong, by field. */
export function parseSoftware(spec: SoftwareSpec): RolePackages | { problems: string[] } {
  const problems: string[] = [];
  const parse = (field: 'masterSoftware' | 'workerSoftware') => {
    const pinned = new Map<string, string>();
    (spec[field] ?? []).forEach((entry, index) => {
      const where = `${field}[${index}]`;
      const found = parseEntry(entry);
      if ('problem' in found) return problems.push(`${where}: ${found.problem}`);
      const earlier = pinned.get(found.name);
      if (earlier !== undefined && earlier !== found.spec)
        return problems.push(
          `${where}: ${found.name} is listed twice, as ${earlier} and ${found.spec}`,
        );
      pinned.set(found.name, found.spec);
    });
    return [...new Set(pinned.values())];
  };
  const packages = { master: parse('masterSoftware'), worker: parse('workerSoftware') };
  return problems.length ? { problems } : packages;
}

function parseEntry(entry: SoftwarePackage): { name: string; spec: string } | { problem: string } {
  if (typeof entry === 'string') {
    return NAME.test(entry)
      ? { name: entry, spec: entry }
      : { problem: `"${entry}" is not a package name (lower case letters, digits, + - .)` };
  }
  const keys = entry && typeof entry === 'object' ? Object.keys(entry) : [];
  if (keys.length !== 1)
    return { problem: 'give a package name, or {<name>: {version: <version>}} with one name' };
  const name = keys[0]!;
  if (!NAME.test(name))
    return { problem: `"${name}" is not a package name (lower case letters, digits, + - .)` };
  const version = (entry as Record<string, { version?: unknown } | null>)[name]?.version;
  if (version === undefined || version === null || version === '') return { name, spec: name };
  const text = String(version);
  if (!VERSION.test(text)) return { problem: `${name}: "${text}" is not a package version` };
  return { name, spec: `${name}=${text}` };
}

/** What `node` should have: the packages of each of its roles. */
export function wantedOn(node: ClusterNode, packages: RolePackages): string[] {
  const wanted = new Set<string>();
  if (node.roles.includes('master')) packages.master.forEach((p) => wanted.add(p));
  if (node.roles.includes('worker')) packages.worker.forEach((p) => wanted.add(p));
  return [...wanted].sort();
}
