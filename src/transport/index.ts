/**
 * SSE over fetch, and a turn runner that composes the transport, an adapter and the clean-turn operators.
 *
 * @module
 */
export {
  ConnectionError,
  HttpStatusError,
  NotEventStreamError,
  ResumeError,
  type ResumeFailure,
  SseDataError,
  SseLimitError,
  StallError,
} from './errors.js';
export type { FromSSEOptions, SseMessage, SseRequest, SseRequestFactory } from './fromSSE.js';
export { fromSSE } from './fromSSE.js';
export type { OpenAIBackgroundOptions, ResumeRequests } from './openaiBackground.js';
export { openaiBackground } from './openaiBackground.js';
export type { ResponseEventsInput, ResumeResponseOptions } from './resumeResponse.js';
export { resumeResponse } from './resumeResponse.js';
export { sseJson } from './sseJson.js';
export type { AttemptPlan, StreamTurnOptions } from './streamTurn.js';
export { streamTurn } from './streamTurn.js';
export type { AttemptReport, TurnReport } from './turnReport.js';
