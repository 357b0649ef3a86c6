import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty } from '../internal/describeError.js';
import type {
  FinishEvent,
  FinishReason,
  ProviderEvent,
  ProviderOutput,
  ToolCallEvent,
  UsageEvent,
} from '../types.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type ProviderError, upstreamProviderError } from './errors.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isRecord, nonEmptyText } from './shared.js';

/**
 * A piece of answer text (`text-delta`) or of reasoning (`reasoning-delta`): `text` in `streamText` parts, `delta`
 * in UI message chunks; the `*-start` and `*-end` parts around them carry no text. Any of them may carry
 * `providerMetadata` (a thinking signature, encrypted reasoning, a Gemini thought signature).
 */
export interface AiSdkTextDeltaPart {
  type: 'text-delta' | 'text-start' | 'text-end' | 'reasoning-delta' | 'reasoning-start' | 'reasoning-end';
  /** The part's id: deltas of one id are one text or reasoning part. */
  id?: string;
  text?: string;
  delta?: string;
  providerMetadata?: unknown;
}

/** A whole tool call: `tool-call` in `streamText` parts, `tool-input-available` in UI chunks; `input` parsed. */
export interface AiSdkToolCallPart {
  type: 'tool-call' | 'tool-input-available';
  toolCallId: string;
  toolName: string;
  input?: unknown;
  /** The provider ran the tool itself (a server tool): nothing for the client to run. */
  providerExecuted?: boolean;
  /** The SDK could not parse or validate the call (unknown tool, input not JSON or not the schema), and why. */
  invalid?: boolean;
  error?: unknown;
  /** What the provider needs back with the call (a Gemini thought signature, an OpenAI item id). */
  providerMetadata?: unknown;
}

/** A tool call whose input did not parse or validate, as UI message chunks report it. */
export interface AiSdkToolInputErrorPart {
  type: 'tool-input-error';
  toolCallId: string;
  toolName: string;
  input?: unknown;
  errorText?: string;
  providerExecuted?: boolean;
}

/** Token counts as the AI SDK reports them; any field may be undefined. */
export interface AiSdkUsage {
  inputTokens?: number;
  outputTokens?: number;
  /** Of the input, `cacheReadTokens`: read from the provider's cache. */
  inputTokenDetails?: { cacheReadTokens?: number };
  /** Of the output, `reasoningTokens`: spent on reasoning. */
  outputTokenDetails?: { reasoningTokens?: number };
  /** The same counts as older versions name them. */
  cachedInputTokens?: number;
  reasoningTokens?: number;
}

/** The end of one step: its usage and response, in `streamText` parts (a UI message chunk carries nothing). */
export interface AiSdkFinishStepPart {
  type: 'finish-step';
  usage?: AiSdkUsage;
  /** The step's response: `id` is the provider's response id. */
  response?: { id?: string };
}

/** The end of the stream: the last step's finish reason and, in `streamText` parts, the usage of all steps. */
export interface AiSdkFinishPart {
  type: 'finish';
  /** `stop`, `length`, `content-filter`, `tool-calls`, `error`, `other`; optional in UI message chunks. */
  finishReason?: string;
  /** The provider's own finish reason. */
  rawFinishReason?: string;
  totalUsage?: AiSdkUsage;
}

/** An error inside the stream: the error itself in `streamText` parts, a (masked) text in UI message chunks. */
export interface AiSdkErrorPart {
  type: 'error';
  error?: unknown;
  errorText?: string;
}

/** The caller's abort signal fired (or a `streamText` timeout ran out); no `finish` follows. */
export interface AiSdkAbortPart {
  type: 'abort';
  reason?: string;
}

/**
 * One part of a Vercel AI SDK stream: a `streamText` part (`result.fullStream`, `result.stream` in AI SDK 7) or
 * a UI message chunk (`toUIMessageStream()`, a UI stream's `data:` line; its closing `[DONE]` is the end).
 */
export type AiSdkStreamPart =
  | AiSdkTextDeltaPart
  | AiSdkToolCallPart
  | AiSdkToolInputErrorPart
  | AiSdkFinishStepPart
  | AiSdkFinishPart
  | AiSdkErrorPart
  | AiSdkAbortPart
  | { type: string };

/** JSON data, as the AI SDK's messages carry it (`JSONValue` of `@ai-sdk/provider`). */
type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };

/** A stream part's `providerMetadata`, which its message part sends back as `providerOptions`. */
type ProviderOptions = Record<string, Record<string, JsonValue>>;

