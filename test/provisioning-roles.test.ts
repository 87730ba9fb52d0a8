// Role assignment of a Provisioning (pure): by MAC, by resources, one cluster per host, and
// every refusal, with the BPA operator's own sample resources (Akraino ICN).
import { describe, expect, it } from '@jest/globals';
import type { HostInventory, ProvisioningSpec } from '../shared/bpa-api.js';
import { assignRoles, checkSpec } from '../workflows/provisioning/roles.js';
import { mebibytes } from '../workflows/provisioning/quantity.js';

const host = (name: string, mac: string, extra: Partial<HostInventory> = {}): HostInventory => ({
  namespace: 'metal3',
  name,
  nics: [{ mac, ip: `10.0.0.${name.length}` }],
  cpus: 8,
  ramMebibytes: 16_384,
  sriov: false,
  qat: false,
  ...extra,
});

const hosts = [
  host('h-a', '00:c6:14:04:61:b2'),
  host('h-b', '00:c2:12:03:62:b1'),
  host('h-c', 'AA:BB:CC:00:00:03', { cpus: 20, ramMebibytes: 8192 }),
  host('h-d', 'aa:bb:cc:00:00:04', { cpus: 32, ramMebibytes: 65_536, sriov: true }),
  host('h-e', 'aa:bb:cc:00:00:05', { cpus: 20, ramMebibytes: 16_384, qat: true }),
];

const problems = (spec: ProvisioningSpec, cluster = 'c1', list = hosts) => {
  const result = assignRoles(spec, cluster, list);
  return result.ok ? [] : result.problems;
};

describe("the BPA operator's sample resources", () => {
  it('refuses cluster-abc: worker-1 names the master MAC under another label', () => {
    const spec: ProvisioningSpec = {
      masters: [{ master: { 'mac-address': '00:c6:14:04:61:b2' } }],
      workers: [
        { 'worker-1': { 'mac-address': '00:c6:14:04:61:b2' } },
        { 'worker-2': { 'mac-address': '00:c2:12:03:62:b1' } },
      ],
      hostfile: '/root/go/src/hosts.ini',
    };
    expect(problems(spec, 'cluster-abc')).toEqual([
      'master and worker-1 both name MAC 00:c6:14:04:61:b2: one host cannot be two nodes',
    ]);
  });

  it('refuses cluster-xyz: two masters are an even etcd count', () => {
    const spec: ProvisioningSpec = {
      masters: [
        { 'master-1': { cpu: 10, memory: '4Gi', 'mac-address': '00:c5:16:05:61:b2' } },
        { 'master-2': { cpu: 10, memory: '4Gi', 'mac-address': '00:c2:14:06:61:b5' } },
      ],
      workers: [{ worker: { cpu: 20, memory: '8Gi', 'mac-address': '00:c6:14:04:61:b2' } }],
    };
    expect(checkSpec(spec).problems).toEqual([
      '2 masters make an even etcd member count, which etcd cannot use for quorum and kubespray ' +
        'refuses: use an odd number of masters (1, 3, 5)',
    ]);
  });
});

