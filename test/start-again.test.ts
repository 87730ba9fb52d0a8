// `npm start` again on a state dir whose last run left work behind, as a user meets it: the
// README's tour through `hostflow start` (its fixed ports, its demo hosts, the examples applied
// with kubectl), Ctrl-C while a static TaskRun holds a build user, a Provisioning runs kubespray
// and a rollout updates a Node, then a second start on the same state. This file runs its own stack, the one
// `npm start` runs, beside the suite's shared one (other ports, other host prefixes).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Secret } from '@kubernetes/client-node';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureKubeBinaries } from '../local-stack/kube-apiserver.js';
import { LOCAL_PORTS } from '../local-stack/defaults.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { assertPortsFree } from '../local-stack/ports.js';
import { loadTemporalDevConfig } from '../local-stack/temporal.js';
import { waitFor } from '../local-stack/process.js';
import { upsert } from '../local-stack/upsert.js';
import { oneLineError } from '../shared/kube-errors.js';
import { kube, runnerEnv, testEnv, uniqueSuffix } from './support/env.js';

const run = promisify(execFile);
/** A start builds nothing here (global setup did), but brings up a dozen processes. */
const START_TIMEOUT_MS = 180_000;

/** One `hostflow start`, its output kept. */
class Start {
  private output = '';
  readonly exited: Promise<number | null>;
  private readonly proc: ChildProcess;

