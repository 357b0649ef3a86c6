import type { ToolResultLike } from '../types.js';
import { nextRequestError } from './errors.js';
import { answersFor, type OutputCall, outputOf, resultText, type TextTurn } from './nextRequest.js';
import type { OpenAIResponsesOutput } from './openaiResponses.js';

const builder = 'toOpenAIResponsesInput';

// The input items the builder returns, each the shape of a member of the `openai` package's `ResponseInputItem`
// (checked by a type test), declared here because the package is not a dependency.

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
type Phase = 'commentary' | 'final_answer' | null;

/** A reasoning item as sent: its summary, its encrypted reasoning, the reasoning text of open-weight servers. */
interface ReasoningInput {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  encrypted_content?: string | null;
  content?: { type: 'reasoning_text'; text: string }[];
  status?: ItemStatus;
}

/** A citation of an output text. */
type Annotation =
  | { type: 'file_citation'; file_id: string; filename: string; index: number }
  | { type: 'url_citation'; url: string; title: string; start_index: number; end_index: number }
  | {
      type: 'container_file_citation';
      container_id: string;
      file_id: string;
      filename: string;
      start_index: number;
      end_index: number;
    }
  | { type: 'file_path'; file_id: string; index: number };

/** The assistant's message item as sent: its id, its text and refusal parts. */
interface MessageInput {
  type: 'message';
  role: 'assistant';
  id: string;
  status: ItemStatus;
  content: (
    | { type: 'output_text'; text: string; annotations: Annotation[] }
    | { type: 'refusal'; refusal: string }
  )[];
  phase?: Phase;
}

/** The assistant's text without an item id (a server that sends none, or a source of your own). */
interface AssistantTextInput {
  type: 'message';
  role: 'assistant';
  content: string;
  phase?: Phase;
}

/** A function call as sent. */
interface FunctionCallInput {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  id?: string;
  status?: ItemStatus;
  namespace?: string;
}

/** The answer of one call id. */
interface FunctionCallOutputInput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** The items of tools the provider ran, and its context compaction, as the API takes them back. */
type ProviderRunInput =
  | {
      type: 'web_search_call';
      id: string;
      status: 'in_progress' | 'searching' | 'completed' | 'failed';
      action:
        | { type: 'search'; query?: string; queries?: string[]; sources?: { type: 'url'; url: string }[] }
        | { type: 'open_page'; url?: string | null }
        | { type: 'find_in_page'; pattern: string; url: string };
    }
  | {
      type: 'file_search_call';
      id: string;
      queries: string[];
      status: 'in_progress' | 'searching' | 'completed' | 'incomplete' | 'failed';
      results?:
        | {
            attributes?: Record<string, string | number | boolean> | null;
            file_id?: string;
            filename?: string;
            score?: number;
            text?: string;
          }[]
        | null;
    }
  | {
      type: 'code_interpreter_call';
      id: string;
      code: string | null;
      container_id: string;
      outputs: ({ type: 'logs'; logs: string } | { type: 'image'; url: string })[] | null;
      status: 'in_progress' | 'completed' | 'incomplete' | 'interpreting' | 'failed';
    }
  | {
      type: 'image_generation_call';
      id: string;
      result: string | null;
      status: 'in_progress' | 'completed' | 'generating' | 'failed';
    }
  | {
      type: 'mcp_list_tools';
      id: string;
      server_label: string;
      tools: { name: string; input_schema: unknown; annotations?: unknown; description?: string | null }[];
      error?: string | null;
    }
  | { type: 'mcp_approval_request'; id: string; name: string; arguments: string; server_label: string }
  | {
      type: 'mcp_call';
      id: string;
      name: string;
      arguments: string;
      server_label: string;
      approval_request_id?: string | null;
      error?: string | null;
      output?: string | null;
      status?: 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed';
    }
  | { type: 'compaction'; encrypted_content: string; id?: string | null };

/** An input item of the next request. */
type InputItem =
  | ReasoningInput
  | MessageInput
  | AssistantTextInput
  | FunctionCallInput
  | FunctionCallOutputInput
  | ProviderRunInput;

/**
 * The fields the API takes back of each provider-run item type (`ResponseInputItem` of `openai@6`); the fields
 * only the output has (an image's `revised_prompt`, `created_by`) are left out.
 */
const providerRunFields: Record<ProviderRunInput['type'], readonly string[]> = {
  web_search_call: ['id', 'status', 'action'],
  file_search_call: ['id', 'queries', 'status', 'results'],
  code_interpreter_call: ['id', 'code', 'container_id', 'outputs', 'status'],
  image_generation_call: ['id', 'result', 'status'],
  mcp_list_tools: ['id', 'server_label', 'tools', 'error'],
  mcp_approval_request: ['id', 'name', 'arguments', 'server_label'],
  mcp_call: ['id', 'name', 'arguments', 'server_label', 'approval_request_id', 'error', 'output', 'status'],
  compaction: ['id', 'encrypted_content'],
};

