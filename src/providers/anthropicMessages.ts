import {
  CleanturnError,
  type FinishReason,
  type ProviderEvent,
  type ToolCallDeltaEvent,
  type UsageEvent,
} from 'cleanturn';
import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import { ProviderError } from './errors.js';
import { isRecord, isTransientStatus } from './shared.js';

/** Token counts as Anthropic reports them: cumulative; a missing or null field means "unchanged". */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** `message_start`: opens the message; carries its id and the first usage. */
export interface AnthropicMessageStartEvent {
  type: 'message_start';
  message: { id?: string; usage?: AnthropicUsage | null };
}

/** `content_block_start`: opens content block `index`; a `tool_use` block names the call's id and tool. */
export interface AnthropicContentBlockStartEvent {
  type: 'content_block_start';
  index: number;
  content_block: { type: string; id?: string; name?: string; input?: unknown };
}

/** `content_block_delta`: a `text_delta` (`text`) or an `input_json_delta` (`partial_json`), among others. */
export interface AnthropicContentBlockDeltaEvent {
  type: 'content_block_delta';
  index: number;
  delta: { type: string; text?: string; partial_json?: string };
}

/** `content_block_stop`: content block `index` is complete. */
export interface AnthropicContentBlockStopEvent {
  type: 'content_block_stop';
  index: number;
}

/** `message_delta`: the stop reason and the cumulative usage. */
export interface AnthropicMessageDeltaEvent {
  type: 'message_delta';
  delta: { stop_reason?: string | null };
  usage?: AnthropicUsage | null;
}

/** `message_stop`: the end of the message. */
export interface AnthropicMessageStopEvent {
  type: 'message_stop';
}

/** `error`: an error inside a stream that started with HTTP 200, e.g. `overloaded_error`. */
export interface AnthropicErrorEvent {
  type: 'error';
  error: { type?: string; message?: string };
}

/**
 * One event of an Anthropic Messages stream: what an SSE `data:` line parses to, or what the official SDK's
 * stream (`client.messages.create({ stream: true })`, `client.messages.stream()`) yields. Only the fields the
 * adapter reads are listed; events of other types (`ping`, and types added later) are accepted and ignored.
 */
export type AnthropicStreamEvent =
  | AnthropicMessageStartEvent
  | AnthropicContentBlockStartEvent
  | AnthropicContentBlockDeltaEvent
  | AnthropicContentBlockStopEvent
  | AnthropicMessageDeltaEvent
  | AnthropicMessageStopEvent
  | AnthropicErrorEvent
  | { type: string };

/** An Anthropic error as the `retryable` option sees it. */
export interface AnthropicErrorInfo {
  /** `overloaded_error`, `invalid_request_error`…, when the error has one. */
  type: string | undefined;
  /** The HTTP status, for an error the SDK raised from a failed response (undefined inside a stream). */
  status: number | undefined;
  message: string;
}

/** Options of {@link anthropicMessages}. */
export interface AnthropicMessagesOptions {
  /**
   * Decides whether an error deserves a new attempt; return `undefined` to keep the default: `overloaded_error`,
   * `api_error`, `rate_limit_error`, `timeout_error`, `conflict_error` and unknown types yes;
   * `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`, `request_too_large`,
   * `billing_error` and the `memory_*` errors no; without a type, HTTP 408, 409, 429 and 5xx yes, other 4xx no.
   */
  retryable?: (error: AnthropicErrorInfo) => boolean | undefined;
}

/** A `tool_use` content block of the message. */
interface ToolBlock {
  id: string | undefined;
  /** The block's `input` at `content_block_start` (always `{}` from the API; a replay may fill it). */
  startInput: unknown;
  /** Whether any argument text was forwarded for it. */
  hasArgs: boolean;
}

