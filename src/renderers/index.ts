/**
 * Reset-aware renderers: a view reducer for UIs and a terminal renderer. Each drops what an abandoned attempt
 * showed when the turn's `reset` arrives.
 *
 * @module
 */

// The executor's result events, defined by the core and read here.
export type { ToolResultLike } from 'cleanturn';
export type {
  ResumeNotice,
  RetryNotice,
  ToolCallView,
  ToolCallViewStatus,
  TurnView,
  ViewEvent,
} from './reduceView.js';
export { initialView, reduceView } from './reduceView.js';
export type { ToTerminalOptions } from './toTerminal.js';
export { toTerminal } from './toTerminal.js';
export { turnView } from './turnView.js';