/** An output item as the output holds it. */
type OutputItem = OpenAIResponsesOutput['items'][number];

/**
 * The input items that the final attempt of an {@link openaiResponses} turn adds to the next request's `input`, as
 * the Responses API takes them (`ResponseInputItem`s of `openai@6`): the attempt's output items in output order,
 * then one `function_call_output` per `call_id`, in call order.
 *
 * - `reasoning` items go back with their `id`, `summary` and `encrypted_content` as sent: with `store: false` the
 *   request must ask for `include: ['reasoning.encrypted_content']`, since OpenAI rejects a reasoning item it can
 *   neither look up nor decrypt (404 `Item with id 'rs_…' not found`). A reasoning item without an `id` is left
 *   out: the API's input type requires one.
 * - `message` items go back as the assistant's message with their `output_text` (and `refusal`) parts, their
 *   `annotations` and `phase`; without an item id, as the assistant's text.
 * - `function_call` items go back with `call_id`, `name` and `arguments` as sent (and their `id`, `status`,
 *   `namespace`).
 * - Items of tools the provider ran (`web_search_call`, `file_search_call`, `code_interpreter_call`,
 *   `image_generation_call`, `mcp_list_tools`, `mcp_call`, `mcp_approval_request`) and `compaction` items go back
 *   with the fields the API takes as input; they are never answered by a result. Other item types are left out,
 *   except a call of another kind (a `custom_tool_call`, a `computer_call`…): the adapter does not release those,
 *   so none of `results` can answer it, and the request would be rejected: a {@link ProviderError}
 *   (`unanswered`).
 * - A result is its value as text (a string as it is, anything else as JSON); a call that failed is answered
 *   with the JSON `{"error": "…why…"}` (the Responses API has no error flag).
 *
 * Without an output on the finish (a source of your own that emits neutral events), the items are the turn's
 * text as the assistant's message and its released calls (`arguments` as the JSON of their arguments). A turn
 * without calls gives its output items alone.
 *
 * Every call must have exactly one result among `results` (a repeat's recorded result counts), and every result
 * must answer one: otherwise it throws a {@link ProviderError}, as it does for a turn without a finish or with
 * another format's output. Results of an abandoned attempt's calls are passed over. Nothing of an abandoned
 * attempt is in the output: the finish that carries it is the final attempt's.
 *
 * ## Example
 * ```ts
 * import OpenAI from 'openai';
 * import type { ResponseInputItem } from 'openai/resources/responses/responses';
 * import { defer, from, lastValueFrom, mergeMap, share, toArray } from 'rxjs';
 * import { accumulateTurn, attemptPipeline, nextStep, turnPipeline } from 'cleanturn';
 * import { executeTools } from 'cleanturn/effects';
 * import { openaiResponses, toOpenAIResponsesInput } from 'cleanturn/providers';
 *
 * const client = new OpenAI({ maxRetries: 0 });
 * const input: ResponseInputItem[] = [{ role: 'user', content: 'Please refund order ORD-7781.' }];
 * const events$ = defer(() =>
 *   client.responses.create({
 *     model: 'o4-mini',
 *     input,
 *     tools: [{ type: 'function', name: 'issue_refund', parameters: null, strict: false }],
 *     store: false, // nothing kept on OpenAI's side: the reasoning comes back encrypted
 *     include: ['reasoning.encrypted_content'],
 *     stream: true,
 *   }),
 * ).pipe(
 *   mergeMap((stream) => from(stream)),
 *   attemptPipeline(openaiResponses()),
 *   turnPipeline({ turnId: 'turn-42', retry: 2 }),
 *   share(),
 * );
 * const handlers = { issue_refund: async () => ({ refund_id: 're_7781', status: 'pending' }) };
 * const [turn, results] = await Promise.all([
 *   lastValueFrom(events$.pipe(accumulateTurn())),
 *   lastValueFrom(events$.pipe(executeTools(handlers, { turnId: 'turn-42' }), toArray())),
 * ]);
 * if (nextStep(turn.finish) === 'answer') input.push(...toOpenAIResponsesInput(turn, results));
 * ```
 *
 * @param turn The turn's final state (`accumulateTurn()`): its finish, with the attempt's output; its text and
 *   calls when there is no output.
 * @param results The executor's `tool-result`s of the turn (`executeTools` of `cleanturn/effects`).
 * @returns The input items to append, in order.
 */
