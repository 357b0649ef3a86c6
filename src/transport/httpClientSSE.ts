import { Observable, type OperatorFunction, type Subscriber, type Subscription } from 'rxjs';
import { UsageError } from '../errors.js';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import {
  connectionError,
  type HttpHeadersLike,
  httpStatusError,
  notEventStreamError,
  responseRestartError,
  retryAfterOf,
} from './errors.js';
import { createSseDecoder, resolveMaxBufferSize, type SseDecoder, type SseMessage } from './sseParser.js';
import { describeFailure, ERROR_BODY_SIZE, type ResponseProblem, responseProblem } from './sseResponse.js';

/**
 * Angular's `HttpHeaderResponse` (`HttpEventType.ResponseHeader`, 2): the status and headers, before the body. The
 * HttpClient sends it when the request asks for `reportProgress: true`.
 */
export interface HttpClientHeaderEvent {
  readonly type: 2;
  readonly status: number;
  readonly statusText: string;
  readonly headers: HttpHeadersLike;
}

/**
 * Angular's `HttpDownloadProgressEvent` (`HttpEventType.DownloadProgress`, 3). With `responseType: 'text'`,
 * `partialText` is the whole text received so far, not the piece that just arrived.
 */
export interface HttpClientProgressEvent {
  readonly type: 3;
  readonly partialText?: string | undefined;
}

/** Angular's `HttpResponse<string>` (`HttpEventType.Response`, 4): the whole body, once the response ended. */
export interface HttpClientResponseEvent {
  readonly type: 4;
  readonly status: number;
  readonly statusText: string;
  readonly headers: HttpHeadersLike;
  readonly body: string | null;
}

/**
 * An event of Angular's `HttpClient`, as {@link httpClientSSE} reads it: `HttpEvent<string>` of
 * `@angular/common/http` fits, and is read by its shape (`type` is the number of `HttpEventType`), so that cleanturn
 * never loads Angular. `Sent` (0), `UploadProgress` (1) and `User` (5) events carry nothing to read.
 */
export type HttpClientEvent =
  | { readonly type: 0 | 1 | 5 }
  | HttpClientHeaderEvent
  | HttpClientProgressEvent
  | HttpClientResponseEvent;

/**
 * Options of {@link httpClientSSE}.
 *
 * @inline
 */
export interface HttpClientSSEOptions {
  /**
   * The most SSE text the parser holds at once, in characters, as in `fromSSE`: past it the stream errors with a
   * non-retryable `TransportError` `sse-limit-*` and the request is cancelled. Default 16 MiB. (Angular itself keeps the whole
   * response text until the request ends: `partialText` grows with it.)
   */
  maxBufferSize?: number;
}

/** Angular's `HttpErrorResponse`, the error notification of its HttpClient, read by its shape. */
interface HttpErrorResponseLike {
  readonly name: 'HttpErrorResponse';
  /** 0 when the request failed or the stream broke (no status, or the body could not be read to its end). */
  readonly status: number;
  readonly statusText?: string;
  /** The body (a string with `responseType: 'text'`), or, with status 0, the error that stopped the request. */
  readonly error?: unknown;
  readonly headers?: HttpHeadersLike;
}

