import type { ToolResultLike } from '../types.js';
import type { AnthropicOutput } from './anthropicMessages.js';
import { answersFor, type FinishedTurn, outputOf, resultText } from './nextRequest.js';

const BUILDER = 'toAnthropicMessages';

/**
 * A content block of the assistant message, as the stream sent it: thinking with its signature, redacted thinking,
 * text with its citations, calls, provider-run tools and their results, types added later. Only the provider's SDK
 * knows every shape, so it is typed loosely on purpose: it goes into the SDK's own request types unchanged. Read
 * the blocks through `AnthropicOutput`.
 */
// biome-ignore lint/suspicious/noExplicitAny: the provider's own block, sent back unchanged; only its SDK types it
type SentBlock = any;

/** The answer of one call: a `tool_result` block, `is_error` when the call failed. */
interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: true;
}

/**
 * The messages to append to an Anthropic Messages conversation after a turn: the final attempt's `assistant`
 * message exactly as it streamed, then a `user` message with one `tool_result` per call. The result is assignable
 * to the SDK's `MessageParam[]` (`@anthropic-ai/sdk`).
 *
 * - The assistant message is the final attempt's `finish.output` of `anthropicMessages()`: its blocks in
 *   stream order, each as it came — `thinking` blocks with their `signature` and `redacted_thinking` blocks
 *   unmodified, before the `tool_use` they led to; `text` with its citations; calls with the provider's ids and
 *   arguments; server tools (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`…) and block types added
 *   later. An empty text block is left out (the API rejects one), and so is an assistant message with no block.
 *   Nothing of an abandoned attempt is in it: a reset discards its output with the rest.
 * - One `tool_result` per `tool_use` id, in the calls' order: the tool's result as text (a string as it is,
 *   anything else as its JSON; a repeat's recorded result), or why it failed with `is_error: true`. Provider-run
 *   tools are answered by the provider, never here. With no call (a `done` or `continue` turn, `nextStep`), there
 *   is no user message: a paused turn (`pause_turn`) continues from the assistant message alone.
 * - A finish without an output (a source of your own that emits neutral events) gives the turn's `text` and its
 *   calls as `text` and `tool_use` blocks, without reasoning.
 *
 * Throws a `ProviderError` (not retryable) when the request would be rejected: the turn has no finish
 * (`not-finished`), its output is another format's (`wrong-format`), a call has no result (`unanswered`), a result
 * answers a call the final attempt does not have (`unknown-call`), two results answer one call
 * (`answered-twice`), a call still runs in another process (`still-running`), or an entry of `results` is not a
 * `tool-result` (`not-a-result`). A result of an abandoned attempt's call (an early read) is passed over.
 *
 * ## Example
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { defer, lastValueFrom, last, share, toArray } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, nextStep, turnPipeline } from 'cleanturn';
 * import { executeTools } from 'cleanturn/effects';
 * import { anthropicMessages, toAnthropicMessages } from 'cleanturn/providers';
 *
 * const client = new Anthropic({ maxRetries: 0 });
 * const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Refund order ORD-7781, please.' }];
 * const params = { model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } } as const;
 *
 * const turn$ = defer(() => client.messages.stream({ ...params, messages })).pipe(
 *   attemptPipeline(anthropicMessages()),
 *   turnPipeline({ turnId: 'turn-42', retry: 2 }),
 *   share(),
 * );
 * const [turn, results] = await Promise.all([
 *   lastValueFrom(turn$.pipe(accumulateTurn(), last())),
 *   lastValueFrom(turn$.pipe(executeTools({ issue_refund: async () => ({ status: 'refunded' }) }, { turnId: 'turn-42' }), toArray())),
 * ]);
 * if (nextStep(turn.finish) === 'answer' || nextStep(turn.finish) === 'continue') {
 *   messages.push(...toAnthropicMessages(turn, results)); // then the next request
 * }
 * ```
 *
 * @param turn The final turn state (`accumulateTurn()`'s last value, or any state with `finish`, `text` and the
 *   released `toolCalls`).
 * @param results The executor's `tool-result` events of the turn (`executeTools` of `cleanturn/effects`).
 * @returns The assistant message, then the user message of `tool_result` blocks when the attempt made calls.
 * @throws ProviderError when the provider would reject the request built from these inputs.
 */
export function toAnthropicMessages(
  turn: FinishedTurn & {
    readonly text: string;
    readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly args: unknown }[];
  },
  results: readonly ToolResultLike[],
): ({ role: 'assistant'; content: SentBlock[] } | { role: 'user'; content: ToolResultBlock[] })[] {
  const output = outputOf<AnthropicOutput>(BUILDER, turn, 'anthropic-messages');
  const blocks: Record<string, unknown>[] = [];
  const calls: { id: string; name: string }[] = [];
  if (output === undefined) {
    if (turn.text !== '') blocks.push({ type: 'text', text: turn.text });
    for (const { id, name, args } of turn.toolCalls) {
      blocks.push({ type: 'tool_use', id, name, input: structuredClone(args ?? {}) });
      calls.push({ id, name });
    }
  } else {
    for (const block of output.content) {
      if (block.type === 'text' && block.text === '' && !hasCitations(block)) continue;
      if (block.type === 'tool_use') calls.push({ id: block.id as string, name: block.name as string });
      blocks.push(structuredClone(block) as Record<string, unknown>); // the request's own copy
    }
  }
  const answers = answersFor(BUILDER, calls, results, turn.finish?.attempt);
  const messages: ReturnType<typeof toAnthropicMessages> = [];
  if (blocks.length > 0) messages.push({ role: 'assistant', content: blocks });
  if (calls.length === 0) return messages;
  const content = answers.map((answer, i): ToolResultBlock => {
    const tool_use_id = (calls[i] as { id: string }).id;
    return answer.ok
      ? { type: 'tool_result', tool_use_id, content: resultText(answer.value) }
      : { type: 'tool_result', tool_use_id, content: answer.message, is_error: true };
  });
  messages.push({ role: 'user', content });
  return messages;
}

function hasCitations(block: { readonly [field: string]: unknown }): boolean {
  return Array.isArray(block.citations) && block.citations.length > 0;
}
