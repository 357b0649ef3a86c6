import type { OperatorFunction } from 'rxjs';
import { isInstance, readProperty, readString } from '../internal/describeError.js';
import type { FinishReason, ProviderEvent, ProviderOutput } from '../types.js';
import { isRetryableUpstream } from '../upstreamErrors.js';
import { type Decoder, type DecoderSink, decodeWith } from './decodeWith.js';
import { type ProviderError, providerPayloadError, upstreamProviderError } from './errors.js';
import type { FieldSite } from './read.js';
import * as read from './read.js';
import { type AdapterOptions, isObject, isRecord, jsonCopy, nonEmptyText } from './shared.js';
import { type UsageCounts, UsageTotals } from './usageTotals.js';

/**
 * A path-addressed piece of streamed arguments (Vertex AI with `streamFunctionCallArguments: true`): where it
 * goes (`$.items[0].sku`), one value, and whether more of the same string follows.
 */
export interface GeminiPartialArg {
  jsonPath?: string;
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  nullValue?: string;
  willContinue?: boolean;
}

/**
 * A `functionCall` part: whole (`name`, `args`: a JSON object, absent for no arguments), or a piece of a streamed
 * call (`partialArgs`, `willContinue`). The Gemini API's streams have no `id` so far: the adapter generates one.
 */
export interface GeminiFunctionCall {
  id?: string;
  name?: string;
  args?: unknown;
  partialArgs?: GeminiPartialArg[];
  willContinue?: boolean;
}

/**
 * One part of a candidate's content; `thought: true` marks reasoning, which is not answer text. A
 * `thoughtSignature` may sit on any part (a thought, a text, a `functionCall`, an empty text closing the answer).
 * Other parts (`executableCode`, `codeExecutionResult`…) are kept as they are.
 */
export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: GeminiFunctionCall;
}

/** A candidate of a chunk; the adapter reads the first one (`index` 0 or absent). */
export interface GeminiCandidate {
  index?: number;
  content?: { parts?: GeminiPart[] };
  /** `STOP`, `MAX_TOKENS`, `SAFETY`, `MALFORMED_FUNCTION_CALL`…; older streams put one on every chunk. */
  finishReason?: string;
}

/** Token counts, cumulative over the stream. */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  /** Of `promptTokenCount`, those read from the cache. */
  cachedContentTokenCount?: number;
}

/** The error body of a raw JSON error tail `{"error": {…}}`: HTTP status `code`, gRPC `status` name. */
export interface GeminiErrorBody {
  code?: number;
  message?: string;
  status?: string;
}

/**
 * One chunk of `streamGenerateContent?alt=sse` (an SSE `data:` line, parsed, or a `GenerateContentResponse` of
 * the official SDK), or a raw error tail `{"error": {…}}`, parsed. `promptFeedback`: the prompt was blocked.
 * Only the fields the adapter reads are listed.
 */
export interface GeminiChunk {
  candidates?: GeminiCandidate[];
  usageMetadata?: GeminiUsageMetadata;
  promptFeedback?: { blockReason?: string };
  /** The response's id, the same on every chunk of it. */
  responseId?: string;
  error?: GeminiErrorBody;
}

/**
 * A part of the model's content as the API takes it back: a text or thought (`thought: true`), a whole
 * `functionCall` (`id` only when the provider sent one), or a part the model produced and ran itself
 * (`executableCode`, `codeExecutionResult`, a server-side `toolCall` or `toolResponse`, `inlineData`), kept as
 * it came. Each carries the `thoughtSignature` that streamed with it, if one did.
 */
export type GeminiOutputPart =
  | { readonly text: string; readonly thought?: boolean; readonly thoughtSignature?: string }
  | {
      readonly functionCall: {
        readonly name: string;
        readonly args: Readonly<Record<string, unknown>>;
        readonly id?: string;
      };
      readonly thoughtSignature?: string;
    }
  | {
      readonly executableCode?: object;
      readonly codeExecutionResult?: object;
      readonly toolCall?: object;
      readonly toolResponse?: object;
      readonly inlineData?: object;
      readonly thoughtSignature?: string;
    };

