// The fixtures' parsed payloads, type-checked against the official SDK's types with the TypeScript compiler, so that
// a drift between the fixtures and the `openai` package (a renamed field, a new required one, a narrowed union)
// fails a test. Also checks that the SDK's stream items fit the adapters' own input types.
//
// Where the wire and the SDK types differ, the payload is checked against the SDK type adjusted by as little as
// possible, each adjustment named below (`Wire…` types); error payloads the SDK does not model at all are checked
// against a small local type.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readSseJson } from '../support/sse.js';

const root = join(import.meta.dirname, '../..');
const here = join(root, 'test/providers');

// The types each payload is checked against. Imports are relative to test/providers/.
const prelude = `
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type {
  Response,
  ResponseError,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import type { OpenAIChatChunk } from '../../src/providers/openaiChat.js';
import type { OpenAIResponsesEvent } from '../../src/providers/openaiResponses.js';

/** A chunk as sent: obfuscation padding (on by default) is not in the SDK type. */
type WireChatChunk = ChatCompletionChunk & { obfuscation?: string };

/** Azure OpenAI's chunks: a prompt-filter chunk first (empty strings and no object type), filter results per choice. */
interface AzureFilterResult { filtered: boolean; severity?: 'safe' | 'low' | 'medium' | 'high'; detected?: boolean }
type AzureFilterResults = Partial<Record<'hate' | 'self_harm' | 'sexual' | 'violence' | 'jailbreak', AzureFilterResult>>;
type AzureChatChunk = Omit<ChatCompletionChunk, 'object' | 'choices'> & {
  object: 'chat.completion.chunk' | '';
  choices: Array<ChatCompletionChunk.Choice & { content_filter_results?: AzureFilterResults }>;
  prompt_filter_results?: Array<{ prompt_index: number; content_filter_results: AzureFilterResults }>;
};

/** An entry of OpenRouter's \`reasoning_details\`, as streamed (in pieces of the same type and index). */
interface ReasoningDetail {
  type: 'reasoning.text' | 'reasoning.summary' | 'reasoning.encrypted';
  index?: number;
  id?: string | null;
  format?: string | null;
  text?: string | null;
  signature?: string | null;
  summary?: string;
  data?: string;
}

/**
 * A chunk of a compatible server that streams reasoning (fixtures named \`deepseek-…\`, \`openrouter-…\`,
 * \`vllm-…\`): the delta adds DeepSeek's \`reasoning_content\`, OpenRouter's and vLLM's \`reasoning\` and OpenRouter's
 * \`reasoning_details\`; a choice adds OpenRouter's \`native_finish_reason\` and vLLM's \`stop_reason\`; the chunk adds
 * OpenRouter's \`provider\`; the usage adds OpenRouter's cost and token details and DeepSeek's cache counts.
 */
type ReasoningChatChunk = Omit<WireChatChunk, 'choices' | 'usage'> & {
  provider?: string;
  choices: Array<
    Omit<ChatCompletionChunk.Choice, 'delta'> & {
      delta: ChatCompletionChunk.Choice.Delta & {
        reasoning_content?: string | null;
        reasoning?: string | null;
        reasoning_details?: ReasoningDetail[];
      };
      native_finish_reason?: string | null;
      stop_reason?: string | number | null;
    }
  >;
  usage?:
    | (Omit<CompletionUsage, 'prompt_tokens_details' | 'completion_tokens_details'> & {
        prompt_tokens_details?: CompletionUsage.PromptTokensDetails & { video_tokens?: number };
        completion_tokens_details?: CompletionUsage.CompletionTokensDetails & { image_tokens?: number };
        prompt_cache_hit_tokens?: number;
        prompt_cache_miss_tokens?: number;
        cost?: number;
        is_byok?: boolean;
        cost_details?: Record<string, number | null>;
      })
    | null;
};

/**
 * What OpenAI-compatible servers send that OpenAI's types do not allow (an error string, \`object: "error"\`,
 * parsed arguments, string indexes): the adapter reads it or names the field it cannot read.
 */
type CompatiblePayload = Record<string, unknown>;

/** The in-stream error payload of Chat Completions: the SDK throws on it and has no type for it. */
interface ChatErrorPayload {
  error: { message: string; type: string | null; param: string | null; code: string | number | null };
}

/**
 * The Response object as sent: \`output_text\` is computed by the SDK, not sent; \`usage\` is null until the
 * terminal event; \`store\` is sent but not typed; a recorded stream failed with \`insufficient_quota\`, a code the
 * SDK's union lacks.
 */
type WireResponse = Omit<Response, 'output_text' | 'usage' | 'error'> & {
  usage?: ResponseUsage | null;
  store?: boolean;
  error: ResponseError | { code: 'insufficient_quota'; message: string } | null;
};

/**
 * A stream event as sent: response objects as above; delta events may carry obfuscation padding;
 * \`function_call_arguments.done\` may lack \`name\` and text events \`logprobs\` (both seen in recorded streams).
 */
type WireEvent<E> = (E extends { response: Response } ? Omit<E, 'response'> & { response: WireResponse } : E) & {
  obfuscation?: string;
};
type Relaxed<E> = E extends { type: 'response.function_call_arguments.done' }
  ? Omit<E, 'name'> & { name?: string }
  : E extends { type: 'response.output_text.delta' | 'response.output_text.done'; logprobs: infer L }
    ? Omit<E, 'logprobs'> & { logprobs?: L }
    : E extends { type: 'response.output_item.added'; item: infer I }
      ? Omit<E, 'item'> & { item: StubItem<I> }
      : E;
/**
 * An added item is a stub: fields the SDK requires may come only with the done item (a \`web_search_call\`'s
 * \`action\`, an \`image_generation_call\`'s \`result\`, as recorded streams send them).
 */
type StubItem<I> = I extends { type: infer T } ? Partial<I> & { type: T } : never;
type WireResponseStreamEvent = Relaxed<WireEvent<ResponseStreamEvent>>;

/** The \`keepalive\` event of long responses (recorded streams; the SDK types do not have it). */
interface KeepaliveEvent {
  type: 'keepalive';
  sequence_number: number;
}

/** The nested shape of the \`error\` event, from a recorded stream; the SDK types only the flat one. */
interface NestedErrorEvent {
  type: 'error';
  sequence_number: number;
  error: { type: string; code: string | null; message: string; param: string | null };
}
`;

