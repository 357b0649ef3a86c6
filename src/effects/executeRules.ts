/**
 * The decisions of {@link executeTools} as plain functions: what a claim's answer means for a call, what a
 * handler's outcome means for its record, what a failed outcome write means, when such a write is sent again,
 * and when a lease is renewed or counted as lost. They take data and return a decision value: no ledger calls,
 * no timers, no observables. `executeTools.ts` and `leaseRunner.ts` carry them out.
 *
 * @module
 */
import { isRetryable } from '../errors.js';
import type { ReleasedCall } from '../types.js';
import { EffectError, leaseLostError } from './errors.js';
import { serializeError } from './json.js';
import type {
  ClaimResult,
  JsonValue,
  SerializedError,
  ToolExecutedEvent,
  ToolFailedEvent,
  ToolResultEvent,
} from './types.js';

/** A handler's outcome as a value: handler failures are results, not stream errors. */
export type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** How a handler run ended: it settled, or `handlerTimeoutMs` ran out first. */
export type TimedRun = { settled: Settled } | { timedOut: EffectError };

/** How many times a write that records an outcome (`complete`, `fail`, `release`) is sent, at most. */
export const SETTLE_TRIES = 5;
/** The pause before such a write is sent again the first time; it doubles after each failure. */
export const SETTLE_FIRST_PAUSE_MS = 100;
/** The longest pause between two of those tries. */
export const SETTLE_MAX_PAUSE_MS = 2_000;

// Results

/** The fields every result of `call` starts with. */
function resultBase(call: ReleasedCall) {
  return { type: 'tool-result', effectKey: call.effectKey, call } as const;
}

/** The result of a call whose tool has no handler: nothing runs and the ledger is not touched. */
export function unknownToolResult(call: ReleasedCall): ToolResultEvent {
  const error: SerializedError = {
    name: 'UnknownToolError',
    message: `no handler for tool ${call.name}`,
    retryable: false,
  };
  return { ...resultBase(call), outcome: 'unknown-tool', error };
}

/** The result of a handler that returned `value` now; `lost` marks a run whose lease was lost meanwhile. */
export function executedResult(
  call: ReleasedCall,
  value: unknown,
  reclaimed: boolean,
  lost: boolean,
): ToolExecutedEvent {
  const executed: ToolExecutedEvent = {
    ...resultBase(call),
    outcome: 'executed',
    result: value as JsonValue | undefined,
    reclaimed,
  };
  return lost ? { ...executed, leaseLost: true } : executed;
}

/** The result of a call that failed now with `error` (serialized from `cause`, or standing for it). */
export function failedResult(
  call: ReleasedCall,
  error: SerializedError,
  cause: unknown,
  lost: boolean,
): ToolFailedEvent {
  const failed: ToolFailedEvent = { ...resultBase(call), outcome: 'failed', error, replayed: false, cause };
  return lost ? { ...failed, leaseLost: true } : failed;
}

/** The answer of a repeat: the outcome of its key's earlier call, under the repeat's own call. */
export function replay(call: ReleasedCall, answered: ToolResultEvent): ToolResultEvent {
  const base = resultBase(call);
  switch (answered.outcome) {
    case 'executed':
    case 'replayed':
      return { ...base, outcome: 'replayed', result: answered.result };
    case 'failed':
      return { ...base, outcome: 'failed', error: answered.error, replayed: true };
    default:
      return { ...answered, call };
  }
}

/**
 * The answer of a repeat whose key had no record: this subscription's outcome of the key (a failure that was
 * not recorded), or a `NoRecordedResultError` failure when there is none.
 */
export function unrecordedRepeat(call: ReleasedCall, answered: ToolResultEvent | undefined): ToolResultEvent {
  if (answered !== undefined) return replay(call, answered);
  const error: SerializedError = {
    name: 'NoRecordedResultError',
    message: `${call.name} repeats effect ${call.effectKey}, whose result was not recorded`,
    retryable: false,
  };
  return { ...resultBase(call), outcome: 'failed', error, replayed: true };
}

/**
 * Whether a result answers later repeats of its key: `in-progress` and `unknown-tool` say nothing about the
 * effect, so a repeat after them asks the ledger again.
 */
export function answersRepeats(result: ToolResultEvent): boolean {
  return result.outcome !== 'in-progress' && result.outcome !== 'unknown-tool';
}

// Claims

/** What a call does with its claim's answer. */
export type ClaimStep =
  /** Emit `result` at once: a recorded outcome replayed, or another holder's run reported. */
  | { type: 'answer'; result: ToolResultEvent }
  /** Another holder runs the key: ask again, by its lease's end (`until`) at the latest. */
  | { type: 'wait'; until: number }
  /** The key is ours: run the handler. */
  | { type: 'run'; token: string; reclaimed: boolean }
  /** The key is ours, taken over from a holder that left no outcome: record it as in doubt, run nothing. */
  | { type: 'in-doubt'; token: string }
  /** A repeat got a key with no record: give the claim back and answer from this subscription. */
  | { type: 'give-back'; token: string };

/** The options a claim's answer is read with. */
export interface ClaimPolicy {
  inProgress: 'wait' | 'report';
  inDoubt: 'run' | 'report';
}

/**
 * Decides what a call does with its claim's answer: a settled key is replayed, a key another holder runs is
 * waited for (or reported, with `inProgress: 'report'`), a claimed key is run (or reported as in doubt when it
 * was taken over and `inDoubt` is `'report'`). A repeat (its key already ran) never runs its handler.
 */