/**
 * What a Gemini attempt produced, on its `finish` (`FinishEvent.output`): the model content's parts in stream
 * order, each signature on the part that carried it, consecutive text fragments of one kind joined into one
 * part until a signature ends it. `toGeminiContents` turns it into the next request's `contents`.
 */
export interface GeminiOutput extends ProviderOutput {
  readonly format: 'gemini';
  /** The model content's parts, as the API takes them back in the next request. */
  readonly parts: readonly GeminiOutputPart[];
}

/** The neutral id of the `n`-th `functionCall` of an attempt (from 0): the provider's `id`, or `gemini-call-<n>`. */
export function geminiCallId(id: string | undefined, n: number): string {
  return id || `gemini-call-${n}`;
}

/**
 * Turns a Gemini `streamGenerateContent` stream into neutral {@link ProviderEvent}s.
 *
 * Text parts become `text`; `thought: true` parts are the model's thinking and become `reasoning`, never text.
 * Each `functionCall` part becomes a whole `tool-call` (missing `args` mean `{}`); a call without an id gets
 * `gemini-call-<n>`, `n` counting the attempt's calls from 0, so the same stream always gives the same ids.
 * Vertex AI's streamed arguments (`willContinue`, `partialArgs` by JSON path) become one `tool-call` when the
 * empty closing `functionCall` or the next named call arrives. `usageMetadata` becomes `usage` whenever the
 * counts change (input: prompt + tool-use prompt, `cachedInputTokens`: `cachedContentTokenCount`; output:
 * candidates + thoughts, `reasoningTokens`: `thoughtsTokenCount`). The last `finishReason` goes out as the
 * `finish` (`raw`: the provider's value) when the source completes: older models and proxies put `STOP` on
 * every chunk. The format has no end marker (unlike `[DONE]` or `message_stop`), so the turn is finished only
 * when the connection closes cleanly: a connection reset after the last chunk fails the attempt, and a retry
 * asks for a new generation (the user sees a reset). Nothing in the stream can tell the last chunk from one
 * more.
 *
 * The finish carries the attempt's `GeminiOutput` (`output`, what `toGeminiContents` sends back) and
 * `responseId` (the chunks' `responseId`). The output is the model content's parts in stream order, as the API
 * takes them back: thought and text parts, each `functionCall` (its `id` only when the provider sent one; the
 * arguments as streamed or built from their paths), and the parts of code the model ran itself
 * (`executableCode`, `codeExecutionResult`, server-side `toolCall` / `toolResponse`, `inlineData`) as they came;
 * such parts never make `tool-calls`. A `thoughtSignature` stays on the part that carried it (a thought, a text,
 * a `functionCall`, the empty text that ends a Gemini 3 answer); a streamed call keeps the first signature of
 * its pieces. Consecutive text fragments of one kind (thought or text) are joined into one part, and a fragment
 * that carries a signature ends its part: the signature is the part's, and the next fragment starts a new part
 * (an empty fragment without a signature carries nothing). Only candidate 0 is read: another candidate's
 * parts, signatures and calls never join it.
 *
 * | `finishReason` | `reason` |
 * |---|---|
 * | `STOP` | `tool-calls` when the attempt had a `functionCall`, else `stop` |
 * | `MAX_TOKENS` | `length` |
 * | `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`, `IMAGE_PROHIBITED_CONTENT`, `IMAGE_RECITATION` | `content-filter` |
 * | `MALFORMED_FUNCTION_CALL` | `error` (the model's call could not be read: its output has no call to answer) |
 * | anything else (`CONTINUATION`: continue with the returned token) | `other` |
 *
 * - A blocked prompt (`promptFeedback.blockReason`) finishes with `content-filter` (`other` for `OTHER` and
 *   unspecified reasons). Chunks with empty `candidates` are skipped.
 * - An error tail `{"error": {code, message, status}}`, or the SDK's `ApiError` for one, is a {@link ProviderError}
 *   (retryable per `isRetryableUpstream`), even after a finish reason; other source errors pass unchanged.
 * - What it cannot read is a {@link ProviderError}: a non-string tool name, non-object `args`, a chunk of
 *   the wrong shape (`candidates` or `parts` that are not arrays, a candidate, `content`, part, `usageMetadata`
 *   or `promptFeedback` that is not an object, a token count that is not a number, a `thought` that is not a
 *   boolean, a `thoughtSignature` or `responseId` that is not a string), an argument
 *   path it cannot parse or that conflicts with an earlier one (`invalid-field`), a path step `__proto__`,
 *   `constructor` or `prototype` (`unsafe-path`), pieces of a call never opened (`unknown-reference`).
 * - No `finishReason`, no `finish` (and no output): put `requireFinish()` after it. A streamed call still open at
 *   the end is emitted after a finish reason (the stream finished), dropped without one (`requireFinish` fails
 *   anyway).
 *
 * ```text
 * source:   -a-b-c-|
 *           geminiContent()
 * result:   -A-K---(F|)
 *
 * where
 *   a = {"candidates":[{"content":{"parts":[{"text":"Checking order ORD-7781. "}]}}]}
 *   b = {"candidates":[{"content":{"parts":[{"functionCall":{"name":"issue_refund","args":{"order_id":"ORD-7781","amount":"full"}}}]}}]}
 *   c = {"candidates":[{"content":{"parts":[]},"finishReason":"STOP"}]}
 *   A = text "Checking order ORD-7781. "
 *   K = tool-call gemini-call-0 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   F = finish tool-calls, output gemini [text, functionCall]
 * ```
 *
 * Every case of `marbles/geminiContent.marbles.ts`, with pictures: `docs/operators/geminiContent.md`.
 *
 * ## Example
 * ```ts
 * import { GoogleGenAI } from '@google/genai';
 * import { concatMap, defer } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, turnPipeline } from 'cleanturn';
 * import { geminiContent } from 'cleanturn/providers';
 *
 * const ai = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY }); // no retryOptions: the pipeline retries
 * const tools = [{ functionDeclarations: [{ name: 'issue_refund', parametersJsonSchema: {} }] }];
 * const contents = 'Please refund order ORD-7781: the book arrived damaged.';
 * defer(() => ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents, config: { tools } }))
 *   .pipe(
 *     concatMap((stream) => stream), //    one request per attempt: defer subscribes again on retry
 *     attemptPipeline(geminiContent()), // chunks → events, calls made whole, a finish required
 *     turnPipeline({ turnId: 'turn-42', retry: 2 }),
 *     accumulateTurn(),
 *   )
 *   .subscribe((turn) => console.log(turn.text));
 * ```
 *
 * @param options `retryable` overrides the retry decision for errors.
 * @returns An operator from Gemini chunks to provider events. Its input is `unknown`: any source
 *   pipes in (an SDK's typed stream, `sseJson()`'s payloads), and each payload is checked as it arrives.
 */
