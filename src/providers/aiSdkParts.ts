import {
  CleanturnError,
  type FinishReason,
  type ProviderEvent,
  type ToolCallEvent,
  type UsageEvent,
} from 'cleanturn';
import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import { ProviderError } from './errors.js';
import { isRecord } from './shared.js';

/** A piece of answer text: `text` in `streamText` parts, `delta` in UI message chunks. */
export interface AiSdkTextDeltaPart {
  type: 'text-delta';
  text?: string;
  delta?: string;
}

/**
 * A whole tool call: `tool-call` in `streamText` parts, `tool-input-available` in UI message chunks. `input` is
 * the parsed (and validated, possibly repaired) arguments.
 */
export interface AiSdkToolCallPart {
  type: 'tool-call' | 'tool-input-available';
  toolCallId: string;
  toolName: string;
  input?: unknown;
  /** The provider ran the tool itself (a server tool): nothing for the client to run. */
  providerExecuted?: boolean;
  /** `streamText` could not parse or validate the call (unknown tool, arguments not JSON or not the schema). */
  invalid?: boolean;
  /** Why it is invalid. */
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
 * One part of a Vercel AI SDK stream: a `streamText` part (`result.fullStream`, or `result.stream` in AI SDK 7)
 * or a UI message stream chunk (what `toUIMessageStream()` yields and a `data:` line of the UI message stream
 * parses to; its closing `[DONE]` is accepted and ignored). Only the fields the adapter reads are listed; other
 * part types are accepted and ignored.
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
  /**
   * The error's type or code when it has one (`overloaded_error`, `server_error`…), `aborted` for an `abort`
   * part, `invalid_tool_call` for a call the SDK could not parse or validate.
   */
  code: string | undefined;
  /** The HTTP status, when the error carries one (`APICallError.statusCode`). */
  status: number | undefined;
  message: string;
  /** The error as the part carried it (`error`, `errorText` or the abort `reason`). */
  error: unknown;
}

/** Options of {@link aiSdkParts}. */
export interface AiSdkPartsOptions {
  /**
   * Decides whether an error deserves a new attempt; return `undefined` to keep the default (see
   * {@link aiSdkParts}).
   */
  retryable?: (error: AiSdkErrorInfo) => boolean | undefined;
}

