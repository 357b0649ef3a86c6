// The fault harness: a recorded help-desk turn replayed over real sockets on 127.0.0.1 and broken at named
// points. Each case asserts what the user sees, which tools ran with which keys, and how many attempts were billed.
import { effectKey, TurnError, UsageError } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { streamTurn, TransportError } from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';
import { args, attempt1, cleanText, whole } from '../support/helpDeskChat.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { prng, seed } from '../support/random.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { collectTurn } from './collectTurn.js';

const refundKey = effectKey('turn-42', { name: 'issue_refund', args: JSON.parse(args) });

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

/** The user reads attempt 2 only, one reset arrived, c7 ran once with the meaning key, two attempts were billed. */
async function expectCleanRetry(first: ScriptedResponse, options: Parameters<typeof collectTurn>[1] = {}) {
  server = await startServer([first, whole]);
  const turn = await collectTurn(server.url, options);
  expect(turn.error).toBeUndefined();
  expect(turn.text).toBe(cleanText);
  expect(turn.resets.map((r) => r.attempt)).toEqual([2]);
  expect(turn.executed.map((c) => [c.id, c.effectKey])).toEqual([['c7', refundKey]]);
  expect(server.requests).toHaveLength(2);
  expect(turn.report?.outcome).toBe('completed');
  expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
  // Attempt 1 never reached its usage chunk: billed as unknown, with what it streamed.
  expect(turn.report?.attempts[0]?.usageKnown).toBe(false);
  expect(turn.report?.attempts[1]?.usage).toEqual({ inputTokens: 88, outputTokens: 40 });
  expect(turn.report?.usageComplete).toBe(false);
  return turn;
}