export function geminiContent(
  options?: AdapterOptions<GeminiErrorInfo>,
): OperatorFunction<unknown, ProviderEvent> {
  return decodeWith({ name: operator }, (sink) => new GeminiContentDecoder(sink, options));
}

const operator = 'geminiContent';
/** An object or array that the argument builder created. */
type Container = Record<string | number, unknown>;

/** A `functionCall` whose arguments still stream: its id and name, the arguments built so far, its signature. */
type StreamedCall = { id: string | undefined; name: string; args: Container; signature: string | undefined };

/**
 * The decoder behind {@link geminiContent}: one attempt of a Gemini stream (exported for `decodeAll` in tests).
 * It reads candidate 0's parts into events and into the output's parts, keeps the last finish reason, and gives
 * the finish when the source completes (the format has no end marker).
 */
export class GeminiContentDecoder implements Decoder<GeminiChunk> {
  /** The attempt's calls so far: the next generated id, and whether `STOP` means `tool-calls`. */
  private calls = 0;
  /** The call whose arguments still stream (Vertex AI's `willContinue`), emitted when it closes. */
  private streamed: StreamedCall | undefined;
  /** The last finish reason, and whether it was a blocked prompt's. */
  private reported: { raw: string; blocked: boolean } | undefined;
  /** The chunks' `responseId`, the last non-empty one. */
  private responseId: string | undefined;
  /** The usage counts last emitted: a `usage` event goes out only when one changes. */
  private readonly usageTotals = new UsageTotals();
  /** The output's parts so far, in stream order. */
  private readonly parts: GeminiOutputPart[] = [];
  /** The text or thought part still open: its fragments join until a signature or the other kind ends it. */
  private open: { thought: boolean; pieces: string[] } | undefined;
  /** The chunk being read, for the errors' `payload`. */
  private payload: GeminiChunk | undefined;
  /** The index of the candidate being read, and of the part being read in it, for the errors' `field`. */
  private at = 0;
  private partAt = 0;

