// The worker and the bridge refuse to start against a Temporal namespace that lacks hostflow's
// search attributes, or holds one of another type (its workflows would fail every workflow task
// upserting them), and say how to register each one; `hostflow setup temporal` registers them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { createNamespace, temporalCli } from '../local-stack/temporal.js';
import { SA } from '../shared/search-attributes.js';
import { indexedType } from '../runtime/temporal-requirements.js';
import { startBridge, startWorker, type EngineProcess } from './support/engine.js';
import { hostflowIn } from './support/hostflow-cli.js';
import { createScope, type TestScope } from './support/scope.js';
import { testEnv, uniqueSuffix } from './support/env.js';

let scope: TestScope;
let connection: Connection;
const bare = `bare-${uniqueSuffix()}`;
/** A namespace whose Phase attribute was registered as Text, not Keyword. */
const mistyped = `mistyped-${uniqueSuffix()}`;

beforeAll(async () => {
  scope = await createScope('startup');
  connection = await Connection.connect({ address: testEnv('temporalAddress') });
  for (const namespace of [bare, mistyped]) {
    await createNamespace(testEnv('temporalAddress'), namespace);
  }
  execFileSync(temporalCli(), [
    'operator',
    'search-attribute',
    'create',
    '--namespace',
    mistyped,
    '--name',
    'Phase',
    '--type',
    'Text',
    '--address',
    testEnv('temporalAddress'),
  ]);
});

/** What a process that refused to start said: its start error, or its last output. */
async function refusal(started: Promise<EngineProcess>): Promise<string> {
  const process = await started.catch((err: unknown) => err as Error);
  return process instanceof Error ? process.message : (await process.exited, process.tail());
}

/** `hostflow setup temporal` for `namespace` on the tests' Temporal. */
const setup = (namespace: string, ...args: string[]) =>
  hostflowIn(
    {
      ...process.env,
      TEMPORAL_ADDRESS: testEnv('temporalAddress'),
      TEMPORAL_NAMESPACE: namespace,
    },
    'setup',
    'temporal',
    ...args,
  );

afterAll(async () => {
  await connection?.close();
  await scope?.dispose();
});

describe('worker start-up', () => {
  it('names each missing search attribute with the command that registers it', async () => {
    const listed = await connection.operatorService.listSearchAttributes({ namespace: bare });
    expect(Object.keys(listed.customAttributes ?? {})).not.toContain(SA.cloudLaunches.name);

    const output = await refusal(startWorker(scope, { TEMPORAL_NAMESPACE: bare }));
    expect(output).toContain(`search attributes missing in Temporal namespace ${bare}`);
    expect(output).toContain(
      `temporal operator search-attribute create --namespace ${bare} --name CloudLaunches --type KeywordList`,
    );
    expect(output).toContain('--name Phase --type Keyword');
  });

  it('refuses a search attribute of another type, naming both types, and so does the bridge', async () => {
    for (const start of [startWorker, startBridge]) {
      const output = await refusal(start(scope, { TEMPORAL_NAMESPACE: mistyped }));
      expect(output).toContain(
        `search attribute Phase in Temporal namespace ${mistyped} is of type Text, not Keyword`,
      );
      expect(output).toContain(`search attributes missing in Temporal namespace ${mistyped}`);
    }
    // `hostflow setup temporal` cannot mend a type: it says so and registers nothing.
    const result = await setup(mistyped);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is of type Text, not Keyword');
    const listed = await connection.operatorService.listSearchAttributes({ namespace: mistyped });
    expect(Object.keys(listed.customAttributes ?? {})).toEqual(['Phase']);
  });

  it('`hostflow setup temporal` registers each attribute with its type, once, and the worker then starts', async () => {
    const first = await setup(bare);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('CloudLaunches (KeywordList): registered');
    expect(first.stdout).toMatch(new RegExp(`Temporal namespace ${bare} on server \\S+: ready`));
    const listed = await connection.operatorService.listSearchAttributes({ namespace: bare });
    const served = listed.customAttributes ?? {};
    for (const key of Object.values(SA))
      expect([key.name, served[key.name]]).toEqual([key.name, indexedType(key.type)]);

    const again = await setup(bare);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('CloudLaunches (KeywordList): present');
    expect(again.stdout).not.toContain('registered');

    const worker = await startWorker(scope, { TEMPORAL_NAMESPACE: bare });
    try {
      expect(worker.tail()).not.toContain('missing');
    } finally {
      await worker.stop();
    }
  });

  it('`hostflow setup temporal --tcld` prints the Temporal Cloud command with every attribute', async () => {
    const result = await setup('prod.a1b2c', '--tcld');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe('tcld namespace search-attributes add --namespace prod.a1b2c \\');
    expect(lines).toContain('  --search-attribute "CloudLaunches=KeywordList" \\');
    expect(lines).toHaveLength(Object.keys(SA).length + 1);
  });
});
