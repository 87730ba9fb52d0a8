// The dynamic and dynamic-pool scenarios every cloud provider must pass, end to end: real
// bridge and worker processes, the OTP service, and the provider's cloud (moto or the IBM
// double) whose instances become real sshd hosts. Each provider's test file calls
// describeCloudPlatform once. After all scenarios, no VM outlives its workflow.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtpService, type OtpService } from '../../local-stack/otp-service.js';
import { waitFor } from '../../local-stack/process.js';
import { ANNOTATIONS, LABELS } from '../../platform-config/contract.js';
import { WORKFLOW_ID } from '../../shared/workflow-ids.js';
import { startBridge, startWorker, type EngineProcess } from './engine.js';
import { testEnv, uniqueSuffix } from './env.js';
import { historyText } from './history-text.js';
import { redeemWithCurl } from './otp.js';
import { SA } from '../../shared/search-attributes.js';
import { createScope, type TestScope } from './scope.js';
import { lockedByEngine, secretDeleter } from './secret-deleter.js';
import { sshCommand } from './ssh.js';
import { startVmCloud, type VmCloud } from './vm-cloud.js';
import { describeVmHostKeys } from './cloud-host-keys.js';
import { generateEd25519KeyPair } from '../../activities/ssh/keys.js';

export interface CloudScenarioOptions {
  kind: VmCloud['kind'];
  /** A /20 (or /21) of its own inside 10.231.128.0/17. */
  subnetCidr: string;
}

const GC_ENV = { HOSTFLOW_CLOUD_GC_INTERVAL_SECONDS: '10', HOSTFLOW_CLOUD_GC_GRACE_SECONDS: '5' };