  constructor(
    private readonly sink: DecoderSink,
    private readonly options: AdapterOptions<GeminiErrorInfo> = {},
  ) {}

  /**
   * A chunk: an error tail fails the attempt; else candidate 0's parts, the usage, the response id and the
   * finish reason (or a blocked prompt's reason), in that order.
   */
  next(chunk: GeminiChunk): void {
    const { error } = chunk;
    if (error !== undefined && error !== null) throw this.providerError(errorInfo(error), chunk);
    this.payload = chunk;
    const candidate = this.candidate(chunk);
    this.content(candidate);
    const metadata: unknown = chunk.usageMetadata;
    if (isObject(metadata)) this.usage(metadata);
    else read.object(metadata, { operator, payload: chunk, field: 'usageMetadata' });
    const rawId: unknown = chunk.responseId;
    const id =
      typeof rawId === 'string'
        ? rawId
        : read.string(rawId, { operator, payload: chunk, field: 'responseId' });
    if (id) this.responseId = id;
    this.finishReason(chunk, candidate);
  }

  /**
   * The stream finished: a call still streaming is as complete as it gets, the open text part closes, and the
   * finish goes out with the whole attempt's output (no finish reason: no finish).
   */
  end(): void {
    if (this.reported === undefined) return;
    this.closeStreamed();
    this.closeText();
    const { raw, blocked } = this.reported;
    const reason: FinishReason = blocked
      ? blockedReasons.test(raw)
        ? 'content-filter'
        : 'other'
      : finishReasonOf(raw, this.calls > 0);
    const output: GeminiOutput = { format: 'gemini', parts: [...this.parts] };
    const responseId = this.responseId;
    this.sink.finish({ type: 'finish', reason, raw, ...(responseId ? { responseId } : {}), output });
  }

  /** The SDK's `ApiError` (a numeric `status`) for an error tail or a failed response; others stay as they are. */
  error(error: unknown): unknown {
    const status = isInstance(error, Error) ? readProperty(error, 'status') : undefined;
    return typeof status === 'number' ? this.providerError(sdkInfo(error, status), error, error) : undefined;
  }

  /** Where a field of the part being read is (`candidates[0].content.parts[1].functionCall.name`). */
  private site(field: string, inPart = true): FieldSite {
    const where = `candidates[${this.at}].${inPart ? `content.parts[${this.partAt}].` : ''}`;
    return { operator, payload: this.payload, field: field === '' ? where.slice(0, -1) : where + field };
  }

