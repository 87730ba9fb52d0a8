// The kubeconfig files the local stack writes for its clients (the admin, the engine, the local
// node's kubelet and kube-proxy): one cluster, one user, readable by the owner only.
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

/** How the user proves who it is: a bearer token, or a client certificate and its key (files). */
export type KubeCredentials =
  { token: string } | { 'client-certificate': string; 'client-key': string };

export function writeKubeconfig(
  path: string,
  to: { server: string; caFile: string; user: string; credentials: KubeCredentials },
): void {
  const { server, caFile, user, credentials } = to;
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'hostflow-local', cluster: { server, 'certificate-authority': caFile } }],
      users: [{ name: user, user: credentials }],
      contexts: [{ name: 'hostflow-local', context: { cluster: 'hostflow-local', user } }],
      'current-context': 'hostflow-local',
    }),
    { mode: 0o600 },
  );
}
