import { type FinishReason, isRetryableUpstream, type ProviderEvent, type ToolCallEvent } from 'cleanturn';
import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty } from '../internal/describeError.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { ProviderError, type ProviderPayloadError } from './errors.js';
import {
  argsObjectField,
  countField,
  type FieldSite,
  invalidField,
  isRecord,
  nameField,
  nonEmptyText,
  objectField,
  stringField,
} from './shared.js';

/** A piece of answer text: `text` in `streamText` parts, `delta` in UI message chunks. */
export interface AiSdkTextDeltaPart {
  type: 'text-delta';
  text?: string;
  delta?: string;
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
}

/** The end of one step: its usage, in `streamText` parts (a UI message chunk carries nothing). */
export interface AiSdkFinishStepPart {
  type: 'finish-step';
  usage?: AiSdkUsage;
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

/** An error as the `retryable` option sees it. */
export interface AiSdkErrorInfo {
  /** Its first code word (`overloaded_error`, `UNAVAILABLE`…); `aborted` for an abort; `invalid_tool_call`. */
  code: string | undefined;
  /** The HTTP error status (4xx, 5xx), when the error carries one (`APICallError.statusCode`). */
  status: number | undefined;
  message: string;
  /** The error as the part carried it (`error`, `errorText` or the abort `reason`). */
  error: unknown;
}

/** Options of {@link aiSdkParts}. */
export interface AiSdkPartsOptions {
  /** Decides whether an error deserves a new attempt; `undefined` keeps the default (see {@link aiSdkParts}). */
  retryable?: (error: AiSdkErrorInfo) => boolean | undefined;
}

/**
 * Turns a Vercel AI SDK stream (`streamText` parts or UI message chunks) into neutral {@link ProviderEvent}s.
 *
 * `text-delta` becomes `text`. `tool-call` and `tool-input-available` (whole, parsed and validated by the SDK)
 * become `tool-call`s, a repeated id once, released at the end of their step (`finish-step` or `finish`),
 * except calls the SDK ran itself (a `tool-result`, `tool-error` or denial followed) or the provider ran
 * (`providerExecuted`): they must not run again. Give state-changing tools no `execute`: the SDK runs a tool
 * as soon as its call is complete, even in an attempt that fails later. `tool-input-*` previews are not
 * forwarded. `finish-step` usage becomes `usage`, summed over the steps. `finish` (or the UI stream's `[DONE]`)
 * is the end: `usage` (`totalUsage`, when it differs) and `finish` with the SDK's reason (`unknown` → `other`;
 * `stop` or none → `tool-calls` when the last step released a call) and `raw` = `rawFinishReason`.
 *
 * - `error`: a {@link ProviderError}, retryable as `isRetryableUpstream` (from `cleanturn`) decides: the error's
 *   code words (`code`, `type`, gRPC `status`, also in its body or `data`), then its HTTP status, then the SDK's
 *   `isRetryable`. A masked UI `errorText` is retryable. A source error with an `isRetryable` flag (an
 *   `APICallError`, as `ai@6` throws on a dropped connection) is read the same way; others pass unchanged.
 * - `abort`: the caller stopped the turn, a ProviderError (code `aborted`) that is not retryable, unless it is
 *   `streamText`'s own `timeout` (reason `… timeout of <n>ms exceeded`): a stall, retryable.
 * - A call marked `invalid`, or a `tool-input-error`: a retryable ProviderError (code `invalid_tool_call`).
 * - A tool part whose `toolCallId` or `toolName` is not a non-empty string or whose `input` is not an object,
 *   a part without a string `type`, or a `usage`, `totalUsage` or finish reason of the wrong type: a
 *   {@link ProviderPayloadError} (`invalid-field`), never a drop.
 * - `reset-step` (UI stream, before each attempt of a durable step) becomes a `retry` when something was read
 *   since the last one, so that a retried step never glues onto its failed attempt.
 * - Other part types are ignored. A stream without `finish` has none: put `requireFinish()` after it.
 *
 * ```text
 * source:   -t-i-d-c-s----f-|
 *           aiSdkParts()
 * result:   -T-------(KU)-F-|
 *
 * where
 *   t = {"type":"text-delta","id":"0","text":"Checking order ORD-7781. "}
 *   i = {"type":"tool-input-start","id":"call_1","toolName":"issue_refund"}
 *   d = {"type":"tool-input-delta","id":"call_1","delta":"{\"order_id\":\"ORD-7781\",\"amount\":\"full\"}"}
 *   c = {"type":"tool-call","toolCallId":"call_1","toolName":"issue_refund","input":{"order_id":"ORD-7781","amount":"full"}}
 *   s = {"type":"finish-step","usage":{"inputTokens":142,"outputTokens":31}}
 *   f = {"type":"finish","finishReason":"tool-calls","rawFinishReason":"tool_calls"}
 *   T = text "Checking order ORD-7781. "
 *   K = tool-call call_1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   U = usage in 142 / out 31
 *   F = finish tool-calls
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
 * @see {@link ProviderError} and {@link ProviderPayloadError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from AI SDK parts to provider events.
 */
export function aiSdkParts(
  options: AiSdkPartsOptions = {},
): OperatorFunction<AiSdkStreamPart | '[DONE]', ProviderEvent> {
  return decodeWith<AiSdkStreamPart>(format, (sink) => new AiSdkDecoder(sink, options));
}

const name = 'aiSdkParts';
const format = { name, endMarker: '[DONE]' };

/** The decoder of {@link aiSdkParts}, one per attempt (exported for `decodeAll` in tests). */
export class AiSdkDecoder implements Decoder<AiSdkStreamPart> {
  /** Ids of the calls seen: a repeated call is dropped. */
  private readonly callIds = new Set<string>();
  /** Ids of the calls the SDK ran (or was denied to run) itself: a result, an error or a denial followed. */
  private readonly ran = new Set<string>();
  /** The step's calls, held until it ends: a call the SDK runs itself gets a result first. */
  private pending: ToolCallEvent[] = [];
  /** Whether the last step released a call (`stop` versus `tool-calls`). */
  private stepHadCall = false;
  /** Usage summed over the finished steps. */
  private stepsInput: number | undefined;
  private stepsOutput: number | undefined;
  /** Whether text or a call was read since the start or the last `reset-step`. */
  private emitted = false;

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AiSdkPartsOptions,
  ) {}

