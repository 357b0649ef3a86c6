import type { OperatorFunction } from 'rxjs';
import type { FinishEvent, FinishReason, ProviderEvent, ProviderOutput, UsageEvent } from '../types.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type ProviderError, providerPayloadError } from './errors.js';
import { type OpenAIErrorBody, type OpenAIErrorInfo, openaiError, sdkErrorBody } from './openaiErrors.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isRecord } from './shared.js';

/** An output item, as `response.output_item.added`/`.done` and the final `response.output` carry it. */
export interface OpenAIResponsesItem {
  /** `message`, `function_call`, `reasoning`…; `function_call` items are the calls, every item is output. */
  type?: string;
  /** The item id (`fc_…`) that the argument events refer to as `item_id`. */
  id?: string | null;
  /** The call id (`call_…`) that a follow-up request echoes back: the neutral call's `id`. */
  call_id?: string | null;
  name?: string | null;
  /** The JSON argument text of a `function_call` item (other item types put other things here). */
  arguments?: unknown;
}

/** The `response` object of the lifecycle events; only the fields the adapter reads. */
export interface OpenAIResponsesResponse {
  /** The response id (`resp_…`): the finish's `responseId`. */
  id?: string | null;
  status?: string | null;
  output?: readonly OpenAIResponsesItem[] | null;
  usage?: {
    input_tokens?: number | null;
    /** `cached_tokens`: of the input tokens, those read from the prompt cache. */
    input_tokens_details?: { cached_tokens?: number | null } | null;
    output_tokens?: number | null;
    /** `reasoning_tokens`: of the output tokens, those spent on reasoning. */
    output_tokens_details?: { reasoning_tokens?: number | null } | null;
  } | null;
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
  /** The item's position in the output; a decimal string (`"1"`) is read as the number. */
  output_index?: number | string;
  item_id?: string;
  /** Which summary part of a reasoning item a `reasoning_summary_text` event belongs to. */
  summary_index?: number;
  /** Which content part of an item a text or `reasoning_text` event belongs to. */
  content_index?: number;
  /** A text, reasoning, refusal or argument fragment. */
  delta?: string;
  /** The whole text of a part (`reasoning_summary_text.done`, `reasoning_text.done`). */
  text?: string;
  /** The whole argument text (`function_call_arguments.done`) and refusal (`refusal.done`). */
  arguments?: string;
  refusal?: string;
  item?: OpenAIResponsesItem;
  response?: OpenAIResponsesResponse;
  /** The flat `error` event's fields (`server_error`…, its message). */
  code?: string | null;
  message?: string;
  param?: string | null;
  /** The nested `error` event's body, as a recorded stream sends it (a string from some compatible servers). */
  error?: OpenAIErrorBody | string | null;
}

/** What {@link openaiResponses} reads: parsed events, and a `[DONE]` sentinel should one arrive. */
export type OpenAIResponsesInput = OpenAIResponsesEvent | '[DONE]';

/**
 * What a Responses attempt produced, on its finish (`finish.output`): the response's output items as the provider
 * sent them, in `output_index` order — `reasoning` items (with `encrypted_content` when the request asked for
 * `include: ['reasoning.encrypted_content']`), `message` items, `function_call` items, and the items of tools the
 * provider ran (`web_search_call`, `file_search_call`, `mcp_call`, `code_interpreter_call`…). Plain JSON data.
 * {@link toOpenAIResponsesInput} turns it into the next request's input items.
 */
export interface OpenAIResponsesOutput extends ProviderOutput {
  readonly format: 'openai-responses';
  /** The output items, each as sent (`type` and `id`, and the fields of its type). */
  readonly items: readonly { readonly type?: string; readonly [field: string]: unknown }[];
}