  /** A payload error at `field` of the part being read. */
  private invalid(
    field: string,
    message: string,
    code: 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference' = 'invalid-field',
  ): ProviderError {
    return providerPayloadError(operator, code, message, {
      field: this.site(field).field,
      payload: this.payload,
    });
  }

  /** A payload error at the JSON path of the `j`-th piece of streamed arguments. */
  private pathError(
    j: number,
    message: string,
    code?: 'not-a-payload' | 'invalid-field' | 'unsafe-path' | 'unknown-reference',
  ): ProviderError {
    return this.invalid(`functionCall.partialArgs[${j}].jsonPath`, message, code);
  }

  /** The error the provider reported, retryable as the `retryable` option, else `isRetryableUpstream`, says. */
  private providerError(info: GeminiErrorInfo, received: unknown, cause?: unknown): ProviderError {
    const { code, status, message } = info;
    const retryable =
      this.options.retryable?.(info) ?? isRetryableUpstream({ codes: [status], status: code });
    return upstreamProviderError('gemini', message, {
      retryable,
      upstreamCode: status,
      status: code,
      payload: received,
      cause,
    });
  }

  /**
   * Candidate 0 of a chunk (`index` 0 or absent), or none. Each container is checked in place; a reader (and the
   * site of its error) only for one of the wrong shape. Candidates after it are not read.
   */
  private candidate(chunk: GeminiChunk): GeminiCandidate | undefined {
    const given: unknown = chunk.candidates;
    const list = Array.isArray(given)
      ? given
      : read.list(given, { operator, payload: chunk, field: 'candidates' });
    let candidate: GeminiCandidate | undefined;
    for (let i = 0; list !== undefined && i < list.length && candidate === undefined; i++) {
      this.at = i;
      const entry = list[i];
      const c = isObject(entry) ? entry : read.entry(entry, this.site('', false));
      const rawIndex = c.index;
      const index =
        typeof rawIndex === 'number' || rawIndex === undefined || rawIndex === null
          ? rawIndex
          : read.index(rawIndex, this.site('index', false));
      if ((index ?? 0) === 0) candidate = c as GeminiCandidate;
    }
    return candidate;
  }

  /** The candidate's `content.parts`, each read in order (none without a candidate). */
  private content(candidate: GeminiCandidate | undefined): void {
    const rawContent: unknown = candidate?.content;
    const content = isObject(rawContent) ? rawContent : read.object(rawContent, this.site('content', false));
    const rawParts: unknown = content?.parts;
    const parts = Array.isArray(rawParts) ? rawParts : read.list(rawParts, this.site('content.parts', false));
    for (let i = 0; parts !== undefined && i < parts.length; i++) {
      this.partAt = i;
      this.part(parts[i]);
    }
  }

  /** One part: a `functionCall`, a text or thought fragment, or a part kept as it came; its signature with it. */
  private part(entry: unknown): void {
    const part = (isObject(entry) ? entry : read.entry(entry, this.site('', true))) as GeminiPart;
    const { functionCall: fc, text, thought } = part;
    // The site of a field is built only for one of the wrong type: this runs for every part.
    const rawSignature: unknown = part.thoughtSignature;
    const signature =
      (typeof rawSignature === 'string' || rawSignature === undefined || rawSignature === null
        ? rawSignature
        : read.string(rawSignature, this.site('thoughtSignature'))) || undefined;
    if (thought !== undefined && thought !== null && typeof thought !== 'boolean') {
      throw read.invalid(this.site('thought'), 'a boolean', thought);
    }
    if (fc !== undefined && fc !== null) this.functionCall(fc, signature);
    else if (typeof text === 'string') this.addText(text, thought === true, signature);
    else {
      if (text !== undefined) read.string(text, this.site('text'));
      this.keepPart(part, signature);
    }
  }

