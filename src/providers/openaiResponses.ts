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

/** An output item, as `response.output_item.added`/`.done` and the final `response.output` carry it. */
export interface OpenAIResponsesItem {
  /** `message`, `function_call`, `reasoning`…; only `function_call` items are read. */
  type?: string;
  /** The item id (`fc_…`) that the argument deltas refer to as `item_id`. */
  id?: string | null;
  /** The call id (`call_…`) that a follow-up request echoes back: the neutral call's `id`. */
  call_id?: string | null;
  name?: string | null;
  /** The JSON argument text of a `function_call` item (other item types put other things here). */
  arguments?: unknown;
}

/** The `response` object of the lifecycle events; only the fields the adapter reads. */
export interface OpenAIResponsesResponse {
  /** `completed`, `incomplete`, `failed`, `in_progress`, `queued`, `cancelled`. */
  status?: string | null;
  output?: readonly OpenAIResponsesItem[] | null;
  usage?: { input_tokens?: number | null; output_tokens?: number | null } | null;
  /** Why it failed (`response.failed`). */
  error?: { code?: string | null; message?: string | null } | null;
  /** Why it is incomplete (`response.incomplete`): `max_output_tokens` or `content_filter`. */
  incomplete_details?: { reason?: string | null } | null;
}

/**
 * A parsed Responses stream event (the official SDK's `ResponseStreamEvent` fits this type). Only the fields the
 * adapter reads are listed; events of other types are ignored.
 */
export interface OpenAIResponsesEvent {
  /** `response.output_text.delta`, `response.function_call_arguments.delta`, `response.completed`, `error`… */
  type: string;
  /** Counts up from 0 in a stream; replays after a resume repeat numbers already seen. */
  sequence_number?: number;
  output_index?: number;
  item_id?: string;
  /** A text or argument fragment. */
  delta?: string;
  /** The whole argument text (`response.function_call_arguments.done`). */
  arguments?: string;
  /** The function's name (`response.function_call_arguments.done`; missing in some recorded streams). */
  name?: string;
  item?: OpenAIResponsesItem;
  response?: OpenAIResponsesResponse;
  /** The flat `error` event's code (`server_error`…). */
  code?: string | null;
  /** The flat `error` event's message. */
  message?: string;
  param?: string | null;
  /** The nested `error` event's body, as a recorded stream sends it. */
  error?: OpenAIErrorBody | null;
}

/** What {@link openaiResponses} reads: parsed events, and a `[DONE]` sentinel should one arrive. */
export type OpenAIResponsesInput = OpenAIResponsesEvent | '[DONE]';

/** Options of {@link openaiResponses}. */
export interface OpenAIResponsesOptions extends OpenAIErrorOptions {}

/** One function call of the attempt. */
interface Call {
  /** Its small index in the neutral events, in the order the calls appeared. */
  index: number;
  /** Whether its `call_id` and name were emitted. */
  named: boolean;
  /** Whether argument text was emitted: later whole-argument copies (`done`) are then skipped. */
  streamed: boolean;
}

