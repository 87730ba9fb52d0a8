// Bootstrap data for test Machines: a shell script that stands in for `kubeadm join` and a
// kubelet, which cannot run on these hosts. Run on the Machine's host, it registers a Node named
// after the Machine with the Machine's providerID, marks it Ready through the status subresource,
// and writes Cluster API's sentinel, all through the real API server.
//
// The hosts live in their own network namespaces and reach this machine at the bridge address
// only, while the API server listens on loopback: a TCP forwarder on the bridge carries the
// connection through unchanged (TLS ends at the API server, checked against its CA by name).
// The script authenticates as a ServiceAccount that may only register Nodes and their status.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { bridgeUp } from '../../local-stack/netns.js';
import { BOOTSTRAP_SENTINEL } from '../../shared/machine-api.js';
import type { TestScope } from './scope.js';
import { uniqueSuffix } from './env.js';

export interface NodeJoiner {
  /** The bootstrap script (a Secret's `value`); it reads PROVIDER_ID and MACHINE_NAME. */
  script(): string;
  dispose(): Promise<void>;
}

export async function createNodeJoiner(scope: TestScope): Promise<NodeJoiner> {
  const { kc, core } = scope.kube;
  const cluster = kc.getCurrentCluster()!;
  const api = new URL(cluster.server);
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString()
    : readFileSync(cluster.caFile!, 'utf8');

  const name = `node-joiner-${uniqueSuffix()}`;
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({
    namespace: scope.namespace,
    body: { metadata: { name } },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name },
      rules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['create', 'get', 'patch'] },
        { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: scope.namespace }],
    },
  });
  const token = (
    await core.createNamespacedServiceAccountToken({
      name,
      namespace: scope.namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    })
  ).status!.token!;

  const bridgeAddress = await bridgeUp(); // what the hosts route to
  const sockets = new Set<Socket>();
  const forwarder = createServer((client) => {
    const upstream = createConnection({ host: api.hostname, port: Number(api.port) });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined); // the other side's close ends the pair
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    forwarder.once('error', reject);
    forwarder.listen(0, bridgeAddress, resolve);
  });
  const port = (forwarder.address() as AddressInfo).port;
  const apiHostPort = `${api.hostname}:${api.port}`;

  return {
    script: () => joinScript({ ca, token, apiHostPort, via: `${bridgeAddress}:${port}` }),
    async dispose() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => forwarder.close(() => resolve()));
      await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
      await rbac.deleteClusterRole({ name }).catch(() => undefined);
    },
  };
}

function joinScript(o: { ca: string; token: string; apiHostPort: string; via: string }): string {
  return `#!/bin/sh
# Stands in for kubeadm join and a kubelet (see test/support/node-join.ts).
set -eu
: "\${PROVIDER_ID:?}" "\${MACHINE_NAME:?}"
ca=$(mktemp)
trap 'rm -f "$ca"' EXIT
cat > "$ca" <<'CA'
${o.ca.trim()}
CA
api() {
  curl -sS --fail-with-body --max-time 20 --cacert "$ca" \\
    --connect-to "${o.apiHostPort}:${o.via}" \\
    -H 'Authorization: Bearer ${o.token}' "$@"
}
node="{\\"apiVersion\\":\\"v1\\",\\"kind\\":\\"Node\\",\\"metadata\\":{\\"name\\":\\"$MACHINE_NAME\\"},\\"spec\\":{\\"providerID\\":\\"$PROVIDER_ID\\"}}"
if ! api -o /dev/null https://${o.apiHostPort}/api/v1/nodes/"$MACHINE_NAME" 2>/dev/null; then
  api -o /dev/null -H 'Content-Type: application/json' -X POST -d "$node" https://${o.apiHostPort}/api/v1/nodes
fi
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The conditions a kubelet reports: Cluster API core's NodeHealthy waits for every one of them.
cond() { printf '{"type":"%s","status":"%s","reason":"%s","message":"stand-in kubelet","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}' "$1" "$2" "$3" "$now" "$now"; }
ready="{\\"status\\":{\\"conditions\\":[$(cond Ready True KubeletReady),$(cond MemoryPressure False KubeletHasSufficientMemory),$(cond DiskPressure False KubeletHasNoDiskPressure),$(cond PIDPressure False KubeletHasSufficientPID)]}}"
api -o /dev/null -H 'Content-Type: application/merge-patch+json' -X PATCH -d "$ready" \\
  https://${o.apiHostPort}/api/v1/nodes/"$MACHINE_NAME"/status
mkdir -p "$(dirname ${BOOTSTRAP_SENTINEL})"
touch ${BOOTSTRAP_SENTINEL}
echo "joined as Node $MACHINE_NAME"
`;
}