/** A tool's result as a message part carries it (`ToolResultOutput` of `ai`). */
type ToolResultOutput =
  | { type: 'text'; value: string }
  | { type: 'json'; value: JsonValue }
  | { type: 'error-text'; value: string }
  | { type: 'error-json'; value: JsonValue }
  | { type: 'execution-denied'; reason?: string };

/**
 * What an attempt of {@link aiSdkParts} produced, on its finish: the assistant content parts as the AI SDK's
 * `ModelMessage` takes them (`reasoning`, `text`, `tool-call`, `tool-result`), in stream order. The deltas of a
 * part id are one part, whose `providerOptions` is the part's last `providerMetadata` (how `ai@6` sends a
 * thinking signature, a redacted or encrypted reasoning, a thought signature back). Calls the provider ran
 * (`providerExecuted`) and their results are kept; a step's results of tools the SDK ran itself (tools with an
 * `execute`) follow that step's content. Empty text parts are left out, as `ai@6` leaves them out. Build the
 * next request's messages from it with {@link toAiSdkMessages}.
 */
export interface AiSdkOutput extends ProviderOutput {
  readonly format: 'ai-sdk';
  readonly content: readonly (
    | { readonly type: 'reasoning'; readonly text: string; readonly providerOptions?: ProviderOptions }
    | { readonly type: 'text'; readonly text: string; readonly providerOptions?: ProviderOptions }
    | {
        readonly type: 'tool-call';
        readonly toolCallId: string;
        readonly toolName: string;
        readonly input: JsonValue;
        /** The provider ran it (a server tool): its result is in the content too. */
        readonly providerExecuted?: true;
        readonly providerOptions?: ProviderOptions;
      }
    | {
        readonly type: 'tool-result';
        readonly toolCallId: string;
        readonly toolName: string;
        readonly output: ToolResultOutput;
        readonly providerOptions?: ProviderOptions;
      }
  )[];
}

/** A part of an `AiSdkOutput`'s content. */
type ContentPart = AiSdkOutput['content'][number];

/**
 * An error as the `retryable` option sees it.
 *
 * @inline
 */
export interface AiSdkErrorInfo {
  /** Its first code word (`overloaded_error`, `UNAVAILABLE`…); `aborted` for an abort; `invalid_tool_call`. */
  code: string | undefined;
  /** The HTTP error status (4xx, 5xx), when the error carries one (`APICallError.statusCode`). */
  status: number | undefined;
  message: string;
  /** The error as the part carried it (`error`, `errorText` or the abort `reason`). */
  error: unknown;
}

