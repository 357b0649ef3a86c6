import { type MonoTypeOperatorFunction, Observable, type Subscriber, type Subscription } from 'rxjs';
import { UsageError } from '../errors.js';
// The longest delay `setTimeout` keeps (a longer one fires at once): a longer stall timeout re-arms the timer.
import { MAX_TIMER_DELAY } from '../internal/wait.js';
import { connectionError, httpStatusError, notEventStreamError, retryAfterOf, stallError } from './errors.js';
import { reconnecting, type SseReconnectOptions } from './reconnect.js';
import { parseSseData, sseJson } from './sseJson.js';
import { createSseDecoder, resolveMaxBufferSize, type SseDecoder, type SseMessage } from './sseParser.js';
import { describeFailure, ERROR_BODY_SIZE, responseProblem } from './sseResponse.js';

export type { SseMessage } from './sseParser.js';

/**
 * What a request factory may return: a `Request`, a URL, or a URL with its `RequestInit`.
 *
 * @inline
 */
export type SseRequest = Request | string | URL | { url: string | URL; init?: RequestInit };

/**
 * Makes the request of one attempt; `signal` aborts it when the attempt is abandoned.
 *
 * @inline
 */
export type SseRequestFactory = (context: { signal: AbortSignal }) => SseRequest | Promise<SseRequest>;

/**
 * How long reading the start of a body that is not an event stream may take, at most (a body that trickles or
 * hangs); the stall timeout caps it too.
 */
const ERROR_BODY_WAIT = 5_000;

/**
 * The stall timeout of the transports (`fromSSE`, `streamTurn`) when none is given: 60 s without a byte of the
 * response. Long enough for a model that thinks before its first token behind a proxy that sends no keep-alive;
 * short enough that a silent server does not hold a turn for the minutes a socket's own timeouts take.
 */
export const DEFAULT_STALL_TIMEOUT = 60_000;

/**
 * The `stallTimeout` an operator uses: {@link DEFAULT_STALL_TIMEOUT} when none is given, `undefined` (no stall
 * timer) for `0`; anything other than a number of milliseconds >= 0 is a `UsageError` naming the operator.
 */
export function resolveStallTimeout(operator: string, stallTimeout: unknown): number | undefined {
  if (stallTimeout === undefined) return DEFAULT_STALL_TIMEOUT;
  if (typeof stallTimeout !== 'number' || !(stallTimeout >= 0)) {
    const got =
      typeof stallTimeout === 'number'
        ? String(stallTimeout)
        : stallTimeout === null
          ? 'null'
          : `a value of type ${typeof stallTimeout}`;
    throw new UsageError(
      operator,
      'stallTimeout',
      `must be a number of milliseconds >= 0 (0 turns it off), not ${got}`,
    );
  }
  return stallTimeout === 0 || stallTimeout === Number.POSITIVE_INFINITY ? undefined : stallTimeout;
}

/** The timeouts of a turn, resolved: `undefined` where a timer is off. */
export interface ResolvedTimeouts {
  totalMs: number | undefined;
  attemptMs: number | undefined;
  chunkMs: number | undefined;
}

/** The keys a `timeout` object may have. */
const TIMEOUT_KEYS = ['totalMs', 'attemptMs', 'chunkMs'] as const;

/**
 * The timeouts of `streamTurn`'s `timeout` option and its older `stallTimeout` (the same timer as `chunkMs`):
 * `chunkMs` defaults to {@link DEFAULT_STALL_TIMEOUT}, `totalMs` and `attemptMs` to off; `0` (or `Infinity`) turns a
 * timer off. Anything else than an object of those keys, each a number of milliseconds >= 0, is a `UsageError`, and
 * so is a `stallTimeout` given beside `timeout.chunkMs`.
 */
