/**
 * The event model and the operators of a streamed turn that may be retried part-way through: attempts, typed
 * resets, tool calls held until their attempt finishes, effect keys, retries as events, and the loop of steps.
 *
 * @module
 */

// Operators
export { AttemptTracker } from './AttemptTracker.js';
// Event model and state
export type { AttemptRecord, TurnState, Usage } from './accumulateTurn.js';
export { accumulateTurn } from './accumulateTurn.js';
export type { AssembledEvent } from './assembleToolCalls.js';
export { assembleToolCalls } from './assembleToolCalls.js';
export { attemptPipeline } from './attemptPipeline.js';
export { backoff } from './backoff.js';
export { bufferUntilFinish } from './bufferUntilFinish.js';
export { cleanTurn } from './cleanTurn.js';
export { dedupeByEffectKey } from './dedupeByEffectKey.js';
export { effectKey } from './effectKey.js';
// Errors
export { CleanturnError, describeError, isRetryable, TurnError, UsageError } from './errors.js';
export { nextStep } from './nextStep.js';
// Policies of the help-desk comparison
export { lateExecutionPolicy, naivePolicy, resetOnlyPolicy } from './policies.js';
export { requireFinish } from './requireFinish.js';
export { requireUsable } from './requireUsable.js';
export { resetOnRetry } from './resetOnRetry.js';
export { retryAsEvents } from './retryAsEvents.js';
export type { RetryBudget } from './retryBudget.js';
export { retryBudget } from './retryBudget.js';
export type { RunEvent, StepContext } from './runSteps.js';
export { runSteps } from './runSteps.js';
export { tagAttempts } from './tagAttempts.js';
export { turnPipeline } from './turnPipeline.js';
export type {
  Attempted,
  FinishReason,
  KeyedToolCall,
  PolicyEvent,
  ProviderEvent,
  ResetEvent,
  ToolResultLike,
  TurnEvent,
} from './types.js';
