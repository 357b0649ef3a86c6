import type { TurnEvent } from 'cleanturn';
import { Observable } from 'rxjs';
import { ConnectionError, SseDataError } from './errors.js';
import { type FromSSEOptions, fromSSE, type SseRequestFactory } from './fromSSE.js';
import type { SseReconnectOptions } from './reconnect.js';
import type { TurnFailure } from './turnLog.js';
import { RemoteTurnError } from './turnServer.js';

/** Options of {@link fromTurnSSE}. */
export interface FromTurnSSEOptions extends Omit<FromSSEOptions, 'reconnect'> {
  /**
   * How it reconnects, as `fromSSE`'s `reconnect`: `count`, the reconnects in a row that may bring no new event
   * before the stream fails (default 5), and `delay` before each, in milliseconds (default 1 000). The turn's end is
   * the stream's last message.
   */
  reconnect?: Partial<Omit<SseReconnectOptions, 'isLast'>>;
}

/**
 * The clean turn a `turnServer` serves, read by a client that may lose its connection: a cut (a reset, a stall,
 * a proxy that closes the connection) reconnects with the `Last-Event-ID` of the last event, and the server
 * sends the events after it: the turn goes on, without a reset and without a second provider request, and
 * renderers (`turnView`, `toTerminal`) never notice. It completes at the turn's end; a turn that failed on the
 * server errors with a {@link RemoteTurnError}.
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
    },
  });
  return new Observable<E>((subscriber) =>
    messages.subscribe({
      next: (message) => {
        try {
          if (message.event === 'end') subscriber.complete();
          else if (message.event === 'failed')
            subscriber.error(new RemoteTurnError(parse<TurnFailure>(message.data)));
          else if (message.event === 'turn') subscriber.next(parse<E>(message.data));
        } catch (error) {
          subscriber.error(error);
        }
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () =>
        subscriber.error(new ConnectionError('the turn stream closed before the turn ended', undefined)),
    }),
  );
}

function parse<T>(data: string): T {
  try {
    return JSON.parse(data) as T;
  } catch (error) {
    throw new SseDataError(data, error);
  }
}
