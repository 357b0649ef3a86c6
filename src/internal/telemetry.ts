/**
 * What `streamTurn` and `executeTools` tell an observer of their turns (`telemetry` options): the facts that only
 * they know, at the moment they happen. `turnTelemetry()` of `cleanturn/otel` turns them into OpenTelemetry spans
 * and metrics; nothing else of the library depends on OpenTelemetry. Without a `telemetry` option nothing is built.
 *
 * Every call of an observer is made inside a `try`: what an observer throws is dropped, never the turn's concern.
 *
 * @module
 */

import type { AssembledEvent } from '../assembleToolCalls.js';
import type { TurnReport } from '../transport/turnReport.js';
import type { ProviderEvent } from '../types.js';

/**
 * How a turn ended, as `onReport` says it: `completed`, `failed`, `stopped` (its signal aborted) or `cancelled`
 * (unsubscribed).
 *
 * @inline
 */
export type TurnOutcome = TurnReport['outcome'];

/**
 * An observer of `streamTurn`'s turns: told when each subscription of a turn starts.
 *
 * @inline
 */
export interface TurnObserver {
  /** A subscription of the turn starts; the scope is told everything that happens in it, and its end. */
  turn(info: { turnId: string }): TurnScope;
}

/**
 * One run of a turn, as a {@link TurnObserver} follows it.
 *
 * @inline
 */
export interface TurnScope {
  /**
   * An attempt issues its request (the first of its connections): its number, the provider and model its plan
   * names, and the URL it requests.
   */
  attempt(info: { attempt: number; provider?: string; model?: string; url?: string }): AttemptScope;
  /**
   * A clean event of the turn, as its consumer receives it (a `reset` when an attempt was abandoned, a
   * `tool-call-repeat` for a call whose effect already ran).
   */
  event(event: { type: string; attempt?: number; reason?: string; name?: string; id?: string }): void;
  /** The turn ended, once, however it ended; `error` is what ended a failed or stopped turn. */
  end(outcome: TurnOutcome, error?: unknown): void;
}

/**
 * One attempt of a turn, from its request to its end.
 *
 * @inline
 */
export interface AttemptScope {
  /** An event of the attempt, out of its adapter: text, tool calls, usage, its finish, a `resume`, `resumable`. */
  event(event: AssembledEvent<ProviderEvent>): void;
  /**
   * The attempt ended: finished (no `error`), failed with `error` (a retry or the turn's end follows), or
   * abandoned before either (the turn was unsubscribed, stopped or timed out).
   */
  end(result: { error?: unknown; abandoned?: boolean }): void;
}

/**
 * An observer of `executeTools`' handlers: told when a handler really runs, and when a call is answered from the
 * ledger instead.
 *
 * @inline
 */
export interface ToolObserver {
  /** A handler starts to run now (never for a call replayed from the ledger). */
  run(info: { turnId: string; name: string; callId: string; args: unknown }): ToolScope;
  /** A call was answered with its key's recorded outcome: its handler did not run. */
  replayed(info: { turnId: string; name: string; callId: string; failed: boolean }): void;
}

/**
 * One run of a tool handler.
 *
 * @inline
 */
export interface ToolScope {
  /** The handler settled (`error` when it threw or timed out), or was abandoned (unsubscribed) before. */
  end(result: { error?: unknown; result?: unknown; abandoned?: boolean }): void;
}

/** Calls `fn`, dropping what it throws: an observer must never change how a turn or a tool run goes. */
export function quietly<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