/**
 * Turns an OpenAI Responses stream (`response.*` events) into neutral `ProviderEvent`s: what an SSE `data:` line
 * parses to, or what the official SDK's stream yields (`from(await client.responses.create({ …, stream: true }))`).
 * Each `function_call` item gets a small stable `index` (0, 1, … in the order the calls appear) and its `call_id`
 * as `id`. Put `assembleToolCalls` of `cleanturn` after it to get whole calls. The finish carries the response's id and its
 * output items (`OpenAIResponsesOutput`), which {@link toOpenAIResponsesInput} sends back.
 *
 * ```text
 * source:   -t-a-d-e-c---|
 *           openaiResponses()
 * result:   -T-A-D-E-(UF)|
 *
 * where
 *   t = {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"Checking order ORD-7781. "}
 *   a = {"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"issue_refund","arguments":""}}
 *   d = {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"order_id\":\"ORD-7781\","}
 *   e = {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"\"amount\":\"full\"}"}
 *   c = {"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":142,"output_tokens":31}}}
 *   T = text "Checking order ORD-7781. "
 *   A = tool-call-delta #0 call_1 issue_refund ""
 *   D = tool-call-delta #0 "{\"order_id\":\"ORD-7781\","
 *   E = tool-call-delta #0 "\"amount\":\"full\"}"
 *   U = usage in 142 / out 31
 *   F = finish tool-calls
 * ```
 *
 * Every case of `marbles/openaiResponses.marbles.ts`, with pictures: `docs/operators/openaiResponses.md`.
 *
 * How it decides:
 * - **Calls.** A `function_call` item (`output_item.added`) starts a call, keyed by its item id (else by its
 *   `output_index`), which argument events name. Whole arguments (`function_call_arguments.done`,
 *   `output_item.done`, `response.completed`'s `output`) go out only if no argument text did: the first text
 *   wins, later copies are not compared (what went out cannot be taken back). A call seen only whole (in
 *   `output_item.done`, or in the final `output` as replays send it) goes out as one fragment before the finish.
 * - **Reasoning.** `response.reasoning_summary_text.delta` (the summary OpenAI models show) and
 *   `response.reasoning_text.delta` (the reasoning text of open-weight models' servers) are `reasoning`, never
 *   text. The first fragment of another part (the next summary part of an item, or another reasoning item)
 *   starts with a paragraph break (`\n\n`), so that the parts read apart. A part's `.done` is read only when
 *   the part sent no fragment. Encrypted reasoning has nothing to show: it is in the output only.
 * - **Provider-run tools** (`web_search_call`, `file_search_call`, `mcp_call`, `code_interpreter_call`,
 *   `image_generation_call`…) are not calls: they stay in the output and never make `tool-calls`.
 * - **Finish** at `response.completed` (`tool-calls` if a call appeared, `content-filter` after a refusal,
 *   else `stop`) or `response.incomplete` (`length` for `max_output_tokens`, `content-filter` for
 *   `content_filter`, else `other`; `raw` `incomplete:<reason>`), after the usage. It is the format's end, as a
 *   `[DONE]` is: nothing after it is read. It carries `responseId` (the terminal event's `response.id`, else the
 *   one `response.created` gave) and `output`: the terminal event's `response.output` as sent when it has items;
 *   else the `output_item.done` items in output order, when every item added was done; else none (a stream that
 *   never said its items whole: the next request is then built from the text and the calls).
 * - **Usage** at the terminal event: `input_tokens`, `output_tokens`, and from their details `cached_tokens`
 *   (`cachedInputTokens`) and `reasoning_tokens` (`reasoningTokens`) where the response reports them.
 * - **Refusal.** `response.refusal.delta` is never text: joined, it goes on the finish as `refusal`.
 * - **Errors.** An `error` event (flat, or nested as recorded streams send it), `response.failed` and the
 *   SDK's `APIError` are a {@link ProviderError}, retryable by the table of `isRetryableUpstream` (the
 *   `retryable` option decides first).
 * - **What it cannot read is an error, never a drop.** A name that is not a non-empty string, arguments that
 *   are a number, an `output_index` that is not a non-negative integer (`"1"` reads as 1), an event of the wrong
 *   shape (a `type` that is not a string, an `item`, `response` or `usage` that is not an object, an `output`
 *   that is not an array, a token count that is not a number): a {@link ProviderError} `invalid-field`;
 *   an argument event for an item never added: `unknown-reference`.
 * - **`sequence_number`.** An event whose number is not above the last one is a replay and is dropped.
 * - **Unknown event types** (`keepalive` on long responses, the tools' progress events, types added later) are
 *   read past.
 *
 * State, per subscription: the calls by item id and by output index, the refusal, the last sequence number, the
 * response id, the output items announced and done, and the reasoning part last read.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import { defer, from, mergeMap } from 'rxjs';
 * import { assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { openaiResponses } from 'cleanturn/providers';
 *
 * const client = new OpenAI();
 * const request = { model: 'gpt-4.1', input: 'Refund order ORD-7781.', stream: true } as const;
 * const turn$ = defer(() => client.responses.create(request)).pipe(
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
 * @param options `retryable` to classify in-stream errors yourself (by default, the table of
 *   `isRetryableUpstream` by `code`, then `type`, then a numeric code as HTTP status).
 * @returns An operator from Responses stream events to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function openaiResponses(
  options?: AdapterOptions<OpenAIErrorInfo>,
): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith(
    { name: operator, endMarker: '[DONE]' },
    (sink) => new OpenAIResponsesDecoder(sink, options),
  );
}

const operator = 'openaiResponses';
const provider = 'openai-responses';

/** A function call: its neutral index, its item id if it has one, whether argument text went out. */
type Call = { index: number; item: string | undefined; streamed: boolean };