export function resolveTimeouts(operator: string, timeout: unknown, stallTimeout: unknown): ResolvedTimeouts {
  if (timeout === undefined)
    return {
      totalMs: undefined,
      attemptMs: undefined,
      chunkMs: resolveStallTimeout(operator, stallTimeout),
    };
  const prototype =
    typeof timeout === 'object' && timeout !== null ? Object.getPrototypeOf(timeout) : undefined;
  // A plain object only: a Map or a Date has no own keys to read, and its timers would be silently ignored.
  if (prototype !== Object.prototype && prototype !== null)
    throw new UsageError(
      operator,
      'timeout',
      `must be an object { totalMs?, attemptMs?, chunkMs? } of milliseconds, not ${describeNumber(timeout)}`,
    );
  for (const key of Object.keys(timeout as object)) {
    if (!(TIMEOUT_KEYS as readonly string[]).includes(key))
      throw new UsageError(
        operator,
        'timeout',
        `has no ${JSON.stringify(key)}: its timers are totalMs, attemptMs and chunkMs`,
      );
  }
  const { totalMs, attemptMs, chunkMs } = timeout as Record<string, unknown>;
  if (chunkMs !== undefined && stallTimeout !== undefined)
    throw new UsageError(
      operator,
      'stallTimeout',
      'is the older name of timeout.chunkMs: pass one of them, not both',
    );
  return {
    totalMs: milliseconds(operator, 'timeout.totalMs', totalMs),
    attemptMs: milliseconds(operator, 'timeout.attemptMs', attemptMs),
    chunkMs:
      chunkMs === undefined
        ? resolveStallTimeout(operator, stallTimeout)
        : milliseconds(operator, 'timeout.chunkMs', chunkMs),
  };
}

/** A timer's milliseconds: `undefined` (off) for none, `0` or `Infinity`; else a number > 0, or a `UsageError`. */
function milliseconds(operator: string, option: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value >= 0))
    throw new UsageError(
      operator,
      option,
      `must be a number of milliseconds >= 0 (0 turns it off), not ${describeNumber(value)}`,
    );
  return value === 0 || value === Number.POSITIVE_INFINITY ? undefined : value;
}

/** What a value is, for a message: the number itself, `null`, or its type. */
function describeNumber(value: unknown): string {
  return typeof value === 'number'
    ? String(value)
    : value === null
      ? 'null'
      : `a value of type ${typeof value}`;
}

/**
 * Mirrors `source`, and when it has not ended `ms` milliseconds after the subscription, unsubscribes from it (which
 * aborts its request) and errors with `expired()`. The timer is cleared when the result ends or is unsubscribed; a
 * time past what `setTimeout` keeps re-arms it. `ms` undefined: `source` as it is.
 */
