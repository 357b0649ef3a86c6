import type { OperatorFunction } from 'rxjs';
import type {
  FinishEvent,
  FinishReason,
  ProviderEvent,
  ProviderOutput,
  ToolCallDeltaEvent,
  UsageEvent,
} from '../types.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type OpenAIErrorBody, type OpenAIErrorInfo, openaiError, sdkErrorBody } from './openaiErrors.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isObject, isRecord } from './shared.js';

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

/**
 * One entry of OpenRouter's `reasoning_details`: `reasoning.text` (`text`, and a `signature` for Anthropic models),
 * `reasoning.summary` (`summary`) or `reasoning.encrypted` (`data`: encrypted or redacted reasoning, a Gemini
 * thought signature). Streamed in pieces that share `type` and `index`; the provider wants the merged entries back
 * unmodified. Fields it does not name are kept as they came.
 */
export interface OpenAIChatReasoningDetail {
  type?: string;
  /** Which entry the piece belongs to, with its `type`. */
  index?: number;
  id?: string | null;
  /** `anthropic-claude-v1`, `google-gemini-v1`, `openai-responses-v1`, `unknown`… */
  format?: string | null;
  text?: string | null;
  signature?: string | null;
  summary?: string | null;
  data?: string | null;
  [field: string]: unknown;
}

