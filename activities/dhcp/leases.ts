// IP addresses from an ISC dhcpd leases file (dhcpd.leases(5)), one of the two sources of a
// Provisioning's node IPs. dhcpd appends each new state of a lease, so the last block for a MAC
// is its current one: its IP counts only while that block is `binding state active`. Parsing is
// by block and statement, not by regular expression over the whole file as in the original.
import { readFile } from 'node:fs/promises';

export interface LeaseAnswer {
  ip?: string;
  /** Why there is no IP, in words. */
  missing?: string;
}

interface Lease {
  ip: string;
  mac?: string;
  state?: string;
}

const LEASE_START = /^lease\s+([0-9a-fA-F.:]+)\s*\{$/;

/** Every lease block in file order. Comments and other declarations are skipped. */
export function parseLeases(text: string): Lease[] {
  const leases: Lease[] = [];
  let current: Lease | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) continue;
    if (!current) {
      const start = LEASE_START.exec(line);
      if (start) current = { ip: start[1]! };
      continue;
    }
    if (line === '}') {
      leases.push(current);
      current = undefined;
      continue;
    }
    const statement = line.replace(/;$/, '').split(/\s+/);
    if (statement[0] === 'hardware' && statement[1] === 'ethernet' && statement[2]) {
      current.mac = statement[2].toLowerCase();
    } else if (statement[0] === 'binding' && statement[1] === 'state' && statement[2]) {
      current.state = statement[2];
    }
  }
  return leases;
}

/** The IP `mac` holds now according to `text`. */
export function leasedIp(text: string, mac: string): LeaseAnswer {
  const wanted = mac.toLowerCase();
  const mine = parseLeases(text).filter((lease) => lease.mac === wanted);
  const last = mine[mine.length - 1];
  if (!last) return { missing: `no DHCP lease for MAC ${wanted}` };
  if (last.state !== 'active') {
    return {
      missing: `the latest DHCP lease for MAC ${wanted} (${last.ip}) is ${last.state ?? 'in no binding state'}, not active`,
    };
  }
  return { ip: last.ip };
}

/** The same, read from the leases file at `path`. */
export async function leasedIpFromFile(path: string, mac: string): Promise<LeaseAnswer> {
  return leasedIp(await readFile(path, 'utf8'), mac);
}

/** The activity: IPs of several MACs from the engine's configured leases file. */
export function createDhcpActivities({ leasesFile }: { leasesFile?: string }) {
  return {
    async leasedIps(input: { macs: string[] }): Promise<Record<string, LeaseAnswer>> {
      if (!leasesFile) {
        const missing = 'no DHCP leases file is configured (HOSTFLOW_DHCP_LEASES_FILE)';
        return Object.fromEntries(input.macs.map((mac) => [mac, { missing }]));
      }
      let text: string;
      try {
        text = await readFile(leasesFile, 'utf8');
      } catch (err) {
        const missing = `cannot read ${leasesFile}: ${(err as Error).message}`;
        return Object.fromEntries(input.macs.map((mac) => [mac, { missing }]));
      }
      return Object.fromEntries(input.macs.map((mac) => [mac, leasedIp(text, mac)]));
    },
  };
}

export type DhcpActivities = ReturnType<typeof createDhcpActivities>;
