/**
 * Reset-aware renderers: a view reducer for UIs and a terminal renderer. Each drops what an abandoned attempt
 * showed when the turn's `reset` arrives (or keeps it apart, marked interrupted), and says how long the wait for
 * the next attempt is.
 *
 * @module
 */

export type { TurnView, ViewEvent } from './reduceView.js';
export { initialView, reduceView, viewReducer } from './reduceView.js';
export { retryMessage } from './retryMessage.js';
export { toTerminal } from './toTerminal.js';
export { turnView } from './turnView.js';
