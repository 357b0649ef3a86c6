import { type FinishEvent, isRetryableUpstream, type ProviderEvent, type UsageEvent } from 'cleanturn';
import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty, readString } from '../internal/describeError.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type PayloadProblem, ProviderError, ProviderPayloadError } from './errors.js';
import {
  argsObjectField,
  countField,
  type FieldSite,
  indexField,
  isRecord,
  nameField,
  nonEmptyText,
  objectField,
  stringField,
} from './shared.js';

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

/** `content_block_start`: opens block `index` (a decimal string, via some proxies); `tool_use` is a call. */
export interface AnthropicContentBlockStartEvent {
  type: 'content_block_start';
  index: number | string;
  content_block: { type: string; id?: string; name?: string; input?: unknown };
}

/** `content_block_delta`: a `text_delta` (`text`) or an `input_json_delta` (`partial_json`), among others. */
export interface AnthropicContentBlockDeltaEvent {
  type: 'content_block_delta';
  index: number | string;
  delta: { type: string; text?: string; partial_json?: string };
}

/** `content_block_stop`: content block `index` is complete. */
export interface AnthropicContentBlockStopEvent {
  type: 'content_block_stop';
  index: number | string;
}

/** `message_delta`: the stop reason and the cumulative usage. */
export interface AnthropicMessageDeltaEvent {
  type: 'message_delta';
  delta: { stop_reason?: string | null };
  usage?: AnthropicUsage | null;
}

/** `message_stop`: the end of the message, and of the stream. */
export interface AnthropicMessageStopEvent {
  type: 'message_stop';
}

/** `error`: an error inside a stream that started with HTTP 200, e.g. `overloaded_error`. */
export interface AnthropicErrorEvent {
  type: 'error';
  error: { type?: string; message?: string };
}

/**
 * One event of an Anthropic Messages stream: an SSE `data:` payload, or what the SDK's stream yields.
 * Only the fields read are listed; other types (`ping`, types added later) are accepted and ignored.
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
   * Decides whether an error deserves a new attempt; return `undefined` to keep the default: the table of
   * `isRetryableUpstream` (from `cleanturn`) by error type, then HTTP status; an unknown type is retryable.
   */
  retryable?: (error: AnthropicErrorInfo) => boolean | undefined;
}

