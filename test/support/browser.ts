// Debian's Chromium, headless, on the Temporal dev server's web UI: what an operator sees.
// playwright-core drives it and downloads no browser of its own (deploy/bootstrap.sh installs it).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '../../local-stack/paths.js';
import { waitFor } from '../../local-stack/process.js';
import { testEnv } from './env.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots kept after a run (git-ignored), for a person to look at. */
export const ARTIFACTS_DIR = join(REPO_ROOT, 'test-artifacts');

export interface TemporalUi {
  page: Page;
  /** The workflow list filtered by a visibility query, as an operator types it. */
  openList(query: string): Promise<void>;
  /**
   * Waits until the page shows every one of `texts` (its frames included: the UI renders
   * summaries and details in iframes) and returns that text; the error names what never showed.
   */
  waitForText(what: string, texts: string[]): Promise<string>;
  /** Saves a full-page PNG under test-artifacts/ and returns its path. */
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function openTemporalUi(): Promise<TemporalUi> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: run \`bash deploy/bootstrap.sh\` (as root)`);
  }
  const base = testEnv('temporalUi');
  const namespace = testEnv('temporalNamespace');
  // The UI server starts next to the gRPC port global-setup waited for, not necessarily with it.
  await waitFor('the Temporal web UI to answer', async () =>
    (await fetch(base)).ok ? true : undefined,
  );
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  /** All text the page shows, its frames included. */
  const text = async () => {
    const parts = await Promise.all(
      page.frames().map((f) =>
        f
          .locator('body')
          .innerText()
          .catch(() => ''),
      ),
    );
    return parts.join('\n');
  };
  return {
    page,
    async openList(query) {
      await page.goto(
        `${base}/namespaces/${namespace}/workflows?query=${encodeURIComponent(query)}`,
      );
    },
    async waitForText(what, texts) {
      let last = '';
      try {
        return await waitFor(what, async () => {
          last = await text();
          return texts.every((t) => last.includes(t)) ? last : undefined;
        });
      } catch (err) {
        const missing = texts.filter((t) => !last.includes(t));
        throw new Error(
          `${(err as Error).message}; not shown: ${JSON.stringify(missing)}; the page showed:\n${last}`,
          { cause: err },
        );
      }
    },
    async screenshot(name) {
      mkdirSync(ARTIFACTS_DIR, { recursive: true });
      const path = join(ARTIFACTS_DIR, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    close: () => browser.close(),
  };
}
