import {
  CleanturnError,
  type FinishReason,
  type ProviderEvent,
  ToolCallAssemblyError,
  type UsageEvent,
} from 'cleanturn';
import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from '../internal/subscribeLinked.js';
import { ProviderError } from './errors.js';
import { isRecord } from './shared.js';

/** A path-addressed piece of streamed arguments (Vertex AI with `streamFunctionCallArguments: true`). */
export interface GeminiPartialArg {
  /** Where the value goes, e.g. `$.order_id` or `$.items[0].sku`. */
  jsonPath?: string;
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  nullValue?: string;
  /** More of the same string follows. */
  willContinue?: boolean;
}

/** A `functionCall` part: whole (`name`, `args`), or a piece of a streamed call (`partialArgs`, `willContinue`). */
export interface GeminiFunctionCall {
  /** Optional, and absent in the Gemini API's streams so far: the adapter generates one. */
  id?: string;
  name?: string;
  /** The arguments as a JSON object; absent for a tool without arguments. */
  args?: unknown;
  partialArgs?: GeminiPartialArg[];
  willContinue?: boolean;
}

/** One part of a candidate's content. */
export interface GeminiPart {
  text?: string;
  /** `true` marks reasoning, which is not answer text. */
  thought?: boolean;
  functionCall?: GeminiFunctionCall;
}

/** A candidate of a chunk; the adapter reads the first one (`index` 0 or absent). */
export interface GeminiCandidate {
  index?: number;
  content?: { parts?: GeminiPart[] };
  /** `STOP`, `MAX_TOKENS`, `SAFETY`, `MALFORMED_FUNCTION_CALL`…, on the last chunk. */
  finishReason?: string;
}

/** Token counts, cumulative over the stream. */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
}

/** The error body of a raw JSON error tail `{"error": {…}}`. */
export interface GeminiErrorBody {
  /** An HTTP status, e.g. 503. */
  code?: number;
  message?: string;
  /** A gRPC status name, e.g. `UNAVAILABLE`. */
  status?: string;
}

/**
 * One chunk of `streamGenerateContent?alt=sse`: what an SSE `data:` line parses to, or what the official SDK's
 * `generateContentStream` yields (a `GenerateContentResponse`). A raw error tail `{"error": {…}}`, parsed, is
 * accepted too. Only the fields the adapter reads are listed.
 */
export interface GeminiChunk {
  candidates?: GeminiCandidate[];
  usageMetadata?: GeminiUsageMetadata;
  /** Set when the prompt itself was blocked: no candidates follow. */
  promptFeedback?: { blockReason?: string };
  error?: GeminiErrorBody;
}

/** A Gemini error as the `retryable` option sees it. */
export interface GeminiErrorInfo {
  /** The HTTP status (`error.code`, or the SDK's `ApiError.status`), when known. */
  code: number | undefined;
  /** The gRPC status name (`UNAVAILABLE`, `INVALID_ARGUMENT`…), when known. */
  status: string | undefined;
  message: string;
}

/** Options of {@link geminiContent}. */
export interface GeminiContentOptions {
  /**
   * Decides whether an error deserves a new attempt; return `undefined` to keep the default: `UNAVAILABLE`,
   * `RESOURCE_EXHAUSTED`, `INTERNAL`, `DEADLINE_EXCEEDED`, `ABORTED`, HTTP 408, 409, 429 and any code outside 4xx yes;
   * `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `PERMISSION_DENIED`, `UNAUTHENTICATED`, `NOT_FOUND` and other
   * 4xx no; anything else yes.
   */
  retryable?: (error: GeminiErrorInfo) => boolean | undefined;
}

/** A call whose arguments stream as path-addressed values. */
interface StreamedCall {
  id: string | undefined;
  name: string | undefined;
  /** The values by JSON path, in the order their paths first appeared; strings as pieces, joined once. */
  values: Map<
    string,
    { path: (string | number)[]; parts: string[] } | { path: (string | number)[]; value: unknown }
  >;
}

