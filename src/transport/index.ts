/**
 * SSE over fetch or Angular's HttpClient, and a turn runner that composes the transport, an adapter and the
 * clean-turn operators. Every error of this entry point and of `cleanturn/transport/redis` is a
 * {@link TransportError} whose `code` names the case.
 *
 * @module
 */
export { TransportError } from './errors.js';
export type { SseMessage } from './fromSSE.js';
export { fromSSE } from './fromSSE.js';
export { fromTurnSSE, stopTurn } from './fromTurnSSE.js';
export { geminiBackground } from './geminiBackground.js';
export { httpClientSSE } from './httpClientSSE.js';
export { openaiBackground } from './openaiBackground.js';
export { resumeResponse } from './resumeResponse.js';
export { sseJson } from './sseJson.js';
export type { StreamTurnOptions } from './streamTurn.js';
export { streamTurn } from './streamTurn.js';
export type { TurnLog, TurnLogEntry } from './turnLog.js';
export { memoryTurnLog } from './turnLog.js';
export type { TurnReport } from './turnReport.js';
export type { TurnMessage, TurnServer } from './turnServer.js';
export { toSSE, turnServer } from './turnServer.js';