/**
 * Turns an OpenAI Responses stream (`response.*` events) into neutral `ProviderEvent`s.
 *
 * Feed it what an SSE `data:` line parses to, or what the official SDK's stream yields
 * (`from(await client.responses.create({ …, stream: true }))`). It emits `text` for `response.output_text.delta`,
 * a `tool-call-delta` per function call fragment, and `usage` then `finish` at the terminal event. Each
 * `function_call` item gets a small stable `index` (0, 1, … in the order the calls appear), whatever its
 * `output_index`; its `call_id` is the neutral `id`. Put {@link assembleToolCalls} after it to get whole calls.
 *
 * ```text
 * source:       -t-a-d-e-c---|      t: text delta; a: function_call item added; d, e: argument deltas; c: response.completed
 *          openaiResponses()
 * result:       -T-A-D-E-(UF)|      A: #0 with call_id and name; U: usage; F: finish tool-calls
 * ```
 *
 * How it decides:
 * - **Calls.** `response.output_item.added` with a `function_call` item starts a call, keyed by its item id
 *   (or its `output_index` when the item has no id); `response.function_call_arguments.delta` events refer to
 *   it by `item_id` (or `output_index`) and can interleave with other calls'. Arguments that arrive whole, in
 *   `function_call_arguments.done` or `output_item.done` with no delta before, are emitted once as one
 *   fragment; when deltas came, the whole copy is ignored (never compared or re-joined: linear in the size of
 *   the stream). A call whose `added` event is missing starts at its first event; a repeated `added` is
 *   ignored. Other item types (reasoning, built-in tools, custom tools) are ignored.
 * - **Finish** comes from the terminal event, after its `usage` (`input_tokens` → `inputTokens`,
 *   `output_tokens` → `outputTokens`): `response.completed` → `tool-calls` if a function call appeared (in the
 *   stream or in `response.output`), `content-filter` after a refusal, else `stop`; `response.incomplete` →
 *   `length` for `max_output_tokens`, `content-filter` for `content_filter`, else `other`. `raw` is
 *   `completed`, or `incomplete:<reason>`. Everything after the terminal event is ignored; a source error
 *   after it (the connection dropped once the stream had said everything) completes the result instead.
 * - **Errors.** An `error` event errors the stream with a {@link ProviderError}, in both shapes: flat
 *   (`{type:'error', code, message}`, as the SDK types it) and nested (`{type:'error', error:{type, code,
 *   message}}`, as a recorded stream sends it). The `response.failed` that follows is not read; a
 *   `response.failed` without an `error` event before it errors the same way from `response.error`. The
 *   official SDK throws an `APIError` without status for the nested shape; it becomes the same
 *   `ProviderError`. `retryable` as in {@link openaiChat}: `server_error` and `rate_limit_exceeded` yes,
 *   `insufficient_quota` and invalid requests no.
 * - **`sequence_number`.** An event whose number is not above the last one seen is a replay (a resumed
 *   stream that overlaps) and is dropped; gaps are allowed.
 * - **`[DONE]`.** The format has none; the string `'[DONE]'` is accepted and ignored. Anything else that is
 *   not an object errors with a non-retryable `CleanturnError`: a payload that was never parsed.
 *
 * State, per subscription: the attempt's calls by item id and by output index, the next call index, whether a
 * refusal appeared, the last sequence number, and whether the stream is over or finished.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import { defer, from, mergeMap } from 'rxjs';
 * import { assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { openaiResponses } from 'cleanturn/providers';
 *
 * const client = new OpenAI();
 * const turn$ = defer(() =>
 *   client.responses.create({
 *     model: 'gpt-4.1',
 *     input: 'Refund order ORD-7781, the book arrived damaged.',
 *     stream: true,
 *   }),
 * ).pipe(
 *   mergeMap((stream) => from(stream)),
 *   openaiResponses(),
 *   assembleToolCalls(),
 *   requireFinish(),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * ```
 *
 * @see {@link openaiChat} for Chat Completions.
 * @param options `retryable` to classify in-stream errors yourself.
 * @returns An operator from Responses stream events to provider events.
 */