  next(part: AiSdkStreamPart): void {
    switch (part.type) {
      case 'text-delta': {
        const { text, delta } = part as AiSdkTextDeltaPart;
        const piece: unknown = text ?? delta;
        if (typeof piece === 'string') {
          if (piece === '') return;
          this.emitted = true;
          this.sink.event({ type: 'text', text: piece });
        } else if (piece != null) throw invalid(part, text == null ? 'delta' : 'text', 'a string');
        return;
      }
      case 'tool-call':
      case 'tool-input-available':
      case 'tool-input-error': {
        const call = part as AiSdkToolCallPart | AiSdkToolInputErrorPart;
        if (call.providerExecuted === true) return;
        const id = callId(call);
        const tool = nameField(call.toolName, { operator: name, payload: call, field: 'toolName' });
        if (call.type === 'tool-input-error' || call.invalid === true) throw this.invalidCall(id, tool, call);
        if (this.callIds.has(id)) return;
        const args = argsObjectField(call.input, { operator: name, payload: call, field: 'input' });
        this.callIds.add(id);
        this.emitted = true;
        this.pending.push({ type: 'tool-call', id, name: tool, args });
        return;
      }
      case 'tool-result':
      case 'tool-error':
      case 'tool-output-available':
      case 'tool-output-error':
      case 'tool-output-denied':
        this.ran.add(callId(part as { toolCallId?: unknown }));
        return;
      case 'finish-step': {
        this.stepHadCall = false;
        this.release();
        const usage = objectField((part as AiSdkFinishStepPart).usage, site(part, 'usage'));
        if (usage === undefined) return;
        const input = countField(usage.inputTokens, site(part, 'usage.inputTokens'));
        const output = countField(usage.outputTokens, site(part, 'usage.outputTokens'));
        if (input !== undefined) this.stepsInput = (this.stepsInput ?? 0) + input;
        if (output !== undefined) this.stepsOutput = (this.stepsOutput ?? 0) + output;
        this.usage(this.stepsInput, this.stepsOutput);
        return;
      }
      case 'finish': {
        this.release(); // calls of a stream without finish-step parts
        const finish = part as AiSdkFinishPart;
        const totalUsage = objectField(finish.totalUsage, site(part, 'totalUsage'));
        if (totalUsage !== undefined) {
          const input = countField(totalUsage.inputTokens, site(part, 'totalUsage.inputTokens'));
          const output = countField(totalUsage.outputTokens, site(part, 'totalUsage.outputTokens'));
          if (input !== this.stepsInput || output !== this.stepsOutput) this.usage(input, output);
        }
        const finishReason = stringField(finish.finishReason, site(part, 'finishReason'));
        const reason = finishReasonOf(finishReason, this.stepHadCall);
        const raw = stringField(finish.rawFinishReason, site(part, 'rawFinishReason'));
        this.sink.finish(raw === undefined ? { type: 'finish', reason } : { type: 'finish', reason, raw });
        this.sink.end();
        return;
      }
      case 'error': // the error itself in streamText parts, a (masked) text in UI chunks
        throw this.upstreamError((part as AiSdkErrorPart).error ?? (part as AiSdkErrorPart).errorText, part);
      case 'abort': {
        const { reason } = part as AiSdkAbortPart;
        const message = nonEmptyText(reason) ?? 'the stream was aborted';
        const info: AiSdkErrorInfo = { code: 'aborted', status: undefined, message, error: reason };
        throw this.providerError(info, /timeout of \d+ms exceeded/i.test(message), part);
      }
      case 'reset-step':
        if (!this.emitted) return;
        this.emitted = this.stepHadCall = false;
        this.callIds.clear();
        this.ran.clear();
        this.pending = [];
        this.stepsInput = this.stepsOutput = undefined;
        this.sink.event({ type: 'retry', reason: 'reset-step' });
        return;
      default: // previews, reasoning, sources, and part types added later
        if (typeof part.type !== 'string') throw invalid(part, 'type', 'a part type (a string)');
    }
  }

