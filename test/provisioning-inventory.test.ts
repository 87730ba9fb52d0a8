// The kubespray inventory and group vars a Provisioning renders (pure), against golden files in
// test/golden/provisioning. HOSTFLOW_UPDATE_GOLDEN=1 rewrites them after a deliberate change.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../local-stack/paths.js';
import type { HostInventory, ProvisioningSpec } from '../shared/bpa-api.js';
import { renderInventory } from '../activities/ansible/inventory-file.js';
import { inventoryNodes, type InventoryNode } from '../shared/inventory.js';
import { renderGroupVars } from '../workflows/provisioning/inventory.js';
import { assignRoles } from '../workflows/provisioning/roles.js';

const GOLDEN = join(REPO_ROOT, 'test/golden/provisioning');

function golden(file: string, actual: string): void {
  const path = join(GOLDEN, file);
  if (process.env.HOSTFLOW_UPDATE_GOLDEN === '1') writeFileSync(path, actual);
  if (!existsSync(path)) throw new Error(`${path} is missing: HOSTFLOW_UPDATE_GOLDEN=1 writes it`);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

const hosts: HostInventory[] = Array.from({ length: 5 }, (_, i) => ({
  namespace: 'metal3',
  name: `host-${i + 1}`,
  nics: [{ mac: `00:c6:14:04:61:b${i}`, ip: `172.22.0.${51 + i}` }],
  cpus: 16,
  ramMebibytes: 32_768,
  sriov: false,
  qat: false,
}));

/** The spec assigned over `hosts`, each node with its host's NIC IP. */
function nodesOf(spec: ProvisioningSpec): InventoryNode[] {
  const result = assignRoles(spec, 'cluster-abc', hosts);
  if (!result.ok) throw new Error(result.problems.join('\n'));
  return result.nodes.map((node) => ({
    label: node.label,
    roles: node.roles,
    ip: hosts.find((h) => h.name === node.host.name)!.nics[0]!.ip!,
  }));
}

/** Those nodes as the run's bundle renders them. */
const inventoryOf = (spec: ProvisioningSpec): string => renderInventory(nodesOf(spec));

describe('the kubespray inventory', () => {
  it("renders the BPA operator's sample cluster-abc, with its worker given a MAC of its own", () => {
    golden(
      'seed-cluster-abc.ini',
      inventoryOf({
        masters: [{ master: { 'mac-address': '00:c6:14:04:61:b0' } }],
        workers: [
          { 'worker-1': { 'mac-address': '00:c6:14:04:61:b1' } },
          { 'worker-2': { 'mac-address': '00:c6:14:04:61:b2' } },
        ],
      }),
    );
  });

  it("renders the BPA operator's sample cluster-xyz, with a third master to make the etcd count odd", () => {
    golden(
      'seed-cluster-xyz.ini',
      inventoryOf({
        masters: [
          { 'master-1': { cpu: 10, memory: '4Gi', 'mac-address': '00:c6:14:04:61:b0' } },
          { 'master-2': { cpu: 10, memory: '4Gi', 'mac-address': '00:c6:14:04:61:b1' } },
          { 'master-3': { cpu: 10, memory: '4Gi' } },
        ],
        workers: [{ worker: { cpu: 16, memory: '8Gi', 'mac-address': '00:c6:14:04:61:b4' } }],
      }),
    );
  });

  it('renders a lone master that also works', () => {
    golden('single-master.ini', inventoryOf({ masters: [{ master: {} }] }));
  });

  it('renders a dual-role node once under [all], in both groups', () => {
    golden(
      'dual-role.ini',
      inventoryOf({
        masters: [{ 'node-1': { 'mac-address': '00:c6:14:04:61:b0' } }],
        workers: [{ 'node-1': {} }, { 'node-2': {} }],
      }),
    );
  });

  it('is read back from the text a run started before the inventory was data carries', () => {
    const dualRole: ProvisioningSpec = {
      masters: [{ 'node-1': { 'mac-address': '00:c6:14:04:61:b0' } }],
      workers: [{ 'node-1': {} }, { 'node-2': {} }],
    };
    for (const spec of [{ masters: [{ master: {} }] }, dualRole]) {
      const nodes = nodesOf(spec);
      expect(inventoryNodes(renderInventory(nodes))).toEqual(nodes);
    }
    const withUser: InventoryNode[] = [
      { label: 'a', roles: ['master', 'worker'], ip: '10.0.0.1', user: 'core' },
    ];
    expect(inventoryNodes(renderInventory(withUser))).toEqual(withUser);
  });
});

describe('the group vars', () => {
  it('carry the cluster name, the pod subnet and the plugins', () => {
    golden(
      'group-vars-k8s_cluster.yml',
      renderGroupVars({
        cluster: 'cluster-abc',
        podSubnet: '10.244.64.0/18',
        plugins: ['multus', 'ovn4nfv'],
      }),
    );
    expect(renderGroupVars({ cluster: 'c' })).toBe(
      'cluster_name: "c"\nkubeconfig_localhost: true\n',
    );
  });
});
