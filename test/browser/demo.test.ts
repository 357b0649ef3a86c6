import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoServer, startDemoServer } from '../../examples/browser/serve.js';
import { CHROMIUM, skippedWithout } from '../support/requirements.js';

// The browser demo end to end: the page streams the help-desk turn from the demo server over a real socket, the
// test breaks that socket after attempt 1's refund, the app crashes after attempt 2's refund and before recording
// it, and runs the turn again. Each column must show a different outcome: the rule its policy fails, or none.
// During the wait between the broken attempt and the next one, the columns with resets show the retry notice, and
// none shows the abandoned text as live text: rolled back, or struck through and labelled interrupted.

const executablePath = '/usr/bin/chromium';
const hasChromium = existsSync(executablePath);
const screenshot = 'test/artifacts/browser-demo.png';
const retryingScreenshot = 'test/artifacts/browser-demo-retrying.png';
/**
 * The page's wait between a broken attempt and the next one: long enough for the test to read the page and take
 * its screenshot inside it, however slow the machine.
 */
const retryDelayMs = 5000;

const missing = `${executablePath} not found (apt-get install chromium fonts-liberation)`;

if (!hasChromium && process.env.CI !== 'true') skippedWithout(CHROMIUM, missing);

// On CI a missing browser is a failure, not a skip.
it.runIf(!hasChromium && process.env.CI === 'true')('has Chromium on CI', () => {
  throw new Error(missing);
});

/** What one column shows. */
interface ColumnView {
  text: string;
  /** The calls that reached the refund tool. */
  calls: { id: string; key: string; status: string; sent: string }[];
  /** The refunds the column's payment service made. */
  count: string;
  /** The app crashed after a refund and before recording it. */
  crashed: boolean;
  attempts: string[];
  /** One line: what the user reads and how many refunds ran. */
  verdict: string;
  /** The retry notice, when it is visible. */
  notice: string | undefined;
  /** The abandoned attempt's text, when it is visible, marked interrupted. */
  interrupted:
    | {
        attempt: string;
        label: string;
        text: string;
        /** The computed `text-decoration-line` of the abandoned text. */
        decoration: string;
      }
    | undefined;
  /** Everything the user can read in the text box: notice, interrupted attempt and live text. */
  reads: string;
}