/**
 * Turns an Anthropic Messages stream into neutral {@link ProviderEvent}s.
 *
 * Text deltas become `text`. Each `tool_use` block becomes `tool-call-delta` fragments keyed by the block's
 * `index`: a first fragment at `content_block_start` with the call id, the tool name and no text, then one per
 * non-empty `partial_json`. Put `assembleToolCalls()` after it to get whole calls (a call without argument
 * text gets `{}`). Fragments rather than a whole call at `content_block_stop`: joining and parsing stay in one
 * place, linear in the argument size, and a garbled call gets the same retryable `ToolCallAssemblyError` in
 * every format. `message_start` and `message_delta` usage becomes `usage` (cumulative: each event carries the
 * current totals; input counts cache writes and reads), and `message_stop` becomes `finish`, with the last
 * `stop_reason` as `raw`:
 *
 * | `stop_reason` | `reason` |
 * |---|---|
 * | `tool_use` | `tool-calls` |
 * | `end_turn`, `stop_sequence` | `stop`, or `tool-calls` when the message had a `tool_use` block |
 * | `max_tokens`, `model_context_window_exceeded` | `length` |
 * | `refusal` | `content-filter` |
 * | `pause_turn` | `other`: the turn is not over; send the message back to let the model continue |
 * | none, anything else | `other` (`tool-calls` when there was a call) |
 *
 * - `ping`, thinking, citations, server tool blocks and unknown event types are ignored.
 * - A second `message_start` with the same id (a duplicated event) is ignored. One with a different id, or a
 *   second `tool_use` start at an open index with another id, means two generations were spliced into one
 *   stream (a proxy that retried on its own): the stream errors with a retryable {@link ProviderError} (code
 *   `spliced_stream`) rather than merge them, and `retryAsEvents` starts a clean attempt.
 * - An `error` event errors the stream with a {@link ProviderError} whose `retryable` follows the error type.
 *   Errors of the source that carry an Anthropic error (the SDK's `APIError`, thrown for an in-stream `error`
 *   event or a failed response) are classified the same way; other source errors pass through unchanged.
 * - A stream that ends before `message_stop` emits no `finish`: put `requireFinish()` after it. Everything
 *   after `message_stop` is ignored, and a source error after it completes the stream: nothing of an attempt
 *   follows its finish.
 *
 * ```text
 * source:       -s-a-c-j-k-d-p-|     s: message_start, a: text_delta, c: tool_use start, j k: partial_json,
 *          anthropicMessages()         d: message_delta (tool_use), p: message_stop
 * result:       -U-A-C-J-K-W-F-|     U W: usage, A: text, C: first fragment (id, name, no text), J K: the
 *                                    fragments of block 1, F: finish tool-calls (raw tool_use)
 * ```
 *
 * State: the message id, the `tool_use` blocks by index, the usage so far, the last stop reason.
 *
 * ## Example
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { concatMap, defer } from 'rxjs';
 * import { accumulateTurn, assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { anthropicMessages } from 'cleanturn/providers';
 *
 * const client = new Anthropic({ maxRetries: 0 }); // retries are the pipeline's, with events
 * const turn$ = defer(() =>
 *   client.messages.create({
 *     model: 'claude-sonnet-4-6',
 *     max_tokens: 1024,
 *     messages: [{ role: 'user', content: 'Please refund order ORD-7781: the book arrived damaged.' }],
 *     tools: [{ name: 'issue_refund', input_schema: { type: 'object', properties: { order_id: {} } } }],
 *     stream: true,
 *   }),
 * ).pipe(
 *   concatMap((stream) => stream), // the SDK's stream is an async iterable of events
 *   anthropicMessages(),
 *   assembleToolCalls(),
 *   requireFinish(),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * turn$.pipe(accumulateTurn()).subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link ProviderError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from Anthropic stream events to provider events.
 */
