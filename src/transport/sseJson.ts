import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import { sseDataError } from './errors.js';
import type { SseMessage } from './fromSSE.js';

/**
 * Parses each SSE message's `data` as JSON, for the provider adapters, and completes at the `[DONE]` sentinel.
 *
 * `[DONE]` (OpenAI, the Vercel AI SDK, most compatible servers) says the stream is over: the result completes
 * there and unsubscribes from the source, which closes the request. So an adapter that holds its finish until the
 * end (`openaiChat` without a usage chunk) releases it at `[DONE]`, and what the connection does afterwards (a
 * reset, or staying open) cannot fail the attempt. No adapter ever sees the sentinel as a payload, whatever its
 * format. A payload that is not JSON errors with a retryable `TransportError` `sse-data`. The type `T` is what the
 * adapter that follows expects; it is asserted, not checked: adapters ignore payloads they do not know.
 *
 * ```text
 * source:       -a-b-d-c-|   a = data '{"x":1}', d = data '[DONE]'
 *          sseJson()
 * result:       -A-B-|       A = { x: 1 }; the source is unsubscribed at d
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
 * @returns An operator from SSE messages to parsed payloads, that ends at `[DONE]`.
 */
export function sseJson<T = unknown>(): OperatorFunction<SseMessage, T> {
  return function sseJsonOperator(source) {
    // One subscriber per event rather than a `filter` and a `map`: it sits on the path of every token.
    return new Observable<T>((subscriber) => {
      return subscribeLinked(source, subscriber, {
        next(message) {
          // Reading `data` of something that is not a message throws: subscribeLinked makes it an error.
          const data = message.data;
          if (data === '[DONE]') {
            subscriber.complete();
            return;
          }
          // A payload that is not JSON throws an sse-data error: subscribeLinked makes it the stream's error.
          subscriber.next(parseSseData<T>(data));
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

/**
 * An SSE `data` payload parsed as JSON, or an `sse-data` `TransportError` that keeps the payload.
 * @internal
 */
export function parseSseData<T>(data: string): T {
  try {
    return JSON.parse(data) as T;
  } catch (error) {
    throw sseDataError(data, error);
  }
}
