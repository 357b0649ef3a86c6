import type { ToolResultLike } from '../types.js';
import type { AiSdkOutput } from './aiSdkParts.js';
import { answersFor, type CallAnswer, outputOf, type TextTurn } from './nextRequest.js';

const builder = 'toAiSdkMessages';

/** A part of the final attempt's assistant content. */
type Part = AiSdkOutput['content'][number];
/** A tool result part, of a tool message or (a provider-run tool's) of the assistant content. */
type ResultPart = Extract<Part, { type: 'tool-result' }>;
/** JSON data, as a `json` tool output carries it. */
type Json = Extract<ResultPart['output'], { type: 'json' }>['value'];

/**
 * The messages that the final attempt of an {@link aiSdkParts} turn adds to the conversation, as the AI SDK's
 * `ModelMessage`s (`ai@6`): the `assistant` message of its content in stream order (reasoning with its
 * provider options, such as a thinking signature or encrypted reasoning; text; tool calls with theirs, such as a
 * Gemini thought signature; provider-run tools and their results), then a `tool` message with one
 * `tool-result` part per call the client answers, in call order. A result the tool returned is `text` (a
 * string) or `json`; a call that failed is `error-text`. A multi-step run (tools with an `execute`, run by the
 * SDK) gives each step its `assistant` message and the `tool` message of its results, as `ai@6`'s own
 * response messages do. A turn without calls gives the `assistant` message alone (none for an empty one).
 *
 * Without an output on the finish (a source of your own that emits neutral events), the content is the turn's
 * text and released calls.
 *
 * Every call the client answers must have exactly one result among `results` (a repeat's recorded result
 * counts), and every result must answer one: otherwise it throws a {@link ProviderError}, as it does for a
 * turn without a finish or with another format's output. Results of an abandoned attempt's calls are passed
 * over.
 *
 * ## Example
 * ```ts
 * import { createOpenAI } from '@ai-sdk/openai';
 * import { type ModelMessage, streamText, type TextStreamPart, tool } from 'ai';
 * import { defer, lastValueFrom, share, toArray } from 'rxjs';
 * import { z } from 'zod';
 * import { accumulateTurn, attemptPipeline, nextStep, turnPipeline } from 'cleanturn';
 * import { executeTools } from 'cleanturn/effects';
 * import { aiSdkParts, toAiSdkMessages } from 'cleanturn/providers';
 *
 * const model = createOpenAI().responses('o4-mini');
 * const tools = { issue_refund: tool({ inputSchema: z.object({ order_id: z.string(), amount: z.string() }) }) };
 * const messages: ModelMessage[] = [{ role: 'user', content: 'Please refund order ORD-7781.' }];
 * const events$ = defer(
 *   (): AsyncIterable<TextStreamPart<typeof tools>> =>
 *     streamText({ model, tools, messages, maxRetries: 0 }).fullStream,
 * ).pipe(attemptPipeline(aiSdkParts()), turnPipeline({ turnId: 'turn-42', retry: 2 }), share());
 * const handlers = { issue_refund: async () => ({ refund_id: 're_7781', status: 'pending' }) };
 * const [turns, results] = await Promise.all([
 *   lastValueFrom(events$.pipe(accumulateTurn())),
 *   lastValueFrom(events$.pipe(executeTools(handlers, { turnId: 'turn-42' }), toArray())),
 * ]);
 * if (nextStep(turns.finish) === 'answer') messages.push(...toAiSdkMessages(turns, results));
 * ```
 *
 * @param turn The turn's final state (`accumulateTurn()`): its finish, with the attempt's output; its text and
 *   calls when there is no output.
 * @param results The executor's `tool-result`s of the turn (`executeTools` of `cleanturn/effects`).
 * @returns The messages to append, in order.
 */
export function toAiSdkMessages(
  turn: TextTurn,
  results: readonly ToolResultLike[],
): (
  | { role: 'assistant'; content: AiSdkOutput['content'][number][] }
  | { role: 'tool'; content: Extract<AiSdkOutput['content'][number], { type: 'tool-result' }>[] }
)[] {
  const content = outputOf<AiSdkOutput>(builder, turn, 'ai-sdk')?.content ?? neutralContent(turn);
  const providerRun = new Set<string>();
  const resulted = new Set<string>();
  for (const part of content) {
    if (part.type === 'tool-call' && part.providerExecuted === true) providerRun.add(part.toolCallId);
    if (part.type === 'tool-result') resulted.add(part.toolCallId);
  }
  // The calls the client answers: those that are neither the provider's nor answered by the SDK already.
  const clientCalls: { id: string; name: string }[] = [];
  for (const part of content) {
    if (part.type !== 'tool-call' || providerRun.has(part.toolCallId) || resulted.has(part.toolCallId))
      continue;
    clientCalls.push({ id: part.toolCallId, name: part.toolName });
  }
  const answers = answersFor(builder, clientCalls, results, turn.finish?.attempt);
  const answerOf = new Map(clientCalls.map((call, i) => [call.id, answers[i]]));

  const messages: ReturnType<typeof toAiSdkMessages> = [];
  // One step: its assistant content, and the results of its calls that the SDK ran.
  let assistant: Part[] = [];
  let ranBySdk = new Map<string, ResultPart>();
  const endStep = () => {
    if (assistant.length > 0) messages.push({ role: 'assistant', content: assistant });
    const tool: ResultPart[] = [];
    for (const part of assistant) {
      if (part.type !== 'tool-call' || providerRun.has(part.toolCallId)) continue;
      const answer = answerOf.get(part.toolCallId);
      const result =
        ranBySdk.get(part.toolCallId) ?? (answer === undefined ? undefined : answerPart(part, answer));
      if (result === undefined) continue;
      ranBySdk.delete(part.toolCallId);
      tool.push(result);
    }
    tool.push(...ranBySdk.values());
    if (tool.length > 0) messages.push({ role: 'tool', content: tool });
    assistant = [];
    ranBySdk = new Map();
  };
  for (const part of content) {
    if (part.type === 'tool-result' && !providerRun.has(part.toolCallId)) {
      ranBySdk.set(part.toolCallId, structuredClone(part));
      continue;
    }
    if (ranBySdk.size > 0) endStep(); // a step whose tools the SDK ran ends with their results
    assistant.push(structuredClone(part));
  }
  endStep();
  return messages;
}

/** The content of a turn whose finish has no output: its text, then its released calls. */
function neutralContent(turn: Parameters<typeof toAiSdkMessages>[0]): Part[] {
  const content: Part[] = [];
  if (turn.text !== '') content.push({ type: 'text', text: turn.text });
  for (const call of turn.toolCalls) {
    const input = JSON.parse(JSON.stringify(call.args ?? {})) as Json;
    content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input });
  }
  return content;
}

/** The tool result part of a call the client answered. */
function answerPart(call: Extract<Part, { type: 'tool-call' }>, answer: CallAnswer): ResultPart {
  const { toolCallId, toolName } = call;
  if (!answer.ok)
    return {
      type: 'tool-result',
      toolCallId,
      toolName,
      output: { type: 'error-text', value: answer.message },
    };
  const { value } = answer;
  const output: ResultPart['output'] =
    typeof value === 'string' ? { type: 'text', value } : { type: 'json', value: (value ?? null) as Json };
  return { type: 'tool-result', toolCallId, toolName, output };
}