/**
 * Turns the events of an Angular `HttpClient` request into server-sent events, so that an Angular app streams a
 * turn through its own HttpClient (interceptors, auth, `withFetch()`) and on into `sseJson()` and an adapter.
 *
 * The request asks for the events and the text as it arrives: `observe: 'events'`, `reportProgress: true`,
 * `responseType: 'text'` (with `provideHttpClient(withFetch())` the body streams; without `reportProgress` it
 * arrives whole at the end).
 *
 * - Each `HttpDownloadProgressEvent` holds the whole text so far: only the part not read yet is parsed, so a long
 *   answer costs linear time. The final `HttpResponse` holds the whole body: only what no progress event showed is
 *   parsed, then the result completes.
 * - The SSE rules are `fromSSE`'s: any line ending, a line split across events, `maxBufferSize` with
 *   `TransportError` `sse-limit-*`, a raw JSON tail emitted as `event: 'raw'`, and an event cut off by the end not emitted.
 * - An `HttpErrorResponse` becomes the typed error that retries read: a non-2xx status a `TransportError` `http-status`
 *   (the start of the body, `retryAfterMs` from `retry-after-ms` or `retry-after`), status 0 (the request failed, or
 *   the stream broke) a retryable `connection` one. Other errors pass through.
 * - A 2xx response whose `content-type` is not `text/event-stream` (a captive portal's HTML page), or a 204, errors
 *   with a non-retryable `not-event-stream` (with up to 4 KiB of the body), and the request is cancelled.
 * - Unsubscribing unsubscribes from the HttpClient, which aborts the request: an abandoned attempt's connection
 *   is closed.
 * - Two responses are never spliced into one stream. A response that starts over (a second `Sent` or
 *   `ResponseHeader`: an interceptor's `retry()` sent the request again) or text that stops continuing what was read
 *   (progress text that shrinks or differs, a final body that is not the progress text) is read afresh while no
 *   event was emitted, since the consumer saw nothing of the first; once one was, the result errors with a
 *   retryable `response-resent` or `response-rewritten` and the request is cancelled, so that the turn's retry starts over with
 *   a `reset`.
 *
 * ```text
 * source:   -s-h-p-q-(r|)
 *           httpClientSSE()
 * result:   -------a-(b|)
 *
 * where
 *   s = HttpSentEvent
 *   h = HttpHeaderResponse 200 OK, headers {"content-type":"text/event-stream"}
 *   p = HttpDownloadProgressEvent, partialText "data: Check"
 *   q = HttpDownloadProgressEvent, partialText "data: Checking order\n\ndata: ORD-"
 *   r = HttpResponse 200 OK, headers {"content-type":"text/event-stream"}, body "data: Checking order\n\ndata: ORD-7781.\n\n"
 *   a = {"data":"Checking order"}
 *   b = {"data":"ORD-7781."}
 * ```
 *
 * Every case of `marbles/httpClientSSE.marbles.ts`, with pictures: `docs/operators/httpClientSSE.md`.
 *
 * State: the text parsed so far, the parser's unfinished line and event, whether the request was sent and the
 * status and headers arrived, and whether an event was emitted; each subscription (each request) starts afresh.
 *
 * ## Example
 * ```ts
 * import { HttpClient } from '@angular/common/http';
 * import { inject } from '@angular/core';
 * import { defer } from 'rxjs';
 * import { attemptPipeline, turnPipeline } from 'cleanturn';
 * import { openaiChat } from 'cleanturn/providers';
 * import { httpClientSSE, sseJson } from 'cleanturn/transport';
 *
 * const http = inject(HttpClient); // in an injection context: a component's or a service's field
 * const body = { model: 'gpt-4.1', messages: [{ role: 'user', content: 'Refund order ORD-7781.' }], stream: true };
 * const turn$ = defer(() =>
 *   http.post('/api/chat/completions', body, { observe: 'events', reportProgress: true, responseType: 'text' }),
 * ).pipe(
 *   httpClientSSE(),
 *   sseJson(),
 *   attemptPipeline(openaiChat()),
 *   turnPipeline({ turnId: 'turn-42', retry: { count: 2 } }),
 * );
 * ```
 *
 * @param options `maxBufferSize`.
 * @returns An operator from one request's HttpClient events to its server-sent events.
 */
export function httpClientSSE(
  options: HttpClientSSEOptions = {},
): OperatorFunction<HttpClientEvent, SseMessage> {
  const maxBufferSize = resolveMaxBufferSize('httpClientSSE', options.maxBufferSize);
  return function httpClientSSEOperator(source) {
    return new Observable<SseMessage>((subscriber) => {
      const reader = new HttpClientSseReader(maxBufferSize, subscriber);
      reader.subscribe(source);
      return () => reader.close();
    });
  };
}

/** A response that is not an event stream, and why, while the start of its body is awaited for the error. */
interface Rejected {
  response: ResponseHead;
  problem: ResponseProblem;
}

/**
 * One subscription of `httpClientSSE`: the HttpClient events of one request read into the SSE parser, with what
 * is known of the response so far (its text parsed, its head, whether a message went out), so that a response that
 * starts over is read afresh or refused.
 */