/**
 * Turns a Vercel AI SDK stream (`streamText` parts or UI message chunks) into neutral {@link ProviderEvent}s.
 *
 * `text-delta` becomes `text`, `reasoning-delta` becomes `reasoning` (the displayable thinking, never text;
 * a redacted or encrypted reasoning has none to show). `tool-call` and `tool-input-available` (whole, parsed
 * and validated by the SDK) become `tool-call`s, a repeated id once, released at the end of their step
 * (`finish-step` or `finish`), except calls the SDK ran itself (a `tool-result`, `tool-error` or denial
 * followed) or the provider ran (`providerExecuted`): they must not run again. Give state-changing tools no
 * `execute`: the SDK runs a tool as soon as its call is complete, even in an attempt that fails later.
 * `tool-input-*` previews are not forwarded. `finish-step` usage becomes `usage`, summed over the steps, with
 * `cachedInputTokens` and `reasoningTokens` (`inputTokenDetails.cacheReadTokens`,
 * `outputTokenDetails.reasoningTokens`, or the older flat names). `finish` (or the UI stream's `[DONE]`) is the
 * end: `usage` (`totalUsage`, when it differs) and `finish` with the SDK's reason (`unknown` → `other`; `stop`
 * or none → `tool-calls` when the last step released a call) and `raw` = `rawFinishReason`.
 *
 * The finish carries what the next request must send back:
 * - `output`: an `AiSdkOutput`, the attempt's content parts in stream order, each part's provider metadata
 *   (Anthropic `signature` and `redactedData`, OpenAI `itemId` and `reasoningEncryptedContent`, Gemini
 *   `thoughtSignature` on text and calls) as its `providerOptions`, provider-run tools with their results;
 *   {@link toAiSdkMessages} turns it into the messages to append. A reset discards it with its attempt.
 * - `responseId`: the last step's `response.id` (or a `response-metadata` part's `id`), when the stream has one.
 * - `paused`: a `rawFinishReason` of `pause_turn` or `compaction` (Anthropic; the SDK says `stop` or `other`)
 *   with no call released is reason `other` and paused: the turn goes on when the output is sent back. The
 *   SDK's reasons are already the neutral ones for a refusal (`content-filter`), a full context window
 *   (`length`) and a malformed call (`error`).
 *
 * - `error`: a {@link ProviderError}, retryable as `isRetryableUpstream` decides: the error's
 *   code words (`code`, `type`, gRPC `status`, also in its body or `data`), then its HTTP status, then the SDK's
 *   `isRetryable`. A masked UI `errorText` is retryable. A source error with an `isRetryable` flag (an
 *   `APICallError`, as `ai@6` throws on a dropped connection) is read the same way; others pass unchanged.
 * - `abort`: the caller stopped the turn, a ProviderError (code `upstream`, `upstreamCode` `aborted`) that is not retryable, unless it is
 *   `streamText`'s own `timeout` (reason `… timeout of <n>ms exceeded`): a stall, retryable.
 * - A call marked `invalid`, or a `tool-input-error`: a retryable ProviderError (code `upstream`, `upstreamCode` `invalid_tool_call`).
 * - A tool part whose `toolCallId` or `toolName` is not a non-empty string or whose `input` is not an object,
 *   a part without a string `type`, a `usage`, `totalUsage`, response id, `providerMetadata` or finish reason
 *   of the wrong type, or a tool output that is not JSON data: a {@link ProviderError}
 *   (`invalid-field`), never a drop.
 * - `reset-step` (UI stream, before each attempt of a durable step) becomes a `retry` when something was read
 *   since the last one, so that a retried step never glues onto its failed attempt.
 * - Other part types are ignored. A stream without `finish` has none: put `requireFinish()` after it.
 *
 * ```text
 * source:   -r-x-g-n-t-c-h----k-|
 *           aiSdkParts()
 * result:   ---R-----T---(KU)-F-|
 *
 * where
 *   r = {"type":"reasoning-start","id":"r0"}
 *   x = {"type":"reasoning-delta","id":"r0","text":"A damaged book: a full refund."}
 *   g = {"type":"reasoning-delta","id":"r0","text":"","providerMetadata":{"anthropic":{"signature":"EqQBCkYIBxgC"}}}
 *   n = {"type":"reasoning-end","id":"r0"}
 *   t = {"type":"text-delta","id":"0","text":"Checking order ORD-7781. "}
 *   c = {"type":"tool-call","toolCallId":"call_1","toolName":"issue_refund","input":{"order_id":"ORD-7781","amount":"full"}}
 *   h = {"type":"finish-step","response":{"id":"msg_01K2JbSU","modelId":"claude-sonnet-4-5"},"usage":{"inputTokens":2212,"inputTokenDetails":{"cacheReadTokens":1800},"outputTokens":188}}
 *   k = {"type":"finish","finishReason":"tool-calls","rawFinishReason":"tool_use"}
 *   R = reasoning "A damaged book: a full refund."
 *   T = text "Checking order ORD-7781. "
 *   K = tool-call call_1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   U = usage in 2212 (1800 cached) / out 188
 *   F = finish tool-calls, response msg_01K2JbSU, output ai-sdk [reasoning, text, tool-call]
 * ```
 *
 * Every case of `marbles/aiSdkParts.marbles.ts`, with pictures: `docs/operators/aiSdkParts.md`.
 *
 * ## Example
 * ```ts
 * import { createOpenAI } from '@ai-sdk/openai';
 * import { streamText, type TextStreamPart, tool } from 'ai';
 * import { defer } from 'rxjs';
 * import { z } from 'zod';
 * import { accumulateTurn, attemptPipeline, turnPipeline } from 'cleanturn';
 * import { aiSdkParts } from 'cleanturn/providers';
 *
 * const model = createOpenAI({ apiKey: process.env.OPENAI_API_KEY }).chat('gpt-4o');
 * const tools = { issue_refund: tool({ inputSchema: z.object({ order_id: z.string(), amount: z.string() }) }) };
 * const turn$ = defer(
 *   // fullStream is a ReadableStream and an async iterable: the annotation picks the iterable for RxJS
 *   (): AsyncIterable<TextStreamPart<typeof tools>> =>
 *     streamText({ model, tools, prompt: 'Please refund order ORD-7781.', maxRetries: 0 }).fullStream,
 * ).pipe(attemptPipeline(aiSdkParts()), turnPipeline({ turnId: 'turn-42', retry: 2 }));
 * turn$.pipe(accumulateTurn()).subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link ProviderError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from AI SDK parts to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function aiSdkParts(
  options?: AdapterOptions<AiSdkErrorInfo>,
): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith({ name: operator, endMarker: '[DONE]' }, (sink) => new AiSdkPartsDecoder(sink, options));
}

const operator = 'aiSdkParts';

/** The decoder behind {@link aiSdkParts}: one attempt of an AI SDK stream (exported for `decodeAll` in tests). */
export class AiSdkPartsDecoder implements Decoder<AiSdkStreamPart> {
  /** Ids of the calls seen: a repeated call is dropped. */
  private readonly callIds = new Set<string>();
  /** Ids of the calls the SDK ran (or was denied to run) itself: a result, an error or a denial followed. */
  private readonly ran = new Set<string>();
  /** The step's calls, held until it ends: a call the SDK runs itself gets a result first. */
  private pending: ToolCallEvent[] = [];
  /** Whether the last step released a call (`stop` versus `tool-calls`). */
  private stepHadCall = false;
  /** Usage summed over the finished steps. */
  private steps: Counts = {};
  /** Whether text, reasoning, a call or anything of the output was read since the start or the last `reset-step`. */
  private emitted = false;
  /** The attempt's content so far, in stream order; its text and reasoning parts grow with their deltas. */
  private content: Building[] = [];
  /** The text parts and the reasoning parts of the step still open, by part id. */
  private readonly openText = new Map<string, Growing>();
  private readonly openReasoning = new Map<string, Growing>();
  /** The calls of the output, by id: a result is filed under its call. */
  private readonly calls = new Map<string, Extract<Building, { type: 'tool-call' }>>();
  /** The step's results of tools the SDK ran itself: they follow the step's content, in call order. */
  private stepResults: Extract<Building, { type: 'tool-result' }>[] = [];
  /** The provider's id of the last response (`finish-step`'s `response.id`, or a `response-metadata` part). */
  private responseId: string | undefined;

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AdapterOptions<AiSdkErrorInfo> = {},
  ) {}

  /** A part, by its type, to the reader of its kind; other types are ignored, a part with no string `type` fails. */
  next(part: AiSdkStreamPart): void {
    switch (part.type) {
      case 'text-start':
      case 'text-delta':
      case 'text-end':
      case 'reasoning-start':
      case 'reasoning-delta':
      case 'reasoning-end':
        this.piece(part as AiSdkTextDeltaPart);
        return;
      case 'tool-call':
      case 'tool-input-available':
      case 'tool-input-error':
        this.toolCall(part as AiSdkToolCallPart | AiSdkToolInputErrorPart);
        return;
      case 'tool-result':
      case 'tool-error':
      case 'tool-output-available':
      case 'tool-output-error':
      case 'tool-output-denied':
        this.toolOutcome(part as AiSdkResultPart);
        return;
      case 'start-step':
        this.endStep();
        return;
      case 'finish-step':
        this.finishStep(part as AiSdkFinishStepPart);
        return;
      case 'response-metadata': // a model's own stream part (`doStream`), as middleware sees it
        this.responseId = read.string((part as { id?: unknown }).id, site(part, 'id')) ?? this.responseId;
        return;
      case 'finish':
        this.finish(part as AiSdkFinishPart);
        return;
      case 'error': // the error itself in streamText parts, a (masked) text in UI chunks
        throw this.upstreamError((part as AiSdkErrorPart).error ?? (part as AiSdkErrorPart).errorText, part);
      case 'abort':
        throw this.aborted(part as AiSdkAbortPart);
      case 'reset-step':
        this.resetStep();
        return;
      default: // previews, sources, files, and part types added later
        if (typeof part.type !== 'string') throw invalid(part, 'type', 'a part type (a string)');
    }
  }

  /** A source error with the SDK's `isRetryable` flag (an `APICallError`) is read; others pass unchanged. */
  error(error: unknown): unknown {
    if (typeof readProperty(error, 'isRetryable') === 'boolean') return this.upstreamError(error, error);
    return undefined;
  }

  /**
   * A `text-*` or `reasoning-*` part: a delta is an event (when it has text) and grows its content part; a start
   * opens a part, an end closes it; each may bring the part's provider metadata (the last one wins, as in `ai`).
   */
  private piece(part: AiSdkTextDeltaPart): void {
    const kinds = pieceKinds[part.type];
    const kind = kinds[0];
    const stage = kinds[1];
    let piece: string | undefined;
    if (stage === 'delta') {
      const { text, delta } = part;
      const value: unknown = text ?? delta;
      if (value != null && typeof value !== 'string')
        throw invalid(part, text == null ? 'delta' : 'text', 'a string');
      piece = value ?? undefined;
    }
    const metadata = providerOptionsOf(part);
    const key = typeof part.id === 'string' ? part.id : '';
    const opened = kind === 'text' ? this.openText : this.openReasoning;
    let open = stage === 'start' ? undefined : opened.get(key);
    if (open === undefined && (stage !== 'end' || metadata !== undefined)) {
      open = kind === 'text' ? { type: 'text', text: '' } : { type: 'reasoning', text: '' };
      this.content.push(open);
      opened.set(key, open);
    }
    if (open !== undefined) {
      if (piece !== undefined) open.text += piece;
      if (metadata !== undefined) {
        open.metadata = metadata;
        this.emitted = true;
      }
    }
    if (stage === 'end') opened.delete(key);
    if (piece === undefined || piece === '') return;
    this.emitted = true;
    this.sink.event({ type: kind, text: piece });
  }

  /**
   * A whole call (`tool-call`, `tool-input-available`): held to the end of its step and put into the output (a
   * repeated id once, a provider-run one never released); one marked `invalid`, or a `tool-input-error`, fails.
   */
  private toolCall(call: AiSdkToolCallPart | AiSdkToolInputErrorPart): void {
    if (call.providerExecuted === true) {
      if (call.type !== 'tool-input-error') this.providerCall(call);
      return;
    }
    const id = callId(call);
    const tool = read.name(call.toolName, { operator, payload: call, field: 'toolName' });
    if (call.type === 'tool-input-error' || call.invalid === true) throw this.invalidCall(id, tool, call);
    if (this.callIds.has(id)) return;
    const args = read.argsObject(call.input, { operator, payload: call, field: 'input' });
    this.callIds.add(id);
    this.emitted = true;
    this.pending.push({ type: 'tool-call', id, name: tool, args });
    this.record(
      { type: 'tool-call', toolCallId: id, toolName: tool, input: json(args, call, 'input') },
      call,
    );
  }

  /** A tool's result, error or denial: the SDK ran (or was denied to run) the call, which must not run again. */
  private toolOutcome(part: AiSdkResultPart): void {
    const id = callId(part);
    this.ran.add(id);
    this.result(id, part);
  }

  /** `finish-step`: the step's calls are released, its parts close; its response id and usage are read. */
  private finishStep(part: AiSdkFinishStepPart): void {
    this.stepHadCall = false;
    this.release();
    this.endStep();
    const { usage, response } = part;
    const id = read.string(read.object(response, site(part, 'response'))?.id, site(part, 'response.id'));
    if (id !== undefined) this.responseId = id;
    const counts = readUsage(usage, part, 'usage');
    if (counts === undefined) return;
    this.steps = add(this.steps, counts);
    this.usage(this.steps);
  }

  /** `finish`, the end: the total usage (when it differs from the steps'), the finish with the output, the end. */
  private finish(part: AiSdkFinishPart): void {
    this.release(); // calls of a stream without finish-step parts
    this.endStep();
    const total = readUsage(part.totalUsage, part, 'totalUsage');
    if (total !== undefined && !same(total, this.steps)) this.usage(total);
    const finishReason = read.string(part.finishReason, site(part, 'finishReason'));
    const raw = read.string(part.rawFinishReason, site(part, 'rawFinishReason'));
    // Anthropic's pause_turn (the SDK says stop) and compaction: the turn goes on when the output goes back.
    const paused = !this.stepHadCall && (raw === 'pause_turn' || raw === 'compaction');
    const event: FinishEvent = {
      type: 'finish',
      reason: paused ? 'other' : finishReasonOf(finishReason, this.stepHadCall),
    };
    if (raw !== undefined) event.raw = raw;
    if (paused) event.paused = true;
    if (this.responseId !== undefined) event.responseId = this.responseId;
    event.output = this.output();
    this.sink.finish(event);
    this.sink.end();
  }

  /** `abort`: not retryable, unless it is `streamText`'s own `timeout` (a stall). */
  private aborted(part: AiSdkAbortPart): ProviderError {
    const { reason } = part;
    const message = nonEmptyText(reason) ?? 'the stream was aborted';
    const info: AiSdkErrorInfo = { code: 'aborted', status: undefined, message, error: reason };
    return this.providerError(info, /timeout of \d+ms exceeded/i.test(message), part);
  }

  /**
   * `reset-step`, before each attempt of a durable step: when something was read since the last one, all of it
   * is dropped and a `retry` goes out, so that a retried step never glues onto its failed attempt.
   */
  private resetStep(): void {
    if (!this.emitted) return;
    this.emitted = this.stepHadCall = false;
    this.callIds.clear();
    this.ran.clear();
    this.pending = [];
    this.steps = {};
    this.content = [];
    this.openText.clear();
    this.openReasoning.clear();
    this.calls.clear();
    this.stepResults = [];
    this.responseId = undefined;
    this.sink.event({ type: 'retry', reason: 'reset-step' });
  }

  /** A call the provider ran (a server tool): never released, kept in the output with its result. */
  private providerCall(call: AiSdkToolCallPart): void {
    const id = callId(call);
    const tool = read.name(call.toolName, { operator, payload: call, field: 'toolName' });
    if (this.calls.has(id)) return;
    const input = call.input === undefined ? {} : json(call.input, call, 'input');
    this.record({ type: 'tool-call', toolCallId: id, toolName: tool, input, providerExecuted: true }, call);
  }

  /** Puts a call into the output, with the part's provider metadata. */
  private record(call: Extract<Building, { type: 'tool-call' }>, part: { providerMetadata?: unknown }): void {
    const metadata = providerOptionsOf(part);
    if (metadata !== undefined) call.metadata = metadata;
    this.calls.set(call.toolCallId, call);
    this.content.push(call);
    this.emitted = true;
  }

  /**
   * A tool's result, error or denial, as its message part (`ai@6`'s own conversion): filed after a provider-run
   * call, or held to the end of the step for a tool the SDK ran. A result of a call this attempt does not have,
   * a second result and a preliminary one are not part of the output.
   */
  private result(id: string, part: AiSdkResultPart): void {
    const call = this.calls.get(id);
    if (call === undefined || call.answered === true || part.preliminary === true) return;
    const byProvider = call.providerExecuted === true;
    let output: ToolResultOutput;
    switch (part.type) {
      case 'tool-result':
      case 'tool-output-available':
        output =
          typeof part.output === 'string'
            ? { type: 'text', value: part.output }
            : { type: 'json', value: json(part.output, part, 'output') };
        break;
      case 'tool-error':
        output = byProvider
          ? {
              type: 'error-json',
              value: isInstance(part.error, Error) ? part.error.message : json(part.error, part, 'error'),
            }
          : {
              type: 'error-text',
              value: errorMessage(part.error) ?? JSON.stringify(json(part.error, part, 'error')),
            };
        break;
      case 'tool-output-error': {
        const text = read.string(part.errorText, site(part, 'errorText')) ?? 'the tool failed';
        output = byProvider ? { type: 'error-json', value: text } : { type: 'error-text', value: text };
        break;
      }
      default:
        output = { type: 'execution-denied' };
    }
    const result: Extract<Building, { type: 'tool-result' }> = {
      type: 'tool-result',
      toolCallId: id,
      toolName: call.toolName,
      output,
    };
    const metadata = providerOptionsOf(part);
    if (metadata !== undefined) result.metadata = metadata;
    call.answered = true;
    this.emitted = true;
    if (byProvider) this.content.push(result);
    else this.stepResults.push(result);
  }

  /** The end of a step: its open parts close, the results of the tools the SDK ran follow its content. */
  private endStep(): void {
    this.openText.clear();
    this.openReasoning.clear();
    if (this.stepResults.length === 0) return;
    const order = (result: { toolCallId: string }) => {
      const call = this.calls.get(result.toolCallId);
      return call === undefined ? -1 : this.content.indexOf(call);
    };
    this.content.push(...this.stepResults.sort((a, b) => order(a) - order(b)));
    this.stepResults = [];
  }

  /** The finished attempt's output: fresh parts, their provider metadata as JSON data, empty text parts left out. */
  private output(): AiSdkOutput {
    const content: ContentPart[] = [];
    for (const part of this.content) {
      if (part.type === 'text' && part.text === '') continue;
      const { answered: _, metadata, ...copy } = part as Building & { answered?: boolean };
      const options =
        metadata && (json(metadata.value, metadata.part, 'providerMetadata') as ProviderOptions);
      content.push((options === undefined ? copy : { ...copy, providerOptions: options }) as ContentPart);
    }
    return { format: 'ai-sdk', content };
  }

  /** Releases the step's calls that the SDK did not run, in arrival order. */
  private release(): void {
    const calls = this.pending;
    this.pending = [];
    for (const call of calls) {
      if (this.ran.has(call.id)) continue;
      this.stepHadCall = true;
      this.sink.event(call);
    }
  }

  /** A usage event of `counts`, when it has any count. */
  private usage(counts: Counts): void {
    const event: UsageEvent = { type: 'usage' };
    if (counts.input !== undefined) event.inputTokens = counts.input;
    if (counts.output !== undefined) event.outputTokens = counts.output;
    if (counts.cached !== undefined) event.cachedInputTokens = counts.cached;
    if (counts.reasoning !== undefined) event.reasoningTokens = counts.reasoning;
    if (Object.keys(event).length > 1) this.sink.event(event);
  }

  /** The ProviderError of `info`: the `retryable` option decides, else `byDefault`. */
  private providerError(info: AiSdkErrorInfo, byDefault: boolean, payload: unknown): ProviderError {
    const { message, code, status, error } = info;
    const retryable = this.options.retryable?.(info) ?? byDefault;
    const cause = isInstance(error, Error) ? error : undefined;
    return upstreamProviderError('ai-sdk', message, {
      retryable,
      upstreamCode: code,
      status,
      payload,
      cause,
    });
  }

  /**
   * Any error, by the one table: an `APICallError` (`statusCode`, `isRetryable`, `data`), a body, a string. Its
   * fields are read without throwing: the error may be an SDK's, with getters.
   */
  private upstreamError(error: unknown, payload: unknown): ProviderError {
    const data = readProperty(error, 'data');
    const codes: (string | undefined)[] = [];
    let status = errorStatus(readProperty(error, 'statusCode')) ?? errorStatus(readProperty(error, 'status'));
    for (const body of [error, readProperty(error, 'error'), readProperty(data, 'error'), data]) {
      if (!isRecord(body)) continue;
      const code = readProperty(body, 'code');
      codes.push(
        nonEmptyText(code),
        nonEmptyText(readProperty(body, 'type')),
        nonEmptyText(readProperty(body, 'status')),
      );
      status ??= errorStatus(code);
    }
    const retryable = readProperty(error, 'isRetryable');
    const flag = typeof retryable === 'boolean' ? retryable : undefined;
    const message = errorMessage(error) ?? 'the stream reported an error';
    const info: AiSdkErrorInfo = { code: codes.find((code) => code !== undefined), status, message, error };
    return this.providerError(info, isRetryableUpstream({ codes, status, otherwise: flag }), payload);
  }

  /** A call the SDK could not parse or validate: retryable, a new generation usually makes a valid one. */
  private invalidCall(id: string, tool: string, call: AiSdkToolCallPart | AiSdkToolInputErrorPart) {
    const error = call.type === 'tool-input-error' ? call.errorText : call.error;
    const message = `tool call ${id} (${tool}) is invalid: ${errorMessage(error) ?? 'the call is invalid'}`;
    return this.providerError({ code: 'invalid_tool_call', status: undefined, message, error }, true, call);
  }
}

