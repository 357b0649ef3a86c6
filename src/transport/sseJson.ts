import { filter, map, type OperatorFunction, pipe } from 'rxjs';
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
  return pipe(
    filter((message: SseMessage) => message.data !== '[DONE]'),
    map((message) => {
      try {
        return JSON.parse(message.data) as T;
      } catch (error) {
        throw new SseDataError(message.data, error);
      }
    }),
  );
}