const clean = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';
const glued = `Checking order ORD-7781. Refunding the dam${clean}`;
const key = '4d02b5b61ea1afa1';
const abandoned = 'Checking order ORD-7781. Refunding the dam';
const notice = /^retrying in \d s \(.+\), retry 1 of 2$/;

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

  it('shows four different outcomes: a broken connection, the retry notice during the wait, then a crash after the refund and a restart', async () => {
    if (browser === undefined || server === undefined) throw new Error('the setup failed');
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${server.url}?retryDelay=${retryDelayMs}`);
    expect(await page.textContent('body')).toContain('MemoryEffectLedger');
    await page.click('#start');

    // Attempt 1 has streamed the refund and the half sentence: the naive policy has already run c1, late
    // execution holds it.
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-policy="naive"] [data-role="text"]')
          ?.textContent?.endsWith('Refunding the dam') &&
        document.querySelectorAll('[data-policy="naive"] [data-role="call"]').length === 1,
      undefined,
      { timeout: 10_000 },
    );
    expect(await column(page, 'late-execution')).toMatchObject({ calls: [] });
    expect(await column(page, 'clean-turn')).toMatchObject({ calls: [] });

    await page.click('#break');

    // The wait before attempt 2. The naive policy emits no resets: it still shows attempt 1's text as live text,
    // with no notice. The columns with resets say "retrying in 5 s (…), retry 1 of 2"; Reset on retry and late
    // execution (onReset: 'rollback') show nothing of attempt 1, cleanTurn (onReset: 'mark') shows it struck
    // through and labelled interrupted, apart from its live text, which is empty.
    await page.waitForFunction(() => document.body.dataset.state === 'retrying', undefined, {
      timeout: 10_000,
    });
    const naiveWaiting = await column(page, 'naive');
    expect(naiveWaiting).toMatchObject({ text: abandoned, notice: undefined, interrupted: undefined });
    for (const policy of ['reset-only', 'late-execution']) {
      const rolledBack = await column(page, policy);
      expect(rolledBack).toMatchObject({ text: '', interrupted: undefined });
      expect(rolledBack.notice).toMatch(notice);
      expect(rolledBack.reads).not.toContain('Refunding the dam');
      expect(rolledBack.attempts).toEqual([
        expect.stringMatching(/^#1 abandoned/),
        expect.stringMatching(/^#2 waiting to start/),
      ]);
    }
    const marked = await column(page, 'clean-turn');
    expect(marked.text).toBe('');
    expect(marked.notice).toMatch(notice);
    expect(marked.interrupted).toEqual({
      attempt: '1',
      label: 'interrupted',
      text: abandoned,
      decoration: 'line-through',
    });
    expect(await page.textContent('#status')).toMatch(/^Attempt 1 broke \(.+\)\. Attempt 2 starts in 5 s…$/);

    mkdirSync(dirname(retryingScreenshot), { recursive: true });
    await page.screenshot({ path: retryingScreenshot, fullPage: true });
    expect(existsSync(retryingScreenshot) && statSync(retryingScreenshot).size > 10_000).toBe(true);
    // Still waiting after the screenshot: it shows the wait, with the notices.
    expect(await page.evaluate(() => document.body.dataset.state)).toBe('retrying');
    expect((await column(page, 'clean-turn')).notice).toMatch(notice);

    // Attempt 2's first text replaces the interrupted attempt and clears the notice.
    await page.waitForFunction(
      () => document.querySelector('[data-policy="clean-turn"] [data-role="text"]')?.textContent !== '',
      undefined,
      { timeout: retryDelayMs + 10_000 },
    );
    expect(await column(page, 'clean-turn')).toMatchObject({ notice: undefined, interrupted: undefined });

    // Attempt 2 finishes, its refund runs, the app crashes before recording it and runs the turn again. The
    // restart's call finds the crashed run's claim in the ledger and waits for its lease.
    const waiting = await page.waitForSelector('[data-policy="clean-turn"] [data-status="waiting"]', {
      timeout: 15_000,
    });
    expect(await waiting.textContent()).toContain('still claimed by the crashed run');

    await page.waitForFunction(() => document.body.dataset.state === 'finished', undefined, {
      timeout: 15_000,
    });
    expect(await page.textContent('#status')).toMatch(/^Finished: 2 attempts, a crash after the refund/);

    const naive = await column(page, 'naive');
    expect(naive.text).toBe(glued);
    expect(naive.calls).toEqual([
      { id: 'c1', key, status: 'refunded', sent: 'sent in attempt 1' },
      { id: 'c7', key, status: 'refunded', sent: 'sent in attempt 2' },
    ]);
    expect(naive.count).toBe('2 refunds');
    expect(naive.verdict).toBe('Reads 2 attempts glued together. 2 refunds: c1, c7.');

    const resetOnly = await column(page, 'reset-only');
    expect(resetOnly.text).toBe(clean);
    expect(resetOnly.calls.map((c) => [c.id, c.status])).toEqual([
      ['c1', 'refunded'],
      ['c7', 'refunded'],
    ]);
    expect(resetOnly.attempts).toEqual([
      expect.stringMatching(/^#1 abandoned .*usage not reported/),
      expect.stringMatching(/^#2 completed .*412 \+ 38 tokens/),
    ]);
    expect(resetOnly.verdict).toBe('Reads the last attempt only. 2 refunds: c1, c7.');

    // Late execution has no memory of what ran: the restart refunds again.
    const late = await column(page, 'late-execution');
    expect(late.text).toBe(clean);
    expect(late.calls).toEqual([
      { id: 'c7', key, status: 'refunded', sent: 'sent in attempt 2' },
      { id: 'c11', key, status: 'refunded', sent: 'sent after the restart' },
    ]);
    expect(late.crashed).toBe(true);
    expect(late.verdict).toBe('Reads the last attempt only. 2 refunds: c7, c11 (after the restart).');

    // cleanTurn: the handler ran again with the same key, and the payment service, idempotent on it, refunded
    // nothing new.
    const cleanTurn = await column(page, 'clean-turn');
    expect(cleanTurn.text).toBe(clean);
    expect(cleanTurn).toMatchObject({ notice: undefined, interrupted: undefined, reads: clean });
    expect(cleanTurn.calls).toEqual([
      { id: 'c7', key, status: 'refunded', sent: 'sent in attempt 2' },
      { id: 'c11', key, status: 'already-refunded', sent: 'sent after the restart' },
    ]);
    expect(cleanTurn.crashed).toBe(true);
    expect(cleanTurn.count).toBe('1 refund');
    expect(cleanTurn.verdict).toBe(
      'Reads the last attempt only. 1 refund: c7. c11 (after the restart) had the same key: no new refund.',
    );
    expect(cleanTurn.attempts).toEqual([
      expect.stringMatching(/^#1 abandoned/),
      expect.stringMatching(/^#2 completed/),
      expect.stringMatching(/^restart #1 completed/),
    ]);

    // The wire shows both attempts with the retry between them, then the restart's.
    const wire = await page.$$eval('#wire li', (chips) => chips.map((chip) => chip.textContent ?? ''));
    expect(wire.filter((chip) => chip.startsWith('retry:'))).toHaveLength(1);
    expect(wire.filter((chip) => chip.startsWith('issue_refund') || chip.startsWith('crash'))).toEqual([
      'issue_refund c1',
      'issue_refund c7',
      'crash · restart',
      'issue_refund c11',
    ]);

    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(existsSync(screenshot) && statSync(screenshot).size > 10_000).toBe(true);

    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});

/** Reads one column of the page. */
function column(page: Page, policy: string): Promise<ColumnView> {
  return page.$eval(`[data-policy="${policy}"]`, (card) => {
    /** `node` when it is rendered (not hidden) with a size. */
    const visible = <T extends Element>(node: T | null): T | undefined =>
      node?.checkVisibility() && node.getBoundingClientRect().height > 0 ? node : undefined;
    const interrupted = visible(card.querySelector<HTMLElement>('[data-role="interrupted"]'));
    const struck = interrupted?.querySelector('s') ?? null;
    return {
      text: card.querySelector('[data-role="text"]')?.textContent ?? '',
      calls: Array.from(card.querySelectorAll<HTMLElement>('[data-role="call"]'), (li) => ({
        id: li.dataset.callId ?? '',
        key: li.dataset.effectKey ?? '',
        status: li.dataset.status ?? '',
        sent: li.querySelector('[data-role="sent"]')?.textContent ?? '',
      })),
      count: card.querySelector('[data-role="refund-count"]')?.textContent ?? '',
      crashed: card.querySelector('[data-role="crash"]') !== null,
      attempts: Array.from(card.querySelectorAll('[data-role="attempt"]'), (li) => li.textContent ?? ''),
      verdict: card.querySelector('[data-role="verdict"]')?.textContent ?? '',
      notice: visible(card.querySelector('[data-role="notice"]'))?.textContent ?? undefined,
      interrupted:
        interrupted === undefined
          ? undefined
          : {
              attempt: interrupted.dataset.attempt ?? '',
              label: interrupted.querySelector('.label')?.textContent ?? '',
              text: struck?.textContent ?? '',
              decoration: struck === null ? '' : getComputedStyle(struck).textDecorationLine,
            },
      // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, without the hidden parts
      reads: card.querySelector<HTMLElement>('[data-role="reads"]')?.innerText ?? '',
    };
  });
}
