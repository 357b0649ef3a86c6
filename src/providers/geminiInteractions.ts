import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty, readString } from '../internal/describeError.js';
import type { FinishEvent, FinishReason, ProviderEvent, ProviderOutput } from '../types.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type ProviderError, providerPayloadError, upstreamProviderError } from './errors.js';
import { geminiCallId } from './geminiContent.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isObject, isRecord, jsonCopy, nonEmptyText } from './shared.js';
import { type UsageCounts, UsageTotals } from './usageTotals.js';

/**
 * Token counts of an interaction, as the lifecycle events, `step.stop` and the events' `metadata.total_usage`
 * report them: totals of the interaction so far. Only the fields the adapter reads are listed.
 */
export interface GeminiInteractionsUsage {
  total_input_tokens?: number | null;
  /** Of `total_input_tokens`, those read from the cache. */
  total_cached_tokens?: number | null;
  total_output_tokens?: number | null;
  /** Tokens of the model's thoughts, counted apart from `total_output_tokens`. */
  total_thought_tokens?: number | null;
  /** Tokens of the prompts of tool use, counted apart from `total_input_tokens`. */
  total_tool_use_tokens?: number | null;
}

/** An error the stream or the interaction reports: `code` a word or a URI naming the error type. */
export interface GeminiInteractionsErrorBody {
  code?: string | null;
  message?: string | null;
}

/**
 * The interaction resource of the lifecycle events (`interaction.created`, `interaction.completed`, and the older
 * `interaction.start`, `interaction.complete`). Only the fields the adapter reads are listed.
 */
export interface GeminiInteraction {
  /** The interaction's id: the finish's `responseId`, and what a background interaction is resumed by. */
  id?: string | null;
  /**
   * `in_progress`, `requires_action`, `completed`, `failed`, `cancelled`, `incomplete`, `budget_exceeded`,
   * `queued`…
   */
  status?: string | null;
  usage?: GeminiInteractionsUsage | null;
  /** The interaction's steps, when the event includes them (streams send them empty: the deltas are the output). */
  steps?: readonly unknown[] | null;
  /** What went wrong, on a failed interaction. */
  errors?: readonly GeminiInteractionsErrorBody[] | null;
}

/**
 * The step of a `step.start` (`thought`, `model_output`, `function_call`, a server-side tool's call or result…),
 * or the content of an older `content.start` (`thought`, `text`, `function_call`…). Only the fields the adapter
 * reads are listed.
 */
export interface GeminiInteractionsStep {
  type?: string;
  /** A function call's id: what its `function_result` answers as `call_id`. */
  id?: string | null;
  /** A function call's tool name. */
  name?: string | null;
  /** A function call's arguments (an object; a streamed call starts with `{}` and its `arguments_delta`s follow). */
  arguments?: unknown;
  /** A thought's signature (on a function call in older streams). */
  signature?: string | null;
  /** A thought's summary items (`{ type: 'text', text }`). */
  summary?: readonly unknown[] | null;
  /** A `model_output` step's contents (`{ type: 'text', text }`…). */
  content?: unknown;
  /** The text of an older `text` content. */
  text?: string | null;
}

/**
 * The `delta` of a `step.delta` or an older `content.delta`: `text`, `thought_summary` (`content` a text or image
 * item), `thought_signature`, `arguments_delta` (a piece of a function call's argument JSON), a whole
 * `function_call` (older streams), and deltas of other kinds (images, audio, server-side tools), read past. Only the
 * fields the adapter reads are listed.
 */
export interface GeminiInteractionsDelta {
  type?: string;
  text?: string | null;
  content?: unknown;
  signature?: string | null;
  /** The argument text of an `arguments_delta`; the whole arguments object of an older `function_call` delta. */
  arguments?: unknown;
  id?: string | null;
  name?: string | null;
}

