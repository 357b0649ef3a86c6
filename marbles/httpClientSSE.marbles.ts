import { defineMarbles } from 'cleanturn/testing';
import { httpClientSSE } from 'cleanturn/transport';
import type { HttpHeadersLike } from '../src/transport/errors.js';
import {
  connectionError,
  httpStatusError,
  notEventStreamError,
  responseRestartError,
} from '../src/transport/errors.js';
import type { HttpClientEvent } from '../src/transport/httpClientSSE.js';

// Angular's HttpClient events and HttpErrorResponse, by shape (as the operator reads them): the real classes need
// Angular loaded, which the pictures do not. test/transport/httpClientSSE.test.ts runs the real HttpClient.

/** A stand-in for Angular's `HttpHeaders`: `get` with names in any case; shown as a record. */
class HttpHeaders implements HttpHeadersLike {
  constructor(private readonly record: Readonly<Record<string, string>>) {}
  get(name: string): string | null {
    return this.record[name.toLowerCase()] ?? null;
  }
  toJSON(): Readonly<Record<string, string>> {
    return this.record;
  }
}

const eventStream = new HttpHeaders({ 'content-type': 'text/event-stream' });
const sent: HttpClientEvent = { type: 0 };
/** `HttpHeaderResponse`: the status and headers. */
const head = (status: number, statusText: string, headers: HttpHeaders): HttpClientEvent => ({
  type: 2,
  status,
  statusText,
  headers,
});
/** `HttpDownloadProgressEvent`: the whole text so far. */
const progress = (partialText: string): HttpClientEvent => ({ type: 3, partialText });
/** `HttpResponse<string>`: the whole body. */
const response = (body: string, headers = eventStream): HttpClientEvent => ({
  type: 4,
  status: 200,
  statusText: 'OK',
  headers,
  body,
});
/** `HttpErrorResponse`: not an `Error`; `error` is the body, or with status 0 what stopped the request. */
const httpError = (status: number, statusText: string, error: unknown, headers = new HttpHeaders({})) => ({
  name: 'HttpErrorResponse',
  message: `Http failure response for /api/chat/completions: ${status} ${statusText}`,
  ok: false,
  status,
  statusText,
  error,
  headers,
});

const message = (data: string) => ({ event: undefined, data });
const stream = 'data: Checking order\n\ndata: ORD-7781.\n\n';
const rateLimited = '{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}';
const rateLimitHeaders = new HttpHeaders({ 'content-type': 'application/json', 'retry-after-ms': '400' });
const cut = httpError(
  0,
  'Unknown Error',
  new TypeError('terminated', { cause: new Error('other side closed') }),
);
const portal = '<html><body>Sign in to use the Wi-Fi</body></html>';
const html = new HttpHeaders({ 'content-type': 'text/html; charset=utf-8' });
/** Another response to the same request: what a request sent again (an interceptor's `retry()`) may answer. */
const other = 'data: One moment.\n\n';