/** The `delta` of a streamed choice. */
export interface OpenAIChatDelta {
  content?: string | null;
  refusal?: string | null;
  tool_calls?: readonly OpenAIChatToolCallDelta[] | null;
  /** Deprecated by OpenAI in favour of `tool_calls`; still read, as call index 0. */
  function_call?: OpenAIChatFunctionDelta | null;
  /** The model's thinking, as DeepSeek (and vLLM before `reasoning`) sends it. */
  reasoning_content?: string | null;
  /** The model's thinking, as OpenRouter and vLLM send it. */
  reasoning?: string | null;
  /** OpenRouter's structured reasoning: what must go back to the provider, signatures and encrypted data included. */
  reasoning_details?: readonly OpenAIChatReasoningDetail[] | null;
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
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/**
 * A parsed Chat Completions stream payload: a `chat.completion.chunk` (the official SDK's `ChatCompletionChunk`
 * fits this type) or an in-stream error: `{"error": {…}}`, `{"error": "…"}`, or a compatible server's
 * `{"object": "error", "message": …, "type": …, "code": …}`. Only the fields the adapter reads are listed.
 */
export interface OpenAIChatChunk {
  /** The response's id, the same on every chunk. */
  id?: string | null;
  choices?: readonly OpenAIChatChoice[] | null;
  usage?: OpenAIChatUsage | null;
  error?: OpenAIErrorBody | string | null;
  object?: string;
}

/** What {@link openaiChat} reads: parsed `data:` payloads, and the `[DONE]` sentinel if you pass it on. */
export type OpenAIChatInput = OpenAIChatChunk | '[DONE]';

/**
 * What an attempt of a Chat Completions stream produced, on its finish (`finish.output`): the assistant message
 * as the provider sent it, to send back in the next request ({@link toOpenAIChatMessages} does). `content` is the
 * joined text (`null` without text); each call's `arguments` is its argument text as streamed; the reasoning
 * fields are there when the provider used them, under the name it used: DeepSeek wants `reasoning_content` back
 * within a tool loop, OpenRouter wants `reasoning_details` back unmodified (signatures, encrypted reasoning).
 * Plain JSON data, never changed once the finish went out.
 */
export interface OpenAIChatOutput extends ProviderOutput {
  readonly format: 'openai-chat';
  readonly message: {
    readonly role: 'assistant';
    readonly content: string | null;
    readonly tool_calls?: readonly {
      readonly id: string;
      readonly type: 'function';
      readonly function: { readonly name: string; readonly arguments: string };
    }[];
    readonly refusal?: string;
    readonly reasoning_content?: string;
    readonly reasoning?: string;
    readonly reasoning_details?: readonly OpenAIChatReasoningDetail[];
  };
}

/**
 * Options of {@link openaiChat}.
 * @inline
 */
export interface OpenAIChatOptions extends AdapterOptions<OpenAIErrorInfo> {
  /** Which choice to follow when the request asked for `n > 1`; the others are ignored. Default 0. */
  choice?: number;
}

/**
 * Turns an OpenAI Chat Completions stream (`chat.completion.chunk` payloads) into neutral `ProviderEvent`s.
 *
 * Feed it what an SSE `data:` line parses to, or what the official SDK's stream yields
 * (`from(await client.chat.completions.create({ …, stream: true }))`). It emits `reasoning` for the thinking
 * that compatible providers stream, `text` for `delta.content`, a `tool-call-delta` per `delta.tool_calls` entry
 * (keyed by its `index`; id and name on the first fragment), `usage` from the usage chunk, and one `finish` that
 * carries the attempt's response id and its output: the assistant message to send back. Put
 * `assembleToolCalls` of `cleanturn` after it to get whole calls.
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
 *   F = finish tool-calls, output openai-chat
 * ```
 *
 * Every case of `marbles/openaiChat.marbles.ts`, with pictures: `docs/operators/openaiChat.md`.
 *
 * How it decides:
 * - **Finish, and the usage after it.** The `finish_reason` is held (see `decodeWith`): it goes out after the
 *   usage chunk that `include_usage` sends last, or at `[DONE]`, or when the source completes. A source error
 *   before that fails the attempt; after it, the stream completes: a finished attempt never turns into a
 *   failed one.
 * - **`[DONE]` without a finish reason.** A server that never sends `finish_reason` (Snowflake Cortex) still ends
 *   with `[DONE]`: there the attempt finished, `stop` (`tool-calls` with calls, `content-filter` with a refusal),
 *   without `raw`. A stream cut before `[DONE]` with no finish reason has no finish (`requireFinish` retries it).
 *   The official SDK drops `[DONE]`, and `sseJson()` completes there: pass the string `'[DONE]'` on yourself to
 *   get this finish.
 * - **Finish reason.** `stop` → `stop`, `length` → `length`, `content_filter` → `content-filter`,
 *   `tool_calls` and `function_call` → `tool-calls`, anything else → `other`. A tool call in the stream makes
 *   a `stop` into `tool-calls` (OpenAI reports `stop` with a forced `tool_choice`). `raw` keeps the
 *   provider's value when it differs.
 * - **Refusal.** `delta.refusal` is not answer text: it is joined and put on the finish as `refusal`, with
 *   the reason `content-filter`.
 * - **Reasoning.** DeepSeek's `reasoning_content`, OpenRouter's and vLLM's `reasoning`, and the `text` and
 *   `summary` of OpenRouter's `reasoning_details` become `reasoning` events, never `text`: one of them per delta
 *   (a delta often carries the same thinking under two names), the details first. Encrypted reasoning
 *   (`reasoning.encrypted`) has nothing to show.
 * - **Output.** The finish's `output` (`OpenAIChatOutput`) is the attempt's assistant message in the
 *   provider's shape: the joined text, each call with its id, name and argument text as streamed, the refusal,
 *   and each reasoning field the provider used, under its name: `reasoning_content` and `reasoning` joined,
 *   `reasoning_details` merged (pieces of the same `type` and `index`, or without an index following one of
 *   their type, are one entry: their `text`, `summary` and `data` joined, their other fields the first non-empty
 *   value; entries of other types kept as they came). A fresh object per attempt, complete when the finish goes
 *   out; output that arrives after the `finish_reason` gives a new finish that replaces the held one.
 * - **Response id and usage.** The chunks' `id` is the finish's `responseId`. Usage is read from any chunk whose
 *   `usage` is not null (Azure sends empty-`choices` chunks first; an empty `usage` object is no usage event):
 *   `prompt_tokens` → `inputTokens`, `completion_tokens` → `outputTokens`,
 *   `prompt_tokens_details.cached_tokens` → `cachedInputTokens`, `completion_tokens_details.reasoning_tokens` →
 *   `reasoningTokens`.
 * - **Errors.** `{"error": {…}}`, `{"error": "…"}` and `{"object": "error", …}` payloads, and the official
 *   SDK's `APIError` for them, error the stream with a {@link ProviderError}, retryable by the one table of
 *   `isRetryableUpstream` (the `retryable` option decides first).
 * - **What it cannot read is an error, never a drop.** `function.arguments` is argument text; an object is
 *   taken as its JSON (some compatible servers send it parsed); a number or boolean, or an index that is not
 *   a non-negative integer (a decimal string such as `"0"` is read as one), is a
 *   {@link ProviderError} naming the field; so is a chunk of the wrong shape (`choices` or `tool_calls`
 *   that are not arrays, a `delta` or `usage` that is not an object, `content` or reasoning that is not a
 *   string, a reasoning detail that is not an object, a token count that is not a number; `null` is absent).
 *   The deprecated `delta.function_call` is call #0. A fragment without `index` goes to the call with its `id`,
 *   or else to the latest call.
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
 * @see {@link toOpenAIChatMessages} for the messages of the next request.
 * @param options `choice` to follow with `n > 1`; `retryable` to classify in-stream errors yourself (by
 *   default, the table of `isRetryableUpstream` by `code`, then `type`, then a numeric code as HTTP status).
 * @returns An operator from Chat Completions chunks to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function openaiChat(options?: OpenAIChatOptions): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith({ name: operator, endMarker: '[DONE]' }, (sink) => new OpenAIChatDecoder(sink, options));
}

const operator = 'openaiChat';

/** A call of the attempt, as the output keeps it: grouped as `assembleToolCalls` groups the fragments. */
interface OutputCall {
  readonly index: number;
  id: string | undefined;
  name: string | undefined;
  /** Its argument text, in the pieces it came in (joined once, when the output is made). */
  readonly args: string[];
}

/** The fields of a reasoning detail whose pieces are joined; its other fields keep their first non-empty value. */
const JOINED = ['text', 'summary', 'data'] as const;
/** The reasoning detail types whose pieces are merged; an entry of another type is kept as it came. */
const MERGED_TYPES = new Set(['reasoning.text', 'reasoning.summary', 'reasoning.encrypted']);

/**
 * The decoder behind {@link openaiChat}: one attempt of a Chat Completions stream. Fields of the expected type take
 * a fast path; others are read by the shared readers, which name the field when they cannot read it.
 */
class OpenAIChatDecoder implements Decoder<OpenAIChatChunk> {
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
  // What the output is made of: the response id, the text, the calls in the order they appeared, and each reasoning
  // field the provider used (undefined while it used none).
  private responseId: string | undefined;
  private readonly text: string[] = [];
  private readonly calls: OutputCall[] = [];
  private readonly openCalls = new Map<number, OutputCall>();
  private reasoningContent: string[] | undefined;
  private reasoningText: string[] | undefined;
  private details: Record<string, unknown>[] | undefined;
  // Merged reasoning details by type and index.
  private readonly detailsByKey = new Map<string, Record<string, unknown>>();
  // Whether the output changed since the last finish given to the sink: a finish already held is given anew.
  private changed = false;

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: OpenAIChatOptions = {},
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
    if (this.responseId === undefined) {
      const id = chunk.id;
      const given = typeof id === 'string' ? id : read.string(id, this.site('id'));
      if (given !== undefined && given !== '') {
        this.responseId = given;
        this.changed = true;
      }
    }
    const choices = chunk.choices;
    if (Array.isArray(choices)) {
      for (let i = 0; i < choices.length; i++) {
        const entry: unknown = choices[i];
        const choice = (
          isObject(entry) ? entry : read.entry(entry, this.site(`choices[${i}]`))
        ) as OpenAIChatChoice;
        if ((this.index(choice.index, i, -1) ?? 0) === this.followed) this.choice(choice, i);
      }
    } else if (choices !== undefined && choices !== null) read.list(choices, this.site('choices'));
    // The finish goes to the sink with the output as it is now; the usage chunk that follows ends the stream.
    if (this.reason !== undefined && this.changed) {
      this.changed = false;
      this.sink.finish(this.finish(chatFinish(this.reason, this.sawCall, this.refusal)));
    }
    const usage = chunk.usage;
    if (isObject(usage)) {
      const event = this.usage(usage);
      if (Object.keys(event).length > 1) this.sink.event(event);
      if (this.reason !== undefined) this.sink.end(); // the usage chunk is the last one
    } else if (usage !== undefined && usage !== null) read.object(usage, this.site('usage'));
  }