/**
 * One event of the Interactions API's SSE stream (`POST /v1beta/interactions` with `stream: true`; an SSE `data:`
 * line, parsed, or what the official SDK's stream yields): `interaction.created`, `interaction.status_update`,
 * `step.start`, `step.delta`, `step.stop`, `interaction.completed`, `error`, and the older `interaction.start`,
 * `content.start`, `content.delta`, `content.stop`, `interaction.complete`. Only the fields the adapter reads are
 * listed; events of other types are read past.
 */
export interface GeminiInteractionsEvent {
  event_type: string;
  /** The resume cursor: a stream resumed with `last_event_id` goes on after this event. */
  event_id?: string | null;
  /** The step (or older content) a `step.*` / `content.*` event belongs to. */
  index?: number | null;
  interaction?: GeminiInteraction | null;
  /** The interaction's id, on `interaction.status_update`. */
  interaction_id?: string | null;
  /** The interaction's status, on `interaction.status_update`. */
  status?: string | null;
  step?: GeminiInteractionsStep | null;
  content?: GeminiInteractionsStep | null;
  delta?: GeminiInteractionsDelta | null;
  /** The interaction's usage so far, on `step.stop`. */
  usage?: GeminiInteractionsUsage | null;
  /** The interaction's usage so far, on any event (`metadata.total_usage`). */
  metadata?: { total_usage?: GeminiInteractionsUsage | null } | null;
  error?: GeminiInteractionsErrorBody | null;
}

/** A text item of a thought's summary or of a `model_output` step. */
export interface GeminiInteractionsTextItem {
  readonly type: 'text';
  readonly text: string;
}

/**
 * A step the model produced, as the API takes it back in a next request's `input`: a `thought` (its summary and
 * signature), a `model_output` (its text, and the signature that came with it), a `function_call` (its `id` as the
 * neutral call has it, its name and arguments, and a signature if one came with it), or a step of a tool the
 * provider ran itself, kept as `step.start` sent it.
 */
export type GeminiInteractionsOutputStep =
  | {
      readonly type: 'thought';
      readonly summary: readonly (GeminiInteractionsTextItem | Readonly<Record<string, unknown>>)[];
      readonly signature?: string;
    }
  | {
      readonly type: 'model_output';
      readonly content: readonly GeminiInteractionsTextItem[];
      readonly signature?: string;
    }
  | {
      readonly type: 'function_call';
      readonly id: string;
      readonly name: string;
      readonly arguments: Readonly<Record<string, unknown>>;
      readonly signature?: string;
    }
  | { readonly type: string; readonly [field: string]: unknown };

/**
 * What an Interactions attempt produced, on its `finish` (`FinishEvent.output`): the model's steps in stream order,
 * each signature on the step that carried it. With `store: true` (the default) a next request only needs
 * `previous_interaction_id` (the finish's `responseId`); without it, these steps go back in its `input`.
 */
export interface GeminiInteractionsOutput extends ProviderOutput {
  readonly format: 'gemini-interactions';
  /** The model's steps, as the API takes them back. */
  readonly steps: readonly GeminiInteractionsOutputStep[];
}

