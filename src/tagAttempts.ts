import type { OperatorFunction } from 'rxjs';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { Attempted } from './types.js';

/**
 * Numbers the attempts of a turn and stamps `attempt` on every event.
 *
 * The first attempt is 1. Each `retry` event starts the next attempt and carries that attempt's number;
 * every event after it carries the same number until the next `retry`. Each subscription counts from 1.
 *
 * ```text
 * source:       -a-b-r-c-d-r-e-f-|
 *          tagAttempts()
 * result:       -A-B-R-C-D-S-E-F-|
 *
 *   a, b → attempt 1    r → retry, attempt 2    c, d → attempt 2    r → retry, attempt 3    e, f → attempt 3
 * ```
 *
 * State: the attempt number, incremented on every `retry`.
 *
 * ## Example
 * ```ts
 * import { from } from 'rxjs';
 * import { tagAttempts } from 'cleanturn';
 *
 * from([
 *   { type: 'text', text: 'Refunding the dam' },
 *   { type: 'retry', reason: 'connection reset' },
 *   { type: 'text', text: 'Refund started.' },
 * ] as const)
 *   .pipe(tagAttempts())
 *   .subscribe((e) => console.log(e.attempt, e.type)); // 1 text, 2 retry, 2 text
 * ```
 *
 * @see {@link resetOnRetry} to turn the numbered `retry` into a typed `reset`.
 * @returns An operator that adds `attempt` to each event.
 */
export function tagAttempts<E extends { type: string }>(): OperatorFunction<E, Attempted<E>> {
  return stageOperator((out: Sink<Attempted<E>>) => new TagStage<E>(out));
}

/** The stage of {@link tagAttempts}. */
export class TagStage<E extends { type: string }> extends Stage<E, Attempted<E>> {
  /** The attempt the next event belongs to. */
  private attempt = 1;

  next(event: E): void {
    // Rule 4 of `AttemptTracker` (an untagged retry starts the next attempt), without reading `attempt`: a
    // property that untagged events lack costs a slow lookup on the path of every token.
    if (event.type === 'retry') this.attempt++;
    // A copy, never the caller's object. `Object.assign` copies the same own enumerable properties as a
    // spread; V8's object spread followed by a new key (`{ ...event, attempt }`) takes a slow path when
    // events come in several shapes (text, fragments, usage…): about 3× the cost per event.
    const tagged = Object.assign({}, event) as Attempted<E>;
    tagged.attempt = this.attempt;
    this.out.next(tagged);
  }
}