/** An output item the stream announced: its place in the output, and its whole copy once `output_item.done` came. */
type Slot = { index: number; done: Record<string, unknown> | undefined };

/**
 * The decoder behind {@link openaiResponses}: one attempt of a Responses stream (exported for `decodeAll` in
 * tests).
 */
export class OpenAIResponsesDecoder implements Decoder<OpenAIResponsesEvent> {
  // The attempt's calls by item id, and by output index (for items and events without an item id).
  private readonly byItem = new Map<string, Call>();
  private readonly byOutput = new Map<number, Call>();
  // The index the next call gets.
  private calls = 0;
  // The refusal so far, if the model refused.
  private refusal: string | undefined;
  // The highest sequence number seen; events at or below it are replays.
  private sequence = -1;
  // The response id the lifecycle events gave (the terminal event's own id comes first).
  private responseId: string | undefined;
  // The output items announced, by output index (by item id where a server sends no index), in arrival order.
  private readonly slots = new Map<number | string, Slot>();
  // The reasoning part the last reasoning fragment belonged to, and the parts that sent fragments.
  private reasoningPart: string | undefined;
  private readonly reasoned = new Set<string>();
  // Where the field being read is, for the readers' errors: one object, re-aimed at each read.
  private readonly site: FieldSite = { operator, payload: undefined, field: '' };

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AdapterOptions<OpenAIErrorInfo> = {},
  ) {}

  /** An event, by its type, unless it is a replay (a sequence number seen already); other types are ignored. */
  next(event: OpenAIResponsesEvent): void {
    const sequence = event.sequence_number;
    if (typeof sequence === 'number' && sequence <= this.sequence) return;
    if (typeof sequence === 'number') this.sequence = sequence;
    if (typeof event.type !== 'string')
      throw read.invalid(this.at(event, 'type'), 'an event type (a string)', event.type);
    switch (event.type) {
      case 'response.created':
      case 'response.queued':
      case 'response.in_progress':
        this.lifecycle(event);
        break;
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        this.textDelta(event);
        break;
      case 'response.refusal.done':
        this.refusal ??= read.string(event.refusal, this.at(event, 'refusal')) || undefined;
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        this.reason(event, read.string(event.delta, this.at(event, 'delta')), true);
        break;
      case 'response.reasoning_summary_text.done':
      case 'response.reasoning_text.done':
        this.reason(event, read.string(event.text, this.at(event, 'text')), false);
        break;
      case 'response.output_item.added':
      case 'response.output_item.done':
        this.outputItem(event);
        break;
      case 'response.function_call_arguments.delta':
        this.argumentsDelta(event);
        break;
      case 'response.function_call_arguments.done':
        this.whole(this.ref(event), read.args(event.arguments, this.at(event, 'arguments')));
        break;
      case 'response.completed':
      case 'response.incomplete':
        this.terminal(event, read.object(event.response, this.at(event, 'response')) ?? {});
        break;
      case 'response.failed':
        throw this.failed(event);
      case 'error':
        throw this.errorEvent(event);
    }
  }

  /** An SDK `APIError` (its error body, its HTTP status) becomes a ProviderError; other errors stay as they are. */
  error(error: unknown): unknown {
    const read = sdkErrorBody(error);
    const extra = { status: read?.status, cause: error };
    return read && openaiError(provider, read.body, read.body, this.options, extra);
  }

  /** A lifecycle event (`response.created`, `.queued`, `.in_progress`): the response id it gives. */
  private lifecycle(event: OpenAIResponsesEvent): void {
    const response = read.object(event.response, this.at(event, 'response'));
    const id = response && read.string(response.id, this.at(event, 'response.id'));
    if (id) this.responseId = id;
  }

  /** A fragment of answer text (a `text` event) or of a refusal (kept for the finish). */
  private textDelta(event: OpenAIResponsesEvent): void {
    const text = read.string(event.delta, this.at(event, 'delta'));
    if (text && event.type === 'response.output_text.delta') this.sink.event({ type: 'text', text });
    else if (text) this.refusal = (this.refusal ?? '') + text;
  }

  /** `output_item.added` or `.done`: the item (a call's start, or its arguments), and its place in the output. */
  private outputItem(event: OpenAIResponsesEvent): void {
    const item = this.item(event.item, event, 'item', event.output_index);
    if (item !== undefined) this.announce(item, event);
  }

  /** A fragment of a call's arguments, as a `tool-call-delta` of the call it refers to. */
  private argumentsDelta(event: OpenAIResponsesEvent): void {
    const call = this.ref(event);
    const argsDelta = read.string(event.delta, this.at(event, 'delta'));
    if (argsDelta) this.sink.event({ type: 'tool-call-delta', index: call.index, argsDelta });
    if (argsDelta) call.streamed = true;
  }

  /** `response.failed`: the error of its response (an empty body when it has none). */
  private failed(event: OpenAIResponsesEvent): ProviderError {
    const error = isRecord(event.response) ? event.response.error : undefined;
    return openaiError(provider, isRecord(error) ? error : {}, event, this.options);
  }

  /** An `error` event: its nested body (an object or a string), else its flat `code`, `message` and `param`. */
  private errorEvent(event: OpenAIResponsesEvent): ProviderError {
    const { error, code, message, param } = event;
    const body = isRecord(error) || typeof error === 'string' ? error : { code, message, param };
    return openaiError(provider, body, event, this.options);
  }

  /** The site of `field` in `payload`, for the error of a reader. */
  private at(payload: unknown, field: string): FieldSite {
    this.site.payload = payload;
    this.site.field = field;
    return this.site;
  }

  /**
   * A reasoning fragment (`delta`), or a part's whole text (a `.done`, read only when its part sent no fragment):
   * a `reasoning` event. The first fragment of another part (the next summary part, another reasoning item)
   * starts with a paragraph break, so that the parts read apart.
   */
  private reason(event: OpenAIResponsesEvent, text: string | undefined, fragment: boolean): void {
    const summary = event.type.startsWith('response.reasoning_summary');
    const item = read.string(event.item_id, this.at(event, 'item_id'));
    const output = read.index(event.output_index, this.at(event, 'output_index'));
    const index = summary
      ? read.index(event.summary_index, this.at(event, 'summary_index'))
      : read.index(event.content_index, this.at(event, 'content_index'));
    const part = `${item ?? output ?? ''}/${summary ? 'summary' : 'content'}/${index ?? 0}`;
    if (!text || (!fragment && this.reasoned.has(part))) return;
    this.reasoned.add(part);
    const separated = this.reasoningPart !== undefined && this.reasoningPart !== part;
    this.reasoningPart = part;
    this.sink.event({ type: 'reasoning', text: separated ? `\n\n${text}` : text });
  }

  /** An item of `output_item.added` or `.done`: where it sits in the output, and its whole copy. */
  private announce(item: Record<string, unknown>, event: OpenAIResponsesEvent): void {
    const output = read.index(event.output_index, this.at(event, 'output_index'));
    const key = output ?? (typeof item.id === 'string' ? item.id : `#${this.slots.size}`);
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = { index: output ?? Number.POSITIVE_INFINITY, done: undefined };
      this.slots.set(key, slot);
    }
    if (event.type === 'response.output_item.done') slot.done = item;
  }

  /** The call of an item id or output index; an output index finds a call only when one side lacks an id. */
  private find(item: string | undefined, output: number | undefined): Call | undefined {
    const call = item === undefined ? undefined : this.byItem.get(item);
    if (call !== undefined || output === undefined) return call;
    const other = this.byOutput.get(output);
    return other !== undefined && (item === undefined || other.item === undefined) ? other : undefined;
  }

  /** The call an argument event refers to; the stream must have added it. */
  private ref(event: OpenAIResponsesEvent): Call {
    const item = read.string(event.item_id, this.at(event, 'item_id'));
    const call = this.find(item, read.index(event.output_index, this.at(event, 'output_index')));
    if (call !== undefined) return call;
    const field = item === undefined ? 'output_index' : 'item_id';
    const problem = 'an argument event for an item never added';
    throw providerPayloadError(operator, 'unknown-reference', problem, { field, payload: event });
  }

  /** An output item at `path` of `payload`: an object whose `type`, if any, is a string. */
  private entry(value: unknown, payload: unknown, path: string): Record<string, unknown> | undefined {
    const item = read.object(value, this.at(payload, path));
    if (item !== undefined) read.string(item.type, this.at(payload, `${path}.type`));
    return item;
  }

  /**
   * An output item at `path` of `payload`, `index` in the output; a function call's start or its arguments.
   * Returns the item, to be kept as output.
   */
  private item(
    value: unknown,
    payload: unknown,
    path: string,
    index: unknown,
  ): Record<string, unknown> | undefined {
    const item = this.entry(value, payload, path);
    if (item?.type !== 'function_call') return item;
    const output = read.index(index, this.at(payload, 'output_index'));
    const id = read.string(item.id, this.at(payload, `${path}.id`));
    const args = read.args(item.arguments, this.at(payload, `${path}.arguments`)) ?? '';
    const known = this.find(id, output);
    if (known !== undefined) {
      this.whole(known, args);
      return item;
    }
    const name = read.name(item.name, this.at(payload, `${path}.name`));
    const callId = read.string(item.call_id, this.at(payload, `${path}.call_id`));
    const call: Call = { index: this.calls++, item: id, streamed: args !== '' };
    if (id !== undefined) this.byItem.set(id, call);
    if (output !== undefined) this.byOutput.set(output, call);
    const delta = { type: 'tool-call-delta', index: call.index, name, argsDelta: args } as const;
    this.sink.event(callId ? { ...delta, id: callId } : delta);
    return item;
  }

  /** Whole arguments of a known call: emitted once, only if no argument text came before. */
  private whole(call: Call, args: string | undefined): void {
    if (call.streamed || !args) return;
    call.streamed = true;
    this.sink.event({ type: 'tool-call-delta', index: call.index, argsDelta: args });
  }

  /**
   * The output items: the terminal event's `response.output` when it has any; else the done items in output
   * order, when every item the stream announced was done; else none (the stream did not say it whole).
   */
  private output(terminal: readonly Record<string, unknown>[]): OpenAIResponsesOutput | undefined {
    if (terminal.length > 0) return { format: provider, items: terminal };
    const slots = [...this.slots.values()];
    if (slots.length === 0 || slots.some((slot) => slot.done === undefined)) return undefined;
    const items = slots.sort((a, b) => a.index - b.index).map((slot) => slot.done as Record<string, unknown>);
    return { format: provider, items };
  }

  /** The usage of the terminal event, with its cached input and reasoning tokens where it reports them. */
  private usage(event: OpenAIResponsesEvent, usage: Record<string, unknown>): UsageEvent {
    const neutral: UsageEvent = { type: 'usage' };
    const count = (value: unknown, field: string) =>
      read.count(value, this.at(event, `response.usage.${field}`));
    const details = (field: string) => read.object(usage[field], this.at(event, `response.usage.${field}`));
    const input = count(usage.input_tokens, 'input_tokens');
    const output = count(usage.output_tokens, 'output_tokens');
    const cached = count(
      details('input_tokens_details')?.cached_tokens,
      'input_tokens_details.cached_tokens',
    );
    const thought = details('output_tokens_details')?.reasoning_tokens;
    const reasoning = count(thought, 'output_tokens_details.reasoning_tokens');
    if (input !== undefined) neutral.inputTokens = input;
    if (output !== undefined) neutral.outputTokens = output;
    if (cached !== undefined) neutral.cachedInputTokens = cached;
    if (reasoning !== undefined) neutral.reasoningTokens = reasoning;
    return neutral;
  }

  /** The terminal event: the calls only in its output, its usage, the finish with the output, and the end. */
  private terminal(event: OpenAIResponsesEvent, response: OpenAIResponsesResponse): void {
    const completed = event.type === 'response.completed';
    const output = read.list(response.output, this.at(event, 'response.output'));
    const usage = read.object(response.usage, this.at(event, 'response.usage'));
    const details = read.object(response.incomplete_details, this.at(event, 'response.incomplete_details'));
    const id = read.string(response.id, this.at(event, 'response.id')) || this.responseId;
    const items: Record<string, unknown>[] = [];
    for (let i = 0; output !== undefined && i < output.length; i++) {
      const path = `response.output[${i}]`;
      // Calls are read from a completed response only: an incomplete one's arguments may be cut.
      const item = completed ? this.item(output[i], event, path, i) : this.entry(output[i], event, path);
      if (item !== undefined) items.push(item);
    }
    if (usage !== undefined) this.sink.event(this.usage(event, usage));
    const reasonField = this.at(event, 'response.incomplete_details.reason');
    const why = completed || details === undefined ? undefined : read.string(details.reason, reasonField);
    let reason: FinishReason = why === 'max_output_tokens' ? 'length' : 'other';
    if (why === 'content_filter') reason = 'content-filter';
    else if (completed) reason = this.calls > 0 ? 'tool-calls' : this.refusal ? 'content-filter' : 'stop';
    const raw = completed ? 'completed' : why === undefined ? 'incomplete' : `incomplete:${why}`;
    const finish: FinishEvent = { type: 'finish', reason, raw };
    if (this.refusal !== undefined) finish.refusal = this.refusal;
    if (id) finish.responseId = id;
    const whole = this.output(items);
    if (whole !== undefined) finish.output = whole;
    this.sink.finish(finish);
    this.sink.end();
  }
}