/**
 * Turns a Gemini `streamGenerateContent` stream into neutral {@link ProviderEvent}s.
 *
 * Text parts become `text`; parts marked `thought: true` are reasoning and are dropped. `functionCall` parts
 * arrive whole, so each becomes a whole `tool-call` (missing `args` mean `{}`). Gemini sends no call ids: a
 * call without one gets `gemini-call-<n>`, where `n` counts the calls of the attempt from 0 in arrival order,
 * so the same stream always gives the same ids (they change between attempts, as provider ids do; effect keys
 * do not). Vertex AI's streamed arguments (`willContinue`, `partialArgs` by JSON path) are collected and emitted
 * as one `tool-call` when the closing empty `functionCall` arrives, or at the finish if it never does.
 * `usageMetadata` becomes `usage` whenever the counts change (input: prompt + tool-use prompt; output:
 * candidates + thoughts). The first `finishReason` becomes `finish`, with the provider's value as `raw`:
 *
 * | `finishReason` | `reason` |
 * |---|---|
 * | `STOP` | `tool-calls` when the attempt had a `functionCall`, else `stop` (Gemini has no tool-specific reason) |
 * | `MAX_TOKENS` | `length` |
 * | `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_*` filters (see below) | `content-filter` |
 * | `MALFORMED_FUNCTION_CALL` | `error` |
 * | `CONTINUATION` | `other`: the answer is not complete; continue it with the returned continuation token |
 * | anything else | `other` |
 *
 * The image filters are `IMAGE_SAFETY`, `IMAGE_PROHIBITED_CONTENT` and `IMAGE_RECITATION`.
 *
 * - A blocked prompt (`promptFeedback.blockReason`, no candidates) finishes with `content-filter` (`other` for
 *   `OTHER` and unspecified reasons), with the block reason as `raw`. Chunks with empty `candidates` are skipped.
 * - An error tail `{"error": {code, message, status}}` errors the stream with a {@link ProviderError}:
 *   `UNAVAILABLE`/503, `RESOURCE_EXHAUSTED`/429 and 5xx are retryable; `INVALID_ARGUMENT`/400 and 403 are not.
 *   Errors of the source with a numeric `status` (the SDK's `ApiError`, which the SDK throws for such a tail)
 *   are classified the same way; other source errors pass through unchanged.
 * - Only the first candidate is read. A stream that ends without `finishReason` emits no `finish`: put
 *   `requireFinish()` after it. Chunks after the one with `finishReason` are ignored (it carries the final
 *   usage), and a source error after it completes the stream: nothing of an attempt follows its finish.
 *
 * ```text
 * source:       -a-b-c-|     a: text part, b: functionCall part (no id), c: finishReason STOP
 *          geminiContent()
 * result:       -A-K-F-|     A: text, K: whole tool-call gemini-call-0, F: finish tool-calls (raw STOP)
 * ```
 *
 * State: the number of calls so far, an open streamed call, the last usage emitted, whether it finished.
 *
 * ## Example
 * ```ts
 * import { GoogleGenAI } from '@google/genai';
 * import { concatMap, defer } from 'rxjs';
 * import { accumulateTurn, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 * import { geminiContent } from 'cleanturn/providers';
 *
 * const ai = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY }); // no retryOptions: the pipeline retries
 * const turn$ = defer(() =>
 *   ai.models.generateContentStream({
 *     model: 'gemini-2.5-flash',
 *     contents: 'Please refund order ORD-7781: the book arrived damaged.',
 *     config: { tools: [{ functionDeclarations: [{ name: 'issue_refund', parametersJsonSchema: {} }] }] },
 *   }),
 * ).pipe(
 *   concatMap((stream) => stream), // an async generator of chunks
 *   geminiContent(),
 *   requireFinish(),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * turn$.pipe(accumulateTurn()).subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @see {@link ProviderError} for the errors it raises.
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from Gemini chunks to provider events.
 */
