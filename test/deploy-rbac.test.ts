// The engine runs as its manifests' ServiceAccounts, with exactly their RBAC: the worker, the
// bridge and the OTP service each authenticate with a token of their own account, bound as
// deploy/base binds it (moved into this file's namespaces). A local-platform and a static
// TaskRun are then served and cleaned up, and no process was refused anything: the RBAC is
// enough, and since every grant is checked in deploy-manifests.test.ts, no more than that.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../local-stack/ports.js';
import { waitFor } from '../local-stack/process.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { kubectl, manifestFile, renderManifests, type Manifest } from './support/manifests.js';
import type { TestScope } from './support/scope.js';
import { serviceAccountKubeconfig } from './support/service-account.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';

const MANIFEST_NAMESPACE = 'multi-platform-controller';
const RBAC_KINDS = ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];
const clusterScoped: Manifest[] = [];
let pool: StaticPool;
const health = { worker: '', bridge: '' };

/** The manifests' RBAC for this scope: its engine namespace, cluster-wide names made unique. */
function rbacFor(objects: Manifest[], scope: TestScope): Manifest[] {
  const sfx = uniqueSuffix();
  const renamed = (name: string) => `${name}-${sfx}`;
  return objects
    .filter((o) => RBAC_KINDS.includes(o.kind))
    .map((o) => {
      const copy = structuredClone(o) as Manifest & {
        subjects?: Array<{ namespace?: string }>;
        roleRef?: { kind: string; name: string };
      };
      if (copy.metadata.namespace) {
        expect(copy.metadata.namespace).toBe(MANIFEST_NAMESPACE);
        copy.metadata.namespace = scope.engineNamespace;
      } else {
        copy.metadata.name = renamed(copy.metadata.name);
      }
      for (const subject of copy.subjects ?? []) subject.namespace = scope.engineNamespace;
      if (copy.roleRef?.kind === 'ClusterRole') copy.roleRef.name = renamed(copy.roleRef.name);
      return copy;
    });
}

beforeAll(async () => {
  const objects = await renderManifests('deploy/overlays/example');
  const [workerHealth, bridgeHealth] = await Promise.all([freePort(), freePort()]);
  health.worker = `http://127.0.0.1:${workerHealth}`;
  health.bridge = `http://127.0.0.1:${bridgeHealth}`;
  pool = await createStaticPool('rbac', 1, {
    worker: { HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${workerHealth}` },
    bridge: { HOSTFLOW_HEALTH_ADDRESS: `127.0.0.1:${bridgeHealth}` },
    identities: async (scope) => {
      const rbac = rbacFor(objects, scope);
      clusterScoped.push(...rbac.filter((o) => !o.metadata.namespace));
      await kubectl(['apply', '-f', manifestFile(rbac)]);
      const kubeconfigOf = (component: string) =>
        serviceAccountKubeconfig(scope.kube.kc, scope.engineNamespace, `hostflow-${component}`);
      return {
        worker: await kubeconfigOf('worker'),
        bridge: await kubeconfigOf('bridge'),
        otp: await kubeconfigOf('otp'),
      };
    },
  });
  await pool.scope.setHostConfig({
    'local-platforms': 'linux/amd64',
    ...pool.hostEntries([{ host: 0 }]),
  });
});

afterAll(async () => {
  await pool?.dispose();
  if (clusterScoped.length > 0)
    await kubectl(['delete', '--ignore-not-found', '-f', manifestFile(clusterScoped)]);
});

/** What each process wrote to its log (the files the test support gives them). */
function logs(): Record<string, string> {
  const dir = join(testEnv('stateDir'), 'logs');
  const { namespace } = pool.scope;
  return Object.fromEntries(
    ['worker', 'bridge', 'otp'].map((kind) => [
      kind,
      readFileSync(join(dir, `${kind}-${namespace}.log`), 'utf8'),
    ]),
  );
}

describe('the engine as its manifests deploy it', () => {
  it('lets the bridge only read and watch (kubectl auth can-i --list as its account)', async () => {
    const { stdout } = await kubectl([
      'auth',
      'can-i',
      '--list',
      `--as=system:serviceaccount:${pool.scope.engineNamespace}:hostflow-bridge`,
      '-n',
      pool.scope.engineNamespace,
    ]);
    const grants = stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => ({
        resource: line.split(/\s+/)[0]!,
        verbs: /\[([^\]]*)\]\s*$/.exec(line)![1]!.split(' '),
      }))
      // Every account may review its own rights; that is all it may create.
      .filter((g) => !g.resource.startsWith('selfsubject'));
    expect(grants.map((g) => g.resource)).toEqual(
      expect.arrayContaining(['taskruns.tekton.dev', 'configmaps', 'machines.cluster.x-k8s.io']),
    );
    for (const { resource, verbs } of grants)
      expect({
        resource,
        verbs: verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
      }).toEqual({ resource, verbs: [] });
  });

  it('serves a local-platform TaskRun and cleans it up', async () => {
    const { taskRuns } = pool.scope;
    await taskRuns.create({ name: 'local', platform: 'linux/amd64' });
    expect(await taskRuns.waitForSecret('local')).toEqual({ host: 'localhost' });
    await taskRuns.complete('local');
    await taskRuns.waitForSecretGone('local');
  });

  it('serves a static TaskRun with a build user and an OTP, and cleans it up', async () => {
    const { taskRuns } = pool.scope;
    const tr = await taskRuns.create({ name: 'static', platform: pool.platform });
    const secret = await taskRuns.waitForSecret(tr.name);
    expect(secret.host).toMatch(/^u-[0-9a-f]{12}@/);
    const user = secret.host!.split('@')[0]!;
    expect(await pool.buildUsers(pool.hosts[0]!)).toContain(user);
    const reasons = async () =>
      (await pool.scope.kube.core.listNamespacedEvent({ namespace: pool.scope.namespace })).items
        .filter((e) => e.involvedObject.uid === tr.uid)
        .map((e) => e.reason);
    await taskRuns.complete(tr.name);
    await taskRuns.waitForSecretGone(tr.name);
    await waitFor('the build user to be removed', async () =>
      (await pool.buildUsers(pool.hosts[0]!)).includes(user) ? undefined : true,
    );
    await waitFor('the CleanedUp Event', async () =>
      (await reasons()).includes('CleanedUp') ? true : undefined,
    );
    expect(await reasons()).toContain('HostAllocated');
  });

  it('was refused nothing: no process logged a forbidden call', () => {
    for (const [kind, log] of Object.entries(logs())) {
      expect(log.length).toBeGreaterThan(0);
      const refused = log.split('\n').filter((line) => /forbidden/i.test(line));
      expect({ kind, refused }).toEqual({ kind, refused: [] });
    }
  });

  it('answers its probes: live and ready once it serves', async () => {
    for (const base of [health.worker, health.bridge]) {
      const [live, ready, other] = await Promise.all(
        ['/healthz', '/readyz', '/metrics'].map((path) => fetch(`${base}${path}`)),
      );
      expect([live!.status, await live!.text()]).toEqual([200, 'ok\n']);
      expect([ready!.status, await ready!.text()]).toEqual([200, 'ok\n']);
      expect(other!.status).toBe(404);
    }
  });
});
