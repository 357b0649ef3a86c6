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
 * source:   -a-c-d-r-b-k-e-f-|
 *           tagAttempts()
 * result:   -A-C-D-R-B-K-E-F-|
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   c = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   d = text "Refunding the dam"
 *   r = retry "connection reset"
 *   b = text "Checking order ORD-7781. "
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   e = text "The book arrived damaged, so I have started a full refund."
 *   f = finish stop
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   R = retry "connection reset", attempt 2
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/tagAttempts.marbles.ts`, with pictures: `docs/operators/tagAttempts.md`.
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
