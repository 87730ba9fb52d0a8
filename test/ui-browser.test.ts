// What operators see, in a real browser: Debian's Chromium on the Temporal dev server's web UI
// finds a served TaskRun's workflow by the search attributes hostflow sets, and its page says in
// words what the workflow is, what it did and what it waits for. Screenshots go to
// test-artifacts/ for a person to look at.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '../local-stack/process.js';
import { LABELS } from '../platform-config/contract.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { openTemporalUi, type TemporalUi } from './support/browser.js';
import { createStaticPool, type StaticPool } from './support/static-pool.js';
import type { CreatedTaskRun } from './support/taskruns.js';

let pool: StaticPool;
let ui: TemporalUi;
let tr: CreatedTaskRun;
let secret: Record<string, string>;
let host: string;
let workflowId: string;

beforeAll(async () => {
  pool = await createStaticPool('ui', 1);
  await pool.scope.setHostConfig(pool.hostEntries([{ host: 0 }]));
  ui = await openTemporalUi();
  tr = await pool.scope.taskRuns.create({ name: 'shown', platform: pool.platform });
  secret = await pool.scope.taskRuns.waitForSecret(tr.name);
  host = (await pool.scope.taskRuns.get(tr.name)).metadata.labels![LABELS.assignedHost]!;
  workflowId = WORKFLOW_ID.taskRun(pool.scope.namespace, tr.name, tr.uid);
});

afterAll(async () => {
  await ui?.close();
  await pool?.dispose();
});

/** Types the query into the list's URL, reloading as an operator would until the row shows. */
async function listed(query: string): Promise<void> {
  const row = ui.page.getByRole('link', { name: workflowId, exact: true }).first();
  // Visibility lags the workflow a little; each try gives the page's JS time to fetch the list.
  await waitFor(
    `the workflow list to show ${workflowId} for ${query}`,
    async () => {
      await ui.openList(query);
      await row.waitFor({ timeout: 10_000 });
      return true;
    },
    { timeoutMs: 60_000 },
  );
}

/**
 * Opens the listed workflow (the UI lands on the tab last used) and shows the tab `tab`. On a
 * loaded machine the page can come up without its tabs, its first fetches having failed: it is
 * reloaded, as an operator would, for up to a minute; then a screenshot shows what it showed.
 */
async function open(tab: 'Timeline' | 'User Metadata'): Promise<void> {
  await ui.page.getByRole('link', { name: workflowId, exact: true }).first().click();
  await ui.page.waitForURL((url) => url.pathname.includes(encodeURIComponent(workflowId)));
  const tabLink = ui.page.getByRole('tab', { name: tab });
  try {
    await waitFor(
      `the workflow's page to show its ${tab} tab`,
      async () => {
        const shown = await tabLink.waitFor({ timeout: 15_000 }).then(
          () => true,
          () => undefined,
        );
        if (!shown) await ui.page.reload();
        return shown;
      },
      { timeoutMs: 60_000, intervalMs: 0 },
    );
  } catch (err) {
    await keep(`ui-open-${tab.replace(/\W/g, '-').toLowerCase()}-failed`);
    throw err;
  }
  await tabLink.click();
}

async function keep(name: string): Promise<void> {
  console.log(`screenshot: ${await ui.screenshot(name)}`);
}

describe('the Temporal web UI, in Chromium', () => {
  it("lists a TaskRun's workflow by K8sNamespace and K8sName", async () => {
    await listed(`K8sNamespace="${pool.scope.namespace}" AND K8sName="${tr.name}"`);
  });

  it('lists it by Platform and Host', async () => {
    // Phase too: "which builds does this host serve right now".
    await listed(`Platform="${pool.platform}" AND Host="${host}" AND Phase="Ready"`);
    await keep('ui-list-by-platform-host');
  });

  it('opens it to what it is, what it did and what it waits for, in words', async () => {
    const ns = pool.scope.namespace;
    const address = pool.hosts[0]!.address;
    await listed(`Platform="${pool.platform}" AND Host="${host}" AND Phase="Ready"`);
    await open('Timeline');
    const timeline = await ui.waitForText('the activities, by their summaries', [
      `Ask allocator/${pool.platform} for a host (attempt 1)`,
      `Create a build user on ${host} (${address}) and deliver its Secret`,
    ]);
    await keep('ui-taskrun-served-timeline');
    await ui.page.getByRole('tab', { name: 'User Metadata' }).click();
    const metadata = await ui.waitForText('the summary, details and current details', [
      `TaskRun ${ns}/${tr.name} on ${pool.platform}`,
      `Serves TaskRun ${ns}/${tr.name} (uid ${tr.uid}), platform ${pool.platform}: ` +
        'writes its multi-platform-ssh Secret, waits for it to finish, then cleans up.',
      `TaskRun ${ns}/${tr.name} is served by ${host}; ` +
        'waiting for it to complete or be deleted, then cleaning up.',
    ]);
    await keep('ui-taskrun-served');
    for (const text of [timeline, metadata]) expect(text).not.toContain(secret.otp!);
  });

  it('says what it did once the TaskRun completed', async () => {
    const ns = pool.scope.namespace;
    const [user, address] = secret.host!.split('@') as [string, string];
    await pool.scope.taskRuns.complete(tr.name);
    await pool.scope.taskRuns.waitForSecretGone(tr.name);
    await listed(`K8sNamespace="${ns}" AND K8sName="${tr.name}" AND Phase="Done"`);
    await open('Timeline');
    await ui.waitForText('the clean-up activity, by its summary', [
      `Remove build user ${user} from ${host} (${address})`,
    ]);
    await ui.page.getByRole('tab', { name: 'User Metadata' }).click();
    await ui.waitForText('the current details of the completed workflow', [
      `TaskRun ${ns}/${tr.name} completed; cleaned up.`,
    ]);
    await keep('ui-taskrun-done');
  });
});