/** A part's `providerMetadata` as it came, and the part (copied as JSON data once, for the output). */
interface Metadata {
  value: Record<string, unknown>;
  part: unknown;
}

/**
 * A content part while its attempt streams: text grows, the metadata changes (the last one wins), a call learns
 * that it was answered.
 */
type Building =
  | { type: 'text'; text: string; metadata?: Metadata }
  | { type: 'reasoning'; text: string; metadata?: Metadata }
  | {
      type: 'tool-call';
      toolCallId: string;
      toolName: string;
      input: JsonValue;
      providerExecuted?: true;
      metadata?: Metadata;
      /** A result, error or denial of it was filed (not part of the output). */
      answered?: boolean;
    }
  | {
      type: 'tool-result';
      toolCallId: string;
      toolName: string;
      output: ToolResultOutput;
      metadata?: Metadata;
    };

/** A text or reasoning part being built. */
type Growing = Extract<Building, { type: 'text' | 'reasoning' }>;

/** What each `text-*` and `reasoning-*` part is: the kind of content, and the stage of its part. */
const pieceKinds: Record<
  AiSdkTextDeltaPart['type'],
  readonly ['text' | 'reasoning', 'start' | 'delta' | 'end']
> = {
  'text-start': ['text', 'start'],
  'text-delta': ['text', 'delta'],
  'text-end': ['text', 'end'],
  'reasoning-start': ['reasoning', 'start'],
  'reasoning-delta': ['reasoning', 'delta'],
  'reasoning-end': ['reasoning', 'end'],
};

