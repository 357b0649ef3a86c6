/**
 * Reset-aware renderers: a view reducer for UIs and a terminal renderer. Each drops what an abandoned attempt
 * showed when the turn's `reset` arrives (or keeps it apart, marked interrupted), and says how long the wait for
 * the next attempt is.
 *
 * @module
 */

// The executor's result events, defined by the core and read here.
export type { ToolResultLike } from 'cleanturn';
export type {
  InterruptedAttempt,
  ResetPresentation,
  ResumeNotice,
  RetryNotice,
  ToolCallView,
  ToolCallViewStatus,
  TurnView,
  ViewEvent,
  ViewOptions,
} from './reduceView.js';
export { initialView, reduceView, viewReducer } from './reduceView.js';
export type { RetryMessageFacts, RetryMessageOptions } from './retryMessage.js';
export { retryMessage } from './retryMessage.js';
export type { ToTerminalOptions } from './toTerminal.js';
export { toTerminal } from './toTerminal.js';
export type { TurnViewOptions } from './turnView.js';
export { turnView } from './turnView.js';
