import { describeError } from 'cleanturn';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Observable } from 'rxjs';
import {
  ConnectionError,
  HttpStatusError,
  NotEventStreamError,
  retryAfterOf,
  SseLimitError,
  StallError,
} from './errors.js';

/** One server-sent event. */
export interface SseMessage {
  /** The `event:` name, when the server sent one. Raw JSON that arrived outside SSE framing has `raw`. */
  event?: string | undefined;
  /** The `data:` payload (several `data:` lines joined with `\n`). */
  data: string;
  /** The `id:` field, when the server sent one. */
  id?: string | undefined;
}

/** What a request factory may return: a `Request`, a URL, or a URL with its `RequestInit`. */
export type SseRequest = Request | string | URL | { url: string | URL; init?: RequestInit };

/** Makes the request of one attempt; `signal` aborts it when the attempt is abandoned. */
export type SseRequestFactory = (context: { signal: AbortSignal }) => SseRequest | Promise<SseRequest>;

/** The default of {@link FromSSEOptions.maxBufferSize}: 16 MiB of text. */
export const DEFAULT_MAX_BUFFER_SIZE = 16 * 1024 * 1024;

/** How much of a response that is not an event stream (an HTTP error, an HTML page) is read for the error. */
const ERROR_BODY_BYTES = 4096;
/** How long reading that start of the body may take, at most (a body that trickles or hangs); the stall timeout
 * caps it too. */
const ERROR_BODY_WAIT = 5_000;

/** Options of {@link fromSSE}. */
export interface FromSSEOptions {
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /**
   * Abort with a retryable {@link StallError} when no byte of the response arrives for this many milliseconds
   * (counted from the request; any bytes count, also those of an event that is still arriving).
   */
  stallTimeout?: number;
  /**
   * The most SSE text held at once, in characters (UTF-16 code units): an unfinished line plus the unfinished
   * event's data, and, separately, the text outside SSE framing since the last event. Past it the stream errors
   * with a non-retryable {@link SseLimitError} and the request is aborted. Default 16 MiB
   * (16 MiB: room for an event that carries a whole base64 image).
   */
  maxBufferSize?: number;
}

/**
 * Streams the server-sent events of one HTTP request, made with `fetch` on each subscription.
 *
 * - Parsing uses eventsource-parser: any line ending (LF, CRLF, CR), multi-line data, comments.
 * - Unsubscribing aborts the request at once: an abandoned attempt's connection is closed, because the
 *   provider may keep generating (and billing) otherwise.
 * - A non-2xx response errors with {@link HttpStatusError} (`status`, `retryable`, `retryAfterMs` from
 *   `retry-after-ms` or `retry-after`); at most 4 KiB of its body are read, then the body is cancelled.
 * - A 2xx response that is not an event stream errors with a non-retryable {@link NotEventStreamError}: a
 *   `content-type` other than `text/event-stream` (a captive portal's HTML page), or no body (a 204). A response
 *   without a `content-type` is read as SSE.
 * - A failed or broken connection errors with a retryable {@link ConnectionError}.
 * - With `stallTimeout`, a response that sends no byte for that long errors with a retryable {@link StallError}.
 * - Memory is bounded by `maxBufferSize`: a line or event that never ends, or endless text outside SSE framing,
 *   errors with a non-retryable {@link SseLimitError}.
 * - A JSON document sent without SSE framing after the last event (as Gemini does for a late error) is emitted
 *   at the end of the stream as one message with `event: 'raw'`; unframed lines before it (a keep-alive) and
 *   other unframed text are ignored.
 * - An event cut off by the end of the stream (no blank line after it) is not emitted.
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
 */
