// The fixtures and the adapters against the official SDKs' own types, checked by the TypeScript compiler: if a
// provider's types drift (a field renamed, retyped or removed, a new finish reason), a test here breaks.
//
// 1. Every fixture payload must type-check as the SDK's stream event type, in its JSON form (`Wire<T>`: what
//    JSON.stringify of a T can look like). Wire streams omit fields that the SDKs' response types declare as
//    required-but-nullable, so fields other than `type` are optional; misspelt, extra or mistyped fields fail.
//    Payloads the SDK types do not model get a small local type, named below (`Local…`).
// 2. The fields each adapter reads must exist in the SDK types, with the types it expects; the sets of finish
//    reasons and error types must be ones the adapters map.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { readPayloads } from '../support/sse.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixtures = join(root, 'test/fixtures');
/** Where the generated sources pretend to live: beside this file, so that packages resolve from node_modules. */
const virtualDir = join(root, 'test/providers/__sdk-types__');

/** The JSON form of a type: dates as strings, string enums as their values, every field but `type` optional. */
const wire = `
type Wire<T> = T extends Date
  ? string
  : T extends string
    ? \`\${T}\`
    : T extends number | boolean | null | undefined
      ? T
      : T extends readonly (infer U)[]
        ? Wire<U>[]
        : T extends (...args: never[]) => unknown
          ? never
          : T extends object
            ? { [K in keyof T as K extends 'type' ? K : never]: Wire<T[K]> } & {
                [K in keyof T as K extends 'type' ? never : K]?: Wire<T[K]>;
              }
            : T;
/** The adapter reads field K of T, expecting a V. */
type Reads<T, K extends keyof T, V> = [T[K]] extends [V] ? true : false;
/** Every member of T is one of the values the adapter maps. */
type Within<T, Known> = [T] extends [Known] ? true : false;
`;

// ---- What each format's fixtures are checked against ----

const anthropicHeader = `
import type { BetaRawMessageStreamEvent } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import type { ErrorResponse } from '@anthropic-ai/sdk/resources/shared';
${wire}
/** Local: the SDK skips ping events before parsing and has no type for them. */
type LocalPing = { type: 'ping' };
/** Local: an event type from the future, to check that the adapter ignores unknown types. */
type LocalFutureEvent = { type: 'message_annotation'; note: string };
/** Local: a content block type and a delta type from the future, to check that the block is kept as sent. */
type LocalFutureBlock =
  | { type: 'content_block_start'; index: number; content_block: { type: 'memory_recall'; memory_id: string; summary: string } }
  | { type: 'content_block_delta'; index: number; delta: { type: 'memory_delta'; detail: string } };
/** The beta events (MCP tool blocks, compaction) are the streams of requests with the beta headers. */
type Payload =
  | Wire<RawMessageStreamEvent>
  | Wire<BetaRawMessageStreamEvent>
  | Wire<ErrorResponse>
  | LocalPing
  | LocalFutureEvent
  | LocalFutureBlock;
`;

const geminiHeader = `
import type { GenerateContentResponse } from '@google/genai';
${wire}
/** Local: the raw JSON error tail; the SDK parses it only to throw its ApiError, and has no type for it. */
type LocalErrorTail = { error: { code: number; message: string; status: string } };
type Payload = Wire<GenerateContentResponse> | LocalErrorTail;
`;

const aiSdkPartsHeader = `
import type { TextStreamPart, ToolSet } from 'ai';
${wire}
type Payload = Wire<TextStreamPart<ToolSet>>;
`;

const aiSdkUiHeader = `
import type { UIMessageChunk } from 'ai';
${wire}
/** Local: reset-step is written by @ai-sdk/workflow; the UIMessageChunk type of ai 6 does not have it. */
type LocalResetStep = { type: 'reset-step' };
type Payload = Wire<UIMessageChunk> | LocalResetStep;
`;

const openaiChatHeader = `
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
${wire}
/** Local: an error payload inside a Chat Completions stream; the SDK throws it as an APIError, untyped. */
type LocalErrorPayload = { error: { message: string; type: string; param: string | null; code: string | null } };
type Payload = Wire<ChatCompletionChunk> | LocalErrorPayload;
`;

/**
 * Local: what the SDK's types do not allow and servers still send (a string index, a numeric name): fixtures named
 * `compat-…`, which the adapter reads or rejects with an error naming the field.
 */