  /** A source error with the SDK's `isRetryable` flag (an `APICallError`) is read; others pass unchanged. */
  error(error: unknown): unknown {
    if (typeof readProperty(error, 'isRetryable') === 'boolean') return this.upstreamError(error, error);
    return undefined;
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

  private usage(input: number | undefined, output: number | undefined): void {
    if (input === undefined && output === undefined) return;
    const event: Extract<ProviderEvent, { type: 'usage' }> = { type: 'usage' };
    if (input !== undefined) event.inputTokens = input;
    if (output !== undefined) event.outputTokens = output;
    this.sink.event(event);
  }

  private providerError(info: AiSdkErrorInfo, byDefault: boolean, payload: unknown): ProviderError {
    const { message, code, status, error } = info;
    const retryable = this.options.retryable?.(info) ?? byDefault;
    const cause = isInstance(error, Error) ? error : undefined;
    return new ProviderError('ai-sdk', message, { retryable, code, status, payload, cause });
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

const neutralReasons = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other']);

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
  return { operator: name, payload: part, field };
}

/** A call's id: a non-empty string, or an `invalid-field` error (two missing ids are not "the same call"). */
function callId(part: { toolCallId?: unknown }): string {
  if (typeof part.toolCallId === 'string' && part.toolCallId !== '') return part.toolCallId;
  throw invalid(part, 'toolCallId', 'a tool call id (a non-empty string)');
}

/** The `invalid-field` error of `field` of `payload`, which is not `expected`. */
function invalid(payload: unknown, field: string, expected: string): ProviderPayloadError {
  return invalidField(site(payload, field), expected, isRecord(payload) ? payload[field] : undefined);
}