  constructor(stateDir: string) {
    this.proc = spawn(
      process.execPath,
      [join(REPO_ROOT, 'dist/cli/hostflow.js'), 'start', '--state-dir', stateDir],
      { env: withoutEngineSettings(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    for (const stream of [this.proc.stdout!, this.proc.stderr!]) {
      stream.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    }
    this.exited = new Promise((done) => this.proc.on('exit', (code) => done(code)));
  }

  /** Waits until it prints `line`; fails at once, with its output, if it exits first. */
  async says(line: string): Promise<void> {
    await waitFor(
      `\`hostflow start\` to say "${line}"`,
      async () => {
        if (this.proc.exitCode !== null) {
          throw new Error(`hostflow start exited ${this.proc.exitCode}:\n${this.output}`);
        }
        return this.output.includes(line) || undefined;
      },
      { timeoutMs: START_TIMEOUT_MS, intervalMs: 200 },
    );
  }

  running(): Promise<void> {
    return this.says('hostflow is running.');
  }

  /** Ctrl-C, as a user stops it; resolves with its exit code. */
  async interrupt(): Promise<number | null> {
    this.proc.kill('SIGINT');
    return this.exited;
  }

  get log(): string {
    return this.output;
  }
}

/** The suite's own settings must not point this stack at the suite's Temporal or cluster. */
function withoutEngineSettings(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(TEMPORAL_|HOSTFLOW_|KUBECONFIG$)/.test(key)) delete env[key];
  }
  // Only one kubelet can run on this machine, and the suite's holds it: this stack's runner Jobs
  // go to the suite's cluster, which runs it.
  return { ...env, ...runnerEnv(), HOSTFLOW_RUNNER_KUBECONFIG: testEnv('kubeconfig') };
}

describe('hostflow start again on a used state dir', () => {
  const stateDir = mkdtempSync(join(testEnv('stateDir'), 'start-again-'));
  const kubeconfig = join(stateDir, 'kube/kubeconfig');
  const examples = join(REPO_ROOT, 'deploy/examples');
  let kubeBin: string;
  let start: Start | undefined;

  /** kubectl and login.sh as the tour runs them, against this stack. */
  const tourEnv = () => ({
    ...withoutEngineSettings(),
    KUBECONFIG: kubeconfig,
    PATH: `${kubeBin}:${process.env.PATH}`,
  });
  const kubectl = async (...args: string[]) =>
    (await run(join(kubeBin, 'kubectl'), args, { env: tourEnv() })).stdout;
  const secretKey = async (name: string, key: string) =>
    kubectl('-n', 'demo', 'get', 'secret', name, '-o', `jsonpath={.data.${key}}`).then(
      (b64) => Buffer.from(b64, 'base64').toString(),
      () => '',
    );
  const provisioning = async () =>
    JSON.parse(await kubectl('-n', 'demo', 'get', 'bpa', 'demo-cluster', '-o', 'json')) as {
      status?: { phase?: string; step?: string; message?: string };
    };
  const pool = async () =>
    JSON.parse(await kubectl('get', 'mcp', 'demo-workers', '-o', 'json')) as {
      status?: {
        machineCount?: number;
        updatedMachineCount?: number;
      };
    };
  const login = async (taskRun: string) =>
    (
      await run('bash', [join(examples, 'login.sh'), 'demo', taskRun, 'whoami'], {
        env: tourEnv(),
      })
    ).stdout.trim();
  /** A copy of the static example under another name. */
  const staticTaskRun = (name: string) => {
    const file = join(stateDir, `${name}.yaml`);
    const example = readFileSync(join(examples, 'taskrun-static.yaml'), 'utf8');
    writeFileSync(file, example.replaceAll('name: demo-static', `name: ${name}`));
    return file;
  };

  beforeAll(async () => {
    kubeBin = await ensureKubeBinaries();
  });

  afterAll(async () => {
    await start?.interrupt();
  });

  it(
    'stops at once and cleanly on Ctrl-C while it is still coming up',
    async () => {
      start = new Start(stateDir);
      await start.says('starting the demo SSH hosts');
      expect(await start.interrupt()).toBe(0);
      expect(start.log).not.toContain('hostflow start:'); // no failure reported for a stop
      start = undefined;
      // Everything it had started is gone: the next start finds its fixed ports free.
      const temporal = loadTemporalDevConfig();
      await assertPortsFree('the stopped stack', [
        temporal.port,
        temporal.uiPort,
        LOCAL_PORTS.kubeApi,
        LOCAL_PORTS.etcd,
        LOCAL_PORTS.otp,
        LOCAL_PORTS.moto,
      ]);
    },
    START_TIMEOUT_MS + 60_000,
  );

  it(
    'resumes a static build, a kubespray install and a rollout after Ctrl-C, and serves new builds',
    async () => {
      start = new Start(stateDir);
      await start.running();

      // A build holds a user on a demo host.
      await kubectl('apply', '-f', join(examples, 'taskrun-static.yaml'));
      await waitFor('the static build to be served', async () =>
        (await secretKey('multi-platform-ssh-demo-static', 'otp')) ? true : undefined,
      );
      const host = await secretKey('multi-platform-ssh-demo-static', 'host');
      // An OS image rollout goes over the demo Nodes meanwhile (it Locks each while updating it),
      // while the Provisioning gets to kubespray.
      await kubectl('apply', '-f', join(examples, 'rollout.yaml'));
      await kubectl('apply', '-f', join(examples, 'provisioning.yaml'));
      await waitFor(
        'the Provisioning to run cluster.yml',
        async () =>
          (await provisioning()).status?.step === 'Run kubespray cluster.yml' || undefined,
        { timeoutMs: 120_000, intervalMs: 200 },
      );

      expect((await provisioning()).status?.phase).toBe('Installing');
      expect(await start.interrupt()).toBe(0);
      start = new Start(stateDir);
      await start.running();
      // The first start's Secrets, Locked against deletion meanwhile, were written in place.
      expect(start.log).not.toMatch(/HTTP-Code|Headers:/);

      // The build that was running goes on: its user is still on its host, its key redeems once.
      expect(await login('demo-static')).toBe(host.split('@')[0]);
      // A new build is served.
      await kubectl('apply', '-f', staticTaskRun('demo-static-again'));
      await waitFor('the new static build to be served', async () =>
        (await secretKey('multi-platform-ssh-demo-static-again', 'otp')) ? true : undefined,
      );
      expect(await login('demo-static-again')).toMatch(/^u-/);
      // The Provisioning finishes its install.
      const installed = await waitFor(
        'the Provisioning to end its install',
        async () => {
          const { status } = await provisioning();
          return ['Ready', 'Failed'].includes(status?.phase ?? '') ? status : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 1000 },
      );
      expect(installed).toMatchObject({ phase: 'Ready' });
      expect(await secretKey('cluster-demo-kubeconfig', 'value')).toContain('clusters:');

      // The rollout goes on over the Nodes it had: every one ends on the new image.
      await waitFor(
        'the rollout to update every Node',
        async () => {
          const { status } = await pool();
          return (status?.machineCount === 3 && status.updatedMachineCount === 3) || undefined;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );

      // The first build ends: its user and Secret go.
      await kubectl(
        '-n',
        'demo',
        'patch',
        'taskrun',
        'demo-static',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"conditions":[{"type":"Succeeded","status":"True"}]}}',
      );
      await waitFor(
        'the finished build to be cleaned up',
        async () =>
          (await secretKey('multi-platform-ssh-demo-static', 'host')) ? undefined : true,
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      expect(await start.interrupt()).toBe(0);
      start = undefined;
    },
    15 * 60_000,
  );

  it('says in one line what it wrote and what the API server answered when a write fails', async () => {
    const { core } = kube();
    const namespace = `absent-${uniqueSuffix()}`;
    const body: V1Secret = { metadata: { name: 'demo-1-ssh' }, stringData: { id_rsa: 'x' } };
    const refused = (call: Promise<unknown>) =>
      call.then(
        () => {
          throw new Error('the API server took the write');
        },
        (err: unknown) => err as Error,
      );
    const answer = `the API server answered 404 NotFound: namespaces "${namespace}" not found`;
    // Through the one way the local stack writes its objects.
    const viaUpsert = await refused(
      upsert(
        (name) => core.readNamespacedSecret({ name, namespace }),
        (created) => core.createNamespacedSecret({ namespace, body: created }),
        (name, replaced) => core.replaceNamespacedSecret({ name, namespace, body: replaced }),
        body,
        `Secret ${namespace}/demo-1-ssh`,
      ),
    );
    expect(
      oneLineError(new Error(`demo SSH hosts: ${viaUpsert.message}`, { cause: viaUpsert })),
    ).toBe(`demo SSH hosts: write Secret ${namespace}/demo-1-ssh: ${answer}`);
    // A client error wrapped as it is: its raw HTTP exchange is not shown.
    const raw = await refused(core.createNamespacedSecret({ namespace, body }));
    expect(raw.message).toContain('Headers:');
    expect(oneLineError(new Error(`demo SSH hosts: ${raw.message}`, { cause: raw }))).toBe(
      `demo SSH hosts: ${answer}`,
    );
  });
});