/**
 * Turns an Anthropic Messages stream into neutral {@link ProviderEvent}s.
 *
 * Text deltas become `text`. Each `tool_use` block becomes `tool-call-delta` fragments keyed by its `index`
 * (a decimal string is read too): one at its start with the call id and tool name, then one per non-empty
 * `partial_json` (or the start's whole `input`, if none streamed); `assembleToolCalls()` makes whole calls.
 * Usage (cumulative, cache counts in input) becomes `usage`; `message_stop`, the end, gives the `finish` of
 * the last `stop_reason` (as `raw`):
 *
 * | `stop_reason` | `reason` |
 * |---|---|
 * | `tool_use` | `tool-calls` |
 * | `end_turn`, `stop_sequence` | `stop`, or `tool-calls` when the message had a `tool_use` block |
 * | `max_tokens`, `model_context_window_exceeded` | `length` |
 * | `refusal` | `content-filter` (text streamed before it stays text: there is no separate refusal text) |
 * | `pause_turn` | `other`: the turn is not over; send the message back to let the model continue |
 * | none, anything else | `other` (`tool-calls` when there was a call) |
 *
 * - `ping`, thinking, citations, server tools and unknown types are ignored; nothing follows `message_stop`.
 * - A delta or stop for a block never opened is a retryable {@link ProviderPayloadError} `unknown-reference`;
 *   a `tool_use` without a name, a `partial_json` that is not a string, or an event of the wrong shape (a
 *   `message`, `delta` or `usage` that is not an object, a token count that is not a number) is `invalid-field`.
 * - A repeated `message_start` or block start is ignored; another message id, or another block at an open
 *   index, is two generations spliced into one stream: a retryable {@link ProviderError} `spliced_stream`.
 * - An `error` event, and an SDK `APIError` the source raises, are a {@link ProviderError} classified by
 *   `isRetryableUpstream` (type, then status); other source errors pass unchanged.
 * - A stream cut before `message_stop` has no `finish`, even after a `message_delta`: add `requireFinish()`.
 *
 * ```text
 * source:   -s-b-a-c-j-k-d-p-|
 *           anthropicMessages()
 * result:   -U---A-C-J-K-W-F-|
 *
 * where
 *   s = {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":412,"output_tokens":2}}}
 *   b = {"type":"content_block_start","index":0,"content_block":{"type":"text"}}
 *   a = {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking order ORD-7781. "}}
 *   c = {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"issue_refund","input":{}}}
 *   j = {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"order_id\":\"ORD-7781\","}}
 *   k = {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"amount\":\"full\"}"}}
 *   d = {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":58}}
 *   p = {"type":"message_stop"}
 *   U = usage in 412 / out 2
 *   A = text "Checking order ORD-7781. "
 *   C = tool-call-delta #1 toolu_1 issue_refund ""
 *   J = tool-call-delta #1 "{\"order_id\":\"ORD-7781\","
 *   K = tool-call-delta #1 "\"amount\":\"full\"}"
 *   W = usage in 412 / out 58
 *   F = finish tool-calls
 * ```
 *
 * Every case of `marbles/anthropicMessages.marbles.ts`, with pictures: `docs/operators/anthropicMessages.md`.
 *
 * ## Example
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { defer } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, turnPipeline } from 'cleanturn';
 * import { anthropicMessages } from 'cleanturn/providers';
 *
 * const client = new Anthropic({ maxRetries: 0 }); // retries are the pipeline's, with events
 * const turn$ = defer(() => client.messages.stream(request)).pipe(
 *   attemptPipeline(anthropicMessages()), // then assembleToolCalls and requireFinish
 *   turnPipeline({ turnId: 'turn-42', retry: 2 }),
 * );
 * turn$.pipe(accumulateTurn()).subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link ProviderError} and {@link ProviderPayloadError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from Anthropic stream events to provider events.
 */
export function anthropicMessages(
  options: AnthropicMessagesOptions = {},
): OperatorFunction<AnthropicStreamEvent, ProviderEvent> {
  return decodeWith({ name: OPERATOR }, (sink) => createAnthropicDecoder(sink, options));
}

/** The decoder of one Anthropic Messages stream, writing to `sink`: what {@link anthropicMessages} runs. */
export function createAnthropicDecoder(sink: DecoderSink, options: AnthropicMessagesOptions = {}) {
  return new AnthropicDecoder(sink, options) as Decoder<AnthropicStreamEvent>;
}

const OPERATOR = 'anthropicMessages';

/** An opened content block; `input`: a call's whole start `input` (a replay), until arguments stream. */
interface Block {
  index: number;
  type: string;
  id: string | undefined;
  input: string | undefined;
}

