import type { Attempted, FinishReason, KeyedToolCall, ResetEvent } from 'cleanturn';
import { effectKey } from 'cleanturn';
import type {
  FinishEvent,
  ReasoningEvent,
  RepeatedToolCall,
  RetryEvent,
  RetryFacts,
  TextEvent,
  ToolCallDeltaEvent,
  ToolCallEvent,
  UsageEvent,
} from '../types.js';

/** A `text` event. */
export function text(value: string): TextEvent {
  return { type: 'text', text: value };
}

/** A `reasoning` event: a fragment of the model's thinking. */
export function reasoning(value: string): ReasoningEvent {
  return { type: 'reasoning', text: value };
}

/** A whole `tool-call` event. */
export function call(id: string, name: string, args: unknown = {}): ToolCallEvent {
  return { type: 'tool-call', id, name, args };
}

/** A `tool-call-delta` fragment; `id` and `name` usually come with the first fragment only. */
export function delta(
  index: number,
  argsDelta: string,
  start?: { id?: string; name?: string },
): ToolCallDeltaEvent {
  const event: ToolCallDeltaEvent = { type: 'tool-call-delta', index, argsDelta };
  if (start?.id !== undefined) event.id = start.id;
  if (start?.name !== undefined) event.name = start.name;
  return event;
}

/** A `usage` event. */
export function usage(inputTokens?: number, outputTokens?: number): UsageEvent {
  const event: UsageEvent = { type: 'usage' };
  if (inputTokens !== undefined) event.inputTokens = inputTokens;
  if (outputTokens !== undefined) event.outputTokens = outputTokens;
  return event;
}

/** A `finish` event. */
export function finish(reason: FinishReason = 'stop', raw?: string): FinishEvent {
  return raw === undefined ? { type: 'finish', reason } : { type: 'finish', reason, raw };
}

/** A `retry` event: the source failed and is being retried (named so that it does not shadow RxJS's `retry`). */
export function retrying(reason = 'connection reset', error?: unknown, facts?: RetryFacts): RetryEvent {
  const event: RetryEvent =
    error === undefined ? { type: 'retry', reason } : { type: 'retry', reason, error };
  return facts === undefined ? event : { ...event, ...facts };
}

/**
 * A `reset` event that starts `attempt`, with the facts of its retry when given (`{ delay: 3000, retryCount: 1 }`),
 * as `resetOnRetry` copies them from a `retry` of `retryAsEvents`.
 */
export function reset(attempt: number, reason = 'connection reset', facts?: RetryFacts): ResetEvent {
  return facts === undefined
    ? { type: 'reset', attempt, reason }
    : { type: 'reset', attempt, reason, ...facts };
}

/** Stamps an attempt number on an event, as `tagAttempts` does. */
export function at<E extends object>(attempt: number, event: E): Attempted<E> {
  return { ...event, attempt };
}

/**
 * Stamps an attempt number and the effect key of `turnId` (and of `step`, when given) on a tool call, as
 * `cleanTurn` does.
 */
export function keyed(turnId: string, attempt: number, event: ToolCallEvent, step?: number): KeyedToolCall {
  return { ...event, attempt, effectKey: effectKey(turnId, event, step) };
}

/** Like {@link keyed}, as a repeat: a call whose effect key already ran, as `cleanTurn` releases it. */
export function repeated(
  turnId: string,
  attempt: number,
  event: ToolCallEvent,
  step?: number,
): RepeatedToolCall {
  return { ...keyed(turnId, attempt, event, step), type: 'tool-call-repeat' };
}

/** The arguments of the help-desk refund. */
const refundArgs = { order_id: 'ORD-7781', amount: 'full' } as const;

/** The help-desk turn's events, one letter each, for marble diagrams: `-a-c-d-r-b-k-e-f-|`. */
const letters = {
  /** Attempt 1's opening. */
  a: text('Checking order ORD-7781. '),
  /** Attempt 1's refund. */
  c: call('c1', 'issue_refund', refundArgs),
  /** Attempt 1's half sentence, cut off. */
  d: text('Refunding the dam'),
  /** The retry after the connection reset. */
  r: retrying('connection reset'),
  /** Attempt 2's opening. */
  b: text('Checking order ORD-7781. '),
  /** Attempt 2's refund: the same meaning with a new id. */
  k: call('c7', 'issue_refund', refundArgs),
  /** Attempt 2's sentence. */
  e: text('The book arrived damaged, so I have started a full refund.'),
  /** Attempt 2's finish. */
  f: finish('stop'),
} as const;

/** The turn id of the help-desk turn's effect keys. */
const turnId = 'turn-42';

/**
 * The help-desk turn: attempt 1 streams text, the refund call `c1` and half a sentence, then the connection
 * resets; attempt 2 streams text, the same refund as `c7`, a whole sentence and a finish. One letter per
 * event, for marble diagrams: `-a-c-d-r-b-k-e-f-|`; pass the object as a diagram's values. Beside the letters:
 *
 * - `turn`: the events as a list, in stream order;
 * - `turnId`: `turn-42`, the turn id of its effect keys;
 * - `refundArgs`: the refund's arguments, `{ order_id: 'ORD-7781', amount: 'full' }`;
 * - `tagged`: the turn as the operators after `tagAttempts()` see it: the upper-case letter of each event, stamped
 *   with its attempt, and `X` the reset that `resetOnRetry()` makes of `r` (the expected values of a policy's
 *   marble case);
 * - `keyedRefund`: attempt 2's refund as `cleanTurn({ turnId: helpDesk.turnId })` releases it, with its effect key.
 */
export const helpDesk = {
  ...letters,
  turn: [letters.a, letters.c, letters.d, letters.r, letters.b, letters.k, letters.e, letters.f],
  turnId,
  refundArgs,
  tagged: {
    A: at(1, letters.a),
    C: at(1, letters.c),
    D: at(1, letters.d),
    R: at(2, letters.r),
    B: at(2, letters.b),
    K: at(2, letters.k),
    E: at(2, letters.e),
    F: at(2, letters.f),
    X: reset(2, 'connection reset'),
  },
  keyedRefund: keyed(turnId, 2, letters.k) as KeyedToolCall,
} as const;