  /**
   * The chunk's finish reason, kept until the end (the last one wins); without a candidate, a blocked prompt's
   * `promptFeedback.blockReason` stands for it.
   */
  private finishReason(chunk: GeminiChunk, candidate: GeminiCandidate | undefined): void {
    const raw = candidate?.finishReason;
    const rawFeedback: unknown = chunk.promptFeedback;
    const feedback = isObject(rawFeedback)
      ? rawFeedback
      : read.object(rawFeedback, { operator, payload: chunk, field: 'promptFeedback' });
    const blocked = candidate === undefined ? feedback?.blockReason : undefined;
    if (typeof raw === 'string') this.reported = { raw, blocked: false };
    else if (raw !== undefined) read.string(raw, this.site('finishReason', false));
    else if (typeof blocked === 'string') this.reported = { raw: blocked, blocked: true };
  }

  /** The open text part joins the output, with the signature that ends it. */
  private closeText(signature?: string): void {
    const text = this.open;
    this.open = undefined;
    if (text === undefined) return;
    const part: { text: string; thought?: boolean; thoughtSignature?: string } = {
      text: text.pieces.join(''),
    };
    if (text.thought) part.thought = true;
    if (signature !== undefined) part.thoughtSignature = signature;
    this.parts.push(part);
  }

  /**
   * A text or thought fragment: an event when it has text, and the output's open part of its kind grows by it.
   * A fragment of the other kind starts a new part; a signed fragment ends its part with its signature.
   */
  private addText(text: string, thought: boolean, signature: string | undefined): void {
    if (text !== '') this.sink.event({ type: thought ? 'reasoning' : 'text', text });
    if (text === '' && signature === undefined) return; // an empty fragment carries nothing
    if (this.open !== undefined && this.open.thought !== thought) this.closeText();
    this.open ??= { thought, pieces: [] };
    if (text !== '') this.open.pieces.push(text);
    if (signature !== undefined) this.closeText(signature);
  }

  /**
   * A part the model produced other than text and calls (code it ran, its result…): kept as it came. A part with
   * nothing but a signature is an empty text fragment that carries it.
   */
  private keepPart(part: GeminiPart, signature: string | undefined): void {
    const fields = Object.entries(part).filter(([, value]) => value !== undefined && value !== null);
    if (fields.every(([key]) => key === 'thought' || key === 'thoughtSignature')) {
      this.addText('', part.thought === true, signature);
      return;
    }
    this.closeText();
    this.parts.push(jsonCopy(Object.fromEntries(fields)) as GeminiOutputPart);
  }

  /** A whole call: a `tool-call` event (an id generated when it has none), and its part in the output. */
  private emitCall(id: string | undefined, name: string, args: unknown, signature: string | undefined): void {
    const callId = geminiCallId(id, this.calls++);
    this.sink.event({ type: 'tool-call', id: callId, name, args });
    this.closeText();
    const call = { name, args: jsonCopy(args) as Record<string, unknown>, ...(id ? { id } : {}) };
    this.parts.push(
      signature === undefined ? { functionCall: call } : { functionCall: call, thoughtSignature: signature },
    );
  }

  /** The call whose arguments streamed, if one is open, goes out whole. */
  private closeStreamed(): void {
    const call = this.streamed;
    this.streamed = undefined;
    if (call !== undefined) this.emitCall(call.id, call.name, call.args, call.signature);
  }

