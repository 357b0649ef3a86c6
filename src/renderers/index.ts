/**
 * Reset-aware renderers: a view reducer for UIs and a terminal renderer. Each drops what an abandoned attempt
 * showed when the turn's `reset` arrives.
 *
 * @module
 */
export type {
  RetryNotice,
  ToolCallView,
  ToolCallViewStatus,
  ToolResultLike,
  TurnView,
  ViewEvent,
} from './reduceView.js';
export { initialView, reduceView } from './reduceView.js';
export type { ToTerminalOptions } from './toTerminal.js';
export { toTerminal } from './toTerminal.js';
export { turnView } from './turnView.js';
