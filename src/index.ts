// Event model

// Attempts
export type { AttemptStep } from './AttemptTracker.js';
export { AttemptTracker } from './AttemptTracker.js';
export type { AttemptOutcome, AttemptRecord, TurnState, Usage } from './accumulateTurn.js';
// Operators
export { accumulateTurn } from './accumulateTurn.js';
export type { AssembledEvent } from './assembleToolCalls.js';
export { assembleToolCalls } from './assembleToolCalls.js';
export { attemptPipeline } from './attemptPipeline.js';
export type { BackoffOptions, BackoffTimer } from './backoff.js';
export { backoff } from './backoff.js';
export type { BufferUntilFinishOptions } from './bufferUntilFinish.js';
export { bufferUntilFinish } from './bufferUntilFinish.js';
export type { CleanTurnOptions } from './cleanTurn.js';
export { cleanTurn } from './cleanTurn.js';
export type { DedupeByEffectKeyOptions, EffectKeyLookup, WithEffectKeys } from './dedupeByEffectKey.js';
export { dedupeByEffectKey } from './dedupeByEffectKey.js';
export { effectKey } from './effectKey.js';
export type { FailedAttempt, ToolCallAssemblyProblem, UnusableCode } from './errors.js';
// Errors
export {
  CleanturnError,
  describeError,
  EffectKeyError,
  isRetryable,
  MissingFinishError,
  RetriesExhaustedError,
  RetryBudgetExhaustedError,
  ToolCallAssemblyError,
  UnusableAttemptError,
  UsageError,
} from './errors.js';
export type { NextStep } from './nextStep.js';
export { nextStep } from './nextStep.js';
// Policies of the help-desk comparison
export { lateExecutionPolicy, naivePolicy, resetOnlyPolicy } from './policies.js';
export { requireFinish } from './requireFinish.js';
export type {
  FinishedAttempt,
  RequireUsableOptions,
  UnusableVerdict,
  UsableCheck,
} from './requireUsable.js';
export { requireUsable } from './requireUsable.js';
export type { WithResets } from './resetOnRetry.js';
export { resetOnRetry } from './resetOnRetry.js';
export type { RetryAsEventsOptions } from './retryAsEvents.js';
export { retryAsEvents } from './retryAsEvents.js';
export type { RetryBudget, RetryBudgetOptions, RetryBudgetState } from './retryBudget.js';
export { retryBudget } from './retryBudget.js';
export type {
  RunEnd,
  RunEvent,
  RunStepsOptions,
  StepContext,
  StepEndEvent,
  StepOutcome,
  Stepped,
} from './runSteps.js';
export { runSteps } from './runSteps.js';
export { tagAttempts } from './tagAttempts.js';
export type { ToolResultDoubt, ToolResultStatus } from './toolResultStatus.js';
export { toolResultStatus } from './toolResultStatus.js';
export type { TurnPipelineOptions } from './turnPipeline.js';
export { turnPipeline } from './turnPipeline.js';
export type {
  Attempted,
  FinishEvent,
  FinishReason,
  KeyedToolCall,
  PolicyEvent,
  ProviderEvent,
  ProviderOutput,
  ReasoningEvent,
  ReleasedCall,
  RepeatedToolCall,
  ResetEvent,
  ResumableEvent,
  ResumeEvent,
  ResumeFrom,
  RetryEvent,
  RetryFacts,
  TextEvent,
  ToolCallDeltaEvent,
  ToolCallEvent,
  ToolCallMeaning,
  ToolResultLike,
  TurnEvent,
  UsageEvent,
} from './types.js';
export type { UpstreamErrorFacts } from './upstreamErrors.js';
export { isRetryableUpstream, upstreamErrorCodes } from './upstreamErrors.js';