export function fromSSE(request: SseRequestFactory, options: FromSSEOptions = {}): Observable<SseMessage> {
  const { stallTimeout, maxBufferSize = DEFAULT_MAX_BUFFER_SIZE } = options;
  if (!(maxBufferSize > 0)) throw new RangeError('fromSSE: maxBufferSize must be > 0');
  const errorBodyWait = Math.min(ERROR_BODY_WAIT, stallTimeout ?? ERROR_BODY_WAIT);
  return new Observable<SseMessage>((subscriber) => {
    const controller = new AbortController();
    const doFetch = options.fetch ?? globalThis.fetch;
    // The stall timer. It is not re-armed per piece (a clearTimeout and a setTimeout per token cost more than
    // the parsing): it fires `stallTimeout` after it was set, and if bytes arrived meanwhile it sets itself
    // again for what remains after the latest ones.
    let stall: ReturnType<typeof setTimeout> | undefined;
    // When the latest bytes arrived (performance.now()).
    let lastActivity = 0;
    // Unframed lines since the last event (a raw JSON error tail), and their length in characters.
    let rawLines: string[] = [];
    let rawSize = 0;
    // The error that stops reading (a limit passed), set by the parser's callbacks.
    let failure: SseLimitError | undefined;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

    const checkStall = () => {
      stall = undefined;
      if (stallTimeout === undefined || subscriber.closed) return;
      const remaining = lastActivity + stallTimeout - performance.now();
      if (remaining > 0) {
        stall = setTimeout(checkStall, Math.ceil(remaining));
        return;
      }
      subscriber.error(new StallError(stallTimeout));
      controller.abort();
    };
    const startStallTimer = () => {
      if (stallTimeout === undefined) return;
      lastActivity = performance.now();
      stall = setTimeout(checkStall, stallTimeout);
    };
    const stopStallTimer = () => {
      if (stall !== undefined) clearTimeout(stall);
      stall = undefined;
    };

    const parser = createParser({
      maxBufferSize,
      onEvent(event: EventSourceMessage) {
        if (rawSize !== 0) {
          rawLines = [];
          rawSize = 0;
        }
        subscriber.next(event.id === undefined ? { event: event.event, data: event.data } : event);
      },
      onError(error) {
        if (error.type === 'max-buffer-size-exceeded') {
          failure ??= new SseLimitError(maxBufferSize, 'event');
        } else if (error.type === 'unknown-field' && error.line !== undefined && failure === undefined) {
          rawSize += error.line.length + 1;
          if (rawSize > maxBufferSize) {
            rawLines = [];
            rawSize = 0;
            failure = new SseLimitError(maxBufferSize, 'unframed');
          } else {
            rawLines.push(error.line);
          }
        }
      },
    });
    // Feeds decoded text to the parser, and stops at a limit the parser reported.
    const feed = (text: string) => {
      parser.feed(text);
      if (failure !== undefined) throw failure;
    };

    const run = async () => {
      startStallTimer();
      const made = await request({ signal: controller.signal });
      const [input, init] = toFetchArgs(made);
      let response: Response;
      try {
        response = await doFetch(input, { ...init, signal: controller.signal });
      } catch (error) {
        throw controller.signal.aborted
          ? error
          : new ConnectionError(describe('request failed', error), error);
      }
      if (!response.ok) {
        // The error is in the status and headers; the start of the body is for logs, and no stall applies.
        stopStallTimer();
        const body = await readStart(response, errorBodyWait);
        throw new HttpStatusError(response.status, response.statusText, body, retryAfterOf(response.headers));
      }
      const contentType = response.headers.get('content-type') ?? undefined;
      if (response.body === null || response.status === 204) {
        throw new NotEventStreamError(response.status, contentType, undefined);
      }
      if (contentType !== undefined && !isEventStream(contentType)) {
        stopStallTimer();
        throw new NotEventStreamError(response.status, contentType, await readStart(response, errorBodyWait));
      }
      reader = response.body.getReader();
      const decoder = new TextDecoder();
      // Whether the text fed last ended with a CR, which the parser holds until it knows whether an LF follows.
      let endsWithCR = false;
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw controller.signal.aborted
            ? error
            : new ConnectionError(describe('the stream broke', error), error);
        }
        if (subscriber.closed) return;
        if (chunk.done) break;
        if (stallTimeout !== undefined) lastActivity = performance.now();
        const text = decoder.decode(chunk.value, { stream: true });
        if (text !== '') {
          endsWithCR = text.charCodeAt(text.length - 1) === CR;
          feed(text);
        }
      }
      const rest = decoder.decode();
      if (rest !== '') endsWithCR = rest.charCodeAt(rest.length - 1) === CR;
      // A final CR ends its line (it may be the blank line that dispatches the last event): an LF after it is the
      // same line ending, never one more blank line.
      feed(endsWithCR ? `${rest}\n` : rest);
      parser.reset({ consume: true }); // an unframed last line without a line ending
      if (failure !== undefined) throw failure;
      const raw = rawJson(rawLines);
      rawLines = [];
      rawSize = 0;
      if (raw !== undefined) subscriber.next({ event: 'raw', data: raw });
      subscriber.complete();
    };

    run().then(
      () => {
        stopStallTimer();
      },
      (error: unknown) => {
        stopStallTimer();
        subscriber.error(error);
        controller.abort();
      },
    );

    return () => {
      stopStallTimer();
      rawLines = [];
      controller.abort();
      reader?.cancel().catch(() => {});
    };
  });
}

const CR = 13;

/** Whether a `content-type` names an event stream (`text/event-stream`, with or without parameters). */
function isEventStream(contentType: string): boolean {
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type === 'text/event-stream';
}

/**
 * The JSON document among the unframed lines after the last event, if any: all of them, or, when something
 * else came first (a keep-alive line), the lines from one that opens an object or array on. A few starts are
 * tried, not every line, so that a hostile tail costs little.
 */
function rawJson(lines: readonly string[]): string | undefined {
  if (lines.length === 0) return undefined;
  const whole = lines.join('\n').trim();
  if (whole !== '' && isJson(whole)) return whole;
  let tries = 0;
  for (let i = 1; i < lines.length && tries < 8; i++) {
    const first = (lines[i] as string).trimStart();
    if (first[0] !== '{' && first[0] !== '[') continue;
    tries++;
    const text = lines.slice(i).join('\n').trim();
    if (isJson(text)) return text;
  }
  return undefined;
}

/** The arguments of `fetch` for a request as an {@link SseRequest} gives it. */
export function toFetchArgs(made: SseRequest): [Request | string | URL, RequestInit | undefined] {
  if (typeof made === 'string' || made instanceof URL) return [made, undefined];
  if (typeof Request !== 'undefined' && made instanceof Request) return [made, undefined];
  const { url, init } = made as { url: string | URL; init?: RequestInit };
  return [url, init];
}

/**
 * Reads the start of a body (at most {@link ERROR_BODY_BYTES}, for at most `wait` ms), then cancels the rest: an
 * endless or hanging error body must not hold the error back, nor be kept in memory.
 */
async function readStart(response: Response, wait: number): Promise<string> {
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
    while (size < ERROR_BODY_BYTES) {
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
  const bytes = new Uint8Array(Math.min(size, ERROR_BODY_BYTES));
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

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function describe(what: string, error: unknown): string {
  // fetch rejects with `TypeError: fetch failed` and puts what happened (ECONNRESET…) in its cause.
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  return `${what}: ${describeError(cause)}`;
}