export function describeCloudPlatform({ kind, subnetCidr }: CloudScenarioOptions): void {
  const sfx = uniqueSuffix();
  const platform = `linux/${kind}-${sfx}`;
  const poolPlatform = `linux/${kind}p-${sfx}`;
  /** A pool whose VMs refuse the admin key it is configured with (ssh-secret refused-ssh). */
  const refusedPlatform = `linux/${kind}r-${sfx}`;
  const refusedTag = `hf${kind}r-${sfx}`;
  const cfg = `dynamic.linux-${kind}-${sfx}`;
  const poolCfg = `dynamic.linux-${kind}p-${sfx}`;
  // IBM instance names start with the owner tag: lowercase, starting with a letter.
  const ownerTag = `hf${kind}-${sfx}`;
  const poolTag = `hf${kind}p-${sfx}`;
  let scope: TestScope;
  let cloud: VmCloud;
  let otp: OtpService;
  let worker: EngineProcess;
  let bridge: EngineProcess;

  const hostConfig = (dynamic: Record<string, string> = {}, pool: Record<string, string> = {}) => {
    const keys = (prefix: string, tag: string, own: Record<string, string>) => ({
      [`${prefix}.type`]: kind,
      ...Object.fromEntries(
        Object.entries(cloud.providerKeys).map(([key, value]) => [`${prefix}.${key}`, value]),
      ),
      [`${prefix}.ssh-secret`]: 'vm-ssh',
      [`${prefix}.instance-tag`]: tag,
      [`${prefix}.max-instances`]: '3',
      [`${prefix}.check-interval`]: '1',
      [`${prefix}.allocation-timeout`]: '60',
      ...Object.fromEntries(Object.entries(own).map(([key, value]) => [`${prefix}.${key}`, value])),
    });
    const refused = keys(`dynamic.linux-${kind}r-${sfx}`, refusedTag, {
      concurrency: '2',
      'max-age': '1',
      'ssh-secret': 'refused-ssh',
    });
    return {
      'dynamic-platforms': platform,
      'dynamic-pool-platforms': `${poolPlatform},${refusedPlatform}`,
      ...refused,
      ...(kind === 'aws' ? { 'additional-instance-tags': 'team=builds' } : {}),
      ...keys(cfg, ownerTag, dynamic),
      ...keys(poolCfg, poolTag, { concurrency: '2', 'max-age': '1', ...pool }),
    };
  };
  const live = () => cloud.liveInstances(ownerTag);
  const livePool = () => cloud.liveInstances(poolTag);
  const instanceOf = async (name: string) =>
    (await scope.taskRuns.get(name)).metadata.annotations?.[ANNOTATIONS.cloudInstanceId];
  const finish = async (...names: string[]) => {
    for (const name of names) await scope.taskRuns.complete(name);
    for (const name of names) await scope.taskRuns.waitForSecretGone(name, 90_000);
  };
  const noneLeft = (list: () => Promise<string[]>, what: string) =>
    waitFor(what, async () => ((await list()).length === 0 ? true : undefined), {
      timeoutMs: 90_000,
    });

  /** Runs `body` with these keys changed in host-config, then puts the test's config back. */
  const withHostConfig = async (
    dynamic: Record<string, string>,
    pool: Record<string, string>,
    body: () => Promise<void>,
  ): Promise<void> => {
    await scope.setHostConfig(hostConfig(dynamic, pool));
    try {
      await body();
    } finally {
      await scope.setHostConfig(hostConfig());
    }
  };

  beforeAll(async () => {
    scope = await createScope(`cloud-${kind}`);
    cloud = await startVmCloud(kind, { name: `${kind}-${sfx}`, subnetCidr, bootDelayMs: 1500 });
    for (const [name, stringData] of Object.entries(cloud.secrets)) {
      await scope.kube.core.createNamespacedSecret({
        namespace: scope.engineNamespace,
        body: { metadata: { name }, stringData },
      });
    }
    await scope.setHostConfig(hostConfig());
    otp = await startOtpService({
      stateDir: join(testEnv('stateDir'), `otp-${kind}-${sfx}`),
      kubeconfig: testEnv('kubeconfig'),
      namespace: scope.otpNamespace,
    });
    worker = await startWorker(scope, { ...otp.workerEnv, ...cloud.workerEnv, ...GC_ENV });
    bridge = await startBridge(scope);
  });

  afterAll(async () => {
    await Promise.all([bridge?.stop(), worker?.stop(), otp?.stop()]);
    await cloud?.stop();
    await scope?.dispose();
  });

  describe(`a dynamic ${kind} platform`, () => {
    it('launches a VM, serves a build user that logs in with the redeemed key, and terminates the VM', async () => {
      const tr = await scope.taskRuns.create({ name: 'one-vm', platform });
      const secret = await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const id = await instanceOf(tr.name);
      const meta = (await scope.taskRuns.get(tr.name)).metadata;
      expect(meta.labels?.[LABELS.assignedHost]).toBe(id);
      // as the original wrote it, and static TaskRuns carry it: seconds since the epoch
      const started = Number(meta.annotations?.[ANNOTATIONS.allocationStartTime]);
      expect(Math.abs(started - Date.now() / 1000)).toBeLessThan(120);
      // What terminating the VM needs is locked while it lives, against a tenant's delete.
      const credentialsSecret = Object.keys(cloud.secrets).find((name) => name !== 'vm-ssh')!;
      const tenantDeletes = await secretDeleter(scope);
      for (const name of [credentialsSecret, 'vm-ssh']) {
        expect(await tenantDeletes(name)).toMatch(
          lockedByEngine(scope, name, WORKFLOW_ID.allocator(platform)),
        );
      }
      const address = meta.annotations?.[ANNOTATIONS.cloudAddress];
      const [user, host] = secret.host!.split('@') as [string, string];
      expect(host).toBe(address);
      expect(cloud.hosts().get(id!)?.address).toBe(address);

      const dir = mkdtempSync(join(testEnv('stateDir'), 'build-'));
      for (const key of ['otp', 'otp-ca', 'otp-server'])
        writeFileSync(join(dir, key), secret[key]!);
      expect((await redeemWithCurl(dir)).exitCode).toBe(0);
      const privateKey = readFileSync(join(dir, 'id_rsa'), 'utf8');
      const login = await sshCommand({ address: host, user, privateKey }, 'whoami');
      expect(login.stdout.trim()).toBe(user);

      await finish(tr.name);
      expect(await live()).not.toContain(id);
      for (const name of [credentialsSecret, 'vm-ssh']) {
        await waitFor(`${name} to be unlocked once the VM is gone`, async () =>
          (await tenantDeletes(name)) === 'allowed' ? true : undefined,
        );
      }
      // No key, OTP or cloud credential in the TaskRun's or the allocator's history.
      const keyBody = privateKey.split('\n').find((line) => line && !line.startsWith('-----'))!;
      const credentials = Object.values(cloud.secrets)
        .flatMap((data) => Object.values(data))
        .filter((value) => value.length > 12); // moto's placeholder "testing" is no secret
      for (const workflowId of [
        WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid),
        WORKFLOW_ID.allocator(platform),
      ]) {
        const text = await historyText(scope.temporal.client, workflowId);
        expect(text).toContain(platform);
        for (const secretValue of [secret.otp!, keyBody, 'PRIVATE KEY', ...credentials]) {
          expect(text).not.toContain(secretValue);
        }
      }
    });

    it('never runs more than max-instances VMs for 10 concurrent TaskRuns, serving them all', async () => {
      const names = Array.from({ length: 10 }, (_, i) => `cap-${i}`);
      let maxLive = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          maxLive = Math.max(maxLive, (await live()).length);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await Promise.all(names.map((name) => scope.taskRuns.create({ name, platform })));
      const served = new Set<string>();
      await waitFor(
        'all 10 TaskRuns served, 3 at a time',
        async () => {
          for (const name of names) {
            if (served.has(name) || !(await scope.taskRuns.secret(name))) continue;
            served.add(name);
            await scope.taskRuns.complete(name); // frees its VM for the next in line
          }
          return served.size === names.length ? true : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 200 },
      );
      for (const name of names) await scope.taskRuns.waitForSecretGone(name, 90_000);
      sampling = false;
      await sampler;
      expect(maxLive).toBeLessThanOrEqual(3);
      expect(maxLive).toBe(3);
      await noneLeft(live, 'every VM terminated');
    });

    it('replaces a VM that fails while booting', async () => {
      await withHostConfig({ 'allocation-timeout': '20' }, {}, async () => {
        cloud.hangBoots(1); // keeps the first VM booting long enough to fail it
        const tr = await scope.taskRuns.create({ name: 'fails-booting', platform });
        const first = await waitFor('the first VM', () => instanceOf(tr.name));
        await cloud.failInstance(first);
        await scope.taskRuns.waitForSecret(tr.name, 90_000);
        const second = await instanceOf(tr.name);
        expect(second).not.toBe(first);
        expect(await live()).not.toContain(first);
        await finish(tr.name);
      });
    });

    it('times out a VM that never answers, terminates it, and ends with an error Secret', async () => {
      await withHostConfig({ 'allocation-timeout': '3' }, {}, async () => {
        cloud.hangBoots(3);
        const tr = await scope.taskRuns.create({ name: 'never-boots', platform });
        const data = await scope.taskRuns.waitForSecret(tr.name, 90_000);
        expect(data.error).toMatch(/VM became usable after 3 launches/);
        expect(data.error).toMatch(/did not answer SSH within allocation-timeout \(3s\)/);
        await noneLeft(live, 'the hung VMs terminated');
        await finish(tr.name);
      });
    });

    if (kind === 'aws') {
      it('treats a VM it cannot describe as not up: replaced at allocation-timeout, the build served', async () => {
        await withHostConfig({ 'allocation-timeout': '3' }, {}, async () => {
          const tr = await scope.taskRuns.create({ name: 'describe-fails', platform });
          const first = await waitFor('its first VM', () => instanceOf(tr.name));
          cloud.refuseDescribes!(true); // throttled for longer than allocation-timeout
          try {
            await waitFor('the first VM given up and terminated', async () =>
              (await live()).includes(first) ? undefined : true,
            );
          } finally {
            cloud.refuseDescribes!(false);
          }
          const data = await scope.taskRuns.waitForSecret(tr.name, 90_000);
          expect(data.error).toBeUndefined();
          expect(data.otp).toBeDefined();
          expect(await instanceOf(tr.name)).not.toBe(first);
          const events = await scope.kube.core.listNamespacedEvent({ namespace: scope.namespace });
          const failed = events.items.find(
            (e) => e.involvedObject.uid === tr.uid && e.reason === 'ProvisioningFailed',
          );
          expect(failed?.message).toMatch(
            new RegExp(`the cloud did not say how VM ${first} is doing: .*limit`, 'i'),
          );
          await finish(tr.name);
          await noneLeft(live, 'its VMs terminated');
        });
      });
    }

    it('keeps retrying a terminate the cloud refuses for a while, until the VM is gone', async () => {
      const tr = await scope.taskRuns.create({ name: 'refused-terminate', platform });
      await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const id = await instanceOf(tr.name);
      cloud.refuseCalls(4);
      await finish(tr.name);
      expect(await live()).not.toContain(id);
      const history = await scope.temporal.client.workflow
        .getHandle(WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid))
        .fetchHistory();
      const attempts = history
        .events!.filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
      expect(Math.max(...attempts)).toBeGreaterThan(1);
    });

    it('keeps a VM whose terminate fails for good (credentials deleted) until it is gone', async () => {
      const tr = await scope.taskRuns.create({ name: 'lost-creds', platform });
      await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const id = await instanceOf(tr.name);
      const [credentials, data] = Object.entries(cloud.secrets).find(
        ([name]) => name !== 'vm-ssh',
      )!;
      const core = scope.kube.core;
      // As the engine's own identity (the tests share it), which the Lock on them lets through.
      await core.deleteNamespacedSecret({ name: credentials, namespace: scope.engineNamespace });
      await scope.taskRuns.complete(tr.name);
      await waitFor('a TerminateFailed Event', async () =>
        (await core.listNamespacedEvent({ namespace: scope.namespace })).items.some(
          (e) => e.reason === 'TerminateFailed' && e.message?.includes(id!),
        )
          ? true
          : undefined,
      );
      expect(await live()).toContain(id);
      await core.createNamespacedSecret({
        namespace: scope.engineNamespace,
        body: { metadata: { name: credentials }, stringData: data },
      });
      await scope.taskRuns.waitForSecretGone(tr.name, 90_000);
      expect(await live()).not.toContain(id);
    });

    it('turns a permanent cloud error into an error Secret that says what to fix, for both kinds', async () => {
      const credentials = kind === 'aws' ? 'aws-secret' : 'secret';
      const missing = { [credentials]: 'no-such-secret' };
      await withHostConfig(missing, missing, async () => {
        const names = ['bad-creds', 'bad-creds-pool'];
        await scope.taskRuns.create({ name: names[0]!, platform });
        await scope.taskRuns.create({ name: names[1]!, platform: poolPlatform });
        for (const name of names) {
          const data = await scope.taskRuns.waitForSecret(name, 90_000);
          expect(data.error).toContain(`Secret ${scope.engineNamespace}/no-such-secret not found`);
          expect(data.error).toContain(`.${credentials} in host-config`);
        }
        expect(await live()).toEqual([]);
        expect(await livePool()).toEqual([]);
        await finish(...names);
      });
    });

    it('collects a VM with its owner tag that no workflow owns, and spares claimed ones', async () => {
      const tr = await scope.taskRuns.create({ name: 'claimed', platform });
      await scope.taskRuns.waitForSecret(tr.name, 60_000);
      const claimed = await instanceOf(tr.name);
      const orphan = await cloud.seedOrphan(ownerTag);
      await waitFor('the orphan collected', async () =>
        (await live()).includes(orphan) ? undefined : true,
      );
      expect(await live()).toContain(claimed);
      const events = await scope.kube.core.listNamespacedEvent({
        namespace: scope.engineNamespace,
      });
      expect(
        events.items.some((e) => e.reason === 'OrphanVmCollected' && e.message?.includes(orphan)),
      ).toBe(true);
      // The GC's history records what it collected, not every claim of every build in flight.
      // The VM is gone before the pass that terminated it returns, so wait for its result.
      const gc = await waitFor('the pass that collected it in the GC history', async () => {
        const text = await historyText(
          scope.temporal.client,
          WORKFLOW_ID.cloudGc(scope.engineNamespace),
        );
        return text.includes(orphan) ? text : undefined;
      });
      expect(gc).not.toContain(`${tr.uid}-1`);
      await finish(tr.name);
    });

    it('launches exactly one VM for a TaskRun whose worker is killed mid-launch', async () => {
      // SIGKILL as the launch request reaches the cloud: the VM is created, its answer is lost.
      let killed: Promise<void> | undefined;
      cloud.onNextLaunch(() => void (killed = worker.kill()));
      const tr = await scope.taskRuns.create({ name: 'killed-worker', platform });
      await waitFor('the worker killed mid-launch', async () => killed && (await killed, true), {
        timeoutMs: 60_000,
      });
      await waitFor('the VM it launched', async () => ((await live()).length ? true : undefined));
      worker = await startWorker(scope, { ...otp.workerEnv, ...cloud.workerEnv, ...GC_ENV });
      await scope.taskRuns.waitForSecret(tr.name, 120_000);
      expect(await live()).toEqual([await instanceOf(tr.name)]);
      await finish(tr.name);
      await noneLeft(live, 'the VM terminated');
    });
  });

  describe(`a dynamic-pool ${kind} platform`, () => {
    it('shares VMs, scales up only as far as waiters need, retires them at max-age and scales to zero', async () => {
      // 3 TaskRuns with 2 slots per VM need exactly 2 VMs, however they arrive.
      const names = ['p-a', 'p-b', 'p-c'];
      await Promise.all(
        names.map((name) => scope.taskRuns.create({ name, platform: poolPlatform })),
      );
      for (const name of names) await scope.taskRuns.waitForSecret(name, 90_000);
      const vms = await livePool();
      expect(vms).toHaveLength(2);
      const hostOf = async (name: string) =>
        (await scope.taskRuns.get(name)).metadata.labels?.[LABELS.assignedHost];
      const used = await Promise.all(names.map(hostOf));
      expect(new Set(used)).toEqual(new Set(vms));

      // A later TaskRun reuses a VM with a free slot instead of launching.
      await finish('p-a');
      await scope.taskRuns.create({ name: 'p-d', platform: poolPlatform });
      await scope.taskRuns.waitForSecret('p-d', 60_000);
      expect(vms).toContain(await hostOf('p-d'));
      expect(await livePool()).toHaveLength(2);
      await finish('p-b', 'p-c', 'p-d');

      // max-age is 1 minute: with no further traffic every VM is terminated.
      await noneLeft(livePool, 'the pool to scale to zero at max-age');
      await scope.taskRuns.create({ name: 'p-e', platform: poolPlatform });
      await scope.taskRuns.waitForSecret('p-e', 60_000);
      const fresh = await hostOf('p-e');
      expect(vms).not.toContain(fresh);
      await finish('p-e');
    });

    if (kind === 'aws') {
      it('answers builds with an error when no VM takes a build, instead of replacing VMs forever', async () => {
        // A valid key the VMs' admin does not accept: provisioning fails on every VM.
        await scope.kube.core.createNamespacedSecret({
          namespace: scope.engineNamespace,
          body: {
            metadata: { name: 'refused-ssh' },
            stringData: { id_rsa: generateEd25519KeyPair('test').privateKey },
          },
        });
        const names = ['refused-1', 'refused-2', 'refused-3'];
        for (const name of names) await scope.taskRuns.create({ name, platform: refusedPlatform });
        for (const name of names) {
          const data = await scope.taskRuns.waitForSecret(name, 120_000);
          // each build tries a few VMs, then gets its answer, instead of waiting for more
          expect(data.error).toMatch(
            /could not take a build.*ssh-secret|failed on 3 VMs of the pool.*Last error: .*(rejected|authentication)/i,
          );
        }
        await finish(...names);
        await noneLeft(() => cloud.liveInstances(refusedTag), 'the pool to terminate its VMs');
      });
    }

    it('rebuilds its VMs and their holders from the cloud after the allocator is lost', async () => {
      await scope.taskRuns.create({ name: 'r-a', platform: poolPlatform });
      await scope.taskRuns.waitForSecret('r-a', 90_000);
      const [vm] = await livePool();
      await scope.temporal.client.workflow
        .getHandle(WORKFLOW_ID.allocator(poolPlatform))
        .terminate('test: the allocator is lost');
      // The next request starts a new allocator, which adopts the VM with r-a holding a slot.
      await scope.taskRuns.create({ name: 'r-b', platform: poolPlatform });
      await scope.taskRuns.waitForSecret('r-b', 60_000);
      expect(await livePool()).toEqual([vm]);
      await scope.taskRuns.create({ name: 'r-c', platform: poolPlatform });
      await scope.taskRuns.waitForSecret('r-c', 90_000);
      expect(await livePool()).toHaveLength(2); // the adopted VM was full: r-a and r-b
      await finish('r-a', 'r-b', 'r-c');
    });
  });

  // The impostor needs ec2-vms.ts; every provider's VMs present their generated keys (or are refused).
  if (kind === 'aws') {
    describeVmHostKeys({
      platform,
      stack: () => ({ scope, cloud }),
      hostConfig: () => hostConfig(),
    });
  }

  it('leaves no VM behind once every workflow has ended', async () => {
    const running = async () => {
      const query = `${SA.namespace.name} = '${scope.namespace}' AND ExecutionStatus = 'Running'`;
      const ids: string[] = [];
      for await (const wf of scope.temporal.client.workflow.list({ query }))
        ids.push(wf.workflowId);
      return ids;
    };
    await noneLeft(running, `every ${kind} TaskRun workflow to end`);
    await noneLeft(live, `no ${kind} VM of a dynamic platform left`);
    await noneLeft(livePool, `no ${kind} VM of a pool left`);
    expect(await live()).toEqual([]);
    expect(await livePool()).toEqual([]);
  });
}