export function geminiContent(
  options: GeminiContentOptions = {},
): OperatorFunction<GeminiChunk, ProviderEvent> {
  return function geminiContentOperator(source) {
    return new Observable<ProviderEvent>((subscriber) => {
      // Calls of the attempt so far: the next generated id's number, and whether STOP means tool-calls.
      let calls = 0;
      // A call whose arguments are still streaming (Vertex AI), if one is open.
      let streamed: StreamedCall | undefined;
      // The usage last emitted, to emit only changes.
      let lastInput: number | undefined;
      let lastOutput: number | undefined;
      // Whether the finish was emitted: everything after it is ignored.
      let finished = false;

      const fail = (error: unknown) => {
        streamed = undefined;
        subscriber.error(error);
      };
      const providerError = (info: GeminiErrorInfo, payload: unknown): ProviderError =>
        new ProviderError('gemini', info.message, {
          retryable: options.retryable?.(info) ?? isTransient(info),
          code: info.status,
          status: info.code,
          payload,
        });
      const emitCall = (id: string | undefined, name: string | undefined, args: unknown) => {
        const index = calls++;
        if (name === undefined || name === '') {
          throw new ToolCallAssemblyError('missing-name', {
            index,
            id,
            name: undefined,
            argsText: JSON.stringify(args) ?? '',
          });
        }
        subscriber.next({
          type: 'tool-call',
          id: id !== undefined && id !== '' ? id : `gemini-call-${index}`,
          name,
          args: args ?? {},
        });
      };
      const closeStreamed = () => {
        if (streamed === undefined) return;
        const call = streamed;
        streamed = undefined;
        emitCall(call.id, call.name, buildArgs(call.values));
      };
      const onFunctionCall = (fc: GeminiFunctionCall) => {
        const hasPartials = Array.isArray(fc.partialArgs) && fc.partialArgs.length > 0;
        const named = typeof fc.name === 'string' && fc.name !== '';
        if (streamed !== undefined) {
          if (named) {
            closeStreamed(); // a new call starts: the open one is complete
          } else {
            if (hasPartials) addPartials(streamed, fc.partialArgs as GeminiPartialArg[], calls);
            if (!hasPartials && fc.willContinue !== true) closeStreamed(); // the empty closing part
            return;
          }
        }
        if (fc.willContinue === true) {
          streamed = { id: fc.id, name: fc.name, values: new Map() };
          if (hasPartials) addPartials(streamed, fc.partialArgs as GeminiPartialArg[], calls);
          return;
        }
        if (!named && fc.args === undefined && !hasPartials) return; // a stray empty part
        emitCall(fc.id, fc.name, fc.args);
      };
      const onUsage = (metadata: GeminiUsageMetadata) => {
        const { promptTokenCount, candidatesTokenCount, thoughtsTokenCount, toolUsePromptTokenCount } =
          metadata;
        const input =
          typeof promptTokenCount === 'number'
            ? promptTokenCount + (toolUsePromptTokenCount ?? 0)
            : undefined;
        const output =
          typeof candidatesTokenCount === 'number' || typeof thoughtsTokenCount === 'number'
            ? (candidatesTokenCount ?? 0) + (thoughtsTokenCount ?? 0)
            : undefined;
        if ((input === undefined || input === lastInput) && (output === undefined || output === lastOutput))
          return;
        const event: UsageEvent = { type: 'usage' };
        if (input !== undefined) event.inputTokens = lastInput = input;
        if (output !== undefined) event.outputTokens = lastOutput = output;
        subscriber.next(event);
      };
      const finish = (reason: FinishReason, raw: string) => {
        finished = true;
        subscriber.next({ type: 'finish', reason, raw });
      };

      const subscription = subscribeLinked(source, subscriber, {
        next(chunk) {
          if (subscriber.closed || finished) return; // nothing of the attempt follows its finish
          if (!isRecord(chunk)) {
            fail(notAChunk(chunk));
            return;
          }
          try {
            if (isRecord(chunk.error)) {
              fail(providerError(errorInfo(chunk.error), chunk));
              return;
            }
            const candidate = Array.isArray(chunk.candidates)
              ? chunk.candidates.find((c) => isRecord(c) && (c.index ?? 0) === 0)
              : undefined;
            const parts = candidate?.content?.parts;
            if (Array.isArray(parts)) {
              for (const part of parts) {
                if (subscriber.closed) return;
                if (!isRecord(part)) continue;
                if (isRecord(part.functionCall)) onFunctionCall(part.functionCall);
                else if (typeof part.text === 'string' && part.text !== '' && part.thought !== true) {
                  subscriber.next({ type: 'text', text: part.text });
                }
              }
            }
            if (isRecord(chunk.usageMetadata)) onUsage(chunk.usageMetadata);
            const blocked = isRecord(chunk.promptFeedback) ? chunk.promptFeedback.blockReason : undefined;
            if (candidate !== undefined && typeof candidate.finishReason === 'string') {
              closeStreamed(); // the closing empty part never came
              finish(finishReasonOf(candidate.finishReason, calls > 0), candidate.finishReason);
            } else if (candidate === undefined && typeof blocked === 'string') {
              finish(blockedReasons.has(blocked) ? 'content-filter' : 'other', blocked);
            }
          } catch (error) {
            fail(error);
          }
        },
        error(error) {
          if (finished) {
            subscriber.complete(); // the attempt is complete: an error after its finish changes nothing
            return;
          }
          const status = sdkErrorStatus(error);
          if (status === undefined) {
            fail(error);
            return;
          }
          try {
            fail(providerError(sdkErrorInfo(error as Error, status), error));
          } catch (thrown) {
            fail(thrown);
          }
        },
        complete() {
          streamed = undefined; // a call that never closed, in a stream that never finished: void
          subscriber.complete();
        },
      });
      return () => {
        streamed = undefined;
        subscription.unsubscribe();
      };
    });
  };
}