const compatibleHeader = `
type Payload = Record<string, unknown>;
`;

function headerFor(folder: string, file: string): string {
  if (file.startsWith('compat-')) return compatibleHeader;
  if (folder === 'anthropic') return anthropicHeader;
  if (folder === 'gemini') return geminiHeader;
  if (file.startsWith('upstream-openai-chat')) return openaiChatHeader;
  return file.endsWith('.jsonl') ? aiSdkPartsHeader : aiSdkUiHeader;
}

/** One generated source per fixture: each payload on its own line, so that a diagnostic names the payload. */
function fixtureSource(folder: string, file: string): string {
  const lines = readPayloads(join(fixtures, folder, file)).map((p) => `  ${JSON.stringify(p)},`);
  return `${headerFor(folder, file)}\nexport const payloads: Payload[] = [\n${lines.join('\n')}\n];\n`;
}

// ---- The fields the adapters read, and the vocabularies they map ----

const contracts: Record<string, string> = {
  anthropic: `
import type * as B from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type * as M from '@anthropic-ai/sdk/resources/messages';
import type { ErrorType } from '@anthropic-ai/sdk/resources/shared';
${wire}
type Start = M.RawMessageStartEvent;
type Usage = M.Usage;
type DeltaUsage = M.MessageDeltaUsage;
export const reads: true[] = [
  true as Reads<Start, 'type', 'message_start'>,
  true as Reads<M.Message, 'id', string>,
  true as Reads<Start, 'message', { id: string; usage: Usage }>,
  true as Reads<Usage, 'input_tokens', number>,
  true as Reads<Usage, 'output_tokens', number>,
  true as Reads<Usage, 'cache_creation_input_tokens', number | null>,
  true as Reads<Usage, 'cache_read_input_tokens', number | null>,
  true as Reads<M.RawContentBlockStartEvent, 'index', number>,
  true as Reads<M.ToolUseBlock, 'type', 'tool_use'>,
  true as Reads<M.ToolUseBlock, 'id', string>,
  true as Reads<M.ToolUseBlock, 'name', string>,
  true as Reads<M.RawContentBlockDeltaEvent, 'index', number>,
  true as Reads<M.TextDelta, 'type', 'text_delta'>,
  true as Reads<M.TextDelta, 'text', string>,
  true as Reads<M.InputJSONDelta, 'type', 'input_json_delta'>,
  true as Reads<M.InputJSONDelta, 'partial_json', string>,
  true as Reads<M.RawContentBlockStopEvent, 'index', number>,
  true as Reads<M.RawMessageDeltaEvent, 'delta', { stop_reason: M.StopReason | null }>,
  true as Reads<DeltaUsage, 'output_tokens', number>,
  true as Reads<DeltaUsage, 'input_tokens', number | null>,
  true as Reads<DeltaUsage, 'cache_creation_input_tokens', number | null>,
  true as Reads<DeltaUsage, 'cache_read_input_tokens', number | null>,
  true as Reads<M.RawMessageStopEvent, 'type', 'message_stop'>,
  true as Reads<M.ThinkingDelta, 'type', 'thinking_delta'>,
  true as Reads<M.ThinkingDelta, 'thinking', string>,
  true as Reads<M.SignatureDelta, 'type', 'signature_delta'>,
  true as Reads<M.SignatureDelta, 'signature', string>,
  true as Reads<M.CitationsDelta, 'type', 'citations_delta'>,
  true as Reads<M.CitationsDelta, 'citation', object>,
  true as Reads<M.ThinkingBlock, 'thinking', string>,
  true as Reads<M.ThinkingBlock, 'signature', string>,
  true as Reads<M.RedactedThinkingBlock, 'data', string>,
  true as Reads<M.TextBlock, 'text', string>,
  true as Reads<M.TextBlock, 'citations', object[] | null>,
  true as Reads<DeltaUsage, 'output_tokens_details', { thinking_tokens: number } | null>,
  true as Reads<B.BetaCompactionContentBlockDelta, 'type', 'compaction_delta'>,
  true as Reads<B.BetaCompactionContentBlockDelta, 'content', string | null>,
  true as Reads<B.BetaCompactionContentBlockDelta, 'encrypted_content', string | null>,
  // Every stop reason has a row in the adapter's table (compaction: of the beta API).
  true as Within<M.StopReason, 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded'>,
  true as Within<B.BetaStopReason, M.StopReason | 'compaction'>,
  // Every error type is classified explicitly (unknown ones would count as retryable).
  true as Within<ErrorType,
    | 'overloaded_error' | 'api_error' | 'rate_limit_error' | 'timeout_error' | 'conflict_error'
    | 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error' | 'request_too_large'
    | 'billing_error' | 'memory_precondition_failed_error' | 'memory_path_conflict_error'>,
];
`,
  gemini: `
import type * as G from '@google/genai';
${wire}
type Candidate = G.Candidate;
type Part = G.Part;
type Call = G.FunctionCall;
type UsageMetadata = G.GenerateContentResponseUsageMetadata;
export const reads: true[] = [
  true as Reads<G.GenerateContentResponse, 'candidates', Candidate[] | undefined>,
  true as Reads<G.GenerateContentResponse, 'usageMetadata', UsageMetadata | undefined>,
  true as Reads<G.GenerateContentResponse, 'promptFeedback', { blockReason?: G.BlockedReason } | undefined>,
  true as Reads<Candidate, 'index', number | undefined>,
  true as Reads<Candidate, 'content', { parts?: Part[] } | undefined>,
  true as Reads<Candidate, 'finishReason', G.FinishReason | undefined>,
  true as Reads<Part, 'text', string | undefined>,
  true as Reads<Part, 'thought', boolean | undefined>,
  true as Reads<Part, 'thoughtSignature', string | undefined>,
  true as Reads<Part, 'executableCode', G.ExecutableCode | undefined>,
  true as Reads<Part, 'codeExecutionResult', G.CodeExecutionResult | undefined>,
  true as Reads<G.GenerateContentResponse, 'responseId', string | undefined>,
  true as Reads<Part, 'functionCall', Call | undefined>,
  true as Reads<Call, 'id', string | undefined>,
  true as Reads<Call, 'name', string | undefined>,
  true as Reads<Call, 'args', Record<string, unknown> | undefined>,
  true as Reads<Call, 'willContinue', boolean | undefined>,
  true as Reads<Call, 'partialArgs', G.PartialArg[] | undefined>,
  true as Reads<G.PartialArg, 'jsonPath', string | undefined>,
  true as Reads<G.PartialArg, 'stringValue', string | undefined>,
  true as Reads<G.PartialArg, 'numberValue', number | undefined>,
  true as Reads<G.PartialArg, 'boolValue', boolean | undefined>,
  true as Reads<G.PartialArg, 'nullValue', 'NULL_VALUE' | undefined>,
  true as Reads<G.PartialArg, 'willContinue', boolean | undefined>,
  true as Reads<UsageMetadata, 'promptTokenCount', number | undefined>,
  true as Reads<UsageMetadata, 'candidatesTokenCount', number | undefined>,
  true as Reads<UsageMetadata, 'thoughtsTokenCount', number | undefined>,
  true as Reads<UsageMetadata, 'toolUsePromptTokenCount', number | undefined>,
  true as Reads<UsageMetadata, 'cachedContentTokenCount', number | undefined>,
  // Every finish reason and block reason is one the adapter knows (the rest map to other on purpose).
  true as Within<\`\${G.FinishReason}\`,
    | 'FINISH_REASON_UNSPECIFIED' | 'STOP' | 'MAX_TOKENS' | 'SAFETY' | 'RECITATION' | 'LANGUAGE' | 'OTHER'
    | 'BLOCKLIST' | 'PROHIBITED_CONTENT' | 'SPII' | 'MALFORMED_FUNCTION_CALL' | 'IMAGE_SAFETY'
    | 'UNEXPECTED_TOOL_CALL' | 'TOO_MANY_TOOL_CALLS' | 'IMAGE_PROHIBITED_CONTENT' | 'NO_IMAGE' | 'IMAGE_RECITATION'
    | 'IMAGE_OTHER' | 'CONTINUATION'>,
  true as Within<\`\${G.BlockedReason}\`,
    | 'BLOCKED_REASON_UNSPECIFIED' | 'SAFETY' | 'OTHER' | 'BLOCKLIST' | 'PROHIBITED_CONTENT' | 'IMAGE_SAFETY'
    | 'MODEL_ARMOR' | 'JAILBREAK'>,
];
`,
  'ai-sdk': `
import type { FinishReason, LanguageModelUsage, ProviderMetadata, TextStreamPart, ToolSet, UIMessageChunk } from 'ai';
${wire}
type Part<T extends string> = Extract<TextStreamPart<ToolSet>, { type: T }>;
type Chunk<T extends string> = Extract<UIMessageChunk, { type: T }>;
export const reads: true[] = [
  true as Reads<Part<'text-delta'>, 'text', string>,
  true as Reads<Part<'tool-call'>, 'toolCallId', string>,
  true as Reads<Part<'tool-call'>, 'toolName', string>,
  true as Reads<Part<'tool-call'>, 'input', unknown>,
  true as Reads<Extract<Part<'tool-call'>, { dynamic: true }>, 'invalid', boolean | undefined>,
  true as Reads<Part<'tool-call'>, 'providerExecuted', boolean | undefined>,
  true as Reads<Part<'tool-result'>, 'toolCallId', string>,
  true as Reads<Part<'tool-error'>, 'toolCallId', string>,
  true as Reads<Part<'tool-output-denied'>, 'toolCallId', string>,
  true as Reads<Part<'finish-step'>, 'usage', LanguageModelUsage>,
  true as Reads<Part<'finish-step'>, 'response', { id: string }>,
  true as Reads<Part<'reasoning-delta'>, 'text', string>,
  true as Reads<Part<'reasoning-delta'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'reasoning-start'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'reasoning-end'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'text-delta'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'text-end'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'tool-call'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Part<'tool-result'>, 'output', unknown>,
  true as Reads<Part<'tool-result'>, 'preliminary', boolean | undefined>,
  true as Reads<Part<'tool-error'>, 'error', unknown>,
  true as Reads<LanguageModelUsage, 'inputTokenDetails', { cacheReadTokens: number | undefined }>,
  true as Reads<LanguageModelUsage, 'outputTokenDetails', { reasoningTokens: number | undefined }>,
  true as Reads<LanguageModelUsage, 'cachedInputTokens', number | undefined>,
  true as Reads<LanguageModelUsage, 'reasoningTokens', number | undefined>,
  true as Reads<Part<'finish'>, 'finishReason', FinishReason>,
  true as Reads<Part<'finish'>, 'rawFinishReason', string | undefined>,
  true as Reads<Part<'finish'>, 'totalUsage', LanguageModelUsage>,
  true as Reads<LanguageModelUsage, 'inputTokens', number | undefined>,
  true as Reads<LanguageModelUsage, 'outputTokens', number | undefined>,
  true as Reads<Part<'error'>, 'error', unknown>,
  true as Reads<Part<'abort'>, 'reason', string | undefined>,
  true as Reads<Chunk<'text-delta'>, 'delta', string>,
  true as Reads<Chunk<'tool-input-available'>, 'toolCallId', string>,
  true as Reads<Chunk<'tool-input-available'>, 'toolName', string>,
  true as Reads<Chunk<'tool-input-available'>, 'input', unknown>,
  true as Reads<Chunk<'tool-input-error'>, 'errorText', string>,
  true as Reads<Chunk<'tool-output-available'>, 'toolCallId', string>,
  true as Reads<Chunk<'tool-output-available'>, 'output', unknown>,
  true as Reads<Chunk<'tool-output-available'>, 'providerExecuted', boolean | undefined>,
  true as Reads<Chunk<'tool-output-error'>, 'errorText', string>,
  true as Reads<Chunk<'reasoning-delta'>, 'delta', string>,
  true as Reads<Chunk<'reasoning-delta'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Chunk<'tool-input-available'>, 'providerMetadata', ProviderMetadata | undefined>,
  true as Reads<Chunk<'error'>, 'errorText', string>,
  true as Reads<Chunk<'finish'>, 'finishReason', FinishReason | undefined>,
  true as Reads<Chunk<'abort'>, 'reason', string | undefined>,
  // The SDK's finish reasons are the neutral ones.
  true as Within<FinishReason, 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other'>,
];
`,
};

