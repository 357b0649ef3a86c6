/**
 * Angular signals for a streamed turn: `injectTurn` shows the clean turn's text, reasoning, tool calls, status and
 * error as read-only signals, written at most once per frame, and ends the turn with the component. Needs
 * `@angular/core` (20 or later), an optional peer dependency.
 *
 * @module
 */

export type { TurnSignals } from './injectTurn.js';
export { injectTurn } from './injectTurn.js';
