/**
 * Adapters from the providers' streamed wire formats to cleanturn's neutral `ProviderEvent`s.
 *
 * Each adapter's input type (the union of what its format streams) is exported to type a source; the types of
 * the single wire events are the SDKs' own.
 *
 * @module
 */

export type { AiSdkErrorInfo, AiSdkOutput, AiSdkPartsOptions, AiSdkStreamPart } from './aiSdkParts.js';
export { aiSdkParts } from './aiSdkParts.js';
export type {
  AnthropicErrorInfo,
  AnthropicMessagesOptions,
  AnthropicOutput,
  AnthropicStreamEvent,
} from './anthropicMessages.js';
export { anthropicMessages } from './anthropicMessages.js';
export type { DecodeOptions, DecodeResult, Decoder, DecoderFactory, DecoderSink } from './decodeWith.js';
export { decodeAll, decodeWith } from './decodeWith.js';
export type { PayloadProblem, ProviderName } from './errors.js';
export { ProviderError, ProviderPayloadError } from './errors.js';
export type { GeminiChunk, GeminiContentOptions, GeminiErrorInfo, GeminiOutput } from './geminiContent.js';
export { geminiContent } from './geminiContent.js';
export type {
  GeminiInteractionsErrorInfo,
  GeminiInteractionsEvent,
  GeminiInteractionsOptions,
  GeminiInteractionsOutput,
} from './geminiInteractions.js';
export { geminiInteractions } from './geminiInteractions.js';
export type { NextRequestProblem } from './nextRequest.js';
export { NextRequestError } from './nextRequest.js';
export type { OpenAIChatChunk, OpenAIChatInput, OpenAIChatOptions, OpenAIChatOutput } from './openaiChat.js';
export { openaiChat } from './openaiChat.js';
export type { OpenAIErrorInfo } from './openaiErrors.js';
export type {
  OpenAIResponsesEvent,
  OpenAIResponsesInput,
  OpenAIResponsesOptions,
  OpenAIResponsesOutput,
} from './openaiResponses.js';
export { openaiResponses } from './openaiResponses.js';
export { toAiSdkMessages } from './toAiSdkMessages.js';
export { toAnthropicMessages } from './toAnthropicMessages.js';
export { toGeminiContents } from './toGeminiContents.js';
export { toOpenAIChatMessages } from './toOpenAIChatMessages.js';
export { toOpenAIResponsesInput } from './toOpenAIResponsesInput.js';
