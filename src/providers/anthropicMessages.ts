import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty, readString } from '../internal/describeError.js';
import type { FinishEvent, ProviderEvent, ProviderOutput, UsageEvent } from '../types.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type ProviderError, providerPayloadError, upstreamProviderError } from './errors.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isRecord, nonEmptyText } from './shared.js';

/** Token counts as Anthropic reports them: cumulative; a missing or null field means "unchanged". */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** `thinking_tokens`: of `output_tokens`, those spent on thinking. */
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/** `message_start`: opens the message; carries its id and the first usage. */
export interface AnthropicMessageStartEvent {
  type: 'message_start';
  message: { id?: string; usage?: AnthropicUsage | null };
}

/**
 * `content_block_start`: opens block `index` (a decimal string, via some proxies) with the block as it starts:
 * `tool_use` is a call; `thinking`, `redacted_thinking` (its `data` whole), `text`, server tools and their
 * results (whole), and types added later are kept as sent.
 */
export interface AnthropicContentBlockStartEvent {
  type: 'content_block_start';
  index: number | string;
  content_block: {
    type: string;
    id?: string;
    name?: string;
    input?: unknown;
    text?: string;
    thinking?: string;
    signature?: string;
    data?: string;
  };
}

/**
 * `content_block_delta`: a `text_delta` (`text`), `input_json_delta` (`partial_json`), `thinking_delta`
 * (`thinking`), `signature_delta` (`signature`), `citations_delta` (`citation`) or `compaction_delta` (`content`,
 * `encrypted_content`); other types are ignored.
 */