export function anthropicMessages(
  options: AnthropicMessagesOptions = {},
): OperatorFunction<AnthropicStreamEvent, ProviderEvent> {
  return function anthropicMessagesOperator(source) {
    return new Observable<ProviderEvent>((subscriber) => {
      // The id of the message this stream carries, from its first `message_start`.
      let messageId: string | undefined;
      // Whether a `message_start` was seen (a message without an id is still started once).
      let started = false;
      // The `tool_use` blocks of the message, by content-block index.
      let toolBlocks = new Map<number, ToolBlock>();
      // The current cumulative usage, field by field.
      const usage: Record<keyof AnthropicUsage, number | undefined> = {
        input_tokens: undefined,
        output_tokens: undefined,
        cache_creation_input_tokens: undefined,
        cache_read_input_tokens: undefined,
      };
      // The last non-null `stop_reason`.
      let stopReason: string | undefined;
      // Whether the finish was emitted: everything after it is ignored.
      let finished = false;

      const fail = (error: unknown) => {
        toolBlocks = new Map();
        subscriber.error(error);
      };
      const classify = (info: AnthropicErrorInfo): boolean => {
        const decided = options.retryable?.(info);
        return decided ?? isTransient(info);
      };
      const emitUsage = (reported: AnthropicUsage | null | undefined) => {
        if (!isRecord(reported)) return;
        let changed = false;
        for (const field of usageFields) {
          const value = reported[field];
          if (typeof value === 'number') {
            usage[field] = value;
            changed = true;
          }
        }
        if (!changed) return;
        const event: UsageEvent = { type: 'usage' };
        if (usage.input_tokens !== undefined) {
          event.inputTokens =
            usage.input_tokens +
            (usage.cache_creation_input_tokens ?? 0) +
            (usage.cache_read_input_tokens ?? 0);
        }
        if (usage.output_tokens !== undefined) event.outputTokens = usage.output_tokens;
        subscriber.next(event);
      };
      const spliced = (what: string, payload: unknown) =>
        fail(
          new ProviderError('anthropic-messages', `two generations spliced into one stream: ${what}`, {
            retryable: true,
            code: 'spliced_stream',
            payload,
          }),
        );

      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          if (subscriber.closed || finished) return; // nothing of the attempt follows its finish
          if (!isRecord(event) || typeof event.type !== 'string') {
            fail(notAnEvent(event));
            return;
          }
          switch (event.type) {
            case 'message_start': {
              const { message } = event as AnthropicMessageStartEvent;
              const id = isRecord(message) && typeof message.id === 'string' ? message.id : undefined;
              if (started) {
                if (id !== undefined && messageId !== undefined && id !== messageId) {
                  spliced(`message ${id} started inside message ${messageId}`, event);
                }
                return; // a duplicate of the first `message_start`
              }
              started = true;
              messageId = id;
              emitUsage(isRecord(message) ? message.usage : undefined);
              return;
            }
            case 'content_block_start': {
              const { index, content_block: block } = event as AnthropicContentBlockStartEvent;
              if (!isRecord(block) || block.type !== 'tool_use' || typeof index !== 'number') return;
              const id = typeof block.id === 'string' ? block.id : undefined;
              const open = toolBlocks.get(index);
              if (open !== undefined) {
                if (open.id !== id) spliced(`tool_use ${id} started at index ${index} of ${open.id}`, event);
                return; // a duplicate start of the same block
              }
              toolBlocks.set(index, { id, startInput: block.input, hasArgs: false });
              const delta: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argsDelta: '' };
              if (id !== undefined) delta.id = id;
              if (typeof block.name === 'string') delta.name = block.name;
              subscriber.next(delta);
              return;
            }
            case 'content_block_delta': {
              const { index, delta } = event as AnthropicContentBlockDeltaEvent;
              if (!isRecord(delta)) return;
              if (delta.type === 'text_delta') {
                if (typeof delta.text === 'string' && delta.text !== '') {
                  subscriber.next({ type: 'text', text: delta.text });
                }
              } else if (delta.type === 'input_json_delta') {
                const block = toolBlocks.get(index);
                if (
                  block === undefined ||
                  typeof delta.partial_json !== 'string' ||
                  delta.partial_json === ''
                ) {
                  return; // a server tool's input, or the usual empty first fragment
                }
                block.hasArgs = true;
                subscriber.next({ type: 'tool-call-delta', index, argsDelta: delta.partial_json });
              }
              return;
            }
            case 'content_block_stop': {
              const { index } = event as AnthropicContentBlockStopEvent;
              const block = toolBlocks.get(index);
              if (block === undefined || block.hasArgs) return;
              // No argument text streamed: a replayed block may carry its input whole in the start event.
              if (isRecord(block.startInput) && Object.keys(block.startInput).length > 0) {
                block.hasArgs = true;
                subscriber.next({
                  type: 'tool-call-delta',
                  index,
                  argsDelta: JSON.stringify(block.startInput),
                });
              }
              return;
            }
            case 'message_delta': {
              const { delta, usage: reported } = event as AnthropicMessageDeltaEvent;
              if (isRecord(delta) && typeof delta.stop_reason === 'string') stopReason = delta.stop_reason;
              emitUsage(reported);
              return;
            }
            case 'message_stop': {
              finished = true;
              const reason = finishReason(stopReason, toolBlocks.size > 0);
              subscriber.next(
                stopReason === undefined
                  ? { type: 'finish', reason }
                  : { type: 'finish', reason, raw: stopReason },
              );
              return;
            }
            case 'error': {
              const { error } = event as AnthropicErrorEvent;
              const info = errorInfo(isRecord(error) ? error : {}, undefined);
              let retryable: boolean;
              try {
                retryable = classify(info);
              } catch (thrown) {
                fail(thrown);
                return;
              }
              fail(
                new ProviderError('anthropic-messages', info.message, {
                  retryable,
                  code: info.type,
                  payload: event,
                }),
              );
              return;
            }
            default:
              return; // `ping`, and types added after this adapter was written
          }
        },
        error(error) {
          if (finished) {
            subscriber.complete(); // the attempt is complete: an error after its finish changes nothing
            return;
          }
          const body = sdkErrorBody(error);
          if (body === undefined) {
            fail(error);
            return;
          }
          const info = errorInfo(body.error, body.status);
          try {
            fail(
              new ProviderError('anthropic-messages', info.message, {
                retryable: classify(info),
                code: info.type,
                status: info.status,
                payload: error,
              }),
            );
          } catch (thrown) {
            fail(thrown);
          }
        },
        complete() {
          toolBlocks = new Map();
          subscriber.complete();
        },
      });
      return () => {
        toolBlocks = new Map();
        subscription.unsubscribe();
      };
    });
  };
}