export function endWithin<T>(ms: number | undefined, expired: () => Error): MonoTypeOperatorFunction<T> {
  return (source) => {
    if (ms === undefined) return source;
    return new Observable<T>((subscriber) => {
      const started = performance.now();
      let subscription: Subscription | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const check = () => {
        timer = undefined;
        const remaining = started + ms - performance.now();
        if (remaining > 0) {
          timer = setTimeout(check, Math.min(Math.ceil(remaining), MAX_TIMER_DELAY));
          return;
        }
        // The source first, so that its request is aborted before anyone hears of the error (a retry).
        subscription?.unsubscribe();
        subscriber.error(expired());
      };
      timer = setTimeout(check, Math.min(ms, MAX_TIMER_DELAY));
      subscription = source.subscribe({
        // An observer of its own, not `subscriber`: unsubscribing from the source must leave the result open.
        next: (value) => subscriber.next(value),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        subscription?.unsubscribe();
      };
    });
  };
}

/**
 * Options of {@link fromSSE}.
 *
 * @inline
 */
export interface FromSSEOptions {
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /**
   * Abort with a retryable `TransportError` `stall` when no byte of the response arrives for this many milliseconds
   * (counted from the request; any bytes count, also those of an event that is still arriving). Default 60 000, as
   * `streamTurn`'s; `0` turns it off.
   */
  stallTimeout?: number;
  /**
   * The most SSE text held at once, in characters (UTF-16 code units): an unfinished line plus the unfinished
   * event's data, and, separately, the text outside SSE framing since the last event. Past it the stream errors
   * with a non-retryable `TransportError` `sse-limit-*` and the request is aborted. Default 16 MiB
   * (16 MiB: room for an event that carries a whole base64 image).
   */
  maxBufferSize?: number;
  /**
   * Reconnect after a retryable cut with the `Last-Event-ID` of the last message (the EventSource rule), for a
   * server that resumes its stream after it, as `turnServer` does: the messages go on without a repeat. Only a
   * stream whose messages carry ids is reconnected. Default: no reconnect.
   */
  reconnect?: SseReconnectOptions;
}

/**
 * Streams the server-sent events of one HTTP request, made with `fetch` on each subscription.
 *
 * - Parsing uses eventsource-parser: any line ending (LF, CRLF, CR), multi-line data, comments.
 * - Unsubscribing aborts the request at once: an abandoned attempt's connection is closed, because the
 *   provider may keep generating (and billing) otherwise.
 * - A non-2xx response errors with a `TransportError` `http-status` (`status`, `retryable`, `retryAfterMs` from
 *   `retry-after-ms` or `retry-after`); at most 4 KiB of its body are read, then the body is cancelled.
 * - A 2xx response that is not an event stream errors with a non-retryable `not-event-stream`: a
 *   `content-type` other than `text/event-stream` (a captive portal's HTML page), or no body (a 204). A response
 *   without a `content-type` is read as SSE.
 * - A failed or broken connection errors with a retryable `connection`.
 * - A response that sends no byte for `stallTimeout` (default 60 s; `0` turns it off) errors with a retryable
 *   `stall`.
 * - Memory is bounded by `maxBufferSize`: a line or event that never ends, or endless text outside SSE framing,
 *   errors with a non-retryable `sse-limit-event` or `sse-limit-unframed`.
 * - A JSON document sent without SSE framing after the last event (as Gemini does for a late error) is emitted
 *   at the end of the stream as one message with `event: 'raw'`; unframed lines before it (a keep-alive) and
 *   other unframed text are ignored.
 * - An event cut off by the end of the stream (no blank line after it) is not emitted.
 * - With `reconnect`, a retryable cut of a stream whose messages carry ids is followed by a new request with the
 *   `Last-Event-ID` header, and the messages go on.
 *
 * ```text
 * request:      --[data: a][data: b]--|       (bytes on the wire)
 *          fromSSE(request)
 * result:       --a--------b----------|       (SseMessage per event)
 * ```
 *
 * ## Example
 * ```ts
 * import { fromSSE } from 'cleanturn/transport';
 *
 * fromSSE(({ signal }) => ({
 *   url: 'https://api.openai.com/v1/chat/completions',
 *   init: { method: 'POST', headers, body: JSON.stringify({ model, messages, stream: true }), signal },
 * }), { stallTimeout: 30_000 }).subscribe((message) => console.log(message.data));
 * ```
 *
 * @param request Makes the request of each subscription (each attempt).
 * @param options `fetch`, `stallTimeout` and `maxBufferSize`.
 * @returns A cold Observable of the response's events.
 * @throws UsageError when `request` is not a function or `stallTimeout` is not a number >= 0.
 */
export function fromSSE(request: SseRequestFactory, options: FromSSEOptions = {}): Observable<SseMessage> {
  const { reconnect } = options;
  const settings = checkedSettings(request, options);
  if (reconnect !== undefined)
    return reconnecting(request, (made) => fromSSE(made, { ...options, reconnect: undefined }), reconnect);
  return new Observable<SseMessage>((subscriber) => {
    const connection = new SseConnection(settings, subscriber, (message) => subscriber.next(message));
    connection.start();
    return () => connection.close();
  });
}

/**
 * `fromSSE(request, options).pipe(sseJson())` in one Observable, with the same messages, errors and ends: each
 * event's `data` parsed as JSON (a payload that is not JSON errors with an `sse-data` `TransportError`), complete
 * at `[DONE]`, which closes the request. Without a message object per event and the operator between them: this
 * is the path of every token of `streamTurn`.
 * @internal
 */
export function fromSSEJson<T>(request: SseRequestFactory, options: FromSSEOptions = {}): Observable<T> {
  const settings = checkedSettings(request, options);
  if (options.reconnect !== undefined) return fromSSE(request, options).pipe(sseJson<T>());
  return new Observable<T>((subscriber) => {
    const connection = new SseConnection(
      settings,
      subscriber,
      (message) => {
        if (subscriber.closed) return;
        const data = message.data;
        if (data === '[DONE]') {
          subscriber.complete();
          return;
        }
        let payload: T;
        try {
          payload = parseSseData<T>(data);
        } catch (error) {
          subscriber.error(error);
          return;
        }
        subscriber.next(payload);
      },
      true,
    );
    connection.start();
    return () => connection.close();
  });
}

/** fromSSE's arguments, checked: a `UsageError` naming `fromSSE` for a wrong one. */
function checkedSettings(request: SseRequestFactory, options: FromSSEOptions): SseConnectionSettings {
  if (typeof request !== 'function')
    throw new UsageError(
      'fromSSE',
      'request',
      `must be a function that makes the request, not ${typeof request}`,
    );
  const stallTimeout = resolveStallTimeout('fromSSE', options.stallTimeout);
  const maxBufferSize = resolveMaxBufferSize('fromSSE', options.maxBufferSize);
  const errorBodyWait = Math.min(ERROR_BODY_WAIT, stallTimeout ?? ERROR_BODY_WAIT);
  return { request, options, stallTimeout, maxBufferSize, errorBodyWait };
}

/** The checked options of one `fromSSE` stream, shared by its subscriptions. */
interface SseConnectionSettings {
  request: SseRequestFactory;
  /** The options as given: `fetch` is read on each subscription. */
  options: FromSSEOptions;
  /** `undefined`: no stall timer. */
  stallTimeout: number | undefined;
  maxBufferSize: number;
  /** How long the start of an error body is read, at most. */
  errorBodyWait: number;
}

/**
 * The error of a response that is not an event stream, with the start of its body: a non-2xx status an
 * `http-status`, another `content-type` a `not-event-stream`.
 */
function rejectionOf(
  response: Response,
  problem: 'status' | 'not-event-stream',
  contentType: string | undefined,
  start: string,
): Error {
  return problem === 'status'
    ? httpStatusError(response.status, response.statusText, start, retryAfterOf(response.headers))
    : notEventStreamError(response.status, contentType, start);
}

/**
 * One subscription of `fromSSE`: its request, the response's checks, the body read chunk by chunk into the SSE
 * parser, and the stall timer; `close` aborts it all.
 */
class SseConnection {
  /** Aborts the request and its body when the subscription ends or fails. */
  readonly #controller = new AbortController();
  readonly #fetch: typeof fetch;
  /** The SSE parser of this response (the rules are in sseParser.ts). */
  readonly #sse: SseDecoder;
  /** The body's reader, once the response was found to be an event stream. */
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /**
   * The stall timer. It is not re-armed per piece (a clearTimeout and a setTimeout per token cost more than the
   * parsing): it fires `stallTimeout` after it was set, and if bytes arrived meanwhile it sets itself again for
   * what remains after the latest ones.
   */
  #stall: ReturnType<typeof setTimeout> | undefined;
  /** When the latest bytes arrived (performance.now()). */
  #lastActivity = 0;

  /**
   * `deliver` receives each message, in order (the parser's own objects when `dataOnly`: it reads `data` and
   * keeps none); the connection errors and completes `subscriber` itself.
   */
  constructor(
    private readonly settings: SseConnectionSettings,
    private readonly subscriber: Subscriber<never>,
    deliver: (message: SseMessage) => void,
    dataOnly = false,
  ) {
    this.#fetch = settings.options.fetch ?? globalThis.fetch;
    this.#sse = createSseDecoder(deliver, settings.maxBufferSize, dataOnly);
  }

  /** Makes the request and reads its response; a failure errors the result and aborts the request. */
  start(): void {
    this.#run().then(
      () => {
        this.#stopStallTimer();
      },
      (error: unknown) => {
        this.#stopStallTimer();
        this.subscriber.error(error);
        this.#controller.abort();
      },
    );
  }

  /** Ends the subscription: the timer, the parser's buffers, the request and its body. */
  close(): void {
    this.#stopStallTimer();
    this.#sse.clear();
    this.#controller.abort();
    this.#reader?.cancel().catch(() => {});
  }

  /** The request, the checks of its response, then the body to its end (or until the subscription ends). */
  async #run(): Promise<void> {
    // Plain calls, as functions of their own: a browser's `fetch` called as a method of another object throws.
    const { request } = this.settings;
    const doFetch = this.#fetch;
    const { signal } = this.#controller;
    this.#startStallTimer();
    const made = await request({ signal });
    const [input, init] = toFetchArgs(checkedRequest(made));
    let response: Response;
    try {
      response = await doFetch(input, { ...init, signal });
    } catch (error) {
      throw this.#failure('request failed', error);
    }
    const contentType = response.headers.get('content-type') ?? undefined;
    const body = this.#eventStream(response, contentType);
    if (typeof body === 'string') {
      const start = await readStart(response, this.settings.errorBodyWait);
      throw rejectionOf(response, body, contentType, start);
    }
    const reader = body.getReader();
    this.#reader = reader;
    const decoder = new TextDecoder();
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw this.#failure('the stream broke', error);
      }
      if (this.subscriber.closed) return;
      if (chunk.done) break;
      this.#read(decoder.decode(chunk.value, { stream: true }));
    }
    this.#sse.feed(decoder.decode());
    this.#sse.end();
    this.subscriber.complete();
  }

  /**
   * The body of a response that is an event stream. A response without one (a 204) throws at once; for any other
   * problem, its name, with the stall timer stopped: the error is in the status and headers, the start of the body
   * is read for logs, and no stall applies to it.
   */
  #eventStream(
    response: Response,
    contentType: string | undefined,
  ): ReadableStream<Uint8Array> | 'status' | 'not-event-stream' {
    const { body } = response;
    const problem = responseProblem(response.status, contentType, body !== null);
    if (problem === 'status') {
      this.#stopStallTimer();
      return problem;
    }
    if (problem === 'no-body' || body === null)
      throw notEventStreamError(response.status, contentType, undefined);
    if (problem === 'not-event-stream') {
      this.#stopStallTimer();
      return problem;
    }
    return body;
  }

  /** A failure of the request or its body: a `connection` error, unless the request was aborted. */
  #failure(what: string, error: unknown): unknown {
    return this.#controller.signal.aborted ? error : connectionError(describeFailure(what, error), error);
  }

  /** A chunk of the body's text: it counts as activity for the stall timer, and goes to the parser. */
  #read(text: string): void {
    if (this.settings.stallTimeout !== undefined) this.#lastActivity = performance.now();
    this.#sse.feed(text);
  }

  /** Arms the stall timer, from now. */
  #startStallTimer(): void {
    const { stallTimeout } = this.settings;
    if (stallTimeout === undefined) return;
    this.#lastActivity = performance.now();
    this.#stall = setTimeout(() => this.#checkStall(), Math.min(stallTimeout, MAX_TIMER_DELAY));
  }

  /** The stall timer fired: it sets itself again when bytes arrived since, else errors with a `stall`. */
  #checkStall(): void {
    this.#stall = undefined;
    const { stallTimeout } = this.settings;
    if (stallTimeout === undefined || this.subscriber.closed) return;
    const remaining = this.#lastActivity + stallTimeout - performance.now();
    if (remaining > 0) {
      this.#stall = setTimeout(() => this.#checkStall(), Math.min(Math.ceil(remaining), MAX_TIMER_DELAY));
      return;
    }
    this.subscriber.error(stallError(stallTimeout));
    this.#controller.abort();
  }

  /** Clears the stall timer. */
  #stopStallTimer(): void {
    if (this.#stall !== undefined) clearTimeout(this.#stall);
    this.#stall = undefined;
  }
}