export default defineMarbles({
  name: 'httpClientSSE',
  summary:
    "Turns the events of an Angular `HttpClient` request (`observe: 'events'`, `reportProgress: true`, `responseType: 'text'`) into server-sent events; an `HttpErrorResponse` into the typed error that retries read.",
  cases: [
    {
      title:
        'partialText is the whole text so far: only the new part is parsed, a line split across events waits for its end, and the HttpResponse adds what no progress event showed',
      source: /*   */ '-s-h-p-q-(r|)',
      // biome-ignore format: an aligned value table
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        p: progress('data: Check'),
        q: progress('data: Checking order\n\ndata: ORD-'),
        r: response(stream),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-------a-(b|)',
      expectedValues: { a: message('Checking order'), b: message('ORD-7781.') },
      subscriptions: '^--------!',
    },
    {
      title:
        'a 429 (an HttpErrorResponse with its body) becomes a retryable TransportError http-status with the wait the server asked for; the body is not read as SSE',
      source: /*   */ '-s-h-p-#',
      values: {
        s: sent,
        h: head(429, 'Too Many Requests', rateLimitHeaders),
        p: progress(rateLimited),
      },
      error: httpError(429, 'Too Many Requests', rateLimited, rateLimitHeaders),
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-------#',
      expectedError: httpStatusError(429, 'Too Many Requests', rateLimited, 400),
      subscriptions: '^------!',
    },
    {
      title:
        'status 0, a stream that broke (or a request that failed), becomes a retryable TransportError connection',
      source: /*   */ '-s-h-p-#',
      values: { s: sent, h: head(200, 'OK', eventStream), p: progress('data: Checking order\n\ndata: ORD-') },
      error: cut,
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----a-#',
      expectedValues: { a: message('Checking order') },
      expectedError: connectionError('the stream broke: other side closed', cut),
      subscriptions: '^------!',
    },
    {
      title:
        "a 200 that is not an event stream (a captive portal's page) fails with a non-retryable TransportError not-event-stream and the start of the page",
      source: /*   */ '-s-h-p-(r|)',
      values: { s: sent, h: head(200, 'OK', html), p: progress(portal), r: response(portal, html) },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-------#',
      expectedError: notEventStreamError(200, 'text/html; charset=utf-8', portal),
      subscriptions: '^------!',
    },
    {
      title:
        'unsubscribing unsubscribes from the HttpClient, which aborts the request: the abandoned attempt stops streaming',
      source: /*   */ '-s-h-p---q-(r|)',
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        p: progress('data: Checking order\n\ndata: ORD-'),
        q: progress(stream),
        r: response(stream),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----a-',
      expectedValues: { a: message('Checking order') },
      unsubscribe: '-------!',
      subscriptions: '^------!',
    },
    {
      title:
        "a second HttpSentEvent after a message was emitted is the request sent again (an interceptor's retry()): a retryable TransportError response-resent/-rewritten, not two responses spliced into one stream",
      source: /*   */ '-s-h-p-s-h-t-(u|)',
      // biome-ignore format: an aligned value table
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        p: progress('data: Checking order\n\ndata: ORD-'),
        t: progress(other),
        u: response(other),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----a-#',
      expectedValues: { a: message('Checking order') },
      expectedError: responseRestartError('resent', 32),
      subscriptions: '^------!',
    },
    {
      title:
        'progress text shorter than what was read does not continue it: after a message was emitted, a retryable TransportError response-resent/-rewritten',
      source: /*   */ '-s-h-p-w-(u|)',
      // biome-ignore format: an aligned value table
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        p: progress('data: Checking order\n\ndata: ORD-'),
        w: progress('data: One'),
        u: response(other),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----a-#',
      expectedValues: { a: message('Checking order') },
      expectedError: responseRestartError('rewritten', 32),
      subscriptions: '^------!',
    },
    {
      title:
        'a final body that differs from the progress text read so far is another text: a retryable TransportError response-resent/-rewritten, and nothing of the body is emitted',
      source: /*   */ '-s-h-p-(x|)',
      // biome-ignore format: an aligned value table
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        p: progress('data: Checking order\n\ndata: ORD-'),
        x: response('data: Checking stock\n\ndata: SKU-7781.\n\n'),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----a-#',
      expectedValues: { a: message('Checking order') },
      expectedError: responseRestartError('rewritten', 32),
      subscriptions: '^------!',
    },
    {
      title:
        'a second response before any message was emitted is parsed from scratch: the consumer saw nothing of the first, whose unfinished event is dropped',
      source: /*   */ '-s-h-c-s-h-p-(r|)',
      // biome-ignore format: an aligned value table
      values: {
        s: sent,
        h: head(200, 'OK', eventStream),
        c: progress('data: Refunding the dam'),
        p: progress('data: Checking order\n\ndata: ORD-'),
        r: response(stream),
      },
      label: 'httpClientSSE()',
      operator: () => httpClientSSE(),
      expected: /* */ '-----------a-(b|)',
      expectedValues: { a: message('Checking order'), b: message('ORD-7781.') },
      subscriptions: '^------------!',
    },
  ],
});
