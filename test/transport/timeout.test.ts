// streamTurn({ timeout: { totalMs, attemptMs, chunkMs } }) against real loopback servers with short real timeouts:
// a server that stalls after its headers (chunkMs, as stallTimeout), one that sends only SSE comments or provider
// keep-alive events forever (attemptMs: bytes are progress for chunkMs, so only the attempt's cap catches it), one
// that trickles, and a turn whose retries would go on past its total (totalMs, never retried). Every test also
// checks that no timer and no socket outlives its turn.
import { setTimeout as sleep } from 'node:timers/promises';
import { type ProviderEvent, TurnError, UsageError } from 'cleanturn';
import { anthropicMessages, openaiChat } from 'cleanturn/providers';
import { type StreamTurnOptions, streamTurn, TransportError, type TurnReport } from 'cleanturn/transport';
import type { OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

let server: TestServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  server = undefined;
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const finish = `${chunk({}, 'stop')}data: [DONE]\n\n`;

/** Headers, then silence with the socket open. */
const stallsAfterHeaders: ScriptedResponse = { body: '', stallAfter: 0 };

/** `piece` every `gapMs`, forever (until the client goes away). */
function forever(piece: string, gapMs: number): ScriptedResponse {
  return {
    body: '',
    stream: async function* () {
      for (;;) {
        yield piece;
        await sleep(gapMs);
      }
    },
  };
}

/** `count` text chunks `gapMs` apart, then the finish. */
function trickle(count: number, gapMs: number): ScriptedResponse {
  return {
    body: '',
    stream: async function* () {
      for (let i = 0; i < count; i++) {
        yield chunk({ content: `${i} ` });
        await sleep(gapMs);
      }
      yield finish;
    },
  };
}

interface Ended {
  error: unknown;
  completed: boolean;
  text: string;
  report: TurnReport | undefined;
  /** Milliseconds from the subscription to the end. */
  ms: number;
}

function run(
  srv: TestServer,
  options: Partial<StreamTurnOptions>,
  adapter: OperatorFunction<never, ProviderEvent> | undefined = undefined,
): Promise<Ended> {
  const ended: Ended = { error: undefined, completed: false, text: '', report: undefined, ms: 0 };
  const started = performance.now();
  return new Promise((resolve) => {
    streamTurn({
      turnId: 'turn-42',
      adapter: adapter ?? openaiChat(),
      request: ({ signal }) => ({ url: srv.url, init: { method: 'POST', body: '{}', signal } }),
      backoff: false,
      onReport: (report) => {
        ended.report = report;
      },
      ...options,
    }).subscribe({
      next: (event) => {
        if (event.type === 'text') ended.text += event.text;
        if (event.type === 'reset') ended.text = '';
      },
      error: (error: unknown) => {
        ended.error = error;
        ended.ms = performance.now() - started;
        resolve(ended);
      },
      complete: () => {
        ended.completed = true;
        ended.ms = performance.now() - started;
        resolve(ended);
      },
    });
  });
}

describe('timeout.chunkMs (and stallTimeout, its older name)', () => {
  it('aborts an attempt whose server stalls after its headers, with a retryable TransportError stall', async () => {
    server = await startServer([stallsAfterHeaders]);
    const ended = await run(server, { retry: 0, timeout: { chunkMs: 200 } });
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'stall' });
    expect((ended.error as TransportError).timeoutMs).toBe(200);
    expect((ended.error as TransportError).retryable).toBe(true);
    expect(ended.ms).toBeGreaterThanOrEqual(150);
    expect(ended.report?.outcome).toBe('failed');
  });

  it('stallTimeout still works, as the same timer', async () => {
    server = await startServer([stallsAfterHeaders]);
    const ended = await run(server, { retry: 0, stallTimeout: 200 });
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'stall' });
    expect((ended.error as TransportError).timeoutMs).toBe(200);
  });

  it('a stream that trickles with gaps shorter than chunkMs is no stall', async () => {
    // 15 chunks 40 ms apart: about 600 ms, twice the timeout, with 7× margin on every gap.
    server = await startServer([trickle(15, 40)]);
    const ended = await run(server, { retry: 0, timeout: { chunkMs: 300 } });
    expect(ended.completed).toBe(true);
    expect(ended.text).toBe(Array.from({ length: 15 }, (_, i) => `${i} `).join(''));
  });

  it('counts SSE comments as progress: a server that sends only comments is no stall', async () => {
    // Comments every 20 ms for the 400 ms attempt, with chunkMs 150: no TransportError stall, the attempt's cap ends it.
    server = await startServer([forever(': keep-alive\n\n', 20)]);
    const ended = await run(server, { retry: 0, timeout: { chunkMs: 150, attemptMs: 400 } });
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'attempt-timeout' });
  });
});

