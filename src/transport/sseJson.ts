import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import { SseDataError } from './errors.js';
import type { SseMessage } from './fromSSE.js';

/**
 * Parses each SSE message's `data` as JSON, for the provider adapters, and drops the `[DONE]` sentinel.
 *
 * A payload that is not JSON errors with a retryable {@link SseDataError}. The type `T` is what the adapter that
 * follows expects; it is asserted, not checked: adapters ignore payloads they do not know.
 *
 * ```text
 * source:       -a-b-d-|     a = data '{"x":1}', d = data '[DONE]'
 *          sseJson()
 * result:       -A-B---|     A = { x: 1 }
 * ```
 *
 * ## Example
 * ```ts
 * import { openaiChat } from 'cleanturn/providers';
 * import { fromSSE, sseJson } from 'cleanturn/transport';
 *
 * fromSSE(makeRequest).pipe(sseJson(), openaiChat());
 * ```
 *
 * @returns An operator from SSE messages to parsed payloads.
 */
export function sseJson<T = unknown>(): OperatorFunction<SseMessage, T> {
  return function sseJsonOperator(source) {
    // One subscriber per event rather than a `filter` and a `map`: it sits on the path of every token.
    return new Observable<T>((subscriber) => {
      return subscribeLinked(source, subscriber, {
        next(message) {
          // Reading `data` of something that is not a message throws: subscribeLinked makes it an error.
          const data = message.data;
          if (data === '[DONE]') return;
          let parsed: T;
          try {
            parsed = JSON.parse(data) as T;
          } catch (error) {
            subscriber.error(new SseDataError(data, error));
            return;
          }
          subscriber.next(parsed);
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          subscriber.complete();
        },
      });
    });
  };
}