/**
 * Turns a Vercel AI SDK stream (`streamText` parts or UI message chunks) into neutral {@link ProviderEvent}s.
 *
 * `text-delta` becomes `text`. The SDK gives tool calls whole, parsed and validated: `tool-call` and
 * `tool-input-available` become whole `tool-call`s (a repeated call id is ignored), released at the end of
 * their step (`finish-step`, or `finish`). A call that the SDK ran itself (the tool has an `execute`, so a
 * `tool-result` or `tool-error` followed, or its run was denied) is not released: it already ran, and must not
 * run again. Give state-changing tools no `execute` when cleanturn should run them: the SDK runs a tool as soon
 * as its call is complete, even in an attempt that fails later. The `tool-input-start`, `-delta` and `-end`
 * previews are not forwarded: the whole call always follows them, and forwarding both would double every call.
 * `finish-step` usage becomes `usage` (summed over the steps so far); `finish` becomes `usage` (the SDK's
 * `totalUsage`, when it differs) and `finish`, whose `reason` is the SDK's (already neutral; `unknown` → `other`;
 * `stop` → `tool-calls` when the last step released a call; missing → `tool-calls` or `stop`) and `raw` the
 * provider's `rawFinishReason`.
 *
 * - `error` errors the stream with a {@link ProviderError}. By default it is retryable unless the error says
 *   otherwise: an `APICallError`'s `isRetryable`, a type or code such as `invalid_request_error`, or a 4xx
 *   status other than 408, 409 and 429. A masked UI `errorText` counts as retryable. Source errors with an
 *   `isRetryable` flag are wrapped the same way; others pass through unchanged.
 * - `abort` means the caller stopped the turn: it errors the stream with a ProviderError (code `aborted`) that
 *   is not retryable, so that the pipeline does not re-run what the user cancelled. The exception is an abort
 *   by `streamText`'s own `timeout` (reason `… timeout of <n>ms exceeded`): a stall, retryable.
 * - A call `streamText` marked `invalid` (or a `tool-input-error` chunk) errors the stream with a retryable
 *   ProviderError (code `invalid_tool_call`): a new generation usually makes a valid call, and an invalid one
 *   must not reach a tool. Calls the provider ran itself (`providerExecuted`) are not emitted.
 * - `reset-step` (UI message stream, written before each attempt of a durable step) becomes a `retry` when
 *   something was emitted since the last one, so a retried step never glues onto its failed attempt. cleanturn
 *   attempts span the whole turn: the retry voids earlier steps' text too.
 * - Unknown part types are ignored. A stream that ends without `finish` emits none: put `requireFinish()`
 *   after it. Everything after `finish` is ignored, and a source error after it completes the stream: nothing
 *   of an attempt follows its finish.
 *
 * ```text
 * source:       -t-i-d-c-s----f-|    t: text-delta, i d: tool-input-start/-delta, c: tool-call,
 *          aiSdkParts()                s: finish-step, f: finish
 * result:       -T-------(KU)-F-|    T: text, K: whole tool-call, released with its step, U: the step's usage
 * ```
 *
 * State: the call ids seen, the step's held calls and the ids the SDK ran, whether the step released a call,
 * the usage of the finished steps, whether anything was emitted since the last retry.
 *
 * ## Example
 * ```ts
 * import { createOpenAI } from '@ai-sdk/openai';
 * import { streamText, type TextStreamPart, tool } from 'ai';
 * import { defer } from 'rxjs';
 * import { z } from 'zod';
 * import { accumulateTurn, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { aiSdkParts } from 'cleanturn/providers';
 *
 * const model = createOpenAI({ apiKey: process.env.OPENAI_API_KEY }).chat('gpt-4o');
 * const tools = { issue_refund: tool({ inputSchema: z.object({ order_id: z.string(), amount: z.string() }) }) };
 * const turn$ = defer(
 *   // fullStream is a ReadableStream and an async iterable: the annotation picks the iterable for RxJS
 *   (): AsyncIterable<TextStreamPart<typeof tools>> =>
 *     streamText({ model, tools, prompt: 'Please refund order ORD-7781.', maxRetries: 0 }).fullStream,
 * ).pipe(
 *   aiSdkParts(),
 *   requireFinish(),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * turn$.pipe(accumulateTurn()).subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link ProviderError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from AI SDK parts to provider events.
 */
