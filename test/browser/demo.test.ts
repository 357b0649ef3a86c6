import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoServer, startDemoServer } from '../../examples/browser/serve.js';

// The browser demo end to end: the page streams the help-desk turn from the demo server over a real socket,
// the test breaks that socket after attempt 1's refund, and each column must show what DESIGN.md says.

const executablePath = '/usr/bin/chromium';
const hasChromium = existsSync(executablePath);
const screenshot = 'test/artifacts/browser-demo.png';

if (!hasChromium) {
  console.warn(
    `test/browser/demo.test.ts skipped: ${executablePath} not found (apt-get install chromium fonts-liberation)`,
  );
}

/** What one column shows. */
interface ColumnView {
  text: string;
  refunds: { id: string; key: string }[];
  attempts: string[];
}

const clean = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';
const glued = `Checking order ORD-7781. Refunding the dam${clean}`;
const key = '4d02b5b61ea1afa1';

describe.skipIf(!hasChromium)('browser demo (headless Chromium)', () => {
  let server: DemoServer | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    // Attempt 1 hesitates after "Refunding the dam" for far longer than the test needs to break it there.
    server = await startDemoServer({ port: 0, eventDelayMs: 25, pauseMs: 20_000 });
    browser = await chromium.launch({
      executablePath,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the three policies and cleanTurn side by side after a broken connection', async () => {
    if (browser === undefined || server === undefined) throw new Error('the setup failed');
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(server.url);
    await page.click('#start');

    // Attempt 1 has streamed the refund and the half sentence: the naive policy has already run c1, late
    // execution holds it.
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-policy="naive"] [data-role="text"]')
          ?.textContent?.endsWith('Refunding the dam') &&
        document.querySelectorAll('[data-policy="naive"] [data-role="refund"]').length === 1,
      undefined,
      { timeout: 10_000 },
    );
    expect(await column(page, 'late-execution')).toMatchObject({ refunds: [] });
    expect(await column(page, 'clean-turn')).toMatchObject({ refunds: [] });

    await page.click('#break');
    await page.waitForFunction(() => document.body.dataset.state !== 'streaming', undefined, {
      timeout: 10_000,
    });
    expect(await page.textContent('#status')).toMatch(/^Finished after 2 attempts/);
    expect(await page.getAttribute('body', 'data-state')).toBe('finished');

    const naive = await column(page, 'naive');
    expect(naive.text).toBe(glued);
    expect(naive.refunds).toEqual([
      { id: 'c1', key },
      { id: 'c7', key },
    ]);

    const resetOnly = await column(page, 'reset-only');
    expect(resetOnly.text).toBe(clean);
    expect(resetOnly.refunds.map((r) => r.id)).toEqual(['c1', 'c7']);
    expect(resetOnly.attempts).toEqual([
      expect.stringMatching(/^#1 abandoned .*usage not reported/),
      expect.stringMatching(/^#2 completed .*412 \+ 38 tokens/),
    ]);

    const late = await column(page, 'late-execution');
    expect(late.text).toBe(clean);
    expect(late.refunds.map((r) => r.id)).toEqual(['c7']);

    const cleanTurn = await column(page, 'clean-turn');
    expect(cleanTurn.text).toBe(clean);
    expect(cleanTurn.refunds).toEqual([{ id: 'c7', key }]);

    // The wire shows both attempts with the retry between them.
    const wire = await page.$$eval('#wire li', (chips) => chips.map((chip) => chip.textContent ?? ''));
    expect(wire.filter((chip) => chip.startsWith('retry:'))).toHaveLength(1);
    expect(wire.filter((chip) => chip.startsWith('issue_refund'))).toEqual([
      'issue_refund c1',
      'issue_refund c7',
    ]);

    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(existsSync(screenshot) && statSync(screenshot).size > 10_000).toBe(true);

    expect(pageErrors).toEqual([]);
    await page.close();
  }, 30_000);
});

/** Reads one column of the page. */
function column(page: Page, policy: string): Promise<ColumnView> {
  return page.$eval(`[data-policy="${policy}"]`, (card) => ({
    text: card.querySelector('[data-role="text"]')?.textContent ?? '',
    refunds: Array.from(card.querySelectorAll<HTMLElement>('[data-role="refund"]'), (li) => ({
      id: li.dataset.callId ?? '',
      key: li.dataset.effectKey ?? '',
    })),
    attempts: Array.from(card.querySelectorAll('[data-role="attempt"]'), (li) => li.textContent ?? ''),
  }));
}
