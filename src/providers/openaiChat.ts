import type { FinishEvent, FinishReason, ProviderEvent, ToolCallDeltaEvent } from 'cleanturn';
import type { OperatorFunction } from 'rxjs';
import { type DecoderSink, decodeWith } from './decodeWith.js';
import { type OpenAIErrorBody, type OpenAIErrorOptions, openaiError, sdkErrorBody } from './openaiErrors.js';
import {
  argumentsField,
  countField,
  entryField,
  type FieldSite,
  indexField,
  isObject,
  isRecord,
  listField,
  objectField,
  stringField,
} from './shared.js';

/** A function name and argument fragment, as a tool-call delta (or the deprecated `function_call`) carries them. */
export interface OpenAIChatFunctionDelta {
  name?: string | null;
  /** A piece of the JSON argument text (some compatible servers send the arguments parsed, whole). */
  arguments?: string | Readonly<Record<string, unknown>> | null;
}

/** One entry of `delta.tool_calls`: the first fragment of a call has `id` and `function.name`. */
export interface OpenAIChatToolCallDelta {
  /** Which parallel call the fragment belongs to (scoped to the choice); a decimal string is read too. */
  index?: number | string;
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
  /** The choice's index; only above 0 when the request asked for `n > 1`. A decimal string is read too. */
  index?: number | string;
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
 * fits this type) or an in-stream error: `{"error": {…}}`, `{"error": "…"}`, or a compatible server's
 * `{"object": "error", "message": …, "type": …, "code": …}`. Only the fields the adapter reads are listed.
 */
