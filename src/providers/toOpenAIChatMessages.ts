import type { ToolResultLike } from '../types.js';
import { answersFor, outputOf, resultText, type TextTurn } from './nextRequest.js';
import type { OpenAIChatOutput, OpenAIChatReasoningDetail } from './openaiChat.js';

/** The assistant message of the next request: the final attempt as the provider sent it. */
interface ChatAssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  refusal?: string;
  reasoning_content?: string;
  reasoning?: string;
  reasoning_details?: OpenAIChatReasoningDetail[];
}

/** The answer of one call id. */
interface ChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

const builder = 'toOpenAIChatMessages';

/**
 * The messages to append to a Chat Completions conversation after a turn: the final attempt's assistant message,
 * exactly as the provider sent it, then one `tool` message per call id, in the order of its `tool_calls`.
 *
 * The assistant message is the finish's output (see `openaiChat`): its text, its calls with their ids and
 * argument text, its refusal, and the reasoning the provider needs back under the name it used
 * (`reasoning_content` for DeepSeek's thinking mode within a tool loop, `reasoning_details` unmodified for
 * OpenRouter). Nothing of an abandoned attempt is in it. Each call's answer is its tool's result (a repeat's
 * recorded result) as text, JSON for anything but a string; a call that failed is answered `Error: …`, so
 * that the model reads why. With no calls (a `done` turn) it is the assistant message alone.
 *
 * A finish without output (a source of your own that emits neutral events) gives the message from the turn's
 * text and released calls, their arguments as JSON, and no reasoning.
 *
 * ## Example
 * ```ts
 * import { last, lastValueFrom, share, toArray } from 'rxjs';
 * import { accumulateTurn, nextStep } from 'cleanturn';
 * import { executeTools } from 'cleanturn/effects';
 * import { toOpenAIChatMessages } from 'cleanturn/providers';
 *
 * const events$ = turn$.pipe(share()); // the clean turn: streamTurn({ adapter: openaiChat(), … })
 * const [turn, results] = await Promise.all([
 *   lastValueFrom(events$.pipe(accumulateTurn(), last())),
 *   lastValueFrom(events$.pipe(executeTools(handlers, { turnId: 'turn-42' }), toArray())),
 * ]);
 * if (nextStep(turn.finish) === 'answer') messages.push(...toOpenAIChatMessages(turn, results));
 * ```
 *
 * @param turn The final turn state (`accumulateTurn()`): its finish, text and released calls.
 * @param results The executor's `tool-result`s for the turn's calls (those of an abandoned attempt are passed
 *   over).
 * @returns The assistant message, then one tool message per call id: assignable to the `openai` SDK's
 *   `ChatCompletionMessageParam[]`.
 * @throws ProviderError when the turn has no finish (`not-finished`), its output is another format's
 *   (`wrong-format`), a call id has no result (`unanswered`) or two (`answered-twice`), a result answers an id
 *   the final attempt lacks (`unknown-call`), a call still runs elsewhere (`still-running`), or an entry of
 *   `results` is not a `tool-result` (`not-a-result`).
 */
export function toOpenAIChatMessages(
  turn: TextTurn,
  results: readonly ToolResultLike[],
): (ChatAssistantMessage | ChatToolMessage)[] {
  const output = outputOf<OpenAIChatOutput>(builder, turn, 'openai-chat');
  const assistant = output === undefined ? fromTurn(turn) : fromOutput(output);
  const calls = (assistant.tool_calls ?? []).map((call) => ({ id: call.id, name: call.function.name }));
  const answers = answersFor(builder, calls, results, turn.finish?.attempt);
  const messages: (ChatAssistantMessage | ChatToolMessage)[] = [assistant];
  for (const answer of answers) {
    messages.push({
      role: 'tool',
      tool_call_id: answer.result.call.id,
      content: answer.ok ? resultText(answer.value) : `Error: ${answer.message}`,
    });
  }
  return messages;
}

/** A copy of the output's message: the request can be changed without changing the turn. */
function fromOutput(output: OpenAIChatOutput): ChatAssistantMessage {
  const { message } = output;
  const assistant: ChatAssistantMessage = { role: 'assistant', content: message.content };
  if (message.tool_calls !== undefined) {
    assistant.tool_calls = message.tool_calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.function.name, arguments: call.function.arguments },
    }));
  }
  if (message.refusal !== undefined) assistant.refusal = message.refusal;
  if (message.reasoning_content !== undefined) assistant.reasoning_content = message.reasoning_content;
  if (message.reasoning !== undefined) assistant.reasoning = message.reasoning;
  if (message.reasoning_details !== undefined) {
    assistant.reasoning_details = message.reasoning_details.map((detail) => structuredClone(detail));
  }
  return assistant;
}

/** The message of a finish without output: the turn's text and released calls, arguments as JSON. */
function fromTurn(turn: TextTurn): ChatAssistantMessage {
  const assistant: ChatAssistantMessage = { role: 'assistant', content: turn.text === '' ? null : turn.text };
  if (turn.toolCalls.length > 0) {
    assistant.tool_calls = turn.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
    }));
  }
  return assistant;
}