describe('named faults over a real socket', () => {
  it('the socket is destroyed right after a complete tool-call event', async () => {
    const turn = await expectCleanRetry({ body: attempt1.body, destroyAfter: attempt1.after('call-end:c1') });
    expect(turn.report?.attempts[0]?.textLength).toBe('Checking order ORD-7781. '.length);
  });

  it('the socket is destroyed after a text fragment that splits a word ("Refunding the dam")', async () => {
    const turn = await expectCleanRetry({
      body: attempt1.body,
      destroyAfter: attempt1.after('text:Refunding the dam'),
    });
    expect(turn.report?.attempts[0]?.textLength).toBe('Checking order ORD-7781. Refunding the dam'.length);
    expect(turn.report?.attempts[0]?.reason).toMatch(/stream broke|terminated|socket/i);
  });

  it('the socket is destroyed immediately before the finish event', async () => {
    await expectCleanRetry({ body: attempt1.body, destroyAfter: attempt1.before('finish') });
  });

  it('the response ends cleanly, with no error at all, just before the finish', async () => {
    const turn = await expectCleanRetry({ body: attempt1.body, endAfter: attempt1.before('finish') });
    expect(turn.report?.attempts[0]?.reason).toMatch(/without a finish/);
  });

  it('the server stalls: stops sending but keeps the socket open', async () => {
    const turn = await expectCleanRetry(
      { body: attempt1.body, stallAfter: attempt1.after('text:Refunding') },
      { stallTimeout: 300 },
    );
    expect(turn.report?.attempts[0]?.reason).toMatch(/stalled/);
    expect(server?.aborted).toBeGreaterThanOrEqual(1); // the stalled request was aborted, not left open
  });

  it('a 503 with retry-after is retried after the requested wait, then succeeds', async () => {
    const turn = await expectCleanRetry({
      status: 503,
      headers: { 'retry-after': '1', 'content-type': 'application/json' },
      body: '{"error":{"message":"overloaded"}}',
    });
    const [first, second] = server?.requests ?? [];
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(950);
    expect(turn.report?.attempts[0]?.textLength).toBe(0);
  });

  it('a 429 with retry-after-ms (OpenAI) is retried after that many milliseconds', async () => {
    await expectCleanRetry({
      status: 429,
      headers: { 'retry-after-ms': '400', 'content-type': 'application/json' },
      body: '{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}',
    });
    const [first, second] = server?.requests ?? [];
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(380);
  });

  it.each([
    [
      'a 200 text/html page (a captive portal)',
      { headers: { 'content-type': 'text/html' }, body: '<html>Sign in</html>' },
    ],
    ['a 204 No Content', { status: 204, body: '' }],
    ['a line that never ends', { body: 'data: {'.padEnd(40_000, 'x') }],
  ] as const)('%s fails the turn at once, not retried', async (_, response) => {
    server = await startServer([response, whole]);
    const turn = await collectTurn(server.url, { maxBufferSize: 16_384 });
    expect((turn.error as { name?: string }).name).toBe('TransportError');
    expect((turn.error as { code?: string }).code).toMatch(
      /^(not-event-stream|sse-limit-event|sse-limit-unframed)$/,
    );
    expect((turn.error as { retryable?: boolean }).retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['failed']);
  });

  it('a 401 is not retried', async () => {
    server = await startServer([
      { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":"invalid api key"}' },
      whole,
    ]);
    const turn = await collectTurn(server.url);
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'http-status' });
    expect((turn.error as TransportError).status).toBe(401);
    expect((turn.error as TransportError).retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    expect(turn.executed).toEqual([]);
    expect(turn.report?.outcome).toBe('failed');
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['failed']);
  });

  it('a cut inside a multi-byte UTF-8 character', async () => {
    const start = attempt1.body.indexOf(Buffer.from('📦'));
    expect(start).toBeGreaterThan(0);
    await expectCleanRetry({ body: attempt1.body, destroyAfter: start + 2, chunkSize: 7 });
  });

  it('a cut inside an SSE line', async () => {
    const line = attempt1.body.indexOf(Buffer.from('"content":"Refunding'));
    await expectCleanRetry({ body: attempt1.body, destroyAfter: line + 5 });
  });

  it(`cuts at random byte offsets, every one before the finish (seed ${seed})`, async () => {
    const random = prng(seed);
    const limit = attempt1.before('finish');
    for (let i = 0; i < 25; i++) {
      const at = 1 + Math.floor(random() * (limit - 1));
      const chunkSize = 1 + Math.floor(random() * 40);
      await server?.close();
      await expectCleanRetry({ body: attempt1.body, destroyAfter: at, chunkSize }).catch((error: unknown) => {
        throw new Error(`cut at byte ${at} in pieces of ${chunkSize} (CLEANTURN_SEED=${seed})`, {
          cause: error,
        });
      });
    }
  });

  it('every attempt fails: the turn errors with the attempt records, and no tool runs', async () => {
    server = await startServer([{ body: attempt1.body, destroyAfter: attempt1.after('call-end:c1') }]);
    const turn = await collectTurn(server.url, { retry: 2 });
    expect(turn.error).toBeInstanceOf(TurnError);
    expect(turn.error).toMatchObject({ code: 'retries-exhausted' });
    expect((turn.error as TurnError).attempts).toHaveLength(3);
    expect(server.requests).toHaveLength(3);
    expect(turn.executed).toEqual([]);
    expect(turn.report?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'abandoned', 'failed']);
    // Each attempt's own reason: the last one's is not the "gave up after 3 attempt(s): …" of the turn's error.
    for (const attempt of turn.report?.attempts ?? []) expect(attempt.reason).toMatch(/^the stream broke/);
  });

  it('retry counts retries, as RxJS retry does: retry 0 makes one request and ends with its own error', async () => {
    server = await startServer([{ body: attempt1.body, destroyAfter: attempt1.after('call-end:c1') }]);
    const turn = await collectTurn(server.url, { retry: 0 });
    expect(turn.error).not.toMatchObject({ code: 'retries-exhausted' });
    expect((turn.error as Error).message).toMatch(/^the stream broke/);
    expect(server.requests).toHaveLength(1);
    for (const retry of [-1, 1.5]) {
      expect(() =>
        streamTurn({ turnId: 't', adapter: openaiChat(), request: () => server?.url ?? '', retry }),
      ).toThrow(UsageError);
    }
  });

  it('unsubscribing aborts the request: the server sees the connection close', async () => {
    server = await startServer([{ body: attempt1.body, stallAfter: attempt1.after('text:Refunding') }]);
    const url = server.url;
    await new Promise<void>((resolve) => {
      const subscription = streamTurn({
        turnId: 'turn-42',
        adapter: openaiChat(),
        request: ({ signal }) => ({ url, init: { method: 'POST', signal } }),
      }).subscribe((event) => {
        if (event.type === 'text' && event.text.startsWith('Refunding')) {
          subscription.unsubscribe();
          resolve();
        }
      });
    });
    for (let i = 0; i < 100 && server.aborted === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server.aborted).toBe(1);
  });

  it('a report callback that throws does not change how the turn ends', async () => {
    server = await startServer([whole]);
    const { config } = await import('rxjs');
    const url = server.url;
    const unhandled: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (error) => unhandled.push(error);
    try {
      const ending = await new Promise<string>((resolve) => {
        streamTurn({
          turnId: 'turn-42',
          adapter: openaiChat(),
          request: ({ signal }) => ({ url, init: { method: 'POST', signal } }),
          onReport: () => {
            throw new Error('billing down');
          },
        }).subscribe({ error: () => resolve('error'), complete: () => resolve('complete') });
      });
      expect(ending).toBe('complete');
      expect(unhandled).toEqual([new Error('billing down')]);
    } finally {
      config.onUnhandledError = previous;
    }
  });
});