/**
 * What a request factory returned, if it is an {@link SseRequest}; else a `UsageError` (not retryable: the factory
 * would return the same again), before anything is sent.
 */
function checkedRequest(made: unknown): SseRequest {
  if (typeof made === 'string' || made instanceof URL) return made;
  if (typeof Request !== 'undefined' && made instanceof Request) return made;
  if (typeof made === 'object' && made !== null) {
    const { url } = made as { url?: unknown };
    if (typeof url === 'string' || url instanceof URL) return made as SseRequest;
  }
  const got = made === null ? 'null' : typeof made === 'object' ? 'an object without a url' : typeof made;
  throw new UsageError('fromSSE', 'request', `must return a Request, a URL or { url, init }, not ${got}`);
}

/** The arguments of `fetch` for a request as an {@link SseRequest} gives it. */
export function toFetchArgs(made: SseRequest): [Request | string | URL, RequestInit | undefined] {
  if (typeof made === 'string' || made instanceof URL) return [made, undefined];
  if (typeof Request !== 'undefined' && made instanceof Request) return [made, undefined];
  const { url, init } = made as { url: string | URL; init?: RequestInit };
  return [url, init];
}

/**
 * Reads the start of a body (at most {@link ERROR_BODY_SIZE}, for at most `wait` ms), then cancels the rest: an
 * endless or hanging error body must not hold the error back, nor be kept in memory.
 */
export async function readStart(response: Response, wait: number = ERROR_BODY_WAIT): Promise<string> {
  const body = response.body;
  if (body === null) return '';
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), wait);
  });
  try {
    while (size < ERROR_BODY_SIZE) {
      const chunk = await Promise.race([reader.read(), deadline]);
      if (chunk === 'late' || chunk.done) break;
      parts.push(chunk.value);
      size += chunk.value.byteLength;
    }
  } catch {
    // A body that breaks while its start is read: what arrived is enough.
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, ERROR_BODY_SIZE));
  let offset = 0;
  for (const part of parts) {
    const take = Math.min(part.byteLength, bytes.length - offset);
    bytes.set(part.subarray(0, take), offset);
    offset += take;
    if (offset === bytes.length) break;
  }
  // A cut inside a UTF-8 character at the end decodes to a replacement character: the body is for logs.
  return new TextDecoder().decode(bytes);
}