export interface AnthropicContentBlockDeltaEvent {
  type: 'content_block_delta';
  index: number | string;
  delta: {
    type: string;
    text?: string;
    partial_json?: string;
    thinking?: string;
    signature?: string;
    citation?: unknown;
    content?: string | null;
    encrypted_content?: string | null;
  };
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

/**
 * What an Anthropic Messages attempt produced, on its finish (`FinishEvent.output`): the message's content blocks
 * in index order, as the next request sends them back in the `assistant` message (`toAnthropicMessages` builds
 * it). Each block is the `content_block_start` block with what its deltas added, as the SDK accumulates it:
 * - `thinking`: `thinking` (the `thinking_delta` text) and `signature` (the last `signature_delta`), unmodified;
 * - `redacted_thinking`: its `data`, as it came;
 * - `text`: `text`, and `citations` (those of the start, then each `citations_delta`) when there are any;
 * - `tool_use` (a client call), `server_tool_use`, `mcp_tool_use`: `id`, `name`, and `input` parsed from the
 *   streamed `partial_json` (the start's `input` when none streamed; arguments that do not parse stay as text);
 * - `compaction`: `content` and `encrypted_content` of its `compaction_delta`;
 * - a provider-run tool's result (`web_search_tool_result`, `code_execution_tool_result`, `mcp_tool_result`…) and
 *   a block of a type added later: as `content_block_start` sent it.
 *
 * Plain JSON data, made once per attempt when its finish goes out, and never changed after.
 */
export interface AnthropicOutput extends ProviderOutput {
  readonly format: 'anthropic-messages';
  /** The content blocks, in index order. */
  readonly content: readonly AnthropicContentBlock[];
}

/** A content block of `AnthropicOutput`: the kinds the adapter reads, or one it keeps as the stream sent it. */
type AnthropicContentBlock =
  | { readonly type: 'thinking'; readonly thinking: string; readonly signature: string }
  | { readonly type: 'redacted_thinking'; readonly data: string }
  | {
      readonly type: 'text';
      readonly text: string;
      readonly citations?: readonly { readonly type: string; readonly [field: string]: unknown }[] | null;
    }
  | { readonly type: 'tool_use'; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: string; readonly [field: string]: unknown };

/**
 * Turns an Anthropic Messages stream into neutral {@link ProviderEvent}s.
 *
 * Text deltas become `text`, thinking deltas `reasoning` (never text). Each `tool_use` block becomes
 * `tool-call-delta` fragments keyed by its `index` (a decimal string is read too): one at its start with the call
 * id and tool name, then one per non-empty `partial_json` (or the start's whole `input`, if none streamed);
 * `assembleToolCalls()` makes whole calls. Usage (cumulative; input counts cache writes and reads) becomes `usage`,
 * with the cache reads as `cachedInputTokens` and `output_tokens_details.thinking_tokens` as `reasoningTokens`.
 * `message_stop`, the end, gives the `finish` of the last `stop_reason` (as `raw`), with the message id as
 * `responseId` and the message's content blocks as `output` (an `AnthropicOutput`: what
 * `toAnthropicMessages` sends back):
 *
 * | `stop_reason` | `reason` |
 * |---|---|
 * | `tool_use` | `tool-calls` |
 * | `end_turn`, `stop_sequence` | `stop`, or `tool-calls` when the message had a `tool_use` block |
 * | `max_tokens`, `model_context_window_exceeded` | `length` |
 * | `refusal` | `content-filter` (text streamed before it stays text: there is no separate refusal text) |
 * | `pause_turn`, `compaction` | `other` with `paused: true`: the turn goes on when its output is sent back |
 * | none, anything else | `other` (`tool-calls` when there was a call) |
 *
 * - Thinking: each `thinking_delta` is a `reasoning` event; the block keeps its text and its `signature` (the
 *   last `signature_delta`) for the output. A `redacted_thinking` block (its `data` whole in
 *   `content_block_start`) has nothing to show: no event, kept in the output.
 * - Provider-run tools (`server_tool_use` and `mcp_tool_use`, whose input streams as `input_json_delta`, and
 *   their results: `web_search_tool_result`, `web_fetch_tool_result`, `code_execution_tool_result`,
 *   `mcp_tool_result`…) are kept in the output and never released as calls: they never make `tool-calls`.
 *   `citations_delta` adds to its text block's `citations`; `compaction_delta` sets its compaction block.
 * - A block of a type it does not know is kept as `content_block_start` sent it (so it goes back), and delta
 *   types it does not know are ignored, as are `ping` and unknown event types; nothing follows `message_stop`.
 * - A delta or stop for a block never opened is a retryable {@link ProviderError} `unknown-reference`;
 *   a `tool_use` without a name, a `partial_json`, `thinking` or `signature` that is not a string, a citation
 *   that is not an object, or an event of the wrong shape (a `message`, `delta` or `usage` that is not an
 *   object, a token count that is not a number) is `invalid-field`.
 * - A repeated `message_start` or block start is ignored; another message id, or another block at an open
 *   index, is two generations spliced into one stream: a retryable {@link ProviderError} `upstream` (`upstreamCode` `spliced_stream`).
 * - An `error` event, and an SDK `APIError` the source raises, are a {@link ProviderError} classified by
 *   `isRetryableUpstream` (type, then status); other source errors pass unchanged.
 * - A stream cut before `message_stop` has no `finish`, even after a `message_delta`: add `requireFinish()`.
 *   A retry discards the abandoned attempt's reasoning and output with the rest of it.
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
 *   F = finish tool-calls, response msg_1, output anthropic-messages [text, tool_use]
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
 * @see {@link ProviderError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors (by default, the table of
 *   `isRetryableUpstream` by error type, then HTTP status; an unknown type is retryable).
 * @returns An operator from Anthropic stream events to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function anthropicMessages(
  options?: AdapterOptions<AnthropicErrorInfo>,
): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith({ name: operator }, (sink) => new AnthropicMessagesDecoder(sink, options));
}

const operator = 'anthropicMessages';

/** An opened content block. */
interface Block {
  index: number;
  type: string;
  /** A `tool_use` block's call id (for the splice check). */
  id: string | undefined;
  /** A call's whole start `input` as JSON (a replay), until arguments stream. */
  input: string | undefined;
  /** The block as the output holds it: a copy of the start block, with what its deltas added. */
  content: Record<string, unknown>;
  /** The non-empty `partial_json` fragments of its input (a call, a server tool), joined at the finish. */
  json: string[] | undefined;
}

/** Stop reasons after which the model goes on when its output is sent back unchanged. */
const PAUSED = new Set(['pause_turn', 'compaction']);

/**
 * The decoder behind {@link anthropicMessages}: one attempt of a Messages stream (exported for `decodeAll` in
 * tests).
 */
export class AnthropicMessagesDecoder implements Decoder<AnthropicStreamEvent> {
  /** The id of the first `message_start` (`null` before it; `undefined` when it had none). */
  private messageId: string | undefined | null = null;
  /** The content blocks opened so far, by index. */
  private readonly blocks = new Map<number, Block>();
  /** Whether a `tool_use` block was opened. */
  private hadCall = false;
  /** The current cumulative usage, field by field. */
  private readonly usage: Record<CountField, number | undefined> = {
    input_tokens: undefined,
    output_tokens: undefined,
    cache_creation_input_tokens: undefined,
    cache_read_input_tokens: undefined,
    thinking_tokens: undefined,
  };
  /** The last non-null `stop_reason`. */
  private stopReason: string | undefined;
  /** Where a field is read, reused for every payload (an error copies what it needs). */
  private readonly site: FieldSite = { operator, payload: undefined, field: '' };

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AdapterOptions<AnthropicErrorInfo> = {},
  ) {}

