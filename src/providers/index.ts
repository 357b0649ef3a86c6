/**
 * Adapters from the providers' streamed wire formats to cleanturn's neutral `ProviderEvent`s.
 *
 * @module
 */

export type {
  AiSdkAbortPart,
  AiSdkErrorInfo,
  AiSdkErrorPart,
  AiSdkFinishPart,
  AiSdkFinishStepPart,
  AiSdkPartsOptions,
  AiSdkStreamPart,
  AiSdkTextDeltaPart,
  AiSdkToolCallPart,
  AiSdkToolInputErrorPart,
  AiSdkUsage,
} from './aiSdkParts.js';
export { aiSdkParts } from './aiSdkParts.js';
export type {
  AnthropicContentBlockDeltaEvent,
  AnthropicContentBlockStartEvent,
  AnthropicContentBlockStopEvent,
  AnthropicErrorEvent,
  AnthropicErrorInfo,
  AnthropicMessageDeltaEvent,
  AnthropicMessageStartEvent,
  AnthropicMessageStopEvent,
  AnthropicMessagesOptions,
  AnthropicStreamEvent,
  AnthropicUsage,
} from './anthropicMessages.js';
export { anthropicMessages } from './anthropicMessages.js';
export type { DecodeOptions, DecodeResult, Decoder, DecoderFactory, DecoderSink } from './decodeWith.js';
export { decodeAll, decodeWith } from './decodeWith.js';
export type { PayloadProblem, ProviderName } from './errors.js';
export { ProviderError, ProviderPayloadError } from './errors.js';
export type {
  GeminiCandidate,
  GeminiChunk,
  GeminiContentOptions,
  GeminiErrorBody,
  GeminiErrorInfo,
  GeminiFunctionCall,
  GeminiPart,
  GeminiPartialArg,
  GeminiUsageMetadata,
} from './geminiContent.js';
export { geminiContent } from './geminiContent.js';
export type {
  OpenAIChatChoice,
  OpenAIChatChunk,
  OpenAIChatDelta,
  OpenAIChatFunctionDelta,
  OpenAIChatInput,
  OpenAIChatOptions,
  OpenAIChatToolCallDelta,
  OpenAIChatUsage,
} from './openaiChat.js';
export { openaiChat } from './openaiChat.js';
export type { OpenAIErrorBody, OpenAIErrorInfo, OpenAIErrorOptions } from './openaiErrors.js';
export type {
  OpenAIResponsesEvent,
  OpenAIResponsesInput,
  OpenAIResponsesItem,
  OpenAIResponsesOptions,
  OpenAIResponsesResponse,
} from './openaiResponses.js';
export { openaiResponses } from './openaiResponses.js';
