// The worker's and the bridge's Temporal credentials, rotated while they run. The tests' Temporal
// checks no credentials, so a stand-in gate in front of it does (test/support/grpc-gate.ts), as
// Temporal Cloud does: an API key read from TEMPORAL_API_KEY_FILE is taken up in place, and the
// old key can then be refused; new client certificate files make each process drain and come
// back with them (the SDK cannot change a live connection's TLS), but not while the new pair does
// not match. Each time, a TaskRun is served after the change.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEngineProcess, type EngineKind, type EngineProcess } from '../local-stack/engine.js';
import { ensureCa, ensureCert } from '../local-stack/pki.js';
import { waitFor } from '../local-stack/process.js';
import { engineEnv, tearDown } from './support/engine.js';
import { testEnv } from './support/env.js';
import { startGrpcGate, type GrpcGate } from './support/grpc-gate.js';
import { createScope, type TestScope } from './support/scope.js';

let scope: TestScope;
const gates: GrpcGate[] = [];
const engine: EngineProcess[] = [];
const dir = () => join(testEnv('stateDir'), `credentials-${scope.namespace}`);

beforeAll(async () => {
  scope = await createScope('creds', { 'local-platforms': 'linux/amd64' });
  mkdirSync(dir(), { recursive: true });
});

afterAll(async () => {
  await tearDown(engine);
  for (const gate of gates) await gate.stop();
  await scope?.dispose();
});

/** The worker or the bridge against `gate`, started again whenever it exits (a Deployment's pod). */
async function start(kind: EngineKind, env: NodeJS.ProcessEnv): Promise<EngineProcess> {
  const proc = await startEngineProcess(
    kind,
    { ...engineEnv(scope), HOSTFLOW_TEMPORAL_RELOAD_SECONDS: '1', ...env },
    {
      name: `${kind} (${scope.namespace})`,
      logFile: join(testEnv('stateDir'), 'logs', `${kind}-${scope.namespace}.log`),
      restart: true,
    },
  );
  engine.push(proc);
  return proc;
}

/** A local TaskRun served and cleaned up: the engine reaches Temporal through the gate. */
async function serveOne(name: string): Promise<void> {
  const { taskRuns } = scope;
  await taskRuns.create({ name, platform: 'linux/amd64' });
  expect(await taskRuns.waitForSecret(name, 60_000)).toEqual({ host: 'localhost' });
  await taskRuns.complete(name);
  await taskRuns.waitForSecretGone(name, 60_000);
}

describe('Temporal credentials rotated while the engine runs', () => {
  it('takes up a new API key from its file in place, so the old one can be refused', async () => {
    const gate = await startGrpcGate(testEnv('temporalAddress'), { keys: ['key-1'] });
    gates.push(gate);
    const keyFile = join(dir(), 'api-key');
    writeFileSync(keyFile, 'key-1\n');
    const env = {
      TEMPORAL_ADDRESS: gate.address,
      TEMPORAL_API_KEY_FILE: keyFile,
      TEMPORAL_TLS: 'false',
    };
    const [worker, bridge] = await Promise.all([start('worker', env), start('bridge', env)]);
    const pids = [worker.pid, bridge.pid];
    await serveOne('before-rotation');

    // The rotation: both keys accepted, the new one written, then the old one refused.
    gate.acceptKeys(['key-1', 'key-2']);
    writeFileSync(keyFile, 'key-2\n');
    for (const proc of [worker, bridge]) {
      await waitFor(`${proc.name} to take up the new key`, () =>
        proc.tail(20).includes('Temporal API key reloaded') ? true : undefined,
      );
    }
    gate.acceptKeys(['key-2']);
    const refusedBefore = gate.refused;
    await serveOne('after-rotation');
    // In place: neither process restarted, and none of their calls was refused.
    expect([worker.pid, bridge.pid]).toEqual(pids);
    expect(gate.refused).toBe(refusedBefore);
    await Promise.all([worker.stop(), bridge.stop()]);
  });

  it('drains and comes back with new client certificate files, once the new pair matches', async () => {
    const ca = await ensureCa(join(dir(), 'ca'), 'temporal gate CA');
    const serverCert = await ensureCert(ca, 'gate', { cn: 'gate', ips: ['127.0.0.1'] });
    const [first, second] = await Promise.all(
      ['client-1', 'client-2'].map((file) => ensureCert(ca, file, { cn: file, client: true })),
    );
    const gate = await startGrpcGate(testEnv('temporalAddress'), {
      tls: {
        cert: readFileSync(serverCert.cert),
        key: readFileSync(serverCert.key),
        ca: readFileSync(ca.cert),
      },
    });
    gates.push(gate);
    // Where a mounted Secret shows them: the files are replaced, their paths stay.
    const cert = join(dir(), 'tls.crt');
    const key = join(dir(), 'tls.key');
    copyFileSync(first!.cert, cert);
    copyFileSync(first!.key, key);
    const worker = await start('worker', {
      TEMPORAL_ADDRESS: gate.address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.cert,
    });
    const bridge = await start('bridge', {
      TEMPORAL_ADDRESS: gate.address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.cert,
    });
    await serveOne('first-certificate');
    expect(gate.clientCerts.size).toBe(1);
    const pids = [worker.pid, bridge.pid];

    // Half a rotation: the new certificate beside the old key. Nothing restarts on it.
    copyFileSync(second!.cert, cert);
    await waitFor('the worker to see a pair that does not match', () =>
      worker.tail(20).includes('not usable yet') ? true : undefined,
    );
    await sleep(2_500);
    expect([worker.pid, bridge.pid]).toEqual(pids);

    // The key follows: each drains, exits and is started again with the new pair.
    copyFileSync(second!.key, key);
    for (const [proc, pid] of [
      [worker, pids[0]],
      [bridge, pids[1]],
    ] as const) {
      await waitFor(
        `${proc.name} to come back with the new certificate`,
        () => (proc.pid !== pid && /polling|watching/.test(proc.tail(5)) ? true : undefined),
        { timeoutMs: 120_000 },
      );
    }
    await serveOne('second-certificate');
    expect(gate.clientCerts.size).toBe(2);
  });
});
