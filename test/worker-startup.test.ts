// The worker refuses to start against a Temporal namespace that lacks hostflow's search
// attributes (its workflows would fail every workflow task upserting them), and says how to
// register each one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { waitFor } from '../local-stack/process.js';
import { temporalCli } from '../local-stack/temporal.js';
import { SA } from '../shared/search-attributes.js';
import { startWorker } from './support/engine.js';
import { createScope, type TestScope } from './support/scope.js';
import { testEnv, uniqueSuffix } from './support/env.js';

let scope: TestScope;
let connection: Connection;
const bare = `bare-${uniqueSuffix()}`;

beforeAll(async () => {
  scope = await createScope('startup');
  connection = await Connection.connect({ address: testEnv('temporalAddress') });
  execFileSync(temporalCli(), [
    'operator',
    'namespace',
    'create',
    '--namespace',
    bare,
    '--address',
    testEnv('temporalAddress'),
  ]);
  await waitFor('the new namespace to be served', async () =>
    connection.operatorService
      .listSearchAttributes({ namespace: bare })
      .then(() => true)
      .catch(() => undefined),
  );
});

afterAll(async () => {
  await connection?.close();
  await scope?.dispose();
});

describe('worker start-up', () => {
  it('names each missing search attribute with the command that registers it', async () => {
    const listed = await connection.operatorService.listSearchAttributes({ namespace: bare });
    expect(Object.keys(listed.customAttributes ?? {})).not.toContain(SA.cloudLaunches.name);

    const worker = await startWorker(scope, { TEMPORAL_NAMESPACE: bare }).catch(
      (err: unknown) => err as Error,
    );
    const output = worker instanceof Error ? worker.message : (await worker.exited, worker.tail());
    expect(output).toContain(`search attributes missing in Temporal namespace ${bare}`);
    expect(output).toContain(
      `temporal operator search-attribute create --namespace ${bare} --name CloudLaunches --type KeywordList`,
    );
    expect(output).toContain('--name Phase --type Keyword');
  });
});
