import { Observable, type Subscription } from 'rxjs';
import { isRetryable } from '../errors.js';
import { checkInteger, checkNumber } from '../internal/options.js';
import { Resubscriber } from '../internal/resubscriber.js';
import { wait as longWait } from '../internal/wait.js';
import { connectionError } from './errors.js';
import type { SseMessage, SseRequest, SseRequestFactory } from './fromSSE.js';

/**
 * How {@link fromSSE} reconnects to a server that resumes its stream after the `Last-Event-ID` the client sends
 * (the EventSource rule): the turn streams of `turnServer` do.
 *
 * @inline
 */
export interface SseReconnectOptions {
  /** Reconnects in a row that may bring no new message before the stream fails with the cut's error. */
  count: number;
  /** Milliseconds before each reconnect. Default 1 000. */
  delay?: number;
  /**
   * Whether a message is the stream's last. When given, a clean close before that message is a cut too (a proxy
   * that closes an idle connection); without it, a clean close completes the stream.
   */
  isLast?: (message: SseMessage) => boolean;
  /**
   * Whether a cut before the first message with an id is reconnected too, without `Last-Event-ID`: right only when
   * the request itself names the stream and the server starts it once, whatever the number of requests
   * (`fromTurnSSE`: the turn id, which `turnServer` runs once). Default false: the server could only start over.
   */
  fromStart?: boolean;
}

/**
 * The messages of `connect`'s connections, reconnected with `Last-Event-ID` after a retryable cut. Only a stream
 * whose messages carry ids is reconnected: without one, the server could only start over, and the cut's error
 * ends the stream (for an ordinary retry to decide).
 */
export function reconnecting(
  request: SseRequestFactory,
  connect: (request: SseRequestFactory) => Observable<SseMessage>,
  options: SseReconnectOptions,
): Observable<SseMessage> {
  const { count, delay, isLast, fromStart } = checkReconnect(options);
  return new Observable<SseMessage>((subscriber) => {
    let lastId: string | undefined;
    // Reconnects since a message last arrived.
    let idle = 0;
    let ended = false;
    let live: Subscription | undefined;

    const open = (): void => {
      const after = lastId;
      const made: SseRequestFactory =
        after === undefined ? request : async (context) => withLastEventId(await request(context), after);
      live = connect(made).subscribe({
        next: (message) => {
          if (message.id !== undefined) lastId = message.id;
          idle = 0;
          if (isLast?.(message)) ended = true;
          subscriber.next(message);
        },
        error: (error: unknown) => cut(error),
        complete: () => {
          if (isLast === undefined || ended) subscriber.complete();
          else cut(connectionError('the stream closed before its last message', undefined));
        },
      });
    };
    const connections = new Resubscriber(open, subscriber);

    const cut = (error: unknown): void => {
      live = undefined;
      const verdict = reconnectVerdict(error, { ended, lastId, fromStart, idle, count });
      if (verdict === 'complete') subscriber.complete();
      else if (verdict === 'fail') subscriber.error(error);
      else {
        idle++;
        connections.again(longWait(delay));
      }
    };

    subscriber.add(() => {
      connections.close();
      live?.unsubscribe();
    });
    connections.run();
  });
}

/**
 * What a cut means: `complete` after the last message (a cut then loses nothing); `fail` with the cut's error
 * when it is not retryable, when no message had an id yet (unless `fromStart`: the server could only start
 * over), or after `count` reconnects in a row that brought no message; else `reconnect`.
 */
function reconnectVerdict(
  error: unknown,
  facts: { ended: boolean; lastId: string | undefined; fromStart: boolean; idle: number; count: number },
): 'complete' | 'fail' | 'reconnect' {
  if (facts.ended) return 'complete';
  if (!isRetryable(error) || (facts.lastId === undefined && !facts.fromStart) || facts.idle >= facts.count) {
    return 'fail';
  }
  return 'reconnect';
}

/** The reconnect options, with their defaults, checked. */
function checkReconnect(
  options: SseReconnectOptions,
): SseReconnectOptions & { delay: number; fromStart: boolean } {
  const { count, delay = 1_000, fromStart = false } = options;
  checkInteger('fromSSE', 'reconnect.count', count, 0);
  checkNumber('fromSSE', 'reconnect.delay', delay, 'non-negative');
  return { ...options, delay, fromStart };
}

/**
 * The request with a `Last-Event-ID` header. The id is sent as UTF-8, as a browser's `EventSource` sends it: a
 * header value is bytes, and `fetch` takes it as a string of byte values (Latin-1), so an id that is not ASCII is
 * written as the characters of its UTF-8 bytes (a server reads it back with `Buffer.from(value, 'latin1')`).
 */
function withLastEventId(made: SseRequest, lastEventId: string): SseRequest {
  const id = utf8Bytes(lastEventId);
  if (typeof made === 'string' || made instanceof URL) {
    return { url: made, init: { headers: { 'last-event-id': id } } };
  }
  if (typeof Request !== 'undefined' && made instanceof Request) {
    const headers = new Headers(made.headers);
    headers.set('last-event-id', id);
    return new Request(made, { headers });
  }
  const { url, init } = made as { url: string | URL; init?: RequestInit };
  const headers = new Headers(init?.headers);
  headers.set('last-event-id', id);
  return { url, init: { ...init, headers } };
}

/** A string as the characters of its UTF-8 bytes (U+0000 to U+00FF): what a header value of `fetch` takes. */
function utf8Bytes(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  let bytes = '';
  for (const byte of new TextEncoder().encode(text)) bytes += String.fromCharCode(byte);
  return bytes;
}
