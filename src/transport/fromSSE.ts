import { describeError } from 'cleanturn';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Observable } from 'rxjs';
import { ConnectionError, HttpStatusError, parseRetryAfter, StallError } from './errors.js';

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

/** Options of {@link fromSSE}. */
export interface FromSSEOptions {
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Abort with a retryable {@link StallError} when no event or comment arrives for this many milliseconds. */
  stallTimeout?: number;
}

/**
 * Streams the server-sent events of one HTTP request, made with `fetch` on each subscription.
 *
 * - Parsing uses eventsource-parser: any line ending (LF, CRLF, CR), multi-line data, comments.
 * - Unsubscribing aborts the request at once: an abandoned attempt's connection is closed, because the
 *   provider may keep generating (and billing) otherwise.
 * - A non-2xx response errors with {@link HttpStatusError} (`status`, `retryable`, `retryAfterMs`).
 * - A failed or broken connection errors with a retryable {@link ConnectionError}.
 * - With `stallTimeout`, silence longer than that errors with a retryable {@link StallError}.
 * - A JSON document sent without SSE framing (as Gemini does for a late error) is emitted at the end of the
 *   stream as one message with `event: 'raw'`; other unframed text is ignored.
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
 * @param options `fetch` and `stallTimeout`.
 * @returns A cold Observable of the response's events.
 */
export function fromSSE(request: SseRequestFactory, options: FromSSEOptions = {}): Observable<SseMessage> {
  const { stallTimeout } = options;
  return new Observable<SseMessage>((subscriber) => {
    const controller = new AbortController();
    const doFetch = options.fetch ?? globalThis.fetch;
    // The stall timer. It is not re-armed per event (a clearTimeout and a setTimeout per token cost more than
    // the parsing): it fires `stallTimeout` after it was set, and if there was activity meanwhile it sets itself
    // again for what remains after the latest activity.
    let stall: ReturnType<typeof setTimeout> | undefined;
    // When the latest event or comment arrived (performance.now()).
    let lastActivity = 0;
    // An event or comment arrived during the current `feed`; the clock is read once per piece, not per event.
    let active = false;
    // Unframed lines (a raw JSON error tail).
    let rawLines: string[] = [];
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
    // Feeds a decoded piece to the parser; events in one piece arrived together, so one clock read marks them.
    const feed = (text: string) => {
      parser.feed(text);
      if (active) {
        active = false;
        if (stallTimeout !== undefined) lastActivity = performance.now();
      }
    };

    const parser = createParser({
      onEvent(event: EventSourceMessage) {
        active = true;
        subscriber.next(event.id === undefined ? { event: event.event, data: event.data } : event);
      },
      onComment() {
        active = true;
      },
      onError(error) {
        if (error.type === 'unknown-field' && error.line !== undefined) rawLines.push(error.line);
      },
    });

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
        const body = await readSome(response, 2048);
        throw new HttpStatusError(
          response.status,
          response.statusText,
          body,
          parseRetryAfter(response.headers.get('retry-after')),
        );
      }
      if (response.body === null) throw new ConnectionError('the response has no body', undefined);
      reader = response.body.getReader();
      const decoder = new TextDecoder();
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
        feed(decoder.decode(chunk.value, { stream: true }));
      }
      feed(decoder.decode());
      parser.reset({ consume: true });
      const raw = rawLines.join('\n').trim();
      rawLines = [];
      if (raw !== '' && isJson(raw)) subscriber.next({ event: 'raw', data: raw });
      subscriber.complete();
    };

    run().then(
      () => {
        if (stall !== undefined) clearTimeout(stall);
      },
      (error: unknown) => {
        if (stall !== undefined) clearTimeout(stall);
        subscriber.error(error);
      },
    );

    return () => {
      if (stall !== undefined) clearTimeout(stall);
      stall = undefined;
      rawLines = [];
      controller.abort();
      reader?.cancel().catch(() => {});
    };
  });
}

function toFetchArgs(made: SseRequest): [Request | string | URL, RequestInit | undefined] {
  if (typeof made === 'string' || made instanceof URL) return [made, undefined];
  if (typeof Request !== 'undefined' && made instanceof Request) return [made, undefined];
  const { url, init } = made as { url: string | URL; init?: RequestInit };
  return [url, init];
}

async function readSome(response: Response, limit: number): Promise<string> {
  try {
    const text = await response.text();
    return text.length > limit ? text.slice(0, limit) : text;
  } catch {
    return '';
  }
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