const usageFields = [
  'input_tokens',
  'output_tokens',
  'cache_creation_input_tokens',
  'cache_read_input_tokens',
] as const;

// A new attempt can succeed: the service was busy or broke down.
const transientTypes = new Set([
  'overloaded_error',
  'api_error',
  'rate_limit_error',
  'timeout_error',
  'conflict_error',
]);
// The same request fails again.
const permanentTypes = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'billing_error',
  'memory_precondition_failed_error',
  'memory_path_conflict_error',
]);

/** The default retry decision: by error type, then by HTTP status; unknown errors count as transient. */
function isTransient(info: AnthropicErrorInfo): boolean {
  if (info.type !== undefined) {
    if (transientTypes.has(info.type)) return true;
    if (permanentTypes.has(info.type)) return false;
  }
  if (info.status !== undefined) {
    return isTransientStatus(info.status);
  }
  return true;
}

function finishReason(stopReason: string | undefined, hadCall: boolean): FinishReason {
  switch (stopReason) {
    case 'tool_use':
      return 'tool-calls';
    case 'end_turn':
    case 'stop_sequence':
      return hadCall ? 'tool-calls' : 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content-filter';
    case 'pause_turn':
      return 'other';
    default:
      return hadCall ? 'tool-calls' : 'other';
  }
}

function errorInfo(
  error: { type?: unknown; message?: unknown },
  status: number | undefined,
): AnthropicErrorInfo {
  const type = typeof error.type === 'string' && error.type !== '' ? error.type : undefined;
  const message =
    typeof error.message === 'string' && error.message !== ''
      ? error.message
      : (type ?? (status === undefined ? 'the stream reported an error' : `HTTP ${status}`));
  return { type, status, message };
}

/**
 * The Anthropic error inside an error the source raised: the SDK's `APIError` keeps the response body
 * `{ type: 'error', error: { type, message } }` as `error` and the HTTP status (undefined in a stream) as
 * `status`. Errors without either (connection resets, aborts) give undefined.
 */
function sdkErrorBody(
  error: unknown,
): { error: { type?: unknown; message?: unknown }; status: number | undefined } | undefined {
  if (!(error instanceof Error) || error instanceof CleanturnError) return undefined;
  const { error: body, status } = error as { error?: unknown; status?: unknown };
  const inner = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const httpStatus = typeof status === 'number' ? status : undefined;
  if (inner === undefined && httpStatus === undefined) return undefined;
  return { error: inner ?? { message: error.message }, status: httpStatus };
}

function notAnEvent(input: unknown): CleanturnError {
  const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : String(input);
  return new CleanturnError(
    `anthropicMessages: expected a parsed stream event (an object with a type), got ${typeof input} ${shown}`,
    { retryable: false },
  );
}
