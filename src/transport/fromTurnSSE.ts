import { Observable } from 'rxjs';
import type { TurnEvent } from '../types.js';
import {
  connectionError,
  httpStatusError,
  remoteTurnError,
  retryAfterOf,
  turnStoppedError,
} from './errors.js';
import {
  type FromSSEOptions,
  fromSSE,
  readStart,
  type SseRequest,
  type SseRequestFactory,
  toFetchArgs,
} from './fromSSE.js';
import type { SseReconnectOptions } from './reconnect.js';
import { parseSseData } from './sseJson.js';
import { describeFailure } from './sseResponse.js';
import type { TurnFailure } from './turnLog.js';

/**
 * Options of {@link fromTurnSSE}.
 *
 * @inline
 */
export interface FromTurnSSEOptions extends Omit<FromSSEOptions, 'reconnect'> {
  /**
   * How it reconnects, as `fromSSE`'s `reconnect`: `count`, the reconnects in a row that may bring no new event
   * before the stream fails (default 5), and `delay` before each, in milliseconds (default 1 000). The turn's end is
   * the stream's last message. A cut before the first event reconnects too (without `Last-Event-ID`): the request
   * names the turn, and its server runs it once.
   */
  reconnect?: Partial<Omit<SseReconnectOptions, 'isLast' | 'fromStart'>>;
}

/**
 * The clean turn a `turnServer` serves, read by a client that may lose its connection: a cut (a reset, a stall,
 * a proxy that closes the connection) reconnects with the `Last-Event-ID` of the last event, and the server
 * sends the events after it: the turn goes on, without a reset and without a second provider request, and
 * renderers (`turnView`, `toTerminal`) never notice. It completes at the turn's end; a turn that failed on the
 * server errors with a `TransportError` `remote-turn` (the server's error's name and code in `remoteName` and
 * `remoteCode`), and one that was stopped ({@link stopTurn}) with a `turn-stopped` whose `stopReason` is the server's
 * message.
 *
 * ```text
 * server:    -a-b-X         (X: the connection is cut)
 *                  -c-(e|)  (the reconnect, with Last-Event-ID of b)
 *            fromTurnSSE(request)
 * result:    -a-b--c-|
 * ```
 *
 * ## Example
 * ```ts
 * import { turnView } from 'cleanturn/renderers';
 * import { fromTurnSSE } from 'cleanturn/transport';
 *
 * fromTurnSSE(() => '/turns/turn-42')
 *   .pipe(turnView())
 *   .subscribe((view) => render(view));
 * ```
 *
 * @param request Makes the request of each connection (the `Last-Event-ID` header is added to reconnects).
 * @param options Reconnects, and `fromSSE`'s options.
 * @returns A cold Observable of the clean turn.
 */
export function fromTurnSSE<E = TurnEvent>(
  request: SseRequestFactory,
  options: FromTurnSSEOptions = {},
): Observable<E> {
  const { reconnect = {}, ...sse } = options;
  const messages = fromSSE(request, {
    ...sse,
    reconnect: {
      count: reconnect.count ?? 5,
      delay: reconnect.delay ?? 1_000,
      isLast: (message) => message.event === 'end' || message.event === 'failed',
      // The request names the turn, which its server runs once: a cut before the first event connects again.
      fromStart: true,
    },
  });
  return new Observable<E>((subscriber) =>
    messages.subscribe({
      next: (message) => {
        try {
          if (message.event === 'end') subscriber.complete();
          else if (message.event === 'failed')
            subscriber.error(remoteError(parseSseData<TurnFailure>(message.data)));
          else if (message.event === 'turn') subscriber.next(parseSseData<E>(message.data));
        } catch (error) {
          subscriber.error(error);
        }
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () =>
        subscriber.error(connectionError('the turn stream closed before the turn ended', undefined)),
    }),
  );
}

/**
 * What a failed message says: a stop as the client's own `turn-stopped`, else a `remote-turn`. A message without a
 * `code` (a server of an earlier version) names a stop by its old class name.
 */
function remoteError(failure: TurnFailure): Error {
  const stopped =
    failure?.code === 'turn-stopped'
      ? failure.name === 'TransportError'
      : failure?.code === undefined && failure?.name === 'TurnStoppedError';
  if (stopped && typeof failure.message === 'string')
    return turnStoppedError(failure.message.replace(/^the turn was stopped(: )?/, '') || undefined);
  return remoteTurnError(failure);
}

/**
 * Options of {@link stopTurn}.
 *
 * @inline
 */
export interface StopTurnOptions {
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Aborts the stop request itself. */
  signal?: AbortSignal;
}

/**
 * Asks a server of turns to stop one (a stop button): sends the stop request, `POST` when `request` is a URL
 * (the transport guide's route is `POST /turns/<id>/stop`, which calls `turnServer`'s `stop`). A dropped connection is
 * never a stop: only this request is. The turn's readers (`fromTurnSSE`) then end with a `TransportError` `turn-stopped`.
 *
 * ## Example
 * ```ts
 * import { stopTurn } from 'cleanturn/transport';
 *
 * stopButton.onclick = () => stopTurn(`/turns/${encodeURIComponent(turnId)}/stop`);
 * ```
 *
 * @param request The stop request: a URL (sent as a `POST`), a `Request`, or `{ url, init }`.
 * @returns true when the server stopped a running turn (a 2xx); false when it has none by that id (404 or 409: it
 *   ended, or never started).
 * @throws {TransportError} `http-status` for another status; `connection` when the request fails.
 */
export async function stopTurn(request: SseRequest, options: StopTurnOptions = {}): Promise<boolean> {
  const doFetch = options.fetch ?? globalThis.fetch;
  const made: SseRequest =
    typeof request === 'string' || request instanceof URL
      ? { url: request, init: { method: 'POST' } }
      : request;
  const [input, init] = toFetchArgs(made);
  let response: Response;
  try {
    response = await doFetch(input, { ...init, signal: options.signal ?? init?.signal ?? null });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw connectionError(describeFailure('the stop request failed', error), error);
  }
  // The status decides; of an error's body only its start is read (for a bounded time), and no other body is read:
  // an answer whose body never ends must not hold the stop, nor grow in memory.
  if (response.ok || response.status === 404 || response.status === 409) {
    response.body?.cancel().catch(() => undefined);
    return response.ok;
  }
  const body = await readStart(response);
  throw httpStatusError(
    response.status,
    response.statusText,
    body.slice(0, 4096),
    retryAfterOf(response.headers),
  );
}