/** One payload and the type it must have. */
interface Check {
  /** Where it comes from, for the failure message. */
  label: string;
  type: string;
  payload: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

function chatType(fixture: string, payload: unknown): string {
  if (fixture.startsWith('compat-')) return 'CompatiblePayload';
  if (isObject(payload) && 'error' in payload) return 'ChatErrorPayload';
  if (/^(deepseek|openrouter|vllm)-/.test(fixture)) return 'ReasoningChatChunk';
  return fixture.startsWith('azure-') ? 'AzureChatChunk' : 'WireChatChunk';
}

function responsesType(fixture: string, payload: unknown): string {
  if (fixture.startsWith('compat-')) return 'CompatiblePayload';
  if (isObject(payload) && payload.type === 'keepalive') return 'KeepaliveEvent';
  return isObject(payload) && payload.type === 'error' && 'error' in payload
    ? 'NestedErrorEvent'
    : 'WireResponseStreamEvent';
}

function checksOf(folder: string, typeOf: (fixture: string, payload: unknown) => string): Check[] {
  const dir = join(root, 'test/fixtures', folder);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.sse'))
    .sort()
    .flatMap((file) =>
      readSseJson(join(dir, file)).map((payload, i) => ({
        label: `${folder}/${file} payload #${i}`,
        type: typeOf(file, payload),
        payload,
      })),
    );
}

/**
 * Type-checks a virtual module made of the prelude and `body` (one declaration per line, as `lines` gives them),
 * and returns the diagnostics of that module, each labelled with the line it is on.
 */
function typeCheck(body: string[], labels: string[]): string[] {
  const fileName = join(here, '__fixture-types__.ts');
  const text = `${prelude}\n${body.join('\n')}\n`;
  const firstLine = prelude.split('\n').length;
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    paths: { cleanturn: [join(root, 'src/index.ts')] },
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === fileName
      ? ts.createSourceFile(name, text, language, true)
      : getSourceFile(name, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const source = program.getSourceFile(fileName);
  return ts
    .getPreEmitDiagnostics(program, source)
    .filter((d) => d.file?.fileName === fileName)
    .map((d) => {
      const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
      const where = labels[line - firstLine] ?? `line ${line + 1}`;
      return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

/** The declaration of one payload, on one line. */
const declare = (check: Check, i: number) =>
  `export const p${i}: ${check.type} = ${JSON.stringify(check.payload)};`;

function checkAll(checks: Check[], extra: { line: string; label: string }[] = []): string[] {
  return typeCheck(
    [...checks.map(declare), ...extra.map((e) => e.line)],
    [...checks.map((c) => `${c.label} as ${c.type}`), ...extra.map((e) => e.label)],
  );
}

describe('fixtures against the official SDK types (openai v6)', () => {
  const chat = checksOf('openai-chat', chatType);
  const responses = checksOf('openai-responses', responsesType);

  it('reads every fixture', () => {
    expect(chat.length).toBeGreaterThan(50);
    expect(responses.length).toBeGreaterThan(100);
    // Most payloads are checked against the SDK's own types (with the named additions), only a few against local ones.
    const sdkTyped = chat.filter((c) => c.type === 'WireChatChunk' || c.type === 'ReasoningChatChunk');
    expect(sdkTyped.length).toBeGreaterThan(chat.length * 0.75);
  });

  it('every payload has its type, and the SDK stream items fit the adapters input types', () => {
    const fits = [
      {
        line: 'export const chatFits = (chunk: ChatCompletionChunk): OpenAIChatChunk => chunk;',
        label: 'ChatCompletionChunk → OpenAIChatChunk',
      },
      {
        line: 'export const eventFits = (event: ResponseStreamEvent): OpenAIResponsesEvent => event;',
        label: 'ResponseStreamEvent → OpenAIResponsesEvent',
      },
    ];
    expect(checkAll([...chat, ...responses], fits)).toEqual([]);
  }, 120_000);

  it('the check can fail: drifted payloads are reported with their fixture', () => {
    const drifted: Check[] = [
      {
        label: 'a finish reason the SDK does not know',
        type: 'WireChatChunk',
        payload: {
          id: 'x',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [{ index: 0, delta: {}, finish_reason: 'tool_call' }],
        },
      },
      {
        label: 'a tool-call fragment without index',
        type: 'WireChatChunk',
        payload: {
          id: 'x',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [
            { index: 0, delta: { tool_calls: [{ function: { arguments: '{' } }] }, finish_reason: null },
          ],
        },
      },
      {
        label: 'a delta event with a misspelled item id',
        type: 'WireResponseStreamEvent',
        payload: {
          type: 'response.function_call_arguments.delta',
          sequence_number: 1,
          itemId: 'fc_1',
          output_index: 0,
          delta: '{',
        },
      },
    ];
    const problems = checkAll(drifted);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^a finish reason the SDK does not know as WireChatChunk: /);
    expect(problems[1]).toMatch(/^a tool-call fragment without index/);
    expect(problems[2]).toMatch(/^a delta event with a misspelled item id.*itemId/s);
  }, 120_000);
});