// ---- Deliberately drifted payloads: the check must reject each ----

const drifted: Record<string, { header: string; payload: unknown }> = {
  'a renamed field (partialJson)': {
    header: anthropicHeader,
    payload: {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partialJson: '{}' },
    },
  },
  'a mistyped field (index as a string)': {
    header: anthropicHeader,
    payload: { type: 'content_block_stop', index: '1' },
  },
  'an unknown stop reason': {
    header: anthropicHeader,
    payload: { type: 'message_delta', delta: { stop_reason: 'paused' }, usage: { output_tokens: 1 } },
  },
  'an unknown Gemini finish reason': {
    header: geminiHeader,
    payload: { candidates: [{ finishReason: 'DONE' }] },
  },
  'a Gemini functionCall with arguments as a string': {
    header: geminiHeader,
    payload: { candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: '{}' } }] } }] },
  },
  'a streamText text-delta with delta instead of text': {
    header: aiSdkPartsHeader,
    payload: { type: 'text-delta', id: '0', delta: 'Hi' },
  },
  'a streamText reasoning-delta with delta instead of text': {
    header: aiSdkPartsHeader,
    payload: { type: 'reasoning-delta', id: '0', delta: 'Thinking.' },
  },
  'a reasoning signature outside providerMetadata': {
    header: aiSdkPartsHeader,
    payload: { type: 'reasoning-delta', id: '0', text: '', signature: 'EqQB' },
  },
  'a UI chunk of an unknown type': {
    header: aiSdkUiHeader,
    payload: { type: 'text-chunk', id: '0', delta: 'Hi' },
  },
};

