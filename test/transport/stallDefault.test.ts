// One stall timeout by default for the transports: bare fromSSE and streamTurn both give up on a silent server after
// 60 s (not the minutes a socket's own timeouts take), and 0 turns it off in both. Timers and performance.now() are
// faked and moved by hand; the server is a fetch whose body never sends a byte.
import { UsageError } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { fromSSE, type StreamTurnOptions, streamTurn, TransportError } from 'cleanturn/transport';
import type { Subscription } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** A fetch that answers 200 `text/event-stream` with a body that never sends a byte; counts its requests. */
function silentServer() {
  const server = {
    requests: 0,
    aborted: 0,
    fetch: (async (_input: unknown, init?: RequestInit) => {
      server.requests++;
      init?.signal?.addEventListener('abort', () => server.aborted++);
      const body = new ReadableStream<Uint8Array>({ pull: () => new Promise<void>(() => {}) });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    }) as typeof fetch,
  };
  return server;
}

let subscription: Subscription | undefined;
afterEach(() => {
  subscription?.unsubscribe();
  subscription = undefined;
  vi.useRealTimers();
});

/** Subscribes and records how the stream ended. */
function watch(source: import('rxjs').Observable<unknown>) {
  const end: { error?: unknown; completed?: boolean } = {};
  subscription = source.subscribe({
    error: (error: unknown) => {
      end.error = error;
    },
    complete: () => {
      end.completed = true;
    },
  });
  return end;
}

/** A turn of one attempt (no retry) against the silent server; `options` are added to streamTurn's. */
function silentTurn(server: ReturnType<typeof silentServer>, options: Partial<StreamTurnOptions> = {}) {
  return streamTurn({
    turnId: 'turn-42',
    retry: 0,
    adapter: openaiChat(),
    request: () => 'https://silent.invalid/',
    fetch: server.fetch,
    ...options,
  });
}

describe('the default stall timeout', () => {
  it('bare fromSSE gives up on a silent server after 60 s, with a TransportError stall, and aborts the request', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const server = silentServer();
    const end = watch(fromSSE(() => 'https://silent.invalid/', { fetch: server.fetch }));
    await vi.advanceTimersByTimeAsync(59_999);
    expect(end).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect(end.error).toBeInstanceOf(TransportError);
    expect(end.error).toMatchObject({ code: 'stall' });
    expect((end.error as TransportError).timeoutMs).toBe(60_000);
    expect(server.aborted).toBe(1);
  });

  it('streamTurn uses the same default', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const server = silentServer();
    const end = watch(silentTurn(server));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(end.error).toBeInstanceOf(TransportError);
    expect(end.error).toMatchObject({ code: 'stall' });
    expect((end.error as TransportError).timeoutMs).toBe(60_000);
  });

  it('stallTimeout 0 turns it off, in fromSSE as in streamTurn', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const server = silentServer();
    const bare = watch(fromSSE(() => 'https://silent.invalid/', { fetch: server.fetch, stallTimeout: 0 }));
    const bareSubscription = subscription;
    const turn = watch(silentTurn(server, { stallTimeout: 0 }));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(bare).toEqual({});
    expect(turn).toEqual({});
    bareSubscription?.unsubscribe();
  });

  it('a stall timeout longer than setTimeout keeps (about 24.8 days) waits that long, not 1 ms', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const server = silentServer();
    const long = 30 * 86_400_000;
    const end = watch(fromSSE(() => 'https://silent.invalid/', { fetch: server.fetch, stallTimeout: long }));
    await vi.advanceTimersByTimeAsync(long - 1);
    expect(end).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect(end.error).toBeInstanceOf(TransportError);
    expect(end.error).toMatchObject({ code: 'stall' });
  });

  it('a stallTimeout that is not a number >= 0 is a UsageError of fromSSE', () => {
    for (const stallTimeout of [-1, Number.NaN, '60s', null]) {
      expect(() =>
        fromSSE(() => 'https://silent.invalid/', { stallTimeout: stallTimeout as number }),
      ).toThrow(UsageError);
    }
  });

  it('a request factory that returns no request is a UsageError, before anything is sent', async () => {
    const server = silentServer();
    const end = watch(fromSSE(() => undefined as unknown as string, { fetch: server.fetch }));
    await vi.waitFor(() => expect(end.error).toBeDefined());
    expect(end.error).toBeInstanceOf(UsageError);
    expect(end.error).toMatchObject({ operator: 'fromSSE', option: 'request', retryable: false });
    expect(server.requests).toBe(0);
  });
});