// Finish reasons that mean the output was filtered.
const filtered = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);
// Prompt block reasons that mean the prompt was filtered.
const blockedReasons = new Set([
  'SAFETY',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'IMAGE_SAFETY',
  'MODEL_ARMOR',
  'JAILBREAK',
]);

function finishReasonOf(finishReason: string, hadCall: boolean): FinishReason {
  if (finishReason === 'STOP') return hadCall ? 'tool-calls' : 'stop';
  if (finishReason === 'MAX_TOKENS') return 'length';
  if (finishReason === 'MALFORMED_FUNCTION_CALL') return 'error';
  return filtered.has(finishReason) ? 'content-filter' : 'other';
}

// A new attempt can succeed.
const transientStatuses = new Set([
  'UNAVAILABLE',
  'RESOURCE_EXHAUSTED',
  'INTERNAL',
  'DEADLINE_EXCEEDED',
  'ABORTED',
]);
// The same request fails again.
const permanentStatuses = new Set([
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'NOT_FOUND',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
]);

/** The default retry decision: by status name, then by HTTP status; unknown errors count as transient. */
function isTransient(info: GeminiErrorInfo): boolean {
  if (info.status !== undefined) {
    if (transientStatuses.has(info.status)) return true;
    if (permanentStatuses.has(info.status)) return false;
  }
  if (info.code !== undefined) {
    const clientError = info.code >= 400 && info.code < 500;
    return !clientError || info.code === 408 || info.code === 409 || info.code === 429;
  }
  return true;
}

function errorInfo(body: GeminiErrorBody): GeminiErrorInfo {
  const code = typeof body.code === 'number' ? body.code : undefined;
  const status = typeof body.status === 'string' && body.status !== '' ? body.status : undefined;
  const message =
    typeof body.message === 'string' && body.message !== ''
      ? body.message
      : (status ?? (code === undefined ? 'the stream reported an error' : `HTTP ${code}`));
  return { code, status, message };
}