/** A result, error or denial of a call, in `streamText` parts or UI message chunks. */
interface AiSdkResultPart {
  type: 'tool-result' | 'tool-error' | 'tool-output-available' | 'tool-output-error' | 'tool-output-denied';
  /** The id of the call it answers. */
  toolCallId?: unknown;
  output?: unknown;
  error?: unknown;
  errorText?: unknown;
  /** A result a streaming tool sends before its final one. */
  preliminary?: boolean;
  providerMetadata?: unknown;
}

/** Token counts of a usage: input (of it cached), output (of it reasoning). */
interface Counts {
  input?: number | undefined;
  output?: number | undefined;
  cached?: number | undefined;
  reasoning?: number | undefined;
}

const countNames = ['input', 'output', 'cached', 'reasoning'] as const;

/** The counts of a usage object (`usage`, `totalUsage`): the v6 details first, the older flat names after. */
function readUsage(value: unknown, part: unknown, field: string): Counts | undefined {
  const usage = read.object(value, site(part, field));
  if (usage === undefined) return undefined;
  const at = (path: string) => site(part, `${field}.${path}`);
  const input = read.object(usage.inputTokenDetails, at('inputTokenDetails'));
  const output = read.object(usage.outputTokenDetails, at('outputTokenDetails'));
  return {
    input: read.count(usage.inputTokens, at('inputTokens')),
    output: read.count(usage.outputTokens, at('outputTokens')),
    cached:
      read.count(input?.cacheReadTokens, at('inputTokenDetails.cacheReadTokens')) ??
      read.count(usage.cachedInputTokens, at('cachedInputTokens')),
    reasoning:
      read.count(output?.reasoningTokens, at('outputTokenDetails.reasoningTokens')) ??
      read.count(usage.reasoningTokens, at('reasoningTokens')),
  };
}