// ---- The compiler ----

interface Checked {
  diagnostics: Map<string, string[]>;
}

/** Type-checks the generated sources in one program; returns the diagnostics per source. */
function typeCheck(sources: Map<string, string>): Checked {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    exactOptionalPropertyTypes: false,
  };
  const host = ts.createCompilerHost(options, true);
  const files = new Map([...sources].map(([name, text]) => [join(virtualDir, name), text]));
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (path) => files.has(path) || fileExists.call(host, path);
  host.readFile = (path) => files.get(path) ?? readFile.call(host, path);
  host.getSourceFile = (path, language, onError, create) => {
    const text = files.get(path);
    return text === undefined
      ? getSourceFile.call(host, path, language, onError, create)
      : ts.createSourceFile(path, text, language, true);
  };
  host.directoryExists = (path) => path === virtualDir || ts.sys.directoryExists(path);
  const program = ts.createProgram({ rootNames: [...files.keys()], options, host });
  const diagnostics = new Map<string, string[]>();
  for (const [path] of files) {
    const source = program.getSourceFile(path);
    const found =
      source === undefined
        ? []
        : [...program.getSemanticDiagnostics(source), ...program.getSyntacticDiagnostics(source)];
    diagnostics.set(
      path.slice(virtualDir.length + 1),
      found.map((d) => {
        const where =
          d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
        return `line ${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').slice(0, 4).join(' / ')}`;
      }),
    );
  }
  return { diagnostics };
}

