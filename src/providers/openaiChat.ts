import type { FinishEvent, FinishReason, ProviderEvent, ToolCallDeltaEvent } from 'cleanturn';
import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import {
  notAPayload,
  type OpenAIErrorBody,
  type OpenAIErrorOptions,
  openaiError,
  sdkStreamErrorBody,
  stringOf,
} from './openaiErrors.js';
import { isRecord } from './shared.js';

/** A function name and argument fragment, as a tool-call delta (or the deprecated `function_call`) carries them. */
export interface OpenAIChatFunctionDelta {
  name?: string | null;
  /** A piece of the JSON argument text. */
  arguments?: string | null;
}

/** One entry of `delta.tool_calls`: the first fragment of a call has `id` and `function.name`. */
export interface OpenAIChatToolCallDelta {
  /** Which parallel call the fragment belongs to (scoped to the choice). */
  index?: number;
  id?: string | null;
  type?: string | null;
  function?: OpenAIChatFunctionDelta | null;
}

/** The `delta` of a streamed choice. */
export interface OpenAIChatDelta {
  content?: string | null;
  refusal?: string | null;
  tool_calls?: readonly OpenAIChatToolCallDelta[] | null;
  /** Deprecated by OpenAI in favour of `tool_calls`; still read, as call index 0. */
  function_call?: OpenAIChatFunctionDelta | null;
}

/** One entry of a chunk's `choices`. */
export interface OpenAIChatChoice {
  /** The choice's index; only above 0 when the request asked for `n > 1`. */
  index?: number;
  delta?: OpenAIChatDelta | null;
  /** `stop`, `length`, `tool_calls`, `content_filter`, `function_call`; null until the end. */
  finish_reason?: string | null;
}

/** The `usage` of the final chunk, sent when the request has `stream_options: { include_usage: true }`. */
export interface OpenAIChatUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
}

/**
 * A parsed Chat Completions stream payload: a `chat.completion.chunk` (the official SDK's `ChatCompletionChunk`
 * fits this type) or an in-stream error `{"error": {…}}`. Only the fields the adapter reads are listed; others
 * are ignored.
 */
export interface OpenAIChatChunk {
  choices?: readonly OpenAIChatChoice[] | null;
  usage?: OpenAIChatUsage | null;
  error?: OpenAIErrorBody | null;
}

/** What {@link openaiChat} reads: parsed `data:` payloads, and the `[DONE]` sentinel if you pass it on. */
export type OpenAIChatInput = OpenAIChatChunk | '[DONE]';

/** Options of {@link openaiChat}. */
export interface OpenAIChatOptions extends OpenAIErrorOptions {
  /** Which choice to follow when the request asked for `n > 1`; the others are ignored. Default 0. */
  choice?: number;
}

