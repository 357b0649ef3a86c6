import type { ToolResultLike } from '../types.js';
import { type GeminiOutput, type GeminiOutputPart, geminiCallId } from './geminiContent.js';
import { answersFor, type CallAnswer, type FinishedTurn, type OutputCall, outputOf } from './nextRequest.js';
import { isObject } from './shared.js';

const builder = 'toGeminiContents';

/** What the builder reads of a turn: the final attempt's finish, and its text and calls for a neutral source. */
type GeminiTurn = FinishedTurn & {
  readonly text: string;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly args: unknown }[];
};

/** A `functionResponse` part: one call's answer, `id` when the call had the provider's own. */
type FunctionResponsePart = {
  functionResponse: { name: string; response: Record<string, unknown>; id?: string };
};

/** An entry of `contents`: the model's content, or the user content that answers its calls. */
type GeminiContent =
  | { role: 'model'; parts: GeminiOutputPart[] }
  | { role: 'user'; parts: FunctionResponsePart[] };

/** A call of the model content: its neutral id, its name, and the provider's id, if it sent one. */
type ContentCall = OutputCall & { readonly providerId: string | undefined };

/**
 * Turns the final attempt of a Gemini turn and the executor's results into the `contents` entries to append to
 * the conversation for the next request: the `model` content, then a `user` content of `functionResponse` parts,
 * one per call, in the calls' order.
 *
 * - The model content is the attempt's output (`finish.output` of `geminiContent()`) as it streamed: thought
 *   parts, text, `functionCall` parts with the provider's arguments, the parts of code the model ran itself,
 *   each `thoughtSignature` on the part that carried it. Gemini 3 rejects a request whose `functionCall` lost
 *   its signature (HTTP 400); nothing of an abandoned attempt is ever in it.
 * - A call's `response` is an object, as the API requires: a plain object result as it is (the whole response
 *   is the output, as the API reads one without `output` or `error` keys), any other result as `{ output:
 *   result }` (a plain object with an `output` or `error` key of its own too, so that a tool's own `error`
 *   field is not read as a failure; no result is `{}`), a failure as `{ error: message }`. The response
 *   carries the call's `id` when the provider sent one.
 * - A turn without calls gives the model content alone (nothing when it has no parts: there is nothing to
 *   send back). A turn whose finish carries no output (a source of your own that emits neutral events) gives
 *   a model content of its text and calls (with their ids), without reasoning.
 * - A call without a result, a result for a call the final attempt does not have, two results for one call, a
 *   result that still runs elsewhere, or a turn without a finish is a `ProviderError`; results of an
 *   abandoned attempt (stamped with an older `attempt`) are passed over.
 *
 * ## Example
 * ```ts
 * import { GoogleGenAI, type Content } from '@google/genai';
 * import { concatMap, defer, last, lastValueFrom, share, toArray } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, nextStep, turnPipeline } from 'cleanturn';
 * import { MemoryEffectLedger, executeTools } from 'cleanturn/effects';
 * import { geminiContent, toGeminiContents } from 'cleanturn/providers';
 *
 * const ai = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY });
 * const config = { tools: [{ functionDeclarations: [{ name: 'issue_refund', parametersJsonSchema: {} }] }] };
 * const contents: Content[] = [{ role: 'user', parts: [{ text: 'Please refund order ORD-7781.' }] }];
 * const turn$ = defer(() => ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents, config }))
 *   .pipe(concatMap((stream) => stream), attemptPipeline(geminiContent()), turnPipeline({ turnId: 'turn-42', retry: 2 }), share());
 * const handlers = { issue_refund: async () => ({ status: 'refunded' }) };
 * const [turn, results] = await Promise.all([
 *   lastValueFrom(turn$.pipe(accumulateTurn(), last())),
 *   lastValueFrom(turn$.pipe(executeTools(handlers, { turnId: 'turn-42', ledger: new MemoryEffectLedger() }), toArray())),
 * ]);
 * if (nextStep(turn.finish) === 'answer') {
 *   contents.push(...toGeminiContents(turn, results)); // the model content with its signatures, then the answers
 *   // the next request: ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents, config })
 * }
 * ```
 *
 * @param turn The final turn state (`accumulateTurn()`'s last): its finish, and its text and calls.
 * @param results The executor's `tool-result` events of the turn, all of them.
 * @returns The `contents` entries to append, assignable to `@google/genai`'s `Content[]`.
 */
export function toGeminiContents(turn: GeminiTurn, results: readonly ToolResultLike[]): GeminiContent[] {
  const output = outputOf<GeminiOutput>(builder, turn, 'gemini');
  const parts = output === undefined ? neutralParts(turn) : output.parts.map(copyPart);
  const calls: ContentCall[] = [];
  for (const part of parts) {
    const call = 'functionCall' in part ? part.functionCall : undefined;
    if (call !== undefined)
      calls.push({ id: geminiCallId(call.id, calls.length), name: call.name, providerId: call.id });
  }
  const answers = answersFor(builder, calls, results, turn.finish?.attempt);
  const contents: GeminiContent[] = parts.length === 0 ? [] : [{ role: 'model', parts }];
  if (calls.length > 0) {
    contents.push({
      role: 'user',
      parts: calls.map((call, i) => answerPart(call, answers[i] as CallAnswer)),
    });
  }
  return contents;
}

/** The model content of a turn whose finish carries no output: its text, then its calls with their ids. */
function neutralParts(turn: GeminiTurn): GeminiOutputPart[] {
  const parts: GeminiOutputPart[] = turn.text === '' ? [] : [{ text: turn.text }];
  for (const { id, name, args } of turn.toolCalls) {
    parts.push({ functionCall: { name, args: argsObject(args), id } });
  }
  return parts;
}

/** Neutral arguments as a `functionCall`'s `args` object: none is `{}`, a value that is no object `{ value }`. */
function argsObject(args: unknown): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  return isObject(args) ? args : { value: args };
}

/** A part of the output for the request: a copy, so that the request's owner may change it. */
function copyPart(part: GeminiOutputPart): GeminiOutputPart {
  return JSON.parse(JSON.stringify(part)) as GeminiOutputPart;
}

/** One call's `functionResponse`. */
function answerPart(call: ContentCall, answer: CallAnswer): FunctionResponsePart {
  const response = answer.ok ? responseOf(answer.value) : { error: answer.message };
  const functionResponse: FunctionResponsePart['functionResponse'] = { name: call.name, response };
  if (call.providerId) functionResponse.id = call.providerId;
  return { functionResponse };
}

/** A tool's result as a response object: a plain object as it is, anything else under `output`. */
function responseOf(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (isPlainObject(value) && !Object.hasOwn(value, 'output') && !Object.hasOwn(value, 'error')) return value;
  return { output: value };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
