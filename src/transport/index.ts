/**
 * SSE over fetch or Angular's HttpClient, and a turn runner that composes the transport, an adapter and the
 * clean-turn operators.
 *
 * @module
 */
export {
  AttemptTimeoutError,
  ConnectionError,
  type HttpHeadersLike,
  HttpStatusError,
  NotEventStreamError,
  ResponseRestartError,
  ResumeError,
  type ResumeFailure,
  SseDataError,
  SseFieldError,
  SseLimitError,
  StallError,
  TurnStoppedError,
  TurnTimeoutError,
  UnsafeReplayError,
} from './errors.js';
export type { FromSSEOptions, SseMessage, SseRequest, SseRequestFactory } from './fromSSE.js';
export { fromSSE } from './fromSSE.js';
export type { FromTurnSSEOptions, StopTurnOptions } from './fromTurnSSE.js';
export { fromTurnSSE, stopTurn } from './fromTurnSSE.js';
export type { GeminiBackgroundOptions } from './geminiBackground.js';
export { geminiBackground } from './geminiBackground.js';
export type {
  HttpClientEvent,
  HttpClientHeaderEvent,
  HttpClientProgressEvent,
  HttpClientResponseEvent,
  HttpClientSSEOptions,
} from './httpClientSSE.js';
export { httpClientSSE } from './httpClientSSE.js';
export type { OpenAIBackgroundOptions, ResumeRequests } from './openaiBackground.js';
export { openaiBackground } from './openaiBackground.js';
export type { SseReconnectOptions } from './reconnect.js';
export type { ReplayBasis, ReplayInfo, ReplaySafety, ReplayVerdict } from './replaySafety.js';
export { replaySafety } from './replaySafety.js';
export type { ResponseEventsInput, ResumeFormatName, ResumeResponseOptions } from './resumeResponse.js';
export { resumeResponse } from './resumeResponse.js';
export { sseJson } from './sseJson.js';
export type { AttemptPlan, StreamTurnOptions, TurnTimeouts } from './streamTurn.js';
export { streamTurn } from './streamTurn.js';
export type {
  MemoryTurnLogOptions,
  Takeover,
  TurnFailure,
  TurnIdProblem,
  TurnLog,
  TurnLogEntry,
} from './turnLog.js';
export { checkTurnId, memoryTurnLog, TurnIdError, TurnNotFoundError, TurnTakenOverError } from './turnLog.js';
export type { AttemptReport, TurnReport } from './turnReport.js';
export type {
  RunContext,
  ServeTurnOptions,
  TakeoverBounds,
  TurnMessage,
  TurnServer,
  TurnServerOptions,
} from './turnServer.js';
export { LastEventIdError, RemoteTurnError, RunnerLostError, toSSE, turnServer } from './turnServer.js';