class HttpClientSseReader {
  /** Whether a message reached the consumer: from then on, a response that starts over is an error. */
  #emitted = false;
  /** The SSE parser of this response (the rules are in sseParser.ts). */
  #sse: SseDecoder;
  /** The body's text parsed so far: each event holds the whole text so far, which must go on from it. */
  #seen = '';
  /** Whether an event of a response arrived (a Sent, a head, text): a Sent after it is the request sent again. */
  #started = false;
  /** Whether the status and headers arrived: a failure after them is a broken stream. */
  #responded = false;
  /** A response that is not an event stream, while the start of its body is awaited. */
  #rejected: Rejected | undefined;
  /** That start of the body, so far. */
  #bodyStart = '';
  /** The subscription to the HttpClient's events. */
  #upstream: Subscription | undefined;
  /** Hands a message of the parser to the consumer. */
  readonly #onMessage = (message: SseMessage): void => {
    this.#emitted = true;
    this.subscriber.next(message);
  };

  constructor(
    private readonly maxBufferSize: number,
    private readonly subscriber: Subscriber<SseMessage>,
  ) {
    this.#sse = createSseDecoder(this.#onMessage, maxBufferSize);
  }

  /** Reads the events of `source`, the HttpClient request. */
  subscribe(source: Observable<HttpClientEvent>): void {
    this.#upstream = subscribeLinked(source, this.subscriber, {
      next: (event) => this.#onEvent(event),
      error: (error: unknown) =>
        this.subscriber.error(
          isHttpErrorResponse(error) ? fromHttpError(error, this.#responded, this.#bodyStart) : error,
        ),
      // The response ended without its HttpResponse (Angular's app was destroyed, or a source of one's own).
      complete: () => this.#onText(undefined, true),
    });
  }

  /** Ends the subscription: the request, and the text held. */
  close(): void {
    this.#upstream?.unsubscribe();
    this.#sse.clear();
    this.#seen = '';
    this.#bodyStart = '';
  }

  /** An event of the HttpClient; one that is not such an event throws a `UsageError`. */
  #onEvent(event: HttpClientEvent): void {
    if (typeof event !== 'object' || event === null || typeof event.type !== 'number') {
      throw new UsageError(
        'httpClientSSE',
        'source',
        `must emit the events of an HttpClient request (observe: 'events'), not ${describeValue(event)}`,
      );
    }
    if (event.type === 0) {
      // The request was sent: again, when a response had begun (an interceptor's retry).
      if (this.#started && !this.#restart('resent')) return;
      this.#started = true;
    } else if (event.type === 2) {
      if (this.#responded && !this.#restart('resent')) return;
      this.#onHead(event);
    } else if (event.type === 3) {
      if (typeof event.partialText === 'string') this.#onText(event.partialText, false);
    } else if (event.type === 4) {
      this.#onResponse(event);
    }
    // UploadProgress and User events carry nothing to read.
  }

  /**
   * The response starts over (a new request, or text that does not go on from what was parsed): before any message
   * reached the consumer it is read afresh, as if it were the first; after, reading on would splice two responses,
   * so the result fails. True when reading may go on.
   */
  #restart(kind: 'resent' | 'rewritten'): boolean {
    if (this.#emitted) {
      this.subscriber.error(responseRestartError(kind, this.#seen.length));
      return false;
    }
    this.#sse.clear();
    this.#sse = createSseDecoder(this.#onMessage, this.maxBufferSize);
    this.#seen = '';
    if (kind === 'resent') {
      this.#responded = false;
      this.#rejected = undefined;
      this.#bodyStart = '';
    }
    return true;
  }

  /**
   * The status and headers arrived: an event stream is read on; a 204 fails at once; any other problem waits for
   * the start of the body.
   */
  #onHead(response: ResponseHead): void {
    this.#started = true;
    this.#responded = true;
    const problem = responseProblem(response.status, contentTypeOf(response.headers));
    if (problem === undefined) return;
    this.#rejected = { response, problem };
    if (problem === 'no-body') this.subscriber.error(rejection(this.#rejected, undefined));
  }

  /**
   * The final `HttpResponse`: its head, if no header event came first, then its whole body, which ends the
   * response. A body that is not text throws a `UsageError`; none, with no text before it, is a response without a
   * body.
   */
  #onResponse(event: HttpClientResponseEvent): void {
    if (!this.#responded) this.#onHead(event);
    if (this.subscriber.closed) return;
    const { body } = event;
    if (body !== null && typeof body !== 'string') {
      throw new UsageError(
        'httpClientSSE',
        'the response body',
        `must be text (request it with responseType: 'text'), not ${describeValue(body)}`,
      );
    }
    if (body === null && this.#seen === '' && this.#rejected === undefined) {
      this.subscriber.error(rejection({ response: event, problem: 'no-body' }, undefined));
      return;
    }
    this.#onText(body ?? undefined, true, true);
  }

  /** The whole text so far arrived (`whole`: the final body, all of it); `end`: and the response ended. */
  #onText(text: string | undefined, end: boolean, whole = false): void {
    if (text !== undefined) this.#started = true;
    if (this.#rejected !== undefined) {
      if (text !== undefined) this.#bodyStart = text.slice(0, ERROR_BODY_SIZE);
      if (end || this.#bodyStart.length >= ERROR_BODY_SIZE)
        this.subscriber.error(rejection(this.#rejected, this.#bodyStart));
      return;
    }
    if (text !== undefined && !continues(this.#seen, text, whole) && !this.#restart('rewritten')) return;
    try {
      if (text !== undefined && text.length > this.#seen.length) {
        const piece = text.slice(this.#seen.length);
        this.#seen = text;
        this.#sse.feed(piece);
      }
      if (end) this.#sse.end();
    } catch (error) {
      this.subscriber.error(error);
      return;
    }
    if (end) this.subscriber.complete();
  }
}

/** How many characters before the end of the text parsed so far a progress event's text is compared with it. */
const OVERLAP = 256;

/**
 * Whether `text`, the whole text so far, goes on from `seen`, the text parsed so far: no shorter, and the same where
 * they overlap. A progress event is compared on the last {@link OVERLAP} characters of `seen` (so that a long answer
 * costs linear time), the final body (`whole`) on all of them.
 */
function continues(seen: string, text: string, whole: boolean): boolean {
  if (text.length < seen.length) return false;
  if (whole) return text.startsWith(seen);
  const from = Math.max(0, seen.length - OVERLAP);
  return text.startsWith(seen.slice(from), from);
}

/** The status and headers of a response: `HttpHeaderResponse`, or `HttpResponse` when no header event came first. */
type ResponseHead = HttpClientHeaderEvent | HttpClientResponseEvent;

/** The error of a response that is not an event stream, with the start of its body. */
function rejection(rejected: Rejected, body: string | undefined) {
  const { response, problem } = rejected;
  return problem === 'status'
    ? httpStatusError(response.status, response.statusText, body ?? '', retryAfterOf(response.headers))
    : notEventStreamError(response.status, contentTypeOf(response.headers), body);
}

/**
 * The typed error of an `HttpErrorResponse`: status 0 a `connection` one (the request failed before the
 * response's head, or the stream broke after it), a non-2xx status a `TransportError` `http-status`; a 2xx (a body Angular
 * could not read as the `responseType` asked) passes through.
 */
function fromHttpError(error: HttpErrorResponseLike, responded: boolean, bodyStart: string): unknown {
  const { status } = error;
  if (status === 0) {
    const what = responded ? 'the stream broke' : 'request failed';
    return connectionError(describeFailure(what, error.error ?? error), error);
  }
  if (responseProblem(status, undefined) !== 'status') return error;
  const body = typeof error.error === 'string' ? error.error.slice(0, ERROR_BODY_SIZE) : bodyStart;
  const retryAfter = error.headers === undefined ? undefined : retryAfterOf(error.headers);
  return httpStatusError(status, error.statusText ?? '', body, retryAfter);
}

/** The `content-type` of a response, if it has one. */
function contentTypeOf(headers: HttpHeadersLike): string | undefined {
  return headers.get('content-type') ?? undefined;
}

/** Whether an error is Angular's `HttpErrorResponse` (its `name` says so; it is not an `Error`). */
function isHttpErrorResponse(error: unknown): error is HttpErrorResponseLike {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'HttpErrorResponse' &&
    typeof (error as { status?: unknown }).status === 'number'
  );
}

/** What a value is, for a message: its type, or its constructor's name. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return value.constructor?.name ?? 'an object';
}
