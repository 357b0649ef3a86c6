import type { OperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { missingFinishError } from './errors.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { WholeCallEvents } from './internal/types.js';

/**
 * Errors with a retryable {@link TurnError} (code `missing-finish`) when the source completes without a `finish` for its
 * current attempt.
 *
 * A socket that closes cleanly just before the finish looks like a normal end of stream; without this check
 * the turn would quietly end half-written. Place it before {@link retryAsEvents} so that the cut-off attempt
 * is retried. It also works on a tagged stream: a `retry` or `reset` (or any event of a newer attempt) starts
 * a new attempt that needs its own `finish`, and a straggler of an older attempt (even its `finish`) is passed
 * on but not counted.
 *
 * ```text
 * source:   -a-f-|
 *           requireFinish()
 * result:   -a-f-|
 *
 * where
 *   a = text "Refund started."
 *   f = finish stop
 * ```
 *
 * Every case of `marbles/requireFinish.marbles.ts`, with pictures: `docs/operators/requireFinish.md`.
 *
 * State: the live attempt and whether it has finished (an {@link AttemptTracker}).
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { requireFinish, retryAsEvents } from 'cleanturn';
 *
 * const turn$ = defer(() => streamFromProvider()).pipe(requireFinish(), retryAsEvents({ count: 3 }));
 * ```
 *
 * @see {@link retryAsEvents}, which retries the error this raises.
 * @returns An operator that passes events through and rejects a completion without `finish`.
 */
export function requireFinish<E extends WholeCallEvents<E, 'requireFinish()'>>(): OperatorFunction<E, E> {
  return stageOperator((out: Sink<E>) => new RequireFinishStage<E>(out, false));
}

/** The stage of {@link requireFinish}; with `endAtFinish`, the attempt also ends at its finish. */
export class RequireFinishStage<E extends { type: string }> extends Stage<E, E> {
  private readonly attempts = new AttemptTracker();
  /** Whether the events carry attempt numbers (the error then names the attempt). */
  private tagged = false;

  constructor(
    out: Sink<E>,
    private readonly endAtFinish: boolean,
  ) {
    super(out);
  }

  next(event: E): void {
    this.attempts.step(event);
    if (typeof (event as { attempt?: unknown }).attempt === 'number') this.tagged = true;
    this.out.next(event);
    if (this.endAtFinish && event.type === 'finish' && !this.closed) this.out.complete();
  }

  override complete(): void {
    if (this.attempts.finished) this.out.complete();
    else this.out.error(missingFinishError(this.tagged ? this.attempts.attempt : undefined));
  }
}