describe('timeout.attemptMs', () => {
  it('ends an attempt of a server that sends only comments forever; the attempt is retried, then the turn fails', async () => {
    server = await startServer([forever(': keep-alive\n\n', 20)]);
    const srv = server;
    const ended = await run(srv, { retry: 1, timeout: { attemptMs: 300 } });
    expect(ended.error).toBeInstanceOf(TurnError);
    expect(ended.error).toMatchObject({ code: 'retries-exhausted' });
    const exhausted = ended.error as TurnError;
    expect(exhausted.attempts?.map((a) => a.reason)).toEqual([
      'the attempt did not end within 300 ms',
      'the attempt did not end within 300 ms',
    ]);
    expect(srv.requests).toHaveLength(2);
    // Two attempts of 300 ms each, with a generous margin below.
    expect(ended.ms).toBeGreaterThanOrEqual(500);
    await sleep(50);
    expect(srv.aborted).toBe(2);
  });

  it("ends an attempt of a server that sends only Anthropic's ping events forever", async () => {
    server = await startServer([forever('event: ping\ndata: {"type":"ping"}\n\n', 20)]);
    const ended = await run(server, { retry: 0, timeout: { attemptMs: 300 } }, anthropicMessages() as never);
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'attempt-timeout' });
    expect((ended.error as TransportError).retryable).toBe(true);
    expect((ended.error as TransportError).timeoutMs).toBe(300);
  });

  it('caps a live attempt that trickles, and the next attempt starts with its own time', async () => {
    // Attempt 1 trickles for about 1.5 s (past its 400 ms); attempt 2 finishes at once.
    server = await startServer([trickle(30, 50), { body: `${chunk({ content: 'whole' })}${finish}` }]);
    const ended = await run(server, { retry: 1, timeout: { attemptMs: 400 } });
    expect(ended.completed).toBe(true);
    expect(ended.text).toBe('whole');
    expect(ended.report?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(ended.report?.attempts[0]?.reason).toBe('the attempt did not end within 400 ms');
  });
});

describe('timeout.totalMs', () => {
  it('ends the turn across its retries with a TransportError turn-timeout, not retried', async () => {
    // Every attempt stalls after 100 ms; 20 retries would take 2 s; the turn has 450 ms.
    server = await startServer([stallsAfterHeaders]);
    const srv = server;
    const ended = await run(srv, { retry: 20, timeout: { totalMs: 450, chunkMs: 100 } });
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'turn-timeout' });
    const error = ended.error as TransportError;
    expect(error.retryable).toBe(false);
    expect(error.timeoutMs).toBe(450);
    expect(ended.ms).toBeGreaterThanOrEqual(400);
    expect(ended.ms).toBeLessThan(2_000);
    const made = srv.requests.length;
    expect(made).toBeGreaterThanOrEqual(2);
    expect(made).toBeLessThanOrEqual(6);
    await sleep(300);
    expect(srv.requests).toHaveLength(made);
    expect(ended.report?.outcome).toBe('failed');
    expect(ended.report?.error).toBe(error);
  });

  it('cancels a wait before a retry that would end past the total', async () => {
    server = await startServer([{ status: 503, headers: { 'retry-after': '5' }, body: 'busy' }]);
    const ended = await run(server, { retry: 2, timeout: { totalMs: 300 } });
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'turn-timeout' });
    // The wait had about 5 s to go.
    expect(ended.ms).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it('leaves no timer behind when the turn ends first (long timers, checked by the handle count)', async () => {
    server = await startServer([{ body: `${chunk({ content: 'whole' })}${finish}` }]);
    const ended = await run(server, { timeout: { totalMs: 600_000, attemptMs: 300_000, chunkMs: 60_000 } });
    expect(ended.completed).toBe(true);
    expect(ended.text).toBe('whole');
  });
});

describe('timeout: bad values', () => {
  const base = { turnId: 'turn-42', adapter: openaiChat(), request: () => 'http://127.0.0.1:1/' };
  it('refuses what is not an object of totalMs, attemptMs and chunkMs, each milliseconds >= 0', () => {
    const bad: unknown[] = [
      5_000,
      'fast',
      null,
      [],
      { total: 1_000 },
      { totalMs: -1 },
      { attemptMs: Number.NaN },
      { chunkMs: '100' },
      { totalMs: null },
    ];
    for (const timeout of bad) {
      expect(() => streamTurn({ ...base, timeout: timeout as StreamTurnOptions['timeout'] })).toThrow(
        UsageError,
      );
    }
    expect(() => streamTurn({ ...base, timeout: { total: 1 } as never })).toThrow(
      /totalMs, attemptMs and chunkMs/,
    );
  });

  it('refuses stallTimeout beside timeout.chunkMs, and takes each alone, 0 and Infinity as off', () => {
    expect(() => streamTurn({ ...base, stallTimeout: 100, timeout: { chunkMs: 100 } })).toThrow(UsageError);
    expect(() => streamTurn({ ...base, stallTimeout: 100, timeout: { totalMs: 1_000 } })).not.toThrow();
    expect(() =>
      streamTurn({ ...base, timeout: { totalMs: 0, attemptMs: Number.POSITIVE_INFINITY, chunkMs: 0 } }),
    ).not.toThrow();
  });
});