export function claimStep(
  call: ReleasedCall,
  repeat: boolean,
  claim: ClaimResult,
  policy: ClaimPolicy,
): ClaimStep {
  const base = resultBase(call);
  switch (claim.status) {
    case 'completed':
      return { type: 'answer', result: { ...base, outcome: 'replayed', result: claim.result } };
    case 'failed':
      return { type: 'answer', result: { ...base, outcome: 'failed', error: claim.error, replayed: true } };
    case 'in-progress':
      // A repeat waits for its key's outcome whatever the option: its call needs a real answer.
      if (policy.inProgress === 'report' && !repeat)
        return { type: 'answer', result: { ...base, outcome: 'in-progress', until: claim.until } };
      return { type: 'wait', until: claim.until };
    case 'claimed':
      // A repeat whose key has no record: its claim is given back.
      if (repeat) return { type: 'give-back', token: claim.token };
      // Not a repeat: a `tool-call` whose key this subscription meets for the first time.
      if (claim.reclaimed && policy.inDoubt === 'report') return { type: 'in-doubt', token: claim.token };
      return { type: 'run', token: claim.token, reclaimed: claim.reclaimed };
  }
}

/** How long a waiting call pauses before it claims again: `pollMs`, or less when the other lease ends sooner. */
export function pollDelay(pollMs: number, until: number, now: number): number {
  return Math.max(1, Math.min(pollMs, until - now));
}

// Outcomes

/** What is done with a handler's outcome once it has settled. */
export type SettledStep =
  /** It returned `value`: record it with `complete`. */
  | { type: 'complete'; value: unknown }
  /** It failed after its lease was lost: another holder's record (or claim) stands; write nothing, emit `result`. */
  | { type: 'lost'; result: ToolFailedEvent }
  /** It failed with its lease kept: `recordFailure` says whether to record (`fail`) or release the key. */
  | { type: 'failed'; error: unknown };

/** Decides what a settled handler's outcome leads to, given whether its lease was lost while it ran. */
export function settledStep(
  call: ReleasedCall,
  turnId: string,
  settled: Settled,
  lost: boolean,
): SettledStep {
  if (settled.ok) return { type: 'complete', value: settled.value };
  if (!lost) return { type: 'failed', error: settled.error };
  const error = serializeError(leaseLostError(turnId, call.effectKey));
  return { type: 'lost', result: failedResult(call, error, settled.error, true) };
}

/**
 * What a `complete` that failed means: a result that cannot be stored (`unstorable-result`) is recorded as a
 * failure, since the effect ran; a completion fenced off (`lease-lost`) leaves the other holder's record and
 * reports the result as `leaseLost`; any other error is the ledger's and goes on.
 */
export function completeFailure(error: unknown): 'record-failure' | 'lease-lost' | 'rethrow' {
  if (error instanceof EffectError && error.code === 'unstorable-result') return 'record-failure';
  if (error instanceof EffectError && error.code === 'lease-lost') return 'lease-lost';
  return 'rethrow';
}

/**
 * Whether a failed outcome write is sent again, and after which pause: only a retryable error, before the
 * last of {@link SETTLE_TRIES} tries and while the lease still runs (`leftMs` of it); the pause doubles
 * from {@link SETTLE_FIRST_PAUSE_MS} up to {@link SETTLE_MAX_PAUSE_MS} and ends by the lease's end at the latest.
 *
 * @param error What the write failed with.
 * @param tries How many tries failed so far, from 1.
 * @param leftMs How long the lease runs from now, as far as its holder knows.
 * @returns The pause in milliseconds, or `undefined` when the error goes on.
 */
export function settleRetryPause(error: unknown, tries: number, leftMs: number): number | undefined {
  if (!isRetryable(error) || tries >= SETTLE_TRIES || leftMs <= 0) return undefined;
  return Math.min(SETTLE_FIRST_PAUSE_MS * 2 ** (tries - 1), SETTLE_MAX_PAUSE_MS, leftMs);
}

// Leases

/** What a lease's heartbeat knows when it decides: see `leaseRunner.ts`. */
export interface HeartbeatState {
  /** How long a claim (or renewal) holds. */
  leaseMs: number;
  /** How long after a renewal was sent the next is due. */
  beatMs: number;
  /** When the last renewal that succeeded was sent (the claim, at first). */
  renewedAt: number;
  /** When the last renewal was sent. */
  sentAt: number;
  /** Whether a renewal is under way. */
  renewing: boolean;
}

/** The beat between renewals: a third of the lease, at least 1 ms. */
export function beatOf(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 3));
}

/**
 * When the heartbeat wakes next (epoch ms): the lease's end while a renewal is under way, else a beat after the
 * last renewal was sent, by the lease's end at the latest.
 */
export function heartbeatDue(state: HeartbeatState): number {
  const end = state.renewedAt + state.leaseMs;
  return state.renewing ? end : Math.min(state.sentAt + state.beatMs, end);
}

/**
 * What the heartbeat does when it wakes at `now`: the lease has ended without a renewal that succeeded (`lose`),
 * a renewal is still under way (`wait` for it, up to the lease's end), or one is due (`renew`).
 */
export function heartbeatStep(state: HeartbeatState, now: number): 'lose' | 'wait' | 'renew' {
  if (now - state.renewedAt >= state.leaseMs) return 'lose';
  return state.renewing ? 'wait' : 'renew';
}
