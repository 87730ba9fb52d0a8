// @kubernetes/client-node 2 builds a new undici Agent for every request, so without
// runtime/kube-connections.ts every API call opens its own TLS connection. With it, calls and
// watches from one process share keep-alive connections, against the real kube-apiserver.
import { describe, expect, it } from '@jest/globals';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { shareConnections } from '../runtime/kube-connections.js';
import { testEnv } from './support/env.js';

function sharedClient() {
  const kc = new KubeConfig();
  kc.loadFromFile(testEnv('kubeconfig'));
  const shared = shareConnections(kc);
  return { shared, core: shared.makeApiClient(CoreV1Api) };
}

describe('connections to the API server', () => {
  it('are reused across sequential calls', async () => {
    const { shared, core } = sharedClient();
    const plain = new KubeConfig();
    plain.loadFromFile(testEnv('kubeconfig'));
    const unshared = plain.makeApiClient(CoreV1Api);
    const t0 = performance.now();
    for (let i = 0; i < 40; i++) await unshared.listNamespace({ limit: 1 });
    const t1 = performance.now();
    for (let i = 0; i < 40; i++) await core.listNamespace({ limit: 1 });
    const t2 = performance.now();
    console.log(
      `40 sequential calls: ${Math.round(t1 - t0)} ms with a connection each, ` +
        `${Math.round(t2 - t1)} ms over ${shared.opened} shared connection(s)`,
    );
    expect(shared.opened).toBe(1);
  });

  it('are shared by concurrent calls and a watch, a few sockets for many requests', async () => {
    const { shared, core } = sharedClient();
    const controller = await new Watch(shared).watch(
      '/api/v1/namespaces',
      { timeoutSeconds: 30 },
      () => undefined,
      () => undefined,
    );
    try {
      for (let round = 0; round < 5; round++) {
        await Promise.all(Array.from({ length: 20 }, () => core.listNamespace({ limit: 1 })));
      }
      console.log(`100 calls, 20 at a time, and a watch: ${shared.opened} connection(s)`);
      expect(shared.opened).toBeGreaterThanOrEqual(1);
      expect(shared.opened).toBeLessThanOrEqual(21); // 100 requests, at most 20 at a time + 1 watch
    } finally {
      controller.abort();
    }
  });
});