export function toOpenAIResponsesInput(turn: TextTurn, results: readonly ToolResultLike[]): InputItem[] {
  const output = outputOf<OpenAIResponsesOutput>(builder, turn, 'openai-responses');
  const items = output === undefined ? neutralItems(turn) : output.items.flatMap(inputOf);
  const calls: OutputCall[] = [];
  for (const item of items)
    if (item.type === 'function_call') calls.push({ id: item.call_id, name: item.name });
  const answers = answersFor(builder, calls, results, turn.finish?.attempt);
  answers.forEach((answer, i) => {
    const output = answer.ok ? resultText(answer.value) : JSON.stringify({ error: answer.message });
    items.push({ type: 'function_call_output', call_id: (calls[i] as OutputCall).id, output });
  });
  return items;
}

/** The items of a turn whose finish has no output: its text, then its released calls. */
function neutralItems(turn: Parameters<typeof toOpenAIResponsesInput>[0]): InputItem[] {
  const items: InputItem[] = [];
  if (turn.text !== '') items.push({ type: 'message', role: 'assistant', content: turn.text });
  for (const { id, name, args } of turn.toolCalls) {
    items.push({ type: 'function_call', call_id: id, name, arguments: JSON.stringify(args ?? {}) });
  }
  return items;
}

/** An output item as input items: itself in the shape the API takes, or nothing when it takes none. */
function inputOf(item: OutputItem): InputItem[] {
  switch (item.type) {
    case 'reasoning':
      return typeof item.id === 'string' ? [reasoningInput(item, item.id)] : [];
    case 'message':
      return [messageInput(item)];
    case 'function_call':
      return [functionCallInput(item)];
  }
  if (typeof item.type === 'string' && Object.hasOwn(providerRunFields, item.type)) {
    const fields = providerRunFields[item.type as ProviderRunInput['type']];
    return [pick(item, ['type', ...fields]) as ProviderRunInput];
  }
  if (typeof item.call_id === 'string') {
    throw nextRequestError(
      builder,
      'unanswered',
      `call ${item.call_id} is a ${String(item.type)} item, which openaiResponses() does not release as a call: no result can answer it`,
      item.call_id,
    );
  }
  return [];
}

function reasoningInput(item: OutputItem, id: string): ReasoningInput {
  const summary = Array.isArray(item.summary) ? (copy<ReasoningInput['summary']>(item.summary) ?? []) : [];
  const input: ReasoningInput = { type: 'reasoning', id, summary };
  if (typeof item.encrypted_content === 'string') input.encrypted_content = item.encrypted_content;
  if (Array.isArray(item.content) && item.content.length > 0) input.content = copy(item.content);
  if (typeof item.status === 'string') input.status = item.status as ItemStatus;
  return input;
}

function messageInput(item: OutputItem): MessageInput | AssistantTextInput {
  const content: MessageInput['content'] = [];
  for (const part of Array.isArray(item.content) ? (item.content as unknown[]) : []) {
    if (typeof part !== 'object' || part === null) continue;
    const { type, text, refusal, annotations } = part as Record<string, unknown>;
    if (type === 'output_text' && typeof text === 'string') {
      content.push({ type, text, annotations: copy(annotations) ?? [] });
    } else if (type === 'refusal' && typeof refusal === 'string') {
      content.push({ type, refusal });
    }
  }
  const phase = item.phase === undefined ? {} : { phase: item.phase as Phase };
  if (typeof item.id !== 'string') {
    const text = content.map((part) => (part.type === 'output_text' ? part.text : '')).join('');
    return { type: 'message', role: 'assistant', content: text, ...phase };
  }
  const status = typeof item.status === 'string' ? (item.status as ItemStatus) : 'completed';
  return { type: 'message', role: 'assistant', id: item.id, status, content, ...phase };
}

function functionCallInput(item: OutputItem): FunctionCallInput {
  const { call_id, name } = item;
  if (typeof call_id !== 'string' || typeof name !== 'string') {
    const problem = `a function_call item without a call_id or a name (${String(call_id)}): no result can answer it`;
    throw nextRequestError(builder, 'unanswered', problem);
  }
  const args = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {});
  const input: FunctionCallInput = { type: 'function_call', call_id, name, arguments: args };
  if (typeof item.id === 'string') input.id = item.id;
  if (typeof item.status === 'string') input.status = item.status as ItemStatus;
  if (typeof item.namespace === 'string') input.namespace = item.namespace;
  return input;
}

/** The fields of `item` that are present, copied (the output is never shared with the request). */
function pick(item: OutputItem, fields: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (item[field] !== undefined) picked[field] = copy(item[field]);
  return picked;
}

/** A copy of JSON data. */
function copy<T>(value: unknown): T | undefined {
  return value === undefined ? undefined : (structuredClone(value) as T);
}