/** Two usages summed, count by count; a count neither has stays unknown. */
function add(a: Counts, b: Counts): Counts {
  const sum: Counts = {};
  for (const key of countNames) {
    const x = a[key];
    const y = b[key];
    sum[key] = x === undefined ? y : y === undefined ? x : x + y;
  }
  return sum;
}

/** Whether two usages have the same counts (a `totalUsage` equal to the steps' sum is not sent again). */
function same(a: Counts, b: Counts): boolean {
  return countNames.every((key) => a[key] === b[key]);
}

/** A value as the JSON data it would be on the wire (a Date as its text, `undefined` as null), or an error. */
function json(value: unknown, part: unknown, field: string): JsonValue {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    throw invalid(part, field, 'JSON data');
  }
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/** A part's `providerMetadata` (an object, or an error), for the `providerOptions` of its message part. */
function providerOptionsOf(part: { providerMetadata?: unknown }): Metadata | undefined {
  const given = part.providerMetadata;
  if (given === undefined || given === null) return undefined; // most parts: no site to build
  const value = read.object(given, site(part, 'providerMetadata'));
  return value === undefined ? undefined : { value, part };
}

const neutralReasons = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other']);

/** The neutral reason of the SDK's: `stop` or none is `tool-calls` after a released call, an unknown one `other`. */
function finishReasonOf(finishReason: string | undefined, stepHadCall: boolean): FinishReason {
  if (finishReason === undefined || finishReason === 'stop') return stepHadCall ? 'tool-calls' : 'stop';
  return neutralReasons.has(finishReason) ? (finishReason as FinishReason) : 'other';
}

/** An HTTP status (ai@6's error for a dropped stream carries 200, which the table leaves undecided). */
function errorStatus(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

/** The message of an error or of the error it wraps, three levels deep at most (an error may wrap itself). */
function errorMessage(error: unknown, depth = 0): string | undefined {
  if (!isRecord(error)) return nonEmptyText(error);
  const message = nonEmptyText(readProperty(error, 'message'));
  return message ?? (depth < 3 ? errorMessage(readProperty(error, 'error'), depth + 1) : undefined);
}

/** Where `field` of `part` is, for a reader's error. */
function site(part: unknown, field: string): FieldSite {
  return { operator, payload: part, field };
}

/** A call's id: a non-empty string, or an `invalid-field` error (two missing ids are not "the same call"). */
function callId(part: { toolCallId?: unknown }): string {
  if (typeof part.toolCallId === 'string' && part.toolCallId !== '') return part.toolCallId;
  throw invalid(part, 'toolCallId', 'a tool call id (a non-empty string)');
}

/** The `invalid-field` error of `field` of `payload`, which is not `expected`. */
function invalid(payload: unknown, field: string, expected: string): ProviderError {
  return read.invalid(site(payload, field), expected, isRecord(payload) ? payload[field] : undefined);
}