export interface OpenAIChatChunk {
  choices?: readonly OpenAIChatChoice[] | null;
  usage?: OpenAIChatUsage | null;
  error?: OpenAIErrorBody | string | null;
  object?: string;
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
 * source:   -a-b-c-d-f-u----|
 *           openaiChat()
 * result:   -A-B-C-D---(UF)-|
 *
 * where
 *   a = {"choices":[{"index":0,"delta":{"content":"Checking order ORD-7781. "},"finish_reason":null}]}
 *   b = {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"issue_refund","arguments":""}}]},"finish_reason":null}]}
 *   c = {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"order_id\":\"ORD-7781\","}}]},"finish_reason":null}]}
 *   d = {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"amount\":\"full\"}"}}]},"finish_reason":null}]}
 *   f = {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
 *   u = {"choices":[],"usage":{"prompt_tokens":142,"completion_tokens":31}}
 *   A = text "Checking order ORD-7781. "
 *   B = tool-call-delta #0 call_1 issue_refund ""
 *   C = tool-call-delta #0 "{\"order_id\":\"ORD-7781\","
 *   D = tool-call-delta #0 "\"amount\":\"full\"}"
 *   U = usage in 142 / out 31
 *   F = finish tool-calls
 * ```
 *
 * Every case of `marbles/openaiChat.marbles.ts`, with pictures: `docs/operators/openaiChat.md`.
 *
 * How it decides:
 * - **Finish, and the usage after it.** The `finish_reason` is held (see `decodeWith`): it goes out after the
 *   usage chunk that `include_usage` sends last, or at `[DONE]`, or when the source completes. A source error
 *   before that fails the attempt; after it, the stream completes: a finished attempt never turns into a
 *   failed one.
 * - **Finish reason.** `stop` → `stop`, `length` → `length`, `content_filter` → `content-filter`,
 *   `tool_calls` and `function_call` → `tool-calls`, anything else → `other`. A tool call in the stream makes
 *   a `stop` into `tool-calls` (OpenAI reports `stop` with a forced `tool_choice`). `raw` keeps the
 *   provider's value when it differs.
 * - **Refusal.** `delta.refusal` is not answer text: it is joined and put on the finish as `refusal`, with
 *   the reason `content-filter`.
 * - **Usage.** Read from any chunk whose `usage` is not null (Azure sends empty-`choices` chunks first).
 *   `prompt_tokens` → `inputTokens`, `completion_tokens` → `outputTokens`.
 * - **Errors.** `{"error": {…}}`, `{"error": "…"}` and `{"object": "error", …}` payloads, and the official
 *   SDK's `APIError` for them, error the stream with a {@link ProviderError}, retryable by the one table of
 *   `isRetryableUpstream` (the `retryable` option decides first).
 * - **What it cannot read is an error, never a drop.** `function.arguments` is argument text; an object is
 *   taken as its JSON (some compatible servers send it parsed); a number or boolean, or an index that is not
 *   a non-negative integer (a decimal string such as `"0"` is read as one), is a
 *   {@link ProviderPayloadError} naming the field; so is a chunk of the wrong shape (`choices` or `tool_calls`
 *   that are not arrays, a `delta` or `usage` that is not an object, `content` that is not a string, a token
 *   count that is not a number; `null` is absent). The deprecated `delta.function_call` is call #0. A
 *   fragment without `index` goes to the call with its `id`, or else to the latest call.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import { defer, from, mergeMap } from 'rxjs';
 * import { assembleToolCalls, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { openaiChat } from 'cleanturn/providers';
 *
 * const client = new OpenAI({ maxRetries: 0 }); // the pipeline retries, and every retry is seen
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
  return decodeWith<OpenAIChatChunk>(
    { name: 'openaiChat', endMarker: '[DONE]' },
    (sink) => new ChatDecoder(sink, options),
  );
}

const name = 'openaiChat';

/** One attempt of a Chat Completions stream. Fields of the expected type take a fast path; others are read by
 * the shared readers, which name the field when they cannot read it. */
class ChatDecoder {
  private readonly followed: number;
  // Whether a tool call appeared: it makes a `stop` into `tool-calls`.
  private sawCall = false;
  // The refusal text so far, if the model refused.
  private refusal: string | undefined;
  // The index of the latest fragment, for fragments that come without one.
  private latestIndex: number | undefined;
  // Call indexes by call id, for fragments that come without an index.
  private readonly indexById = new Map<string, number>();
  // The highest call index so far, so that a call without an index gets a new one.
  private maxIndex = -1;
  // The `finish_reason` seen.
  private reason: string | undefined;
  // The payload being read, for the readers' errors.
  private chunk: OpenAIChatChunk | undefined;

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: OpenAIChatOptions,
  ) {
    this.followed = options.choice ?? 0;
  }

  next(chunk: OpenAIChatChunk): void {
    const error = chunk.error;
    if (isRecord(error) || typeof error === 'string')
      throw openaiError('openai-chat', error, chunk, this.options);
    if (chunk.object === 'error')
      throw openaiError('openai-chat', chunk as OpenAIErrorBody, chunk, this.options);
    this.chunk = chunk;
    const choices = chunk.choices;
    if (Array.isArray(choices)) {
      for (let i = 0; i < choices.length; i++) {
        const entry: unknown = choices[i];
        const choice = (
          isObject(entry) ? entry : entryField(entry, this.site(`choices[${i}]`))
        ) as OpenAIChatChoice;
        if ((this.index(choice.index, i, -1) ?? 0) === this.followed) this.choice(choice, i);
      }
    } else if (choices !== undefined && choices !== null) listField(choices, this.site('choices'));
    const usage = chunk.usage;
    if (isObject(usage)) {
      this.sink.event(this.usage(usage));
      if (this.reason !== undefined) this.sink.end(); // the usage chunk is the last one
    } else if (usage !== undefined && usage !== null) objectField(usage, this.site('usage'));
  }

  error(error: unknown): unknown {
    const read = sdkErrorBody(error);
    return read === undefined
      ? undefined
      : openaiError('openai-chat', read.body, read.body, this.options, { status: read.status, cause: error });
  }

  private choice(choice: OpenAIChatChoice, i: number): void {
    const delta = choice.delta;
    if (isObject(delta)) {
      const { content, refusal } = delta;
      if (typeof content === 'string') {
        if (content !== '') this.sink.event({ type: 'text', text: content });
      } else this.read(stringField, content, i, -1, '.delta.content');
      if (typeof refusal === 'string') {
        if (refusal !== '') this.refusal = (this.refusal ?? '') + refusal;
      } else this.read(stringField, refusal, i, -1, '.delta.refusal');
      const calls = delta.tool_calls;
      if (Array.isArray(calls)) {
        for (let j = 0; j < calls.length; j++) {
          const entry: unknown = calls[j];
          const call = (
            isObject(entry) ? entry : entryField(entry, this.site(`choices[${i}].delta.tool_calls[${j}]`))
          ) as OpenAIChatToolCallDelta;
          this.fragment(this.index(call.index, i, j), call.id, call.function, i, j);
        }
      } else this.read(listField, calls, i, -1, '.delta.tool_calls');
      if (isObject(delta.function_call)) {
        this.fragment(0, undefined, delta.function_call, i, -2);
      } else this.read(objectField, delta.function_call, i, -1, '.delta.function_call');
    } else this.read(objectField, delta, i, -1, '.delta');
    const reason = choice.finish_reason;
    if (typeof reason === 'string') {
      this.reason = reason;
      this.sink.finish(chatFinish(reason, this.sawCall, this.refusal));
    } else this.read(stringField, reason, i, -1, '.finish_reason');
  }

  /** Emits one tool-call fragment; `given` is its index, `rawId` its call id, when it has them. */
  private fragment(
    given: number | undefined,
    rawId: unknown,
    fn: OpenAIChatFunctionDelta | null | undefined,
    i: number,
    j: number,
  ): void {
    const id = (typeof rawId === 'string' ? rawId : this.read(stringField, rawId, i, j, '.id')) || undefined;
    let callName: string | undefined;
    let argsDelta = '';
    if (!isObject(fn)) this.read(objectField, fn, i, j, j === -2 ? '' : '.function');
    else {
      const { name: rawName, arguments: rawArgs } = fn;
      callName =
        (typeof rawName === 'string' ? rawName : this.read(stringField, rawName, i, j, '.function.name')) ||
        undefined;
      argsDelta =
        (typeof rawArgs === 'string'
          ? rawArgs
          : this.read(argumentsField, rawArgs, i, j, '.function.arguments')) ?? '';
    }
    let index: number;
    if (given !== undefined) index = given;
    else if (id !== undefined) index = this.indexById.get(id) ?? this.maxIndex + 1;
    else index = this.latestIndex ?? 0;
    if (id !== undefined) this.indexById.set(id, index);
    this.latestIndex = index;
    if (index > this.maxIndex) this.maxIndex = index;
    this.sawCall = true;
    if (id === undefined && callName === undefined && argsDelta === '') return;
    const event: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argsDelta };
    if (id !== undefined) event.id = id;
    if (callName !== undefined) event.name = callName;
    this.sink.event(event);
  }

  /** The site of a field of the chunk being read, for a reader's error. */
  private site(field: string): FieldSite {
    return { operator: name, payload: this.chunk, field };
  }

  /** The usage chunk's counts (`prompt_tokens` → `inputTokens`, `completion_tokens` → `outputTokens`). */
  private usage(usage: OpenAIChatUsage): ProviderEvent {
    const event: { type: 'usage'; inputTokens?: number; outputTokens?: number } = { type: 'usage' };
    const { prompt_tokens: prompt, completion_tokens: completion } = usage;
    const input = typeof prompt === 'number' ? prompt : countField(prompt, this.site('usage.prompt_tokens'));
    const output =
      typeof completion === 'number'
        ? completion
        : countField(completion, this.site('usage.completion_tokens'));
    if (input !== undefined) event.inputTokens = input;
    if (output !== undefined) event.outputTokens = output;
    return event;
  }

  /** An index: a non-negative integer as it is; anything else through `indexField`. */
  private index(value: unknown, i: number, j: number): number | undefined {
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
    return this.read(indexField, value, i, j, '.index');
  }

  /**
   * A field read by a shared reader (absent is undefined), which names it if it cannot read it: `choices[i]` +
   * `suffix`, within `tool_calls[j]` (`j` ≥ 0) or `function_call` (`j` = -2). Positions stay numbers until then.
   */
  private read<T>(
    reader: (value: unknown, site: FieldSite) => T | undefined,
    value: unknown,
    i: number,
    j: number,
    suffix: string,
  ): T | undefined {
    if (value === undefined || value === null) return undefined;
    const call = j >= 0 ? `.delta.tool_calls[${j}]` : j === -2 ? '.delta.function_call' : '';
    return reader(value, { operator: name, payload: this.chunk, field: `choices[${i}]${call}${suffix}` });
  }
}

function chatFinish(raw: string, sawCall: boolean, refusal: string | undefined): FinishEvent {
  let reason: FinishReason;
  switch (raw) {
    case 'stop':
      reason = sawCall ? 'tool-calls' : refusal !== undefined ? 'content-filter' : 'stop';
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
  const finish: FinishEvent = reason === raw ? { type: 'finish', reason } : { type: 'finish', reason, raw };
  if (refusal !== undefined) finish.refusal = refusal;
  return finish;
}