/**
 * Turns an OpenAI Chat Completions stream (`chat.completion.chunk` payloads) into neutral `ProviderEvent`s.
 *
 * Feed it what an SSE `data:` line parses to, or what the official SDK's stream yields
 * (`from(await client.chat.completions.create({ …, stream: true }))`). It emits `text` for `delta.content`,
 * a `tool-call-delta` per `delta.tool_calls` entry (keyed by its `index`; id and name on the first fragment),
 * `usage` from the usage chunk, and one `finish`. Put {@link assembleToolCalls} after it to get whole calls.
 *
 * ```text
 * source:       -a-b-c-d-f-u----|      a: content; b, c, d: fragments of call #0; f: finish_reason; u: usage chunk
 *          openaiChat()
 * result:       -A-B-C-D---(UF)-|    F is held until the usage chunk (or [DONE], or the end of the source)
 * ```
 *
 * How it decides:
 * - **Finish, and the usage after it.** With `include_usage` the `finish_reason` chunk is followed by a chunk
 *   with `choices: []` and the `usage`. The `finish` is held back and emitted after the usage, or at
 *   `[DONE]`, or when the source completes, whichever comes first, so that the attempt's usage always comes
 *   before its finish and nothing of the attempt follows its finish. If the source errors before that (the
 *   connection dropped after `finish_reason`), the held finish is dropped: the stream never ended, so the
 *   attempt counts as failed and its calls are never released. Everything after the finish, or after
 *   `[DONE]`, is ignored; a source error after the finish (the connection dropped after the stream had said
 *   everything) completes the result instead: a finished attempt never turns into a failed one.
 * - **Finish reason.** `stop` → `stop`, `length` → `length`, `content_filter` → `content-filter`,
 *   `tool_calls` and `function_call` → `tool-calls`, anything else → `other`. A tool call that appeared in
 *   the stream makes a `stop` into `tool-calls` (OpenAI reports `stop` with a forced `tool_choice`); a
 *   refusal makes it `content-filter`. `raw` keeps the provider's value when it differs.
 * - **Usage.** Read from any chunk whose `usage` is not null (a chunk with empty `choices` is not
 *   necessarily the usage chunk: Azure sends such chunks first). `prompt_tokens` → `inputTokens`,
 *   `completion_tokens` → `outputTokens`. Without `include_usage` there is none.
 * - **Errors.** An `{"error": {…}}` payload errors the stream with a {@link ProviderError}; the official SDK
 *   throws an `APIError` without status for the same payload, which is turned into the same
 *   `ProviderError`. `retryable`: server errors, overload and rate limits yes; invalid requests,
 *   authentication, quota and policy errors no; unknown codes yes. The `retryable` option overrides it.
 * - **`[DONE]`.** Pass it on or drop it: the string `'[DONE]'` ends the stream for the adapter (it releases the
 *   held finish and ignores what follows); anything else that is not an object errors with a non-retryable
 *   `CleanturnError`, since it is a payload that was never parsed.
 * - Refusal text (`delta.refusal`) is emitted as `text`. The deprecated `delta.function_call` becomes call #0.
 *   A fragment without `index` (some compatible servers) goes to the call with its `id`, or else to the
 *   latest call. Unknown fields and chunks are ignored. Each fragment is passed on as it is: linear in the
 *   size of the stream.
 *
 * State, per subscription: whether a call appeared, whether a refusal did, the latest and highest call
 * indexes and the indexes by call id, the held `finish_reason`, and whether the stream is over or finished.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import { defer, from, mergeMap } from 'rxjs';
 * import { assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { openaiChat } from 'cleanturn/providers';
 *
 * const client = new OpenAI();
 * const turn$ = defer(() =>
 *   client.chat.completions.create({
 *     model: 'gpt-4.1',
 *     messages: [{ role: 'user', content: 'Refund order ORD-7781, the book arrived damaged.' }],
 *     stream: true,
 *     stream_options: { include_usage: true },
 *   }),
 * ).pipe(
 *   mergeMap((stream) => from(stream)),
 *   openaiChat(),
 *   assembleToolCalls(),
 *   requireFinish(),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * ```
 *
 * @see {@link openaiResponses} for the Responses API.
 * @param options `choice` to follow with `n > 1`; `retryable` to classify in-stream errors yourself.
 * @returns An operator from Chat Completions chunks to provider events.
 */