const folders = ['anthropic', 'gemini', 'ai-sdk'];
const fixtureFiles = folders.flatMap((folder) =>
  readdirSync(join(fixtures, folder))
    .sort()
    .map((file) => ({ folder, file, name: `${folder}--${file}.ts` })),
);

let checked: Checked;

beforeAll(() => {
  const sources = new Map<string, string>();
  for (const { folder, file, name } of fixtureFiles) sources.set(name, fixtureSource(folder, file));
  for (const [folder, text] of Object.entries(contracts)) sources.set(`contract--${folder}.ts`, text);
  Object.entries(drifted).forEach(([, { header, payload }], i) => {
    sources.set(
      `drifted--${i}.ts`,
      `${header}\nexport const payloads: Payload[] = [${JSON.stringify(payload)}];\n`,
    );
  });
  checked = typeCheck(sources);
}, 120_000);

describe('fixtures type-check against the official SDK types', () => {
  it('found the fixtures', () => {
    expect(fixtureFiles.length).toBeGreaterThan(40);
    expect(dirname(virtualDir)).toBe(join(root, 'test/providers'));
  });

  for (const { folder, file, name } of fixtureFiles) {
    it(`${folder}/${file}`, () => {
      expect(checked.diagnostics.get(name)).toEqual([]);
    });
  }
});

describe('the fields the adapters read exist in the SDK types, with the expected types', () => {
  for (const folder of Object.keys(contracts)) {
    it(folder, () => {
      expect(checked.diagnostics.get(`contract--${folder}.ts`)).toEqual([]);
    });
  }
});

describe('the check rejects drifted payloads', () => {
  Object.keys(drifted).forEach((what, i) => {
    it(what, () => {
      expect(checked.diagnostics.get(`drifted--${i}.ts`)?.length ?? 0).toBeGreaterThan(0);
    });
  });
});