  /**
   * Puts a value at its path; a string continues a string already there. Creates own data properties only, and
   * descends only into containers it created, each addressed by its kind of step (a name or an index).
   */
  private place(args: Container, jsonPath: unknown, value: unknown, j: number): void {
    const path = typeof jsonPath === 'string' ? parseJsonPath(jsonPath) : undefined;
    if (path === undefined) throw this.pathError(j, 'expected a JSON path such as $.items[0].sku');
    if (!path.every(isSafe))
      throw this.pathError(j, 'a step named __proto__, constructor or prototype', 'unsafe-path');
    let node = args;
    for (let k = 0; k < path.length; k++) {
      const step = path[k] as string | number;
      const leaf = k === path.length - 1;
      const fits = Array.isArray(node) === (typeof step === 'number');
      const existing = fits && Object.hasOwn(node, step) ? node[step] : undefined;
      if (!fits || (existing !== undefined && isRecord(existing) === leaf)) {
        throw this.pathError(j, 'the path conflicts with the arguments built so far');
      }
      const next = !leaf
        ? (existing ?? (typeof path[k + 1] === 'number' ? [] : {}))
        : typeof existing === 'string' && typeof value === 'string'
          ? existing + value
          : value;
      // A new key becomes an own data property (never a setter's or a prototype's); an own one is replaced.
      if (existing === undefined) Object.defineProperty(node, step, { value: next, ...ownData });
      else if (next !== existing) node[step] = next;
      node = next as Container;
    }
  }

  /** Pieces of streamed arguments, each placed at its path; a piece without a value is skipped. */
  private addPartials(args: Container, partials: readonly GeminiPartialArg[]): void {
    for (let j = 0; j < partials.length; j++) {
      const partial = partials[j];
      if (!isRecord(partial)) throw this.invalid(`functionCall.partialArgs[${j}]`, 'expected an object');
      const { stringValue: s, numberValue: n, boolValue: b, nullValue } = partial;
      const v =
        typeof s === 'string' ? s : typeof n === 'number' ? n : typeof b === 'boolean' ? b : undefined;
      const value = v ?? (nullValue !== undefined && nullValue !== null ? null : undefined);
      if (value !== undefined) this.place(args, partial.jsonPath, value, j);
    }
  }

  /**
   * A `functionCall` part. Without a name it continues the streamed call (more pieces, or the empty part that
   * closes it); with one it closes any streamed call and is a whole call, or opens a streamed one.
   */
  private functionCall(fc: GeminiFunctionCall, signature: string | undefined): void {
    const { partialArgs, willContinue } = fc;
    if (!isRecord(fc) || Array.isArray(fc) || (partialArgs !== undefined && !Array.isArray(partialArgs))) {
      throw this.invalid('functionCall', 'expected a functionCall object (partialArgs an array)');
    }
    if (fc.name === undefined || fc.name === null) {
      const pieces = partialArgs !== undefined && partialArgs.length > 0;
      const open = this.streamed;
      if (open !== undefined) {
        open.signature ??= signature;
        if (pieces) this.addPartials(open.args, partialArgs);
        else if (willContinue !== true) this.closeStreamed(); // the empty closing part
        return;
      }
      if (pieces || willContinue === true) {
        throw this.invalid('functionCall', 'streamed arguments of a call never opened', 'unknown-reference');
      }
      if (fc.args === undefined || fc.args === null) return; // a stray empty part: nothing to read
    }
    const name = read.name(fc.name, this.site('functionCall.name'));
    const id = read.string(fc.id, this.site('functionCall.id'));
    this.closeStreamed(); // a new call starts: the open one is complete
    if (willContinue !== true)
      this.emitCall(id, name, read.argsObject(fc.args, this.site('functionCall.args')), signature);
    else {
      const call: StreamedCall = { id, name, args: {}, signature };
      this.streamed = call;
      if (partialArgs !== undefined) this.addPartials(call.args, partialArgs);
    }
  }

