/**
 * Adapters from the providers' streamed wire formats to cleanturn's neutral `ProviderEvent`s, the builders of the
 * next request from a finished turn, and {@link decodeWith} for a format of your own.
 *
 * Each adapter takes the payloads of its format (the SDKs' own event types fit them) and every error it raises
 * is a {@link ProviderError}.
 *
 * @module
 */

export { aiSdkParts } from './aiSdkParts.js';
export { anthropicMessages } from './anthropicMessages.js';
export type { Decoder, DecoderSink } from './decodeWith.js';
export { decodeWith } from './decodeWith.js';
export { ProviderError } from './errors.js';
export { geminiContent } from './geminiContent.js';
export { geminiInteractions } from './geminiInteractions.js';
export { openaiChat } from './openaiChat.js';
export { openaiResponses } from './openaiResponses.js';
export { toAiSdkMessages } from './toAiSdkMessages.js';
export { toAnthropicMessages } from './toAnthropicMessages.js';
export { toGeminiContents } from './toGeminiContents.js';
export { toOpenAIChatMessages } from './toOpenAIChatMessages.js';
export { toOpenAIResponsesInput } from './toOpenAIResponsesInput.js';
