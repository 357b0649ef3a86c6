// httpClientSSE with Angular's real HttpClient (`provideHttpClient(withFetch())`, @angular/common 20) running in
// Node against a real server on 127.0.0.1: a turn cut mid-stream and retried, HTTP errors, a page that is not an
// event stream, a hostile body, and unsubscribing, which must close the connection. Then the standard operator
// checks and the cases the marble spec does not draw.
//
// Angular in Node without a browser platform: Angular's packages ship partially compiled, so the JIT compiler is
// loaded first to link them; the injector gets the 'root' scope that @angular/platform-browser's BrowserModule gives
// an app (HttpClient's `providedIn: 'root'` helpers live there) and zoneless change detection (FetchBackend injects
// NgZone, a no-op one without zone.js).
import '@angular/compiler';
import {
  HttpClient,
  type HttpInterceptorFn,
  provideHttpClient,
  withFetch,
  withInterceptors,
} from '@angular/common/http';
import {
  createEnvironmentInjector,
  type EnvironmentInjector,
  ɵINJECTOR_SCOPE as INJECTOR_SCOPE,
  provideZonelessChangeDetection,
} from '@angular/core';
import { attemptPipeline, TurnError, type TurnEvent, turnPipeline } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { httpClientSSE, type SseMessage, sseJson, TransportError } from 'cleanturn/transport';
import { defer, lastValueFrom, type Observable, of, retry, timer, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { OpenAIChatChunk } from '../../src/providers/openaiChat.js';
import type { RetryAsEventsOptions } from '../../src/retryAsEvents.js';
import type { HttpClientEvent } from '../../src/transport/httpClientSSE.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { attempt1, cleanText, whole } from '../support/helpDeskChat.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { nothing, standardChecks } from '../support/standardChecks.js';

/**
 * Angular's HttpClient as an app with `provideHttpClient(withFetch(), withInterceptors(interceptors))` has it, and a
 * way to destroy the app.
 */
function angularHttpClient(interceptors: HttpInterceptorFn[] = []): {
  http: HttpClient;
  destroy: () => void;
} {
  const injector = createEnvironmentInjector(
    [
      provideHttpClient(withFetch(), withInterceptors(interceptors)),
      provideZonelessChangeDetection(),
      { provide: INJECTOR_SCOPE, useValue: 'root' },
    ],
    null as unknown as EnvironmentInjector,
    'test app',
  );
  return { http: injector.get(HttpClient), destroy: () => injector.destroy() };
}

let server: TestServer | undefined;
let angular: ReturnType<typeof angularHttpClient> | undefined;
expectNoLeftoverHandles(async () => {
  angular?.destroy();
  angular = undefined;
  await server?.close();
  server = undefined;
});

/** Starts the server and an Angular HttpClient; returns the HttpClient request of one attempt. */
async function setUp(
  script: Parameters<typeof startServer>[0],
  interceptors: HttpInterceptorFn[] = [],
): Promise<{ server: TestServer; post: () => Observable<HttpClientEvent> }> {
  const started = await startServer(script);
  server = started;
  angular = angularHttpClient(interceptors);
  const { http } = angular;
  const post = () =>
    http.post(
      `${started.url}/v1/chat/completions`,
      { model: 'gpt-4.1', messages: [{ role: 'user', content: 'Refund order ORD-7781.' }], stream: true },
      {
        observe: 'events',
        reportProgress: true,
        responseType: 'text',
        headers: { authorization: 'Bearer sk-test' },
      },
    );
  return { server: started, post };
}

/** One attempt: HttpClient → httpClientSSE → sseJson → attemptPipeline(openaiChat()). */
const attempt = (post: () => Observable<HttpClientEvent>) =>
  defer(post).pipe(httpClientSSE(), sseJson<OpenAIChatChunk>(), attemptPipeline(openaiChat()));

/** A whole turn over `post`, and what its user read: text appended, cleared on every reset. */
async function runTurn(post: () => Observable<HttpClientEvent>, retry: RetryAsEventsOptions = { count: 2 }) {
  const events: TurnEvent[] = [];
  let error: unknown;
  await lastValueFrom(attempt(post).pipe(turnPipeline({ turnId: 'turn-42', retry }), toArray())).then(
    (all) => events.push(...all),
    (e: unknown) => {
      error = e;
    },
  );
  let read = '';
  for (const event of events) {
    if (event.type === 'reset') read = '';
    if (event.type === 'text') read += event.text;
  }
  return { events, error, read, resets: events.filter((e) => e.type === 'reset') };
}

/** Waits until the server saw `count` connections closed by the client before their response ended. */
async function closedByClient(test: TestServer, count = 1): Promise<number> {
  for (let i = 0; i < 200 && test.aborted < count; i++) await new Promise((r) => setTimeout(r, 10));
  return test.aborted;
}

describe("httpClientSSE with Angular's HttpClient (withFetch) against a real server", () => {
  it('a cut mid-stream and a retry: the user reads exactly attempt 2, after one reset; two requests', async () => {
    const { server, post } = await setUp([
      { body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam'), chunkSize: 50 },
      whole,
    ]);
    const turn = await runTurn(post);
    expect(turn.error).toBeUndefined();
    expect(turn.read).toBe(cleanText);
    expect(turn.resets).toEqual([
      {
        type: 'reset',
        attempt: 2,
        reason: expect.stringMatching(/^the stream broke: /),
        delay: 0,
        failedAttempt: 1,
        outputStarted: true,
        retryCount: 1,
        maxRetries: 2,
        errorName: 'TransportError',
      },
    ]);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.parse(server.requests[0]?.body ?? '{}')).toMatchObject({ stream: true });
    // Attempt 1 streamed (it never got to its HttpResponse): its text arrived through the progress events.
    const beforeReset = turn.events.slice(
      0,
      turn.events.findIndex((e) => e.type === 'reset'),
    );
    expect(beforeReset.filter((e) => e.type === 'text').map((e) => e.text)).toEqual([
      'Checking order ORD-7781. ',
      'Refunding the dam',
    ]);
    // Attempt 2's refund is released once, with the effect key of its meaning.
    expect(turn.events.filter((e) => e.type === 'tool-call').map((e) => [e.attempt, e.id])).toEqual([
      [2, 'c7'],
    ]);
  });

  it('a 429 with retry-after-ms is a retryable TransportError http-status with retryAfterMs; a delay that honours it waits', async () => {
    const { server, post } = await setUp([
      {
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after-ms': '300' },
        body: '{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}',
      },
      whole,
    ]);
    const failures: unknown[] = [];
    const turn = await runTurn(post, {
      count: 2,
      delay: (error) => {
        failures.push(error);
        return timer(
          error instanceof TransportError && error.code === 'http-status' ? (error.retryAfterMs ?? 0) : 0,
        );
      },
    });
    expect(turn.error).toBeUndefined();
    expect(turn.read).toBe(cleanText);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toBeInstanceOf(TransportError);
    expect(failures[0]).toMatchObject({ code: 'http-status' });
    expect(failures[0]).toMatchObject({
      status: 429,
      retryable: true,
      retryAfterMs: 300,
      body: '{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}',
    });
    const [first, second] = server.requests;
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(280);
  });

  it('a 401 is not retried: the turn fails with its TransportError http-status after one request', async () => {
    const { server, post } = await setUp([
      { status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":"invalid api key"}' },
      whole,
    ]);
    const turn = await runTurn(post);
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'http-status' });
    expect(turn.error).toMatchObject({ status: 401, retryable: false, body: '{"error":"invalid api key"}' });
    expect(server.requests).toHaveLength(1);
    expect(turn.events).toEqual([]);
  });

  it('an HTML page with status 200 is a TransportError not-event-stream with the start of the page, not retried', async () => {
    const page = '<html><body>Sign in to use the Wi-Fi</body></html>';
    const { server, post } = await setUp([{ headers: { 'content-type': 'text/html' }, body: page }, whole]);
    const turn = await runTurn(post);
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'not-event-stream' });
    expect(turn.error).toMatchObject({ status: 200, contentType: 'text/html', body: page, retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('a connection refused is a retryable TransportError connection; every attempt fails, then the turn gives up', async () => {
    const { server, post } = await setUp([whole]);
    await server.close(); // nothing listens on the port any more
    const turn = await runTurn(post, { count: 1 });
    expect(turn.error).toBeInstanceOf(TurnError);
    expect(turn.error).toMatchObject({ code: 'retries-exhausted' });
    const [last] = (turn.error as TurnError).attempts?.slice(-1) ?? [];
    expect(last?.error).toBeInstanceOf(TransportError);
    expect(last?.error).toMatchObject({ code: 'connection' });
    expect(last?.reason).toMatch(/^request failed: .*ECONNREFUSED/);
  });

  it('an error body that never ends fails after its first 4 KiB, and the request is cancelled', async () => {
    const { server, post } = await setUp([
      {
        status: 503,
        headers: { 'content-type': 'text/plain' },
        body: '',
        hold: true,
        *stream() {
          for (let i = 0; i < 1_000; i++) yield 'overloaded '.repeat(100);
        },
      },
    ]);
    const error = await lastValueFrom(defer(post).pipe(httpClientSSE())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'http-status' });
    expect(error).toMatchObject({ status: 503, retryable: true });
    expect((error as TransportError).body).toHaveLength(4096);
    expect(await closedByClient(server)).toBe(1);
  });

  it('a line that never ends passes maxBufferSize: TransportError sse-limit-*, and the request is cancelled', async () => {
    const { server, post } = await setUp([
      {
        body: '',
        hold: true,
        *stream() {
          yield 'data: {"choices":[{"delta":{"content":"';
          for (let i = 0; i < 1_000; i++) yield 'x'.repeat(1_000);
        },
      },
    ]);
    const error = await lastValueFrom(defer(post).pipe(httpClientSSE({ maxBufferSize: 16_384 }))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'sse-limit-event', limit: 16_384, retryable: false });
    expect(await closedByClient(server)).toBe(1);
  });

  it('unsubscribing cancels the request: the server sees the connection closed', async () => {
    const { server, post } = await setUp([
      { body: attempt1.body, stallAfter: attempt1.after('text:Refunding') },
    ]);
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      const subscription = attempt(post).subscribe((event) => {
        if (event.type !== 'text') return;
        seen.push(event.text);
        if (event.text.startsWith('Refunding')) {
          subscription.unsubscribe();
          resolve();
        }
      });
    });
    expect(seen).toEqual(['Checking order ORD-7781. ', 'Refunding the dam']);
    expect(await closedByClient(server)).toBe(1);
    expect(server.requests).toHaveLength(1);
  });
});

