// The bridge's list-watch against the real kube-apiserver: a watch outlives the client's fixed
// 30 s request timeout by resuming from its resourceVersion, not by listing everything again,
// and sees every change across those reconnects.
import { afterAll, describe, expect, it } from '@jest/globals';
import type { V1Namespace } from '@kubernetes/client-node';
import { ListWatch } from '../k8s-bridge/list-watch.js';
import { waitFor } from '../local-stack/process.js';
import { kube, uniqueSuffix } from './support/env.js';

const { kc, core } = kube();
const label = `hostflow-list-watch-${uniqueSuffix()}`;
const created: string[] = [];

afterAll(async () => {
  for (const name of created) await core.deleteNamespace({ name }).catch(() => undefined);
});

async function createNamespace(): Promise<string> {
  const name = `lw-${uniqueSuffix()}`;
  await core.createNamespace({ body: { metadata: { name, labels: { [label]: 'yes' } } } });
  created.push(name);
  return name;
}

describe('a list-watch', () => {
  it('resumes across the client timeout without relisting, and misses nothing', async () => {
    let lists = 0;
    const seen = new Set<string>();
    const logs: string[] = [];
    const watch = new ListWatch<V1Namespace>({
      name: 'namespace watch',
      kubeConfig: kc,
      watchPath: '/api/v1/namespaces',
      watchParams: { labelSelector: label },
      resyncMs: 10 * 60_000,
      log: (line) => logs.push(line),
      list: async (continueToken) => {
        lists += 1;
        const page = await core.listNamespace({ labelSelector: label, _continue: continueToken });
        return {
          items: page.items,
          resourceVersion: page.metadata!.resourceVersion!,
          continueToken: page.metadata?._continue,
        };
      },
      onListStart: () => undefined,
      onListPage: (items) => items.forEach((ns) => seen.add(ns.metadata!.name!)),
      onListDone: () => undefined,
      onEvent: (_type, ns) => void seen.add(ns.metadata!.name!),
    });
    const running = watch.run();
    try {
      const first = await createNamespace();
      await waitFor('the first namespace seen', async () => seen.has(first) || undefined);
      // Past the client's 30 s timeout, and past the server's end of the first watch.
      await new Promise((resolve) => setTimeout(resolve, 35_000));
      const second = await createNamespace();
      await waitFor('the second namespace seen', async () => seen.has(second) || undefined);
      expect(lists).toBe(1);
      expect(logs.filter((line) => line.includes('retrying'))).toEqual([]);
    } finally {
      watch.stop();
      await running;
    }
  }, 90_000);
});