describe('assignment by MAC', () => {
  it('matches NICs case-insensitively and keeps the spec order', () => {
    const result = assignRoles(
      {
        masters: [{ m1: { 'mac-address': 'aa:bb:cc:00:00:03' } }],
        workers: [{ w1: { 'mac-address': '00:C2:12:03:62:B1' } }],
      },
      'c1',
      hosts,
    );
    expect(result).toEqual({
      ok: true,
      nodes: [
        {
          label: 'm1',
          roles: ['master'],
          host: { namespace: 'metal3', name: 'h-c' },
          mac: 'aa:bb:cc:00:00:03',
        },
        {
          label: 'w1',
          roles: ['worker'],
          host: { namespace: 'metal3', name: 'h-b' },
          mac: '00:c2:12:03:62:b1',
        },
      ],
    });
  });

  it('makes a label in both lists one dual-role node, and masters work when there are no workers', () => {
    const dual = assignRoles(
      {
        masters: [{ n1: { 'mac-address': '00:c6:14:04:61:b2' } }],
        workers: [{ n1: {} }, { w2: { 'mac-address': '00:c2:12:03:62:b1' } }],
      },
      'c1',
      hosts,
    );
    expect(dual.ok && dual.nodes.map((n) => [n.label, n.roles])).toEqual([
      ['n1', ['master', 'worker']],
      ['w2', ['worker']],
    ]);
    const alone = assignRoles(
      { masters: [{ m: { 'mac-address': '00:c6:14:04:61:b2' } }] },
      'c1',
      hosts,
    );
    expect(alone.ok && alone.nodes[0]!.roles).toEqual(['master', 'worker']);
  });

  it('refuses an unknown MAC, a host of another cluster, and a host that lacks what the node needs', () => {
    const busy = hosts.map((h) => (h.name === 'h-b' ? { ...h, consumer: 'team-b/other' } : h));
    expect(
      problems(
        {
          masters: [{ m1: { 'mac-address': '00:00:00:00:00:99' } }],
          workers: [
            { w1: { 'mac-address': '00:c2:12:03:62:b1' } },
            { w2: { 'mac-address': '00:c6:14:04:61:b2', cpu: 16, qat: true } },
          ],
        },
        'c1',
        busy,
      ),
    ).toEqual([
      'master m1: no BareMetalHost has a NIC with MAC 00:00:00:00:00:99',
      'worker w1: MAC 00:c2:12:03:62:b1 is BareMetalHost metal3/h-b, which serves Provisioning team-b/other',
      'worker w2: MAC 00:c6:14:04:61:b2 is BareMetalHost metal3/h-a, which has 8 CPUs, needs 16, no QAT',
    ]);
  });

  it('says where an unknown MAC was looked for, and how to have another namespace searched', () => {
    const spec = { masters: [{ m1: { 'mac-address': '00:00:00:00:00:99' } }] };
    const searched = (allowed: string[]) =>
      assignRoles(spec, 'team-a/p', hosts, [], { own: 'team-a', allowed });
    expect(searched([])).toEqual({
      ok: false,
      busy: false,
      problems: [
        'master m1: no BareMetalHost in the namespaces searched has a NIC with MAC 00:00:00:00:00:99',
        "BareMetalHosts were looked for in namespace team-a only, the Provisioning's own (HOSTFLOW_BAREMETAL_NAMESPACES on the worker allows no other): to use a host in another namespace, add that namespace to HOSTFLOW_BAREMETAL_NAMESPACES on the worker",
      ],
    });
    expect(searched(['metal3', 'pool-.*'])).toMatchObject({
      problems: [
        expect.any(String),
        "BareMetalHosts were looked for in namespace team-a (the Provisioning's own) and those matching HOSTFLOW_BAREMETAL_NAMESPACES on the worker (metal3, pool-.*): to use a host in another namespace, add that namespace to HOSTFLOW_BAREMETAL_NAMESPACES on the worker",
      ],
    });
  });
});

describe('assignment by resources', () => {
  it('picks the host with the least to spare, deterministically, never one named by a MAC', () => {
    const result = assignRoles(
      {
        masters: [{ m1: { cpu: 16 } }],
        workers: [
          { w1: { cpu: 16, memory: '8Gi' } },
          { w2: { sriov: true } },
          { w3: { qat: true } },
        ],
      },
      'c1',
      hosts,
    );
    // m1 takes h-c, w1 then h-e (the QAT host, least to spare), w2 h-d: none is left for w3.
    // busy: a host freeing up may solve it, so the workflow looks again by itself.
    expect(result).toEqual({
      ok: false,
      problems: ['worker w3: no free BareMetalHost has QAT'],
      busy: true,
    });
    const fits = assignRoles(
      {
        masters: [{ m1: { cpu: 16 } }],
        workers: [{ w1: { memory: '12Gi' } }, { w2: { sriov: true } }],
      },
      'c1',
      hosts,
    );
    expect(fits.ok && fits.nodes.map((n) => [n.label, n.host.name])).toEqual([
      ['m1', 'h-c'],
      ['w1', 'h-a'],
      ['w2', 'h-d'],
    ]);
  });

  it('says what no free host has', () => {
    expect(problems({ masters: [{ m1: { cpu: 64, memory: '1Ti' } }] })).toEqual([
      'master m1: no free BareMetalHost has 64 CPUs, 1Ti of memory',
    ]);
  });
});

describe('spec checks', () => {
  it('refuses what no hosts could fix, naming the field', () => {
    expect(
      checkSpec({
        masters: [{ 'bad label': {} }, { m: { 'mac-address': 'nope', memory: 'lots' } }, { m: {} }],
        workers: [{ m: { 'mac-address': '00:00:00:00:00:01' } }],
        PodSubnet: '10.0.0.0',
        KUDPlugins: ['multus', 'x;rm'],
      }).problems,
    ).toEqual([
      'master label "bad label" is not a host name: use letters, digits, ".", "_" and "-"',
      'master m: mac-address nope is not a MAC address (like 00:c6:14:04:61:b2)',
      'master m: memory lots is not a quantity (like 4Gi)',
      'master label m appears twice in spec.masters: give each node its own label',
      'label m is a master with MAC nope and a worker with MAC 00:00:00:00:00:01: one label is one node; give the worker another label',
      'PodSubnet 10.0.0.0 is not a CIDR (like 10.244.64.0/18)',
      'KUDPlugins entry "x;rm" is not a plugin name',
    ]);
    expect(checkSpec({}).problems).toEqual([
      'spec.masters is empty: a cluster needs at least one master',
    ]);
  });

  it('reads memory quantities as Kubernetes does', () => {
    expect([
      mebibytes('4Gi'),
      mebibytes('8G'),
      mebibytes('512Mi'),
      mebibytes('1e9'),
      mebibytes('4 GB'),
    ]).toEqual([4096, 8e9 / 2 ** 20, 512, 1e9 / 2 ** 20, undefined]);
  });
});
