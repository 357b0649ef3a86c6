// What the user sees while a retried turn waits: the reset comes at the moment of the failure, with the wait it
// announces, and the next request only after that wait. Real sockets on 127.0.0.1, real timers.
import { retryBudget, TurnError, type TurnEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { type StreamTurnOptions, streamTurn, type TurnReport } from 'cleanturn/transport';
import { afterEach, describe, expect, it } from 'vitest';
import { attempt1, cleanText, whole } from '../support/helpDeskChat.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Seen {
  events: { event: TurnEvent; at: number }[];
  error: unknown;
  endedAt: number;
}

/** Runs the turn against `script` and records each event with the time it reached the subscriber. */
async function run(
  script: ScriptedResponse[],
  options: Partial<Omit<StreamTurnOptions<unknown>, 'request' | 'adapter'>>,
  onReset?: () => void,
): Promise<Seen> {
  server = await startServer(script);
  const url = `${server.url}/v1/chat/completions`;
  const seen: Seen = { events: [], error: undefined, endedAt: 0 };
  await new Promise<void>((resolve) => {
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiChat(),
      retry: 2,
      ...options,
      request: ({ signal }) => ({ url, init: { method: 'POST', body: '{"stream":true}', signal } }),
    }).subscribe({
      next: (event) => {
        seen.events.push({ event, at: Date.now() });
        if (event.type === 'reset') onReset?.();
      },
      error: (error: unknown) => {
        seen.error = error;
        seen.endedAt = Date.now();
        resolve();
      },
      complete: () => {
        seen.endedAt = Date.now();
        resolve();
      },
    });
  });
  return seen;
}

const cutMidWord: ScriptedResponse = {
  body: attempt1.body,
  destroyAfter: attempt1.after('text:Refunding the dam'),
};

describe('the reset comes when the attempt fails, before the wait', () => {
  it('with a 3 s backoff: the reset within a few ms of the cut, carrying the delay; the next request after it', async () => {
    const seen = await run([cutMidWord, whole], {
      backoff: { initialDelay: 3_000, jitter: 'none' },
    });
    expect(seen.error).toBeUndefined();
    const resetAt = seen.events.findIndex(({ event }) => event.type === 'reset');
    const lastOfAttempt1 = seen.events[resetAt - 1];
    const reset = seen.events[resetAt];
    expect(lastOfAttempt1?.event).toMatchObject({ type: 'text', attempt: 1 });
    expect(reset?.event).toMatchObject({
      type: 'reset',
      attempt: 2,
      delay: 3_000,
      failedAttempt: 1,
      outputStarted: true,
      retryCount: 1,
      maxRetries: 2,
    });
    // The cut is right after attempt 1's last text: the reset follows it at once, not after the 3 s wait.
    expect((reset?.at ?? 0) - (lastOfAttempt1?.at ?? 0)).toBeLessThan(1_000);
    const secondRequest = server?.requests[1]?.receivedAt ?? 0;
    expect(secondRequest - (reset?.at ?? 0)).toBeGreaterThanOrEqual(2_900);
    const text = seen.events
      .filter(({ event }) => event.type === 'text' && event.attempt === 2)
      .map(({ event }) => (event.type === 'text' ? event.text : ''))
      .join('');
    expect(text).toBe(cleanText);
  }, 15_000);

  it('with Retry-After: the reset at the 503, with the asked delay, status and class; the next request after it', async () => {
    const seen = await run([{ status: 503, headers: { 'retry-after': '2' }, body: 'overloaded' }, whole], {
      backoff: false,
    });
    expect(seen.error).toBeUndefined();
    const reset = seen.events.find(({ event }) => event.type === 'reset');
    expect(reset?.event).toMatchObject({
      type: 'reset',
      attempt: 2,
      delay: 2_000,
      status: 503,
      errorName: 'TransportError',
      outputStarted: false,
    });
    const firstRequest = server?.requests[0]?.receivedAt ?? 0;
    const secondRequest = server?.requests[1]?.receivedAt ?? 0;
    expect((reset?.at ?? 0) - firstRequest).toBeLessThan(1_000);
    expect(secondRequest - (reset?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
  }, 15_000);

  it('with a budget that refuses: no reset, a typed failure at once, no wait and no second request', async () => {
    const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 0 });
    const seen = await run([cutMidWord, whole], {
      budget,
      backoff: { initialDelay: 3_000, jitter: 'none' },
    });
    expect(seen.error).toBeInstanceOf(TurnError);
    expect(seen.error).toMatchObject({ code: 'retries-exhausted', limit: 'budget' });
    expect(seen.events.some(({ event }) => event.type === 'reset')).toBe(false);
    const lastText = seen.events.at(-1)?.at ?? 0;
    expect(seen.endedAt - lastText).toBeLessThan(1_000);
    expect(server?.requests).toHaveLength(1);
  }, 15_000);
});

describe('a turn that ends during the wait', () => {
  // The reset comes before the wait, so the report must not count the attempt it announces until it starts.
  it.each([
    ['stopped', (controller: AbortController) => ({ signal: controller.signal })],
    ['timed out', () => ({ timeout: { totalMs: 400 } })],
  ] as const)(
    '%s: the report has only the attempt that ran',
    async (_, options) => {
      const controller = new AbortController();
      let report: TurnReport | undefined;
      const seen = await run(
        [cutMidWord, whole],
        {
          backoff: { initialDelay: 3_000, jitter: 'none' },
          ...options(controller),
          onReport: (r) => {
            report = r;
          },
        },
        () => controller.abort('the user pressed stop'),
      );
      expect(seen.error).toBeDefined();
      expect(server?.requests).toHaveLength(1);
      expect(report?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'abandoned']]);
    },
    15_000,
  );
});