  next(event: AnthropicStreamEvent): void {
    switch (event.type) {
      case 'message_start': {
        const message = read.object((event as AnthropicMessageStartEvent).message, this.at(event, 'message'));
        const id = read.string(message?.id, this.at(event, 'message.id'));
        if (this.messageId === null) {
          this.messageId = id;
          this.emitUsage(message?.usage, event, 'message.usage');
        } else if (id !== undefined && this.messageId !== undefined && id !== this.messageId) {
          throw spliced(`message ${id} started inside message ${this.messageId}`, event);
        }
        return; // a later `message_start` with the same id is a duplicate
      }
      case 'content_block_start':
        this.open(event as AnthropicContentBlockStartEvent);
        return;
      case 'content_block_delta':
        this.delta(event as AnthropicContentBlockDeltaEvent);
        return;
      case 'content_block_stop': {
        const block = this.block(event as AnthropicContentBlockStopEvent);
        if (block.input === undefined) return;
        this.sink.event({ type: 'tool-call-delta', index: block.index, argsDelta: block.input }); // a replay
        block.input = undefined;
        return;
      }
      case 'message_delta': {
        const { delta, usage } = event as AnthropicMessageDeltaEvent;
        const stop = read.object(delta, this.at(event, 'delta'))?.stop_reason;
        this.stopReason = read.string(stop, this.at(event, 'delta.stop_reason')) ?? this.stopReason;
        this.emitUsage(usage, event, 'usage');
        return;
      }
      case 'message_stop':
        this.sink.finish(this.finishEvent());
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

  /** `content_block_start`: a call's first fragment, text or thinking it already carries; the block is kept. */
  private open(event: AnthropicContentBlockStartEvent): void {
    const index = this.index(event);
    const { content_block: start } = event;
    const type = this.type(isRecord(start) ? start.type : undefined, event, 'content_block.type');
    const id = type === 'tool_use' ? read.string(start.id, this.at(event, 'content_block.id')) : undefined;
    const open = this.blocks.get(index);
    if (open !== undefined) {
      if (open.type === type && open.id === id) return; // a duplicate start of the same block
      throw spliced(`${id ?? type} started at index ${index} of ${open.id ?? open.type}`, event);
    }
    const content: Record<string, unknown> = { ...start };
    const block: Block = { index, type, id, input: undefined, content, json: undefined };
    switch (type) {
      case 'tool_use': {
        const name = read.name(start.name, this.at(event, 'content_block.name'));
        const input = read.argsObject(start.input, this.at(event, 'content_block.input')) as object;
        content.input = input;
        block.input = Object.keys(input).length === 0 ? undefined : JSON.stringify(input);
        this.blocks.set(index, block);
        this.hadCall = true;
        const first = { type: 'tool-call-delta', index, name, argsDelta: '' } as const;
        this.sink.event(id === undefined ? first : { ...first, id });
        return;
      }
      case 'text': {
        const text = read.string(start.text, this.at(event, 'content_block.text')) ?? '';
        const citations = read.list(content.citations, this.at(event, 'content_block.citations'));
        content.text = text;
        if (citations !== undefined) content.citations = [...citations]; // appended to by citations_delta
        this.blocks.set(index, block);
        if (text !== '') this.sink.event({ type: 'text', text });
        return;
      }
      case 'thinking': {
        const thinking = read.string(start.thinking, this.at(event, 'content_block.thinking')) ?? '';
        read.string(start.signature, this.at(event, 'content_block.signature'));
        content.thinking = thinking;
        this.blocks.set(index, block);
        if (thinking !== '') this.sink.event({ type: 'reasoning', text: thinking });
        return;
      }
      case 'redacted_thinking':
        if (typeof start.data !== 'string') {
          throw read.invalid(this.at(event, 'content_block.data'), 'a string', start.data);
        }
        this.blocks.set(index, block); // encrypted thinking: nothing to show, all to send back
        return;
      default:
        this.blocks.set(index, block); // server tools, their results, types added later: kept as they came
    }
  }

  /** `content_block_delta`: text, reasoning or call fragments, and what the block keeps of each. */
  private delta(event: AnthropicContentBlockDeltaEvent): void {
    const { delta } = event;
    const block = this.block(event);
    const { content } = block;
    const kind = isRecord(delta) ? delta.type : undefined;
    switch (kind) {
      case 'text_delta': {
        const text = this.text(delta.text, event, 'delta.text');
        if (!text) return;
        if (block.type === 'text') content.text = (content.text as string) + text;
        this.sink.event({ type: 'text', text });
        return;
      }
      case 'thinking_delta': {
        const thinking = this.text(delta.thinking, event, 'delta.thinking');
        if (!thinking) return;
        if (block.type === 'thinking') content.thinking = (content.thinking as string) + thinking;
        this.sink.event({ type: 'reasoning', text: thinking });
        return;
      }
      case 'signature_delta': {
        const signature = this.text(delta.signature, event, 'delta.signature');
        if (signature !== undefined && block.type === 'thinking') content.signature = signature; // as the SDK: the last
        return;
      }
      case 'citations_delta': {
        const citation = read.object(delta.citation, this.at(event, 'delta.citation'));
        if (citation === undefined || block.type !== 'text') return;
        const citations = content.citations as unknown[] | undefined;
        if (citations === undefined) content.citations = [citation];
        else citations.push(citation);
        return;
      }
      case 'input_json_delta': {
        const json = this.text(delta.partial_json, event, 'delta.partial_json');
        if (!json) return; // the usual empty fragment
        if (block.json === undefined) block.json = [json];
        else block.json.push(json);
        if (block.type !== 'tool_use') return; // a server tool's input: kept, never a call
        block.input = undefined;
        this.sink.event({ type: 'tool-call-delta', index: block.index, argsDelta: json });
        return;
      }
      case 'compaction_delta': {
        // Each delta carries the block's final values, as the SDK reads it: assigned, not appended.
        const summary =
          delta.content === null ? null : read.string(delta.content, this.at(event, 'delta.content'));
        if (block.type !== 'compaction') return;
        if (summary !== undefined) content.content = summary;
        if ('encrypted_content' in delta) {
          const { encrypted_content: sealed } = delta;
          content.encrypted_content =
            sealed === null ? null : read.string(sealed, this.at(event, 'delta.encrypted_content'));
        }
        return;
      }
      default:
        this.type(kind, event, 'delta.type'); // other delta types are ignored
    }
  }

  /** The finish of the message by the table of {@link anthropicMessages}, with its id and its content. */
  private finishEvent(): FinishEvent {
    const raw = this.stopReason;
    let reason: FinishEvent['reason'] = raw === 'end_turn' || raw === 'stop_sequence' ? 'stop' : 'other';
    if (raw === 'max_tokens' || raw === 'model_context_window_exceeded') reason = 'length';
    else if (raw === 'refusal') reason = 'content-filter';
    else if (raw === undefined || !PAUSED.has(raw)) {
      if (this.hadCall || raw === 'tool_use') reason = 'tool-calls';
    }
    const event: FinishEvent =
      raw === undefined ? { type: 'finish', reason } : { type: 'finish', reason, raw };
    if (raw !== undefined && PAUSED.has(raw)) event.paused = true;
    if (typeof this.messageId === 'string') event.responseId = this.messageId;
    const blocks = [...this.blocks.values()].sort((a, b) => a.index - b.index);
    const output: AnthropicOutput = {
      format: 'anthropic-messages',
      content: blocks.map((block) => withInput(block) as AnthropicContentBlock),
    };
    event.output = output;
    return event;
  }

  /** A string field of a delta: the usual string as it is; anything else read (and checked) as a string field. */
  private text(value: unknown, payload: unknown, field: string): string | undefined {
    return typeof value === 'string' ? value : read.string(value, this.at(payload, field));
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
    const index = read.index(event.index, this.at(event, 'index'));
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
    const reported = read.object(value, this.at(payload, field));
    if (reported === undefined) return;
    const details = read.object(
      reported.output_tokens_details,
      this.at(payload, `${field}.output_tokens_details`),
    );
    const usage = this.usage;
    let changed = false;
    for (const key in usage) {
      const from = key === 'thinking_tokens' ? details : reported;
      const count = from?.[key];
      const path = key === 'thinking_tokens' ? `${field}.output_tokens_details.${key}` : `${field}.${key}`;
      const number = typeof count === 'number' ? count : read.count(count, this.at(payload, path));
      if (number === undefined) continue;
      usage[key as CountField] = number;
      changed = true;
    }
    if (!changed) return;
    const event: UsageEvent = { type: 'usage' };
    if (usage.input_tokens !== undefined) {
      event.inputTokens =
        usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
    }
    if (usage.output_tokens !== undefined) event.outputTokens = usage.output_tokens;
    if (usage.cache_read_input_tokens !== undefined) event.cachedInputTokens = usage.cache_read_input_tokens;
    if (usage.thinking_tokens !== undefined) event.reasoningTokens = usage.thinking_tokens;
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
    return upstreamProviderError('anthropic-messages', message, {
      retryable,
      upstreamCode: code,
      status,
      payload,
      cause,
    });
  }
}

/** The counts the decoder keeps: the usage fields, and `output_tokens_details.thinking_tokens`. */
type CountField = Exclude<keyof AnthropicUsage, 'output_tokens_details'> | 'thinking_tokens';

/**
 * A block with its streamed input parsed: no fragment is `{}`, text that does not parse (arguments cut by
 * `max_tokens`) stays as it streamed, since `assembleToolCalls` fails such an attempt anyway.
 */
function withInput(block: Block): Record<string, unknown> {
  if (block.json === undefined) return block.content;
  const text = block.json.join('');
  let input: unknown = text;
  if (text.trim() === '') input = {};
  else {
    try {
      input = JSON.parse(text);
    } catch {
      // kept as text
    }
  }
  return { ...block.content, input };
}

function unreadable(
  code: 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference',
  message: string,
  field: string,
  payload: unknown,
) {
  return providerPayloadError(operator, code, message, { field, payload });
}

function spliced(what: string, payload: unknown): ProviderError {
  const message = `two generations spliced into one stream: ${what}`;
  return upstreamProviderError('anthropic-messages', message, {
    retryable: true,
    upstreamCode: 'spliced_stream',
    payload,
  });
}

/**
 * An Anthropic error as the `retryable` option sees it.
 *
 * @inline
 */
export interface AnthropicErrorInfo {
  /** `overloaded_error`, `invalid_request_error`…, when the error has one. */
  type: string | undefined;
  /** The HTTP status, for an error the SDK raised from a failed response (undefined inside a stream). */
  status: number | undefined;
  message: string;
}