export function aiSdkParts(
  options: AiSdkPartsOptions = {},
): OperatorFunction<AiSdkStreamPart | '[DONE]', ProviderEvent> {
  return function aiSdkPartsOperator(source) {
    return new Observable<ProviderEvent>((subscriber) => {
      // Ids of the calls seen in this attempt (a repeated call is dropped).
      let callIds = new Set<string>();
      // The current step's calls, held until the step ends: a call the SDK runs itself gets a result first.
      let pending: ToolCallEvent[] = [];
      // Ids of the calls the SDK ran (or was denied to run) itself: a result, an error or a denial followed.
      let ran = new Set<string>();
      // Whether the current step released a call (decides `stop` versus `tool-calls`).
      let stepHadCall = false;
      // Usage summed over the finished steps of this attempt.
      let stepsInput: number | undefined;
      let stepsOutput: number | undefined;
      // Whether text or a call was emitted since the start or the last `reset-step`.
      let emitted = false;
      // Whether the finish was emitted: everything after it is ignored.
      let finished = false;

      const drop = () => {
        callIds = new Set();
        pending = [];
        ran = new Set();
      };
      const fail = (error: unknown) => {
        drop();
        subscriber.error(error);
      };
      // Releases the step's calls that the SDK did not run, in arrival order.
      const release = () => {
        const calls = pending;
        pending = [];
        for (const call of calls) {
          if (ran.has(call.id)) continue;
          stepHadCall = true;
          subscriber.next(call);
        }
      };
      const providerError = (info: AiSdkErrorInfo, fallback: boolean, payload: unknown): ProviderError =>
        new ProviderError('ai-sdk', info.message, {
          retryable: options.retryable?.(info) ?? fallback,
          code: info.code,
          status: info.status,
          payload,
        });
      const emitUsage = (input: number | undefined, output: number | undefined) => {
        if (input === undefined && output === undefined) return;
        const event: UsageEvent = { type: 'usage' };
        if (input !== undefined) event.inputTokens = input;
        if (output !== undefined) event.outputTokens = output;
        subscriber.next(event);
      };

      const subscription = subscribeLinked(source, subscriber, {
        next(part) {
          if (subscriber.closed || finished || part === '[DONE]') return; // nothing follows the finish
          if (!isRecord(part) || typeof part.type !== 'string') {
            fail(notAPart(part));
            return;
          }
          try {
            switch (part.type) {
              case 'text-delta': {
                const { text, delta } = part as AiSdkTextDeltaPart;
                const piece = typeof text === 'string' ? text : delta;
                if (typeof piece === 'string' && piece !== '') {
                  emitted = true;
                  subscriber.next({ type: 'text', text: piece });
                }
                return;
              }
              case 'tool-call':
              case 'tool-input-available': {
                const call = part as AiSdkToolCallPart;
                if (call.providerExecuted === true || callIds.has(call.toolCallId)) return;
                if (call.invalid === true) {
                  const message = errorMessage(call.error) ?? 'the call is invalid';
                  fail(invalidCall(call, message, call.error, providerError));
                  return;
                }
                callIds.add(call.toolCallId);
                emitted = true;
                pending.push({
                  type: 'tool-call',
                  id: call.toolCallId,
                  name: call.toolName,
                  args: call.input ?? {},
                });
                return;
              }
              case 'tool-result':
              case 'tool-error':
              case 'tool-output-available':
              case 'tool-output-error':
              case 'tool-output-denied': {
                const { toolCallId } = part as { toolCallId?: unknown };
                if (typeof toolCallId === 'string') ran.add(toolCallId);
                return;
              }
              case 'tool-input-error': {
                const call = part as AiSdkToolInputErrorPart;
                if (call.providerExecuted === true) return;
                fail(
                  invalidCall(call, call.errorText ?? 'the call is invalid', call.errorText, providerError),
                );
                return;
              }
              case 'start-step':
                stepHadCall = false;
                return;
              case 'finish-step': {
                release();
                const { usage } = part as AiSdkFinishStepPart;
                if (!isRecord(usage)) return;
                if (typeof usage.inputTokens === 'number') stepsInput = (stepsInput ?? 0) + usage.inputTokens;
                if (typeof usage.outputTokens === 'number')
                  stepsOutput = (stepsOutput ?? 0) + usage.outputTokens;
                emitUsage(stepsInput, stepsOutput);
                return;
              }
              case 'finish': {
                finished = true;
                release(); // calls of a stream without finish-step parts
                const { finishReason, rawFinishReason, totalUsage } = part as AiSdkFinishPart;
                if (isRecord(totalUsage)) {
                  const input =
                    typeof totalUsage.inputTokens === 'number' ? totalUsage.inputTokens : undefined;
                  const output =
                    typeof totalUsage.outputTokens === 'number' ? totalUsage.outputTokens : undefined;
                  if (input !== stepsInput || output !== stepsOutput) emitUsage(input, output);
                }
                const reason = finishReasonOf(finishReason, stepHadCall);
                subscriber.next(
                  typeof rawFinishReason === 'string'
                    ? { type: 'finish', reason, raw: rawFinishReason }
                    : { type: 'finish', reason },
                );
                return;
              }
              case 'error': {
                const { error, errorText } = part as AiSdkErrorPart;
                const info =
                  typeof errorText === 'string' && error === undefined
                    ? { code: undefined, status: undefined, message: errorText, error: errorText }
                    : errorInfo(error);
                fail(providerError(info, isTransient(error, info), part));
                return;
              }
              case 'abort': {
                const { reason } = part as AiSdkAbortPart;
                const message =
                  typeof reason === 'string' && reason !== '' ? reason : 'the stream was aborted';
                const info: AiSdkErrorInfo = { code: 'aborted', status: undefined, message, error: reason };
                fail(providerError(info, /timeout of \d+ms exceeded/i.test(message), part));
                return;
              }
              case 'reset-step': {
                if (!emitted) return;
                emitted = false;
                drop();
                stepHadCall = false;
                stepsInput = stepsOutput = undefined;
                subscriber.next({ type: 'retry', reason: 'reset-step' });
                return;
              }
              default:
                return; // previews, reasoning, sources, tool results, and types added later
            }
          } catch (thrown) {
            fail(thrown); // a `retryable` option that throws
          }
        },
        error(error) {
          if (finished) {
            subscriber.complete(); // the attempt is complete: an error after its finish changes nothing
            return;
          }
          const flag = isRecord(error) ? error.isRetryable : undefined;
          if (typeof flag !== 'boolean' || error instanceof CleanturnError) {
            fail(error);
            return;
          }
          try {
            fail(providerError(errorInfo(error), flag, error));
          } catch (thrown) {
            fail(thrown);
          }
        },
        complete() {
          drop(); // calls of a step that never ended: void
          subscriber.complete();
        },
      });
      return () => {
        drop();
        subscription.unsubscribe();
      };
    });
  };
}