export function openaiResponses(
  options: OpenAIResponsesOptions = {},
): OperatorFunction<OpenAIResponsesInput, ProviderEvent> {
  return function openaiResponsesOperator(source) {
    return new Observable<ProviderEvent>((subscriber) => {
      // The attempt's function calls by item id.
      const byItem = new Map<string, Call>();
      // The same calls by output index, for events and items without an item id.
      const byOutput = new Map<number, Call>();
      // The index the next call gets.
      let nextIndex = 0;
      // Whether the model refused (`response.refusal.delta`): it makes a completion into `content-filter`.
      let refused = false;
      // The highest sequence number seen; events at or below it are replays.
      let lastSequence = -1;
      // The terminal event arrived, or the stream errored: the rest of the source is ignored.
      let over = false;
      // The finish was emitted: the attempt is complete, whatever the source does next.
      let finished = false;

      const fail = (body: OpenAIErrorBody, payload: unknown) => {
        over = true;
        let error: unknown;
        try {
          error = openaiError('openai-responses', body, payload, options);
        } catch (thrown) {
          error = thrown;
        }
        subscriber.error(error);
      };
      /** The call an event or item refers to; a new one if none does yet. */
      const callOf = (itemId: string | undefined, outputIndex: number | undefined): Call => {
        let call = itemId === undefined ? undefined : byItem.get(itemId);
        if (call === undefined && outputIndex !== undefined) call = byOutput.get(outputIndex);
        if (call === undefined) {
          call = { index: nextIndex++, named: false, streamed: false };
          if (outputIndex !== undefined) byOutput.set(outputIndex, call);
        }
        if (itemId !== undefined) byItem.set(itemId, call);
        return call;
      };
      /** Emits a fragment of `call`; `whole` arguments only if no argument text was emitted yet. */
      const emit = (call: Call, start: OpenAIResponsesItem | undefined, args: string, whole: boolean) => {
        const argsDelta = whole && call.streamed ? '' : args;
        const event: ToolCallDeltaEvent = { type: 'tool-call-delta', index: call.index, argsDelta };
        if (!call.named && start !== undefined) {
          const id = stringOf(start.call_id) || undefined;
          const name = stringOf(start.name) || undefined;
          if (id !== undefined) event.id = id;
          if (name !== undefined) event.name = name;
          call.named = id !== undefined && name !== undefined;
        }
        if (argsDelta !== '') call.streamed = true;
        if (argsDelta !== '' || event.id !== undefined || event.name !== undefined) subscriber.next(event);
      };
      const item = (event: OpenAIResponsesEvent): OpenAIResponsesItem | undefined =>
        isRecord(event.item) && event.item.type === 'function_call' ? event.item : undefined;
      const terminal = (event: OpenAIResponsesEvent) => {
        over = true;
        const response = isRecord(event.response) ? event.response : {};
        if (isRecord(response.usage)) subscriber.next(responsesUsage(response.usage));
        const calls =
          nextIndex > 0 ||
          (Array.isArray(response.output) &&
            (response.output as readonly OpenAIResponsesItem[]).some(
              (output) => isRecord(output) && output.type === 'function_call',
            ));
        finished = true;
        subscriber.next(responsesFinish(event.type, response, calls, refused));
      };

      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          if (subscriber.closed || over || event === '[DONE]') return;
          if (!isRecord(event)) {
            over = true;
            subscriber.error(notAPayload('openaiResponses', event));
            return;
          }
          const sequence = event.sequence_number;
          if (typeof sequence === 'number') {
            if (sequence <= lastSequence) return;
            lastSequence = sequence;
          }
          const itemId = stringOf(event.item_id);
          const outputIndex = typeof event.output_index === 'number' ? event.output_index : undefined;
          switch (event.type) {
            case 'response.output_text.delta':
              if (typeof event.delta === 'string' && event.delta !== '') {
                subscriber.next({ type: 'text', text: event.delta });
              }
              return;
            case 'response.refusal.delta':
              if (typeof event.delta === 'string' && event.delta !== '') {
                refused = true;
                subscriber.next({ type: 'text', text: event.delta });
              }
              return;
            case 'response.output_item.added': {
              const start = item(event);
              if (start === undefined) return;
              const call = callOf(stringOf(start.id), outputIndex);
              emit(call, start, stringOf(start.arguments) ?? '', true);
              return;
            }
            case 'response.function_call_arguments.delta': {
              const call = callOf(itemId, outputIndex);
              if (typeof event.delta === 'string') emit(call, undefined, event.delta, false);
              return;
            }
            case 'response.function_call_arguments.done': {
              const call = callOf(itemId, outputIndex);
              const named = stringOf(event.name) === undefined ? undefined : { name: event.name };
              emit(call, named, stringOf(event.arguments) ?? '', true);
              return;
            }
            case 'response.output_item.done': {
              const done = item(event);
              if (done === undefined) return;
              const call = callOf(stringOf(done.id), outputIndex);
              emit(call, done, stringOf(done.arguments) ?? '', true);
              return;
            }
            case 'response.completed':
            case 'response.incomplete':
              terminal(event);
              return;
            case 'response.failed': {
              const response = isRecord(event.response) ? event.response : {};
              fail(isRecord(response.error) ? response.error : {}, event);
              return;
            }
            case 'error':
              if (isRecord(event.error)) fail(event.error, event);
              else fail({ code: event.code, message: event.message, param: event.param }, event);
              return;
          }
          // Other event types, known or not, carry nothing for the neutral model: forward compatibility.
        },
        error(error) {
          if (finished) {
            subscriber.complete();
            return;
          }
          const body = sdkStreamErrorBody(error);
          if (body === undefined) subscriber.error(error);
          else fail(body, body);
        },
        complete() {
          subscriber.complete();
        },
      });
      return () => {
        byItem.clear();
        byOutput.clear();
        subscription.unsubscribe();
      };
    });
  };
}

function responsesFinish(
  type: string,
  response: OpenAIResponsesResponse,
  calls: boolean,
  refused: boolean,
): FinishEvent {
  if (type === 'response.incomplete') {
    const why = stringOf(response.incomplete_details?.reason);
    const reason: FinishReason =
      why === 'max_output_tokens' ? 'length' : why === 'content_filter' ? 'content-filter' : 'other';
    return { type: 'finish', reason, raw: why === undefined ? 'incomplete' : `incomplete:${why}` };
  }
  const reason: FinishReason = calls ? 'tool-calls' : refused ? 'content-filter' : 'stop';
  return { type: 'finish', reason, raw: stringOf(response.status) ?? 'completed' };
}

function responsesUsage(usage: NonNullable<OpenAIResponsesResponse['usage']>): ProviderEvent {
  const event: { type: 'usage'; inputTokens?: number; outputTokens?: number } = { type: 'usage' };
  if (typeof usage.input_tokens === 'number') event.inputTokens = usage.input_tokens;
  if (typeof usage.output_tokens === 'number') event.outputTokens = usage.output_tokens;
  return event;
}