/**
 * Turns a Gemini Interactions API stream (`interactions.create({ …, stream: true })`) into neutral
 * {@link ProviderEvent}s: what an SSE `data:` line parses to, or what the official SDK's stream yields. It reads
 * the step events (`step.start`, `step.delta`, `step.stop`) and the older content events (`content.start`,
 * `content.delta`, `content.stop`) alike.
 *
 * - **Text.** `text` deltas (and the text a `model_output` step or an older `text` content starts with) are
 *   `text`.
 * - **Reasoning.** `thought_summary` deltas with a text item (and the summary a `thought` step starts with) are
 *   `reasoning`, never text. A `thought_signature` delta puts its signature on the step of its `index`; the
 *   output keeps it there.
 * - **Calls.** A `function_call` step (its `id`, `name` and starting `arguments`) and its `arguments_delta`
 *   pieces of argument JSON become one whole `tool-call` at the step's `step.stop` (or at the completion, for a
 *   step left open): the pieces when any came, else the step's own arguments. An older whole `function_call`
 *   delta does the same at its `content.stop`. A call without an id gets `gemini-call-<n>`, `n` counting the
 *   attempt's calls from 0. A call only in the completion's `steps` goes out before the finish. Steps of tools
 *   the provider ran (`google_search_call`, `code_execution_result`…) are not calls: they stay in the output.
 * - **Usage** from `metadata.total_usage` (any event), `step.stop`'s `usage` and the completion's
 *   `interaction.usage`, whenever the counts change: input `total_input_tokens` + `total_tool_use_tokens`
 *   (`cachedInputTokens`: `total_cached_tokens`), output `total_output_tokens` + `total_thought_tokens`
 *   (`reasoningTokens`: `total_thought_tokens`).
 * - **Finish** at `interaction.completed` (or the older `interaction.complete`), the format's end: nothing after
 *   it is read. `raw` is the interaction's status, `responseId` the interaction's id (from whichever event gave
 *   it), `output` the attempt's `GeminiInteractionsOutput`.
 * - **Errors.** An `error` event, a completion whose status is `failed` or `cancelled`, a stream that ends after
 *   a `failed` or `cancelled` status update, and the SDK's `APIError` are a {@link ProviderError} (`provider`
 *   `gemini`), retryable by the table of `isRetryableUpstream` (the `retryable` option decides first); a URI
 *   `code` is also read by its last segment (`…/permission-denied`: `permission_denied`).
 * - **What it cannot read is an error, never a drop**: an `event_type` that is not a string, an `interaction`,
 *   `step`, `content`, `delta` or `usage` that is not an object, an `index` that is not a non-negative integer, a
 *   text, signature or argument piece that is not a string, a tool name that is not a non-empty string, arguments
 *   that are not an object or whose pieces do not parse to one, a text delta in a step of another kind: a
 *   {@link ProviderError} `invalid-field`; an `arguments_delta` for a step that is not a function call the
 *   stream started: `unknown-reference`.
 * - **`event_id`**, the resume cursor: an event whose id was already read is a replay and is dropped.
 * - **Unknown event and delta types** (`text_annotation_delta`, images, types added later) are read past.
 * - A stream cut before its completion emits no `finish`: put `requireFinish()` after it (`attemptPipeline` does).
 *
 * | interaction `status` | `reason` |
 * |---|---|
 * | `completed` | `tool-calls` when the attempt had a function call, else `stop` |
 * | `requires_action` | `tool-calls` when the attempt had a function call, else `other` |
 * | `incomplete` (the output hit a token limit), `budget_exceeded` | `length` |
 * | `failed`, `cancelled` | a {@link ProviderError}, no finish |
 * | anything else | `other` |
 *
 * ```text
 * source:   -s-t-f-a-b-p-c---|
 *           geminiInteractions()
 * result:   ---T-------K-(UF)|
 *
 * where
 *   s = {"event_type":"step.start","index":0,"step":{"type":"model_output"}}
 *   t = {"event_type":"step.delta","index":0,"delta":{"type":"text","text":"Checking order ORD-7781. "}}
 *   f = {"event_type":"step.start","index":1,"step":{"type":"function_call","id":"fc_1","name":"issue_refund","arguments":{}}}
 *   a = {"event_type":"step.delta","index":1,"delta":{"type":"arguments_delta","arguments":"{\"order_id\":\"ORD-7781\","}}
 *   b = {"event_type":"step.delta","index":1,"delta":{"type":"arguments_delta","arguments":"\"amount\":\"full\"}"}}
 *   p = {"event_type":"step.stop","index":1}
 *   c = {"event_type":"interaction.completed","interaction":{"id":"v1_ChdSZWZ1bmQtT1JELTc3ODE","status":"requires_action","usage":{"total_input_tokens":142,"total_output_tokens":31}}}
 *   T = text "Checking order ORD-7781. "
 *   K = tool-call fc_1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   U = usage in 142 / out 31
 *   F = finish tool-calls, response v1_ChdSZWZ1bmQtT1JELTc3ODE, output gemini-interactions [model_output, function_call]
 * ```
 *
 * Every case of `marbles/geminiInteractions.marbles.ts`, with pictures: `docs/operators/geminiInteractions.md`.
 *
 * ## Example
 * ```ts
 * import { GoogleGenAI, type Interactions } from '@google/genai';
 * import { concatMap, defer } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, turnPipeline } from 'cleanturn';
 * import { geminiInteractions } from 'cleanturn/providers';
 *
 * const ai = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY });
 * const tools = [{ type: 'function' as const, name: 'issue_refund', parameters: { type: 'object' } }];
 * const input = 'Please refund order ORD-7781: the book arrived damaged.';
 * defer(() => ai.interactions.create({ model: 'gemini-3-flash-preview', input, tools, stream: true }))
 *   .pipe(
 *     // The SDK's Stream is a ReadableStream too: read it as the async iterable of its events.
 *     concatMap((stream): AsyncIterable<Interactions.InteractionSSEEvent> => stream),
 *     attemptPipeline(geminiInteractions()), // events → neutral events, a finish required
 *     turnPipeline({ turnId: 'turn-42', retry: 2 }), // a cut stream is retried as a new interaction
 *     accumulateTurn(),
 *   )
 *   .subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link geminiContent} for `streamGenerateContent`.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from Interactions stream events to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function geminiInteractions(
  options?: AdapterOptions<GeminiInteractionsErrorInfo>,
): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith({ name: operator }, (sink) => new GeminiInteractionsDecoder(sink, options));
}

const operator = 'geminiInteractions';

/** A step of the attempt: what it is, its part of the output, and for a call what its arguments are so far. */
type Step =
  | { kind: 'text'; out: { type: 'model_output'; content: GeminiInteractionsTextItem[]; signature?: string } }
  | {
      kind: 'thought';
      out: { type: 'thought'; summary: Record<string, unknown>[]; signature?: string };
    }
  | {
      kind: 'call';
      out: {
        type: 'function_call';
        id: string;
        name: string;
        arguments: Record<string, unknown>;
        signature?: string;
      };
      /** The argument text of its `arguments_delta`s, and whether the call went out. */
      pieces: string[];
      emitted: boolean;
    }
  | { kind: 'other'; out: { type: string; signature?: string; [field: string]: unknown } };