const neutralReasons = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other']);

function finishReasonOf(finishReason: unknown, stepHadCall: boolean): FinishReason {
  if (typeof finishReason !== 'string' || finishReason === 'stop') return stepHadCall ? 'tool-calls' : 'stop';
  return neutralReasons.has(finishReason) ? (finishReason as FinishReason) : 'other';
}

// The same request fails again.
const permanentCodes = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'billing_error',
  'request_too_large',
  'invalid_api_key',
  'insufficient_quota',
  'context_length_exceeded',
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'NOT_FOUND',
]);

/** The default decision for an `error` part: the error's own flag, then its code, then its status; else yes. */
function isTransient(error: unknown, info: AiSdkErrorInfo): boolean {
  if (isRecord(error) && typeof error.isRetryable === 'boolean') return error.isRetryable;
  if (info.code !== undefined && permanentCodes.has(info.code)) return false;
  if (info.status !== undefined && info.status >= 400 && info.status < 500) {
    return info.status === 408 || info.status === 409 || info.status === 429;
  }
  return true;
}

/**
 * Reads an error of any shape: an `APICallError` (`statusCode`, the parsed body in `data`), a provider's error
 * body (`{ type, code, message }`, possibly wrapped in `{ error: … }`), a string.
 */
function errorInfo(error: unknown): AiSdkErrorInfo {
  let code: string | undefined;
  let status: number | undefined;
  if (isRecord(error)) {
    const data = isRecord(error.data) ? error.data : undefined;
    const bodies = [error, error.error, data?.error, data].filter(isRecord);
    for (const body of bodies) {
      for (const value of [body.code, body.type, body.status]) {
        if (code === undefined && typeof value === 'string' && value !== '') code = value;
      }
    }
    for (const value of [error.statusCode, error.status, ...bodies.map((body) => body.code)]) {
      if (status === undefined && typeof value === 'number') status = value;
    }
  }
  return { code, status, message: errorMessage(error) ?? 'the stream reported an error', error };
}

function errorMessage(error: unknown): string | undefined {
  if (typeof error === 'string') return error === '' ? undefined : error;
  if (!isRecord(error)) return undefined;
  if (typeof error.message === 'string' && error.message !== '') return error.message;
  return isRecord(error.error) ? errorMessage(error.error) : undefined;
}

function invalidCall(
  call: { toolCallId: string; toolName: string },
  message: string,
  error: unknown,
  providerError: (info: AiSdkErrorInfo, fallback: boolean, payload: unknown) => ProviderError,
): ProviderError {
  const info: AiSdkErrorInfo = {
    code: 'invalid_tool_call',
    status: undefined,
    message: `tool call ${call.toolCallId} (${call.toolName}) is invalid: ${message}`,
    error,
  };
  return providerError(info, true, call);
}

function notAPart(input: unknown): CleanturnError {
  const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : String(input);
  return new CleanturnError(
    `aiSdkParts: expected a stream part (an object with a type) or '[DONE]', got ${typeof input} ${shown}`,
    { retryable: false },
  );
}