  /**
   * `usageMetadata`, cumulative: a `usage` event when a count changed, with the counts the chunk gave (input:
   * prompt + tool-use prompt; output: candidates + thoughts).
   */
  private usage(metadata: Record<string, unknown>): void {
    // Most chunks carry no count (`{"trafficType":"ON_DEMAND"}` until the last): nothing to read or emit.
    if (
      metadata.promptTokenCount === undefined &&
      metadata.candidatesTokenCount === undefined &&
      metadata.thoughtsTokenCount === undefined &&
      metadata.toolUsePromptTokenCount === undefined &&
      metadata.cachedContentTokenCount === undefined
    )
      return;
    const count = (key: keyof GeminiUsageMetadata) => {
      const value = metadata[key];
      return typeof value === 'number'
        ? value
        : read.count(value, { operator, payload: this.payload, field: `usageMetadata.${key}` });
    };
    const prompt = count('promptTokenCount');
    const candidates = count('candidatesTokenCount');
    const thoughts = count('thoughtsTokenCount');
    const counts: UsageCounts = {
      inputTokens: prompt !== undefined ? prompt + (count('toolUsePromptTokenCount') ?? 0) : undefined,
      outputTokens:
        typeof candidates === 'number' || typeof thoughts === 'number'
          ? (candidates ?? 0) + (thoughts ?? 0)
          : undefined,
      cachedInputTokens: count('cachedContentTokenCount'),
      reasoningTokens: thoughts,
    };
    const event = this.usageTotals.next(counts);
    if (event !== undefined) this.sink.event(event);
  }
}

const ownData = { writable: true, enumerable: true, configurable: true } as const;
/** A path step that cannot reach a prototype. */
const isSafe = (step: string | number) =>
  step !== '__proto__' && step !== 'constructor' && step !== 'prototype';
// Finish reasons that mean the output was filtered, and prompt block reasons that mean the prompt was.
const filtered =
  /^(SAFETY|RECITATION|BLOCKLIST|PROHIBITED_CONTENT|SPII|IMAGE_(SAFETY|PROHIBITED_CONTENT|RECITATION))$/;
const blockedReasons = /^(SAFETY|BLOCKLIST|PROHIBITED_CONTENT|IMAGE_SAFETY|MODEL_ARMOR|JAILBREAK)$/;

function finishReasonOf(finishReason: string, hadCall: boolean): FinishReason {
  if (finishReason === 'STOP') return hadCall ? 'tool-calls' : 'stop';
  if (finishReason === 'MAX_TOKENS') return 'length';
  if (finishReason === 'MALFORMED_FUNCTION_CALL') return 'error';
  return filtered.test(finishReason) ? 'content-filter' : 'other';
}

/** The error body of a tail (a string is its message). */
function errorInfo(body: unknown): GeminiErrorInfo {
  const fields = (isRecord(body) ? body : { message: String(body) }) as GeminiErrorBody;
  const code = typeof fields.code === 'number' ? fields.code : undefined;
  const status = nonEmptyText(fields.status);
  const fallback = status ?? (code === undefined ? 'the stream reported an error' : `HTTP ${code}`);
  const message = nonEmptyText(fields.message) ?? fallback;
  return { code, status, message };
}

/** The SDK's `ApiError`: its message is `got status: UNAVAILABLE. {"error":{…}}` for a stream's error tail. */
function sdkInfo(error: unknown, code: number): GeminiErrorInfo {
  const text = readString(error, 'message') ?? '';
  const match = /^got status: ([A-Z_]+)\. (\{[\s\S]*\})$/.exec(text);
  try {
    const body: unknown = JSON.parse(match?.[2] ?? 'null');
    if (isRecord(body) && isRecord(body.error)) return { ...errorInfo(body.error), code };
  } catch {
    // Not the tail's JSON: the status name alone.
  }
  return { code, status: match?.[1], message: text === '' ? `HTTP ${code}` : text };
}

/** `$.a.b[0]['c d']` → `['a', 'b', 0, 'c d']`; undefined for what this reader does not support. */
function parseJsonPath(jsonPath: string): (string | number)[] | undefined {
  if (!jsonPath.startsWith('$')) return undefined;
  const path: (string | number)[] = [];
  const step = /\.([A-Za-z_$][\w$-]*)|\[(\d{1,9})\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/y;
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

/**
 * A Gemini error as the `retryable` option sees it: HTTP status (`error.code`, `ApiError.status`), gRPC name.
 *
 * @inline
 */
export interface GeminiErrorInfo {
  code: number | undefined;
  status: string | undefined;
  message: string;
}