/** The HTTP status of an error the source raised, when it has one (the SDK's `ApiError`). */
function sdkErrorStatus(error: unknown): number | undefined {
  if (!(error instanceof Error) || error instanceof CleanturnError) return undefined;
  const { status } = error as { status?: unknown };
  return typeof status === 'number' ? status : undefined;
}

/** The SDK's `ApiError` message is `got status: UNAVAILABLE. {"error":{…}}` for a stream's error tail. */
function sdkErrorInfo(error: Error, code: number): GeminiErrorInfo {
  const match = /^got status: ([A-Z_]+)\. (\{[\s\S]*\})$/.exec(error.message);
  if (match !== null) {
    try {
      const body: unknown = JSON.parse(match[2] as string);
      if (isRecord(body) && isRecord(body.error)) return { ...errorInfo(body.error), code };
    } catch {
      // Not the tail's JSON: fall back to the status name alone.
    }
    return { code, status: match[1], message: error.message };
  }
  return { code, status: undefined, message: error.message };
}

function addPartials(call: StreamedCall, partials: readonly GeminiPartialArg[], index: number): void {
  for (const partial of partials) {
    if (!isRecord(partial)) continue;
    const jsonPath = typeof partial.jsonPath === 'string' ? partial.jsonPath : '';
    const path = parseJsonPath(jsonPath);
    if (path === undefined) {
      throw new ToolCallAssemblyError('invalid-json', {
        index,
        id: call.id,
        name: call.name,
        argsText: `partialArgs at unsupported path ${JSON.stringify(jsonPath)}`,
      });
    }
    const entry = call.values.get(jsonPath);
    if (typeof partial.stringValue === 'string') {
      if (entry !== undefined && 'parts' in entry) entry.parts.push(partial.stringValue);
      else call.values.set(jsonPath, { path, parts: [partial.stringValue] });
    } else if (typeof partial.numberValue === 'number') {
      call.values.set(jsonPath, { path, value: partial.numberValue });
    } else if (typeof partial.boolValue === 'boolean') {
      call.values.set(jsonPath, { path, value: partial.boolValue });
    } else if (partial.nullValue !== undefined) {
      call.values.set(jsonPath, { path, value: null });
    }
  }
}

/** Builds the argument object from path-addressed values; linear in their number and size. */
function buildArgs(values: StreamedCall['values']): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const entry of values.values()) {
    const value = 'parts' in entry ? entry.parts.join('') : entry.value;
    let node: Record<string | number, unknown> = root;
    entry.path.forEach((key, i) => {
      if (i === entry.path.length - 1) {
        node[key] = value;
        return;
      }
      const next = entry.path[i + 1];
      if (!isRecord(node[key])) node[key] = typeof next === 'number' ? [] : {};
      node = node[key] as Record<string | number, unknown>;
    });
  }
  return root;
}

/** `$.a.b[0]['c d']` → `['a', 'b', 0, 'c d']`; undefined for what this reader does not support. */
function parseJsonPath(jsonPath: string): (string | number)[] | undefined {
  if (!jsonPath.startsWith('$')) return undefined;
  const path: (string | number)[] = [];
  const step = /\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/y;
  step.lastIndex = 1;
  while (step.lastIndex < jsonPath.length) {
    const match = step.exec(jsonPath);
    if (match === null) return undefined;
    const [, name, position, single, double] = match;
    if (name !== undefined) path.push(name);
    else if (position !== undefined) path.push(Number(position));
    else path.push((single ?? double ?? '').replace(/\\(.)/g, '$1'));
  }
  return path.length > 0 ? path : undefined;
}

function notAChunk(input: unknown): CleanturnError {
  const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : String(input);
  return new CleanturnError(
    `geminiContent: expected a parsed chunk (an object), got ${typeof input} ${shown}; JSON.parse the SSE data first`,
    { retryable: false },
  );
}