class AnthropicDecoder implements Decoder<AnthropicStreamEvent> {
  /** The id of the first `message_start` (`null` before it; `undefined` when it had none). */
  private messageId: string | undefined | null = null;
  /** The content blocks opened so far, by index. */
  private readonly blocks = new Map<number, Block>();
  /** Whether a `tool_use` block was opened. */
  private hadCall = false;
  /** The current cumulative usage, field by field. */
  private readonly usage: Record<keyof AnthropicUsage, number | undefined> = {
    input_tokens: undefined,
    output_tokens: undefined,
    cache_creation_input_tokens: undefined,
    cache_read_input_tokens: undefined,
  };
  /** The last non-null `stop_reason`. */
  private stopReason: string | undefined;
  /** Where a field is read, reused for every payload (an error copies what it needs). */
  private readonly site: FieldSite = { operator: OPERATOR, payload: undefined, field: '' };

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AnthropicMessagesOptions,
  ) {}

  next(event: AnthropicStreamEvent): void {
    switch (event.type) {
      case 'message_start': {
        const message = objectField((event as AnthropicMessageStartEvent).message, this.at(event, 'message'));
        const id = stringField(message?.id, this.at(event, 'message.id'));
        if (this.messageId === null) {
          this.messageId = id;
          this.emitUsage(message?.usage, event, 'message.usage');
        } else if (id !== undefined && this.messageId !== undefined && id !== this.messageId) {
          throw spliced(`message ${id} started inside message ${this.messageId}`, event);
        }
        return; // a later `message_start` with the same id is a duplicate
      }
      case 'content_block_start': {
        const index = this.index(event as AnthropicContentBlockStartEvent);
        const { content_block: content } = event as AnthropicContentBlockStartEvent;
        const type = this.type(isRecord(content) ? content.type : undefined, event, 'content_block.type');
        const id =
          type === 'tool_use' ? stringField(content.id, this.at(event, 'content_block.id')) : undefined;
        const open = this.blocks.get(index);
        if (open !== undefined) {
          if (open.type === type && open.id === id) return; // a duplicate start of the same block
          throw spliced(`${id ?? type} started at index ${index} of ${open.id ?? open.type}`, event);
        }
        if (type !== 'tool_use') {
          this.blocks.set(index, { index, type, id, input: undefined });
          return;
        }
        const name = nameField(content.name, this.at(event, 'content_block.name'));
        const input = argsObjectField(content.input, this.at(event, 'content_block.input')) as object;
        const whole = Object.keys(input).length === 0 ? undefined : JSON.stringify(input);
        this.blocks.set(index, { index, type, id, input: whole });
        this.hadCall = true;
        const first = { type: 'tool-call-delta', index, name, argsDelta: '' } as const;
        this.sink.event(id === undefined ? first : { ...first, id });
        return;
      }
      case 'content_block_delta': {
        const { delta } = event as AnthropicContentBlockDeltaEvent;
        const block = this.block(event as AnthropicContentBlockDeltaEvent);
        const kind = isRecord(delta) ? delta.type : undefined;
        if (kind === 'text_delta') {
          const given = delta.text;
          const text = typeof given === 'string' ? given : stringField(given, this.at(event, 'delta.text'));
          if (text) this.sink.event({ type: 'text', text });
        } else if (kind === 'input_json_delta') {
          const given = delta.partial_json;
          const json =
            typeof given === 'string' ? given : stringField(given, this.at(event, 'delta.partial_json'));
          if (!json || block.type !== 'tool_use') return; // the usual empty fragment; a server tool's input
          block.input = undefined;
          this.sink.event({ type: 'tool-call-delta', index: block.index, argsDelta: json });
        } else this.type(kind, event, 'delta.type'); // other delta types are ignored
        return;
      }
      case 'content_block_stop': {
        const block = this.block(event as AnthropicContentBlockStopEvent);
        if (block.input === undefined) return;
        this.sink.event({ type: 'tool-call-delta', index: block.index, argsDelta: block.input }); // a replay
        block.input = undefined;
        return;
      }
      case 'message_delta': {
        const { delta, usage } = event as AnthropicMessageDeltaEvent;
        const stop = objectField(delta, this.at(event, 'delta'))?.stop_reason;
        this.stopReason = stringField(stop, this.at(event, 'delta.stop_reason')) ?? this.stopReason;
        this.emitUsage(usage, event, 'usage');
        return;
      }
      case 'message_stop':
        this.sink.finish(finishEvent(this.stopReason, this.hadCall));
        this.sink.end();
        return;
      case 'error': {
        const { error } = event as AnthropicErrorEvent;
        throw this.raised(isRecord(error) ? error : {}, event);
      }
      default:
        this.type(event.type, event, 'type'); // `ping` and later types are ignored; no type is an error
    }
  }

  /** An SDK `APIError` keeps the body `{ type: 'error', error: { type, message } }`, and the HTTP status. */
  error(error: unknown): unknown {
    if (!isInstance(error, Error)) return undefined;
    // Read without throwing: an error's getters are not ours.
    const body = readProperty(error, 'error');
    const status = readProperty(error, 'status');
    const nested = readProperty(body, 'error');
    const inner = isRecord(nested)
      ? { type: readProperty(nested, 'type'), message: readProperty(nested, 'message') }
      : undefined;
    const httpStatus = typeof status === 'number' ? status : undefined;
    if (inner === undefined && httpStatus === undefined) return undefined; // a connection error: as it is
    return this.raised(inner ?? { message: readString(error, 'message') }, error, httpStatus, error);
  }

  /** The open block a delta or stop refers to, or an `unknown-reference` error. */
  private block(event: AnthropicContentBlockDeltaEvent | AnthropicContentBlockStopEvent): Block {
    const open = this.blocks.get(event.index as number); // the usual number; a string or a wrong index misses
    if (open !== undefined) return open;
    const index = this.index(event);
    const block = this.blocks.get(index);
    if (block !== undefined) return block;
    throw unreadable('unknown-reference', `${event.type} for block ${index}, never opened`, 'index', event);
  }

  private index(event: { index: unknown }): number {
    const index = indexField(event.index, this.at(event, 'index'));
    if (index !== undefined) return index;
    throw unreadable('invalid-field', 'expected a block index, got nothing', 'index', event);
  }

  /** A `type` field, which must be a string. */
  private type(value: unknown, payload: unknown, field: string): string {
    if (typeof value === 'string') return value;
    throw unreadable('invalid-field', `expected a type (a string), got ${typeof value}`, field, payload);
  }

  private at(payload: unknown, field: string): FieldSite {
    this.site.payload = payload;
    this.site.field = field;
    return this.site;
  }

  /** Usage at `field` of `payload`: each count that is a number replaces the one before (null: unchanged). */
  private emitUsage(value: unknown, payload: unknown, field: string): void {
    const reported = objectField(value, this.at(payload, field));
    if (reported === undefined) return;
    const usage = this.usage;
    let changed = false;
    for (const key in usage) {
      const count = reported[key];
      const number =
        typeof count === 'number' ? count : countField(count, this.at(payload, `${field}.${key}`));
      if (number === undefined) continue;
      usage[key as keyof AnthropicUsage] = number;
      changed = true;
    }
    if (!changed) return;
    const event: UsageEvent = { type: 'usage' };
    if (usage.input_tokens !== undefined) {
      event.inputTokens =
        usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
    }
    if (usage.output_tokens !== undefined) event.outputTokens = usage.output_tokens;
    this.sink.event(event);
  }

  /** The ProviderError of an Anthropic error body: the `retryable` option decides, else the table. */
  private raised(body: Record<string, unknown>, payload: unknown, status?: number, cause?: unknown) {
    const code = nonEmptyText(body.type);
    const message =
      nonEmptyText(body.message) ??
      code ??
      (status === undefined ? 'the stream reported an error' : `HTTP ${status}`);
    const retryable =
      this.options.retryable?.({ type: code, status, message }) ??
      isRetryableUpstream({ codes: [code], status });
    return new ProviderError('anthropic-messages', message, { retryable, code, status, payload, cause });
  }
}

function unreadable(code: PayloadProblem, message: string, field: string, payload: unknown) {
  return new ProviderPayloadError(OPERATOR, code, message, { field, payload });
}

function spliced(what: string, payload: unknown): ProviderError {
  const message = `two generations spliced into one stream: ${what}`;
  return new ProviderError('anthropic-messages', message, {
    retryable: true,
    code: 'spliced_stream',
    payload,
  });
}

/** The finish of a message by the table of {@link anthropicMessages}, with the stop reason as `raw`. */
function finishEvent(raw: string | undefined, hadCall: boolean): FinishEvent {
  let reason: FinishEvent['reason'] = raw === 'end_turn' || raw === 'stop_sequence' ? 'stop' : 'other';
  if (raw === 'max_tokens' || raw === 'model_context_window_exceeded') reason = 'length';
  else if (raw === 'refusal') reason = 'content-filter';
  else if (raw !== 'pause_turn' && (hadCall || raw === 'tool_use')) reason = 'tool-calls';
  return raw === undefined ? { type: 'finish', reason } : { type: 'finish', reason, raw };
}
