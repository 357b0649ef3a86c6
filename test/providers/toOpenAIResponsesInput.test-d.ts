// Type tests: what toOpenAIResponsesInput returns is what the openai package (v6) takes as the next request's
// input items, each kind of item on its own; the turn states of the pipelines fit its parameter.
import type { ToolResultLike, TurnState } from 'cleanturn';
import type { ToolResultEvent } from 'cleanturn/effects';
import { toOpenAIResponsesInput } from 'cleanturn/providers';
import type OpenAI from 'openai';
import type {
  ResponseCreateParamsStreaming,
  ResponseInput,
  ResponseInputItem,
} from 'openai/resources/responses/responses';
import { describe, expectTypeOf, it } from 'vitest';

declare const turn: TurnState;
declare const results: ToolResultEvent[];
declare const client: OpenAI;

type Item = ReturnType<typeof toOpenAIResponsesInput>[number];
/** The builder's item of one `type`. */
type Of<T extends string> = Extract<Item, { type: T }>;

describe('toOpenAIResponsesInput types', () => {
  it("returns ResponseInputItem[] of openai@6, for responses.create's input", () => {
    const items = toOpenAIResponsesInput(turn, results);
    expectTypeOf(items).toMatchTypeOf<ResponseInputItem[]>();
    expectTypeOf(items).toMatchTypeOf<ResponseInput>();
    const input: ResponseInput = [{ role: 'user', content: 'Please refund order ORD-7781.' }];
    input.push(...items);
    const params: ResponseCreateParamsStreaming = {
      model: 'o4-mini',
      input,
      store: false,
      include: ['reasoning.encrypted_content'],
      stream: true,
    };
    expectTypeOf(client.responses.create(params)).resolves.toBeObject();
  });

  it('each kind of item is the SDK type of its kind', () => {
    expectTypeOf<Of<'reasoning'>>().toMatchTypeOf<OpenAI.Responses.ResponseReasoningItem>();
    expectTypeOf<
      Extract<Of<'message'>, { id: string }>
    >().toMatchTypeOf<OpenAI.Responses.ResponseOutputMessage>();
    expectTypeOf<
      Extract<Of<'message'>, { content: string }>
    >().toMatchTypeOf<OpenAI.Responses.EasyInputMessage>();
    expectTypeOf<Of<'function_call'>>().toMatchTypeOf<OpenAI.Responses.ResponseFunctionToolCall>();
    expectTypeOf<Of<'function_call_output'>>().toMatchTypeOf<ResponseInputItem.FunctionCallOutput>();
    expectTypeOf<Of<'web_search_call'>>().toMatchTypeOf<OpenAI.Responses.ResponseFunctionWebSearch>();
    expectTypeOf<Of<'file_search_call'>>().toMatchTypeOf<OpenAI.Responses.ResponseFileSearchToolCall>();
    expectTypeOf<
      Of<'code_interpreter_call'>
    >().toMatchTypeOf<OpenAI.Responses.ResponseCodeInterpreterToolCall>();
    expectTypeOf<Of<'image_generation_call'>>().toMatchTypeOf<ResponseInputItem.ImageGenerationCall>();
    expectTypeOf<Of<'mcp_list_tools'>>().toMatchTypeOf<ResponseInputItem.McpListTools>();
    expectTypeOf<Of<'mcp_approval_request'>>().toMatchTypeOf<ResponseInputItem.McpApprovalRequest>();
    expectTypeOf<Of<'mcp_call'>>().toMatchTypeOf<ResponseInputItem.McpCall>();
    expectTypeOf<Of<'compaction'>>().toMatchTypeOf<OpenAI.Responses.ResponseCompactionItemParam>();
  });

  it('takes the turn state of accumulateTurn and any tool results', () => {
    expectTypeOf<TurnState>().toMatchTypeOf<Parameters<typeof toOpenAIResponsesInput>[0]>();
    expectTypeOf<ToolResultEvent[]>().toMatchTypeOf<readonly ToolResultLike[]>();
    expectTypeOf<Parameters<typeof toOpenAIResponsesInput>[1]>().toEqualTypeOf<readonly ToolResultLike[]>();
  });
});
