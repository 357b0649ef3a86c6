import type { OperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { copyRetryFacts } from './internal/retryFacts.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { ResetEvent } from './types.js';

/**
 * The events {@link resetOnRetry} emits for an input of `E`.
 *
 * @inline
 */
export type WithResets<E> = Exclude<E, { type: 'retry' }> | ResetEvent;

/**
 * Turns each `retry` into a typed `reset` and drops stragglers of abandoned attempts and anything after a
 * finish.
 *
 * The reset comes where the retry comes, that is, when the attempt failed and before any wait, and it carries the
 * retry's facts (`RetryFacts`: `delay`, `failedAttempt`, `outputStarted`, `retryCount`, `maxRetries`,
 * `errorName`, `status`), those that are present with their types, so that a UI can say "retrying in 3 s" at once.
 *
 * A `reset` tells every consumer to discard what earlier attempts delivered: buffers, rendered text, pending
 * calls. An event whose `attempt` is older than the newest attempt seen arrives too late and is dropped, and so
 * is an event of an attempt after its `finish` (usage excepted): the rules of {@link AttemptTracker}. Place it
 * after {@link tagAttempts}.
 *
 * ```text
 * source:   -A-C-D-R-B-K-E-F-|
 *           resetOnRetry()
 * result:   -A-C-D-X-B-K-E-F-|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   R = retry "connection reset", attempt 2
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   F = finish stop, attempt 2
 *   X = reset to attempt 2 (connection reset)
 * ```
 *
 * Every case of `marbles/resetOnRetry.marbles.ts`, with pictures: `docs/operators/resetOnRetry.md`.
 *
 * State: the live attempt and whether it has finished (an {@link AttemptTracker}).
 *
 * ## Example
 * ```ts
 * import { from } from 'rxjs';
 * import { resetOnRetry, tagAttempts } from 'cleanturn';
 *
 * from([
 *   { type: 'text', text: 'Refunding the dam' },
 *   { type: 'retry', reason: 'connection reset' },
 *   { type: 'text', text: 'Refund started.' },
 * ] as const)
 *   .pipe(tagAttempts(), resetOnRetry())
 *   .subscribe((e) => {
 *     if (e.type === 'reset') console.log(`clear the screen: attempt ${e.attempt} starts (${e.reason})`);
 *   });
 * ```
 *
 * @see {@link tagAttempts}, which numbers the attempts this operator compares.
 * @returns An operator from attempted events to attempted events with resets.
 */
export function resetOnRetry<E extends { type: string; attempt: number }>(): OperatorFunction<
  E,
  WithResets<E>
> {
  return stageOperator((out: Sink<WithResets<E>>) => new ResetStage<E>(out));
}

/** The stage of {@link resetOnRetry}. */
export class ResetStage<E extends { type: string; attempt: number }> extends Stage<E, WithResets<E>> {
  private readonly attempts = new AttemptTracker();

  next(event: E): void {
    if (this.attempts.step(event) === 'stale') return;
    if (event.type !== 'retry') {
      this.out.next(event as Exclude<E, { type: 'retry' }>);
      return;
    }
    const retry = event as unknown as Record<string, unknown>;
    const reset: ResetEvent = {
      type: 'reset',
      attempt: event.attempt,
      reason: typeof retry.reason === 'string' ? retry.reason : 'retry',
    };
    this.out.next(copyRetryFacts(retry, reset));
  }
}