describe("httpClientSSE behind an interceptor's retry() (a real HttpClient, withFetch)", () => {
  /** The interceptor an app might have for flaky networks: every request sent again once when it fails. */
  const retryOnce: HttpInterceptorFn = (req, next) => next(req).pipe(retry(1));
  /** A first response that a proxy's comment starts, cut inside its first event. */
  const unfinished = ': proxy keep-alive\n\ndata: {"choices":[{"index":0,"delta":{"content":"Lost text';
  /** A short whole answer, shorter than what attempt 1 showed before its cut. */
  const short = chatTranscript([{ text: 'One moment.' }]);

  it('a request sent again after events were emitted fails with TransportError response-resent/-rewritten, not a spliced stream', async () => {
    const { server, post } = await setUp(
      [
        { body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam'), chunkSize: 50 },
        { body: short.body },
      ],
      [retryOnce],
    );
    // What the attempt emitted before it ended, and how it ended.
    const texts: string[] = [];
    const error = await new Promise<unknown>((resolve) => {
      attempt(post).subscribe({
        next: (event) => {
          if (event.type === 'text') texts.push(event.text);
        },
        error: resolve,
        complete: () => resolve(undefined),
      });
    });
    // Attempt 1's text, and nothing of the answer the interceptor's second request got.
    expect(texts).toEqual(['Checking order ORD-7781. ', 'Refunding the dam']);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({
      code: 'response-resent',
      retryable: true,
      read: attempt1.after('text:Refunding the dam'),
    });
    expect(server.requests.length).toBeLessThanOrEqual(2);
  });

  it('the turn retries with one reset that says why; the user reads exactly the last attempt', async () => {
    const { post } = await setUp(
      [{ body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam'), chunkSize: 50 }, whole],
      [retryOnce],
    );
    const turn = await runTurn(post);
    expect(turn.error).toBeUndefined();
    expect(turn.read).toBe(cleanText);
    expect(turn.resets).toEqual([
      {
        type: 'reset',
        attempt: 2,
        reason: expect.stringMatching(/^the request was sent again after \d+ characters/),
        delay: 0,
        failedAttempt: 1,
        outputStarted: true,
        retryCount: 1,
        maxRetries: 2,
        errorName: 'TransportError',
      },
    ]);
    expect(turn.events.filter((e) => e.type === 'tool-call').map((e) => [e.attempt, e.id])).toEqual([
      [2, 'c7'],
    ]);
  });

  /**
   * Serves `first`, then the whole answer to the interceptor's retry: the turn reads only the second response, with
   * no error and no reset, over two requests.
   */
  async function expectReadAfresh(first: ScriptedResponse) {
    const { server, post } = await setUp([first, whole], [retryOnce]);
    const turn = await runTurn(post);
    expect(turn.error).toBeUndefined();
    expect(turn.resets).toEqual([]);
    expect(turn.read).toBe(cleanText);
    expect(server.requests).toHaveLength(2);
  }

  it('a request sent again before any event was emitted is read afresh: no error, nothing of the first', async () => {
    // The first response is cut inside its first event: no message of it was complete.
    await expectReadAfresh({ body: unfinished, destroyAfter: unfinished.length });
  });

  it('a 503 that the interceptor retries is not read as the error of the response that follows', async () => {
    await expectReadAfresh({
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"type":"overloaded"}}',
    });
  });
});

// The progress events' partialText is the whole text so far: `a` completes an event, `b` starts another that `c`
// completes.
standardChecks<HttpClientEvent>({
  name: 'httpClientSSE',
  make: () => httpClientSSE(),
  values: {
    a: { type: 3, partialText: 'data: Checking\n\n' },
    b: { type: 3, partialText: 'data: Checking\n\ndata: order' },
    c: { type: 3, partialText: 'data: Checking\n\ndata: order ORD-7781.\n\n' },
  },
  expected: {
    a: { event: undefined, data: 'Checking' },
    b: nothing,
    c: { event: undefined, data: 'order ORD-7781.' },
  },
});

describe('httpClientSSE', () => {
  const run = (events: readonly unknown[], options = {}) =>
    lastValueFrom(of(...events).pipe(httpClientSSE(options) as never, toArray())) as Promise<SseMessage[]>;
  const head = (status: number, contentType: string): HttpClientEvent => ({
    type: 2,
    status,
    statusText: '',
    headers: new Headers({ 'content-type': contentType }),
  });

  it("follows fromSSE's parsing rules: CR line endings split across events, ids, a raw JSON tail", async () => {
    const body = 'id: 1\rdata: a\r\rdata: b\r\r{"error":{"code":500}}';
    const progress = [8, 15, 16, 22, body.length].map((end) => ({
      type: 3,
      partialText: body.slice(0, end),
    }));
    expect(await run([head(200, 'text/event-stream'), ...progress])).toEqual([
      { id: '1', event: undefined, data: 'a' },
      { event: undefined, data: 'b' },
      { event: 'raw', data: '{"error":{"code":500}}' },
    ]);
  });

  it('reads the whole body from the HttpResponse without reportProgress; an event cut off by the end is dropped', async () => {
    const response = {
      type: 4,
      status: 200,
      statusText: 'OK',
      headers: new Headers({ 'content-type': 'text/event-stream; charset=utf-8' }),
      body: 'data: a\n\ndata: cut',
    };
    expect(await run([{ type: 0 }, response])).toEqual([{ event: undefined, data: 'a' }]);
  });

  it('a 204, or a 200 without a body, is a TransportError not-event-stream without a body', async () => {
    await expect(run([head(204, 'text/event-stream')])).rejects.toThrow(/HTTP 204 without a body/);
    const empty = { type: 4, status: 200, statusText: 'OK', headers: new Headers(), body: null };
    await expect(run([empty])).rejects.toMatchObject({ name: 'TransportError', code: 'not-event-stream' });
  });

  it('explains a request that did not ask for events as text', async () => {
    await expect(run(['data: a\n\n'])).rejects.toThrow(/observe: 'events'/);
    const json = { type: 4, status: 200, statusText: 'OK', headers: new Headers(), body: { a: 1 } };
    await expect(run([json])).rejects.toThrow(/responseType: 'text'/);
  });

  it('passes other errors through, and a 2xx HttpErrorResponse too (a body Angular could not parse)', async () => {
    const parsing = {
      name: 'HttpErrorResponse',
      status: 200,
      statusText: 'OK',
      error: new SyntaxError('JSON'),
    };
    const result = defer(() => {
      throw parsing;
    }).pipe(httpClientSSE());
    await expect(lastValueFrom(result)).rejects.toBe(parsing);
  });

  describe('a response that starts over', () => {
    const progress = (partialText: string): HttpClientEvent => ({ type: 3, partialText });
    const response = (body: string): HttpClientEvent => ({
      type: 4,
      status: 200,
      statusText: 'OK',
      headers: new Headers({ 'content-type': 'text/event-stream' }),
      body,
    });
    /** What came out before the result ended, and how it ended. */
    const outcome = async (events: readonly unknown[]) => {
      const messages: SseMessage[] = [];
      let error: unknown;
      await new Promise<void>((resolve) => {
        (of(...events) as Observable<HttpClientEvent>).pipe(httpClientSSE()).subscribe({
          next: (m) => messages.push(m),
          error: (e: unknown) => {
            error = e;
            resolve();
          },
          complete: resolve,
        });
      });
      return { data: messages.map((m) => m.data), error };
    };
    const sse = head(200, 'text/event-stream');

    it('progress text that shrinks after events were emitted: TransportError response-rewritten', async () => {
      const result = await outcome([
        sse,
        progress('data: A1\n\ndata: A1 more\n\n'),
        progress('data: A2\n\n'),
      ]);
      expect(result.data).toEqual(['A1', 'A1 more']);
      expect(result.error).toBeInstanceOf(TransportError);
      expect(result.error).toMatchObject({ code: 'response-rewritten', read: 25, retryable: true });
    });

    it('progress text that grows but no longer starts with what was read: rewritten', async () => {
      const result = await outcome([sse, progress('data: A1\n\n'), progress('data: B1\n\ndata: B2\n\n')]);
      expect(result.data).toEqual(['A1']);
      expect(result.error).toMatchObject({ name: 'TransportError', code: 'response-rewritten', read: 10 });
    });

    it('a final body that differs from the progress text: rewritten, and nothing of the body is emitted', async () => {
      const result = await outcome([sse, progress('data: A1\n\n'), response('data: B1\n\ndata: B2\n\n')]);
      expect(result.data).toEqual(['A1']);
      expect(result.error).toMatchObject({ name: 'TransportError', code: 'response-rewritten', read: 10 });
    });

    it('a final body shorter than the progress text: rewritten', async () => {
      const result = await outcome([sse, progress('data: A1\n\ndata: A2\n\n'), response('data: A1\n\n')]);
      expect(result.data).toEqual(['A1', 'A2']);
      expect(result.error).toMatchObject({ name: 'TransportError', code: 'response-rewritten', read: 20 });
    });

    it('a final body that differs long before the end of the progress text: rewritten', async () => {
      const result = await outcome([
        sse,
        progress(`data: ${'a'.repeat(300)}\n\n`),
        response(`data: b${'a'.repeat(299)}\n\ndata: more\n\n`),
      ]);
      expect(result.data).toEqual(['a'.repeat(300)]);
      expect(result.error).toMatchObject({ name: 'TransportError', code: 'response-rewritten', read: 308 });
    });

    it('a final body that goes on from the progress text is read to its end', async () => {
      const result = await outcome([sse, progress('data: A1\n\nda'), response('data: A1\n\ndata: A2\n\n')]);
      expect(result).toEqual({ data: ['A1', 'A2'], error: undefined });
    });

    it('a second Sent or header after events were emitted: resent', async () => {
      const first = [{ type: 0 }, sse, progress('data: A1\n\n')];
      for (const again of [{ type: 0 }, sse]) {
        const result = await outcome([...first, again, progress('data: A2 longer than A1\n\n')]);
        expect(result.data).toEqual(['A1']);
        expect(result.error).toMatchObject({ name: 'TransportError', code: 'response-resent', read: 10 });
      }
    });

    it('a second response before any event was emitted is parsed afresh, its head and all', async () => {
      // The first response's unfinished event is dropped, not glued to the second's text.
      expect(
        await outcome([
          { type: 0 },
          sse,
          progress('data: cut of'),
          { type: 0 },
          sse,
          progress('data: A2\n\n'),
        ]),
      ).toEqual({ data: ['A2'], error: undefined });
      // A first response that was an error (a 503 the interceptor retried) does not make the second one fail.
      const overloaded = head(503, 'application/json');
      expect(
        await outcome([
          overloaded,
          progress('{"error":"overloaded"}'),
          { type: 0 },
          sse,
          response('data: A2\n\n'),
        ]),
      ).toEqual({ data: ['A2'], error: undefined });
    });
  });

  it('refuses a maxBufferSize that is not > 0', () => {
    expect(() => httpClientSSE({ maxBufferSize: 0 })).toThrow(
      /httpClientSSE: maxBufferSize must be a number > 0, not 0/,
    );
  });
});