export function openaiChat(
  options: OpenAIChatOptions = {},
): OperatorFunction<OpenAIChatInput, ProviderEvent> {
  const followed = options.choice ?? 0;
  return function openaiChatOperator(source) {
    return new Observable<ProviderEvent>((subscriber) => {
      // Whether a tool call appeared in this attempt: it makes a `stop` into `tool-calls`.
      let sawCall = false;
      // Whether the model refused (`delta.refusal`): it makes a `stop` into `content-filter`.
      let refused = false;
      // The index of the latest fragment, for fragments that come without one.
      let latestIndex: number | undefined;
      // Call indexes by call id, for fragments that come without an index.
      const indexById = new Map<string, number>();
      // The highest call index so far, so that a call without an index gets a new one.
      let maxIndex = -1;
      // The `finish_reason` seen, until the finish is emitted.
      let held: string | undefined;
      // The finish was emitted or `[DONE]` arrived: the rest of the source is ignored.
      let over = false;
      // The finish was emitted: the attempt is complete, whatever the source does next.
      let finished = false;

      const release = () => {
        if (held !== undefined) {
          const finish = chatFinish(held, sawCall, refused);
          held = undefined;
          finished = true;
          over = true;
          subscriber.next(finish);
        }
      };
      const fail = (body: OpenAIErrorBody, payload: unknown) => {
        held = undefined;
        over = true;
        let error: unknown;
        try {
          error = openaiError('openai-chat', body, payload, options);
        } catch (thrown) {
          error = thrown;
        }
        subscriber.error(error);
      };
      /** Emits one tool-call fragment; `given` is its index, `id` its call id, when it has them. */
      const fragment = (
        given: unknown,
        id: string | undefined,
        fn: OpenAIChatFunctionDelta | null | undefined,
      ) => {
        const name = stringOf(fn?.name) || undefined;
        const argsDelta = stringOf(fn?.arguments) ?? '';
        let index: number;
        if (typeof given === 'number') index = given;
        else if (id !== undefined) index = indexById.get(id) ?? maxIndex + 1;
        else index = latestIndex ?? 0;
        if (id !== undefined) indexById.set(id, index);
        latestIndex = index;
        if (index > maxIndex) maxIndex = index;
        sawCall = true;
        if (id === undefined && name === undefined && argsDelta === '') return;
        const event: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argsDelta };
        if (id !== undefined) event.id = id;
        if (name !== undefined) event.name = name;
        subscriber.next(event);
      };

      const subscription = subscribeLinked(source, subscriber, {
        next(input) {
          if (subscriber.closed || over) return;
          if (input === '[DONE]') {
            release();
            over = true;
            return;
          }
          if (!isRecord(input)) {
            over = true;
            subscriber.error(notAPayload('openaiChat', input));
            return;
          }
          if (isRecord(input.error)) {
            fail(input.error, input);
            return;
          }
          if (Array.isArray(input.choices)) {
            for (const choice of input.choices as readonly OpenAIChatChoice[]) {
              if (!isRecord(choice) || (choice.index ?? 0) !== followed) continue;
              const delta = choice.delta;
              if (isRecord(delta)) {
                if (typeof delta.content === 'string' && delta.content !== '') {
                  subscriber.next({ type: 'text', text: delta.content });
                }
                if (typeof delta.refusal === 'string' && delta.refusal !== '') {
                  refused = true;
                  subscriber.next({ type: 'text', text: delta.refusal });
                }
                if (Array.isArray(delta.tool_calls)) {
                  for (const call of delta.tool_calls as readonly OpenAIChatToolCallDelta[]) {
                    if (isRecord(call)) fragment(call.index, stringOf(call.id) || undefined, call.function);
                  }
                }
                if (isRecord(delta.function_call)) fragment(0, undefined, delta.function_call);
              }
              if (typeof choice.finish_reason === 'string' && held === undefined) held = choice.finish_reason;
            }
          }
          if (isRecord(input.usage)) {
            subscriber.next(chatUsage(input.usage));
            release();
          }
        },
        error(error) {
          held = undefined;
          if (finished) {
            subscriber.complete();
            return;
          }
          const body = sdkStreamErrorBody(error);
          if (body === undefined) subscriber.error(error);
          else fail(body, body);
        },
        complete() {
          if (!over) release();
          subscriber.complete();
        },
      });
      return () => {
        held = undefined;
        indexById.clear();
        subscription.unsubscribe();
      };
    });
  };
}

function chatFinish(raw: string, sawCall: boolean, refused: boolean): FinishEvent {
  let reason: FinishReason;
  switch (raw) {
    case 'stop':
      reason = sawCall ? 'tool-calls' : refused ? 'content-filter' : 'stop';
      break;
    case 'tool_calls':
    case 'function_call':
      reason = 'tool-calls';
      break;
    case 'length':
      reason = 'length';
      break;
    case 'content_filter':
      reason = 'content-filter';
      break;
    default:
      reason = 'other';
  }
  return reason === raw ? { type: 'finish', reason } : { type: 'finish', reason, raw };
}

function chatUsage(usage: OpenAIChatUsage): ProviderEvent {
  const event: { type: 'usage'; inputTokens?: number; outputTokens?: number } = { type: 'usage' };
  if (typeof usage.prompt_tokens === 'number') event.inputTokens = usage.prompt_tokens;
  if (typeof usage.completion_tokens === 'number') event.outputTokens = usage.completion_tokens;
  return event;
}