  /** `[DONE]` without a finish reason: the attempt finished all the same (Snowflake Cortex never sends one). */
  atEndMarker(): void {
    if (this.reason !== undefined) return;
    const reason = this.sawCall ? 'tool-calls' : this.refusal !== undefined ? 'content-filter' : 'stop';
    const finish: FinishEvent = { type: 'finish', reason };
    if (this.refusal !== undefined) finish.refusal = this.refusal;
    this.sink.finish(this.finish(finish));
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
      this.reasoning(delta, i);
      const { content, refusal } = delta;
      if (typeof content === 'string') {
        if (content !== '') {
          this.text.push(content);
          this.changed = true;
          this.sink.event({ type: 'text', text: content });
        }
      } else this.field(read.string, content, i, -1, '.delta.content');
      if (typeof refusal === 'string') {
        if (refusal !== '') {
          this.refusal = (this.refusal ?? '') + refusal;
          this.changed = true;
        }
      } else this.field(read.string, refusal, i, -1, '.delta.refusal');
      const calls = delta.tool_calls;
      if (Array.isArray(calls)) {
        for (let j = 0; j < calls.length; j++) {
          const entry: unknown = calls[j];
          const call = (
            isObject(entry) ? entry : read.entry(entry, this.site(`choices[${i}].delta.tool_calls[${j}]`))
          ) as OpenAIChatToolCallDelta;
          this.fragment(this.index(call.index, i, j), call.id, call.function, i, j);
        }
      } else this.field(read.list, calls, i, -1, '.delta.tool_calls');
      if (isObject(delta.function_call)) {
        this.fragment(0, undefined, delta.function_call, i, -2);
      } else this.field(read.object, delta.function_call, i, -1, '.delta.function_call');
    } else this.field(read.object, delta, i, -1, '.delta');
    const reason = choice.finish_reason;
    if (typeof reason === 'string') {
      this.reason = reason;
      this.changed = true;
    } else this.field(read.string, reason, i, -1, '.finish_reason');
  }

  /**
   * The delta's reasoning: each field the provider used is kept under its name; what can be shown is emitted once,
   * from the details if they have any, else from `reasoning_content`, else from `reasoning`.
   */
  private reasoning(delta: OpenAIChatDelta, i: number): void {
    const { reasoning_content: rawContent, reasoning: rawReasoning, reasoning_details: rawDetails } = delta;
    if (rawContent === undefined && rawReasoning === undefined && rawDetails === undefined) return;
    const content =
      typeof rawContent === 'string'
        ? rawContent
        : this.field(read.string, rawContent, i, -1, '.delta.reasoning_content');
    const reasoning =
      typeof rawReasoning === 'string'
        ? rawReasoning
        : this.field(read.string, rawReasoning, i, -1, '.delta.reasoning');
    const details = Array.isArray(rawDetails)
      ? rawDetails
      : this.field(read.list, rawDetails, i, -1, '.delta.reasoning_details');
    let shown = false;
    if (details !== undefined) {
      this.details ??= [];
      this.changed = true;
      for (let k = 0; k < details.length; k++) {
        const text = this.detail(details[k], i, k);
        if (text !== undefined && text !== '') {
          shown = true;
          this.sink.event({ type: 'reasoning', text });
        }
      }
    }
    if (content !== undefined) {
      if (this.reasoningContent === undefined) this.reasoningContent = [content];
      else this.reasoningContent.push(content);
      this.changed = true;
    }
    if (reasoning !== undefined) {
      if (this.reasoningText === undefined) this.reasoningText = [reasoning];
      else this.reasoningText.push(reasoning);
      this.changed = true;
    }
    if (shown) return;
    const text = content !== undefined && content !== '' ? content : reasoning;
    if (text !== undefined && text !== '') this.sink.event({ type: 'reasoning', text });
  }

  /** Merges one piece of `reasoning_details` into the entries so far; returns the text it shows, if any. */
  private detail(entry: unknown, i: number, k: number): string | undefined {
    const at = `.delta.reasoning_details[${k}]`;
    const piece = isObject(entry) ? entry : read.entry(entry, this.site(`choices[${i}]${at}`));
    const type = piece.type;
    const index = this.field(read.index, piece.index, i, -1, `${at}.index`);
    for (const field of JOINED) {
      const value = piece[field];
      if (value !== undefined && value !== null && typeof value !== 'string')
        this.field(read.string, value, i, -1, `${at}.${field}`);
    }
    const details = this.details as Record<string, unknown>[];
    if (typeof type !== 'string' || !MERGED_TYPES.has(type)) {
      details.push({ ...piece });
      return undefined;
    }
    const key = index === undefined ? undefined : `${index} ${type}`;
    const last = details.at(-1);
    const into =
      key !== undefined
        ? this.detailsByKey.get(key)
        : last !== undefined &&
            last.type === type &&
            last.index === undefined &&
            type !== 'reasoning.encrypted'
          ? last
          : undefined;
    if (into === undefined) {
      const merged = { ...piece };
      details.push(merged);
      if (key !== undefined) this.detailsByKey.set(key, merged);
    } else {
      for (const [field, value] of Object.entries(piece)) {
        if (value === undefined) continue;
        const held = into[field];
        if ((JOINED as readonly string[]).includes(field)) {
          if (typeof value === 'string') into[field] = (typeof held === 'string' ? held : '') + value;
        } else if (held === undefined || held === null || held === '') into[field] = value;
      }
    }
    const shown =
      type === 'reasoning.text' ? piece.text : type === 'reasoning.summary' ? piece.summary : undefined;
    return typeof shown === 'string' ? shown : undefined;
  }

  /** Emits one tool-call fragment; `given` is its index, `rawId` its call id, when it has them. */
  private fragment(
    given: number | undefined,
    rawId: unknown,
    fn: OpenAIChatFunctionDelta | null | undefined,
    i: number,
    j: number,
  ): void {
    const id = (typeof rawId === 'string' ? rawId : this.field(read.string, rawId, i, j, '.id')) || undefined;
    let callName: string | undefined;
    let argsDelta = '';
    if (!isObject(fn)) this.field(read.object, fn, i, j, j === -2 ? '' : '.function');
    else {
      const { name: rawName, arguments: rawArgs } = fn;
      callName =
        (typeof rawName === 'string' ? rawName : this.field(read.string, rawName, i, j, '.function.name')) ||
        undefined;
      argsDelta =
        (typeof rawArgs === 'string'
          ? rawArgs
          : this.field(read.args, rawArgs, i, j, '.function.arguments')) ?? '';
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
    this.keepFragment(index, id, callName, argsDelta);
    const event: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argsDelta };
    if (id !== undefined) event.id = id;
    if (callName !== undefined) event.name = callName;
    this.sink.event(event);
  }

  /**
   * Keeps a fragment for the output, grouped by the rule of `assembleToolCalls`: by index, a new id at an index
   * whose call has another id starting a new call; the first id and name set them.
   */
  private keepFragment(
    index: number,
    id: string | undefined,
    callName: string | undefined,
    args: string,
  ): void {
    let call = this.openCalls.get(index);
    if (call === undefined || (id !== undefined && call.id !== undefined && id !== call.id)) {
      call = { index, id: undefined, name: undefined, args: [] };
      this.openCalls.set(index, call);
      this.calls.push(call);
    }
    if (call.id === undefined && id !== undefined) call.id = id;
    if (call.name === undefined && callName !== undefined) call.name = callName;
    if (args !== '') call.args.push(args);
    this.changed = true;
  }

  /** The finish with the response id and a fresh output of the attempt so far. */
  private finish(event: FinishEvent): FinishEvent {
    if (this.responseId !== undefined) event.responseId = this.responseId;
    event.output = this.output();
    return event;
  }

  /** The attempt's assistant message as the provider sent it: a new object each time. */
  private output(): OpenAIChatOutput {
    type Message = { -readonly [K in keyof OpenAIChatOutput['message']]: OpenAIChatOutput['message'][K] };
    const message: Message = {
      role: 'assistant',
      content: this.text.length === 0 ? null : this.text.join(''),
    };
    if (this.calls.length > 0) {
      message.tool_calls = this.calls.map((call) => ({
        // A call without an id is named as assembleToolCalls names it, so that its result finds it.
        id: call.id ?? `index-${call.index}`,
        type: 'function' as const,
        function: { name: call.name ?? '', arguments: call.args.join('') },
      }));
    }
    if (this.refusal !== undefined) message.refusal = this.refusal;
    if (this.reasoningContent !== undefined) message.reasoning_content = this.reasoningContent.join('');
    if (this.reasoningText !== undefined) message.reasoning = this.reasoningText.join('');
    if (this.details !== undefined) message.reasoning_details = this.details.map((detail) => ({ ...detail }));
    return { format: 'openai-chat', message };
  }

  /** The site of a field of the chunk being read, for a reader's error. */
  private site(field: string): FieldSite {
    return { operator, payload: this.chunk, field };
  }

  /** The usage chunk's counts (`prompt_tokens` → `inputTokens`, `completion_tokens` → `outputTokens`, details). */
  private usage(usage: OpenAIChatUsage): UsageEvent {
    const event: UsageEvent = { type: 'usage' };
    const {
      prompt_tokens: prompt,
      completion_tokens: completion,
      prompt_tokens_details: promptDetails,
      completion_tokens_details: completionDetails,
    } = usage;
    const input = typeof prompt === 'number' ? prompt : read.count(prompt, this.site('usage.prompt_tokens'));
    const output =
      typeof completion === 'number'
        ? completion
        : read.count(completion, this.site('usage.completion_tokens'));
    if (input !== undefined) event.inputTokens = input;
    if (output !== undefined) event.outputTokens = output;
    const cached = this.detailCount(promptDetails, 'prompt_tokens_details', 'cached_tokens');
    if (cached !== undefined) event.cachedInputTokens = cached;
    const reasoning = this.detailCount(completionDetails, 'completion_tokens_details', 'reasoning_tokens');
    if (reasoning !== undefined) event.reasoningTokens = reasoning;
    return event;
  }

  /** A count of a usage details object (`usage.<details>.<count>`); absent when the details or the count are. */
  private detailCount(details: unknown, field: string, count: string): number | undefined {
    const object = isObject(details) ? details : read.object(details, this.site(`usage.${field}`));
    if (object === undefined) return undefined;
    const value = object[count];
    return typeof value === 'number' ? value : read.count(value, this.site(`usage.${field}.${count}`));
  }

  /** An index: a non-negative integer as it is; anything else through `read.index`. */
  private index(value: unknown, i: number, j: number): number | undefined {
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
    return this.field(read.index, value, i, j, '.index');
  }

  /**
   * A field read by a shared reader (absent is undefined), which names it if it cannot read it: `choices[i]` +
   * `suffix`, within `tool_calls[j]` (`j` ≥ 0) or `function_call` (`j` = -2). Positions stay numbers until then.
   */
  private field<T>(
    reader: (value: unknown, site: FieldSite) => T | undefined,
    value: unknown,
    i: number,
    j: number,
    suffix: string,
  ): T | undefined {
    if (value === undefined || value === null) return undefined;
    const call = j >= 0 ? `.delta.tool_calls[${j}]` : j === -2 ? '.delta.function_call' : '';
    return reader(value, { operator, payload: this.chunk, field: `choices[${i}]${call}${suffix}` });
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