/**
 * The decoder behind {@link geminiInteractions}: one attempt of an Interactions stream (exported for `decodeAll` in
 * tests).
 */
export class GeminiInteractionsDecoder implements Decoder<GeminiInteractionsEvent> {
  // The attempt's steps by index, in the order they appeared.
  private readonly steps = new Map<number, Step>();
  // How many calls the attempt had (the next generated id), and the ids of those that went out.
  private calls = 0;
  private readonly emitted = new Set<string>();
  // The event ids read, to drop replays.
  private readonly seen = new Set<string>();
  // The interaction's id, and a `failed` or `cancelled` status an update reported.
  private interactionId: string | undefined;
  private failedStatus: { status: string; event: GeminiInteractionsEvent } | undefined;
  /** The usage counts last emitted: a `usage` event goes out only when one changes. */
  private readonly usageTotals = new UsageTotals();
  // Where the field being read is, for the readers' errors: one object, re-aimed at each read.
  private readonly site: FieldSite = { operator, payload: undefined, field: '' };

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AdapterOptions<GeminiInteractionsErrorInfo> = {},
  ) {}

  next(event: GeminiInteractionsEvent): void {
    const type: unknown = event.event_type;
    if (typeof type !== 'string')
      throw read.invalid(this.at(event, 'event_type'), 'an event type (a string)', type);
    const id = read.string(event.event_id, this.at(event, 'event_id'));
    if (id !== undefined && id !== '') {
      if (this.seen.has(id)) return;
      this.seen.add(id);
    }
    const metadata = read.object(event.metadata, this.at(event, 'metadata'));
    if (metadata !== undefined) this.usage(event, metadata.total_usage, 'metadata.total_usage');
    switch (type) {
      case 'interaction.created':
      case 'interaction.start':
        this.interaction(event);
        break;
      case 'interaction.status_update': {
        this.identify(read.string(event.interaction_id, this.at(event, 'interaction_id')));
        const status = read.string(event.status, this.at(event, 'status'));
        if (status === 'failed' || status === 'cancelled') this.failedStatus = { status, event };
        break;
      }
      case 'step.start':
      case 'content.start':
        this.start(event, type === 'step.start' ? 'step' : 'content');
        break;
      case 'step.delta':
      case 'content.delta':
        this.delta(event);
        break;
      case 'step.stop':
      case 'content.stop': {
        const step = this.steps.get(this.index(event));
        if (step?.kind === 'call') this.emit(step);
        this.usage(event, event.usage, 'usage');
        break;
      }
      case 'interaction.completed':
      case 'interaction.complete':
        this.terminal(event, this.interaction(event) ?? {});
        break;
      case 'error': {
        const body = read.object(event.error, this.at(event, 'error')) ?? {};
        const code = read.string(body.code, this.at(event, 'error.code'));
        const message = read.string(body.message, this.at(event, 'error.message'));
        throw this.providerError(
          { code: nonEmptyText(code), status: undefined, message: errorMessage(message, code) },
          event,
        );
      }
    }
  }

  /** The stream ended without its completion: a failure a status update reported fails the attempt. */
  end(): void {
    const failed = this.failedStatus;
    if (failed !== undefined) throw this.statusError(failed.status, undefined, failed.event);
  }

  /** The SDK's `APIError` (a numeric `status`): a {@link ProviderError} classified by its status and body. */
  error(error: unknown): unknown {
    const status = isInstance(error, Error) ? readProperty(error, 'status') : undefined;
    if (typeof status !== 'number') return undefined;
    // A foreign error: every field is read with readers that never throw (a getter or a Proxy trap may).
    const body = readProperty(error, 'error');
    const code = nonEmptyText(readString(body, 'status')) ?? nonEmptyText(readString(body, 'code'));
    const message =
      nonEmptyText(readString(body, 'message')) ??
      nonEmptyText(readString(error, 'message')) ??
      `HTTP ${status}`;
    return this.providerError({ code, status, message }, isRecord(body) ? body : error, error);
  }

  /** The site of `field` in `payload`, for the error of a reader. */
  private at(payload: unknown, field: string): FieldSite {
    this.site.payload = payload;
    this.site.field = field;
    return this.site;
  }

  private providerError(info: GeminiInteractionsErrorInfo, payload: unknown, cause?: unknown): ProviderError {
    const { code, status, message } = info;
    const retryable =
      this.options.retryable?.(info) ?? isRetryableUpstream({ codes: codeWords(code), status });
    return upstreamProviderError('gemini', message, {
      retryable,
      upstreamCode: code,
      status,
      payload,
      cause,
    });
  }

  /** The error of a `failed` or `cancelled` interaction: its first recorded error, else its status. */
  private statusError(status: string, errors: readonly unknown[] | undefined, event: unknown): ProviderError {
    const first = errors?.find(isObject);
    const code = nonEmptyText(first?.code) ?? status;
    const message = nonEmptyText(first?.message) ?? `the interaction is ${status}`;
    return this.providerError({ code, status: undefined, message }, event);
  }

  private identify(id: string | undefined): void {
    if (id) this.interactionId = id;
  }

  /** The interaction of a lifecycle event: its id is kept. */
  private interaction(event: GeminiInteractionsEvent): Record<string, unknown> | undefined {
    const interaction = read.object(event.interaction, this.at(event, 'interaction'));
    if (interaction !== undefined)
      this.identify(read.string(interaction.id, this.at(event, 'interaction.id')));
    return interaction;
  }

  /** The step index of a `step.*` / `content.*` event (absent: 0). */
  private index(event: GeminiInteractionsEvent): number {
    return read.index(event.index, this.at(event, 'index')) ?? 0;
  }

  /** Emits a text fragment and adds it to the output's `model_output` step. */
  private text(step: Extract<Step, { kind: 'text' }>, text: string): void {
    if (text === '') return;
    this.sink.event({ type: 'text', text });
    const last = step.out.content.at(-1);
    if (last === undefined) step.out.content.push({ type: 'text', text });
    else step.out.content[step.out.content.length - 1] = { type: 'text', text: last.text + text };
  }

  /** Emits a summary item's text as reasoning, and adds the item to the output's `thought` step. */
  private summary(
    step: Extract<Step, { kind: 'thought' }>,
    item: unknown,
    field: string,
    event: unknown,
  ): void {
    const entry = read.entry(item, this.at(event, field));
    const text = read.string(entry.text, this.at(event, `${field}.text`));
    if (entry.type === 'text' || (entry.type === undefined && text !== undefined)) {
      if (text) this.sink.event({ type: 'reasoning', text });
      step.out.summary.push({ type: 'text', text: text ?? '' });
    } else step.out.summary.push(jsonCopy(entry) as Record<string, unknown>);
  }

  /** A step (or older content) starts: a text, a thought, a function call, or a provider tool's step. */
  private start(event: GeminiInteractionsEvent, field: 'step' | 'content'): void {
    const index = this.index(event);
    const given = read.object(event[field], this.at(event, field));
    if (given === undefined) throw read.invalid(this.at(event, field), 'an object', given);
    const kind = read.string(given.type, this.at(event, `${field}.type`));
    const signature = read.string(given.signature, this.at(event, `${field}.signature`)) || undefined;
    const signed = signature === undefined ? {} : { signature };
    if (kind === 'model_output' || kind === 'text') {
      const step: Step = { kind: 'text', out: { type: 'model_output', content: [], ...signed } };
      this.steps.set(index, step);
      if (kind === 'text') this.text(step, read.string(given.text, this.at(event, `${field}.text`)) ?? '');
      const content =
        kind === 'model_output' ? read.list(given.content, this.at(event, `${field}.content`)) : undefined;
      for (let i = 0; content !== undefined && i < content.length; i++) {
        const item = read.entry(content[i], this.at(event, `${field}.content[${i}]`));
        const text = read.string(item.text, this.at(event, `${field}.content[${i}].text`));
        if (item.type === 'text' && text !== undefined) this.text(step, text);
      }
    } else if (kind === 'thought') {
      const step: Step = { kind: 'thought', out: { type: 'thought', summary: [], ...signed } };
      this.steps.set(index, step);
      const summary = read.list(given.summary, this.at(event, `${field}.summary`));
      for (let i = 0; summary !== undefined && i < summary.length; i++) {
        this.summary(step, summary[i], `${field}.summary[${i}]`, event);
      }
    } else if (kind === 'function_call') {
      this.steps.set(index, this.call(given, field, event));
    } else {
      const out = jsonCopy(given) as { type: string };
      this.steps.set(index, { kind: 'other', out: { ...out, type: kind ?? 'unknown' } });
    }
  }

  /** A function call step (or older content or delta) at `field` of `event`: its id, name and arguments. */
  private call(
    given: Record<string, unknown>,
    field: string,
    event: unknown,
  ): Extract<Step, { kind: 'call' }> {
    const name = read.name(given.name, this.at(event, `${field}.name`));
    const id = read.string(given.id, this.at(event, `${field}.id`)) || undefined;
    const args = read.argsObject(given.arguments, this.at(event, `${field}.arguments`));
    const signature = read.string(given.signature, this.at(event, `${field}.signature`)) || undefined;
    const out = {
      type: 'function_call' as const,
      id: geminiCallId(id, this.calls++),
      name,
      arguments: jsonCopy(args) as Record<string, unknown>,
      ...(signature === undefined ? {} : { signature }),
    };
    return { kind: 'call', out, pieces: [], emitted: false };
  }

  /**
   * The step of `index` that a text delta or a thought summary adds to, made one of that kind if the stream never
   * started it. A provider tool's step takes neither (its deltas are read past); a step of the other kind is an
   * error.
   */
  private stepOf(index: number, kind: 'text' | 'thought', event: unknown): Step {
    let step = this.steps.get(index);
    if (step === undefined) {
      step =
        kind === 'text'
          ? { kind, out: { type: 'model_output', content: [] } }
          : { kind, out: { type: 'thought', summary: [] } };
      this.steps.set(index, step);
    } else if (step.kind !== kind && step.kind !== 'other') {
      const delta = kind === 'text' ? 'a text delta' : 'a thought summary';
      throw providerPayloadError(operator, 'invalid-field', `${delta} in a ${step.out.type} step`, {
        field: 'delta.type',
        payload: event,
      });
    }
    return step;
  }

  private delta(event: GeminiInteractionsEvent): void {
    const index = this.index(event);
    const delta = read.entry(event.delta, this.at(event, 'delta'));
    switch (read.string(delta.type, this.at(event, 'delta.type'))) {
      case 'text': {
        const step = this.stepOf(index, 'text', event);
        const text = read.string(delta.text, this.at(event, 'delta.text')) ?? '';
        if (step.kind === 'text') this.text(step, text);
        break;
      }
      case 'thought_summary': {
        const step = this.stepOf(index, 'thought', event);
        if (step.kind === 'thought' && delta.content !== undefined && delta.content !== null) {
          this.summary(step, delta.content, 'delta.content', event);
        }
        break;
      }
      case 'thought_signature': {
        const signature = read.string(delta.signature, this.at(event, 'delta.signature')) || undefined;
        const step = this.steps.get(index) ?? this.stepOf(index, 'thought', event);
        if (signature !== undefined) step.out.signature = signature;
        break;
      }
      case 'arguments_delta': {
        const piece = read.string(delta.arguments, this.at(event, 'delta.arguments'));
        const step = this.steps.get(index);
        if (step?.kind !== 'call' || step.emitted) {
          const problem = 'an arguments_delta for a step that is not an open function call';
          throw providerPayloadError(operator, 'unknown-reference', problem, {
            field: 'index',
            payload: event,
          });
        }
        if (piece) step.pieces.push(piece);
        break;
      }
      case 'function_call': {
        // An older stream's whole call, alone or completing the call its content.start opened (the same call:
        // the same number, so the same generated id).
        const known = this.steps.get(index);
        if (known?.kind === 'call' && known.emitted) break;
        if (known?.kind === 'call') this.calls--;
        const step = this.call(delta, 'delta', event);
        this.steps.set(index, step);
        break;
      }
    }
  }

  /** A call goes out whole, once: its argument pieces parsed when any came, else the arguments it started with. */
  private emit(step: Extract<Step, { kind: 'call' }>): void {
    if (step.emitted) return;
    step.emitted = true;
    if (step.pieces.length > 0) {
      const text = step.pieces.join('');
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw providerPayloadError(operator, 'invalid-field', 'argument pieces that are not JSON', {
          field: 'delta.arguments',
          payload: text,
        });
      }
      const args = read.argsObject(parsed, { operator, payload: text, field: 'delta.arguments' });
      step.out.arguments = args as Record<string, unknown>;
    }
    const { id, name, arguments: args } = step.out;
    this.emitted.add(id);
    this.sink.event({ type: 'tool-call', id, name, args: jsonCopy(args) });
  }

  /** Usage totals at `field` of `event`, emitted when the counts change. */
  private usage(event: GeminiInteractionsEvent, value: unknown, field: string): void {
    const usage = read.object(value, this.at(event, field));
    if (usage === undefined) return;
    const count = (key: keyof GeminiInteractionsUsage) =>
      read.count(usage[key], this.at(event, `${field}.${key}`));
    const input = count('total_input_tokens');
    const output = count('total_output_tokens');
    const thoughts = count('total_thought_tokens');
    const counts: UsageCounts = {
      inputTokens: input === undefined ? undefined : input + (count('total_tool_use_tokens') ?? 0),
      outputTokens:
        output === undefined && thoughts === undefined ? undefined : (output ?? 0) + (thoughts ?? 0),
      cachedInputTokens: count('total_cached_tokens'),
      reasoningTokens: thoughts,
    };
    const neutral = this.usageTotals.next(counts);
    if (neutral !== undefined) this.sink.event(neutral);
  }

  /** The completion: calls only in its steps, the open calls, its usage, then the finish (or the failure). */
  private terminal(event: GeminiInteractionsEvent, interaction: GeminiInteraction): void {
    const status = read.string(interaction.status, this.at(event, 'interaction.status'));
    const errors = read.list(interaction.errors, this.at(event, 'interaction.errors'));
    const given = status ?? this.failedStatus?.status;
    if (given === 'failed' || given === 'cancelled') throw this.statusError(given, errors, event);
    const steps = read.list(interaction.steps, this.at(event, 'interaction.steps')) ?? [];
    for (let i = 0; i < steps.length; i++) {
      const step = read.entry(steps[i], this.at(event, `interaction.steps[${i}]`));
      if (step.type !== 'function_call') continue;
      const id = read.string(step.id, this.at(event, `interaction.steps[${i}].id`));
      if (id !== undefined && this.emitted.has(id)) continue;
      const call = this.call(step, `interaction.steps[${i}]`, event);
      this.steps.set(Math.max(-1, ...this.steps.keys()) + 1, call);
    }
    for (const step of this.steps.values()) if (step.kind === 'call') this.emit(step);
    this.usage(event, interaction.usage, 'interaction.usage');
    const hadCall = this.calls > 0;
    let reason: FinishReason = 'other';
    if (given === 'completed') reason = hadCall ? 'tool-calls' : 'stop';
    else if (given === 'requires_action') reason = hadCall ? 'tool-calls' : 'other';
    else if (given === 'incomplete' || given === 'budget_exceeded') reason = 'length';
    const finish: FinishEvent = { type: 'finish', reason };
    if (given !== undefined) finish.raw = given;
    if (this.interactionId !== undefined) finish.responseId = this.interactionId;
    const output: GeminiInteractionsOutput = {
      format: 'gemini-interactions',
      steps: [...this.steps.values()].map((step) => step.out as GeminiInteractionsOutputStep),
    };
    finish.output = output;
    this.sink.finish(finish);
    this.sink.end();
  }
}

/**
 * The words `isRetryableUpstream` reads of an error code: the code, and the last segment of a URI code in the
 * table's spelling (`…/errors/resource-exhausted` → `resource_exhausted`).
 */
function codeWords(code: string | undefined): string[] {
  if (code === undefined) return [];
  const tail = code.split(/[/#:]/).at(-1) ?? '';
  const word = tail.replace(/-/g, '_');
  return word !== '' && word !== code ? [code, word] : [code];
}

/** An error event's message, else its code, else a generic one. */
function errorMessage(message: string | undefined, code: string | undefined): string {
  return nonEmptyText(message) ?? nonEmptyText(code) ?? 'the stream reported an error';
}

/**
 * A Gemini Interactions error as the `retryable` option sees it.
 *
 * @inline
 */
export interface GeminiInteractionsErrorInfo {
  /** The error's `code` (a word or a URI), or the interaction's status (`failed`, `cancelled`) when it gave none. */
  code: string | undefined;
  /** The HTTP status of the SDK's error, when it is one. */
  status: number | undefined;
  message: string;
}
