import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from './subscribeLinked.js';

/** Where a stage writes: the next stage of a chain, or the operator's subscriber at its end. */
export interface Sink<T> {
  next(value: T): void;
  error(error: unknown): void;
  complete(): void;
  /** Whether the end of the chain takes no more notifications (it ended, or its consumer unsubscribed). */
  readonly closed: boolean;
}

/**
 * The logic of one operator without RxJS around it: a state machine fed the notifications of its source,
 * writing to `out`. An operator is a stage run by {@link stageOperator}; a composed operator (`cleanTurn`,
 * `attemptPipeline`) runs its stages chained in one subscriber, so that an event crosses one RxJS subscriber
 * instead of one per operator (every hop through RxJS is a call that V8 cannot inline, since all operators
 * share it). Each rule stays written once, in its stage.
 *
 * What a stage's `next` throws goes up to the operator's subscription, which sends it to the subscriber as an
 * error notification (what `subscribeLinked` does for a hand-written operator).
 */
export abstract class Stage<I, O> implements Sink<I> {
  constructor(protected readonly out: Sink<O>) {}

  /** Whether the end of the chain is closed. */
  get closed(): boolean {
    return this.out.closed;
  }

  abstract next(value: I): void;

  error(error: unknown): void {
    this.clear();
    this.out.error(error);
  }

  complete(): void {
    this.clear();
    this.out.complete();
  }

  /** Lets go of what the stage holds: at the end of its source, and when its consumer unsubscribes. */
  protected clear(): void {}

  /** Lets go of what this stage and the stages after it hold. */
  dispose(): void {
    this.clear();
    if (this.out instanceof Stage) this.out.dispose();
  }
}

/**
 * An operator that runs the stage (or chain of stages) `create` builds, one per subscription.
 *
 * @param create Builds the stages for one subscription, writing to `out`; returns the first.
 */
export function stageOperator<I, O>(create: (out: Sink<O>) => Stage<I, unknown>): OperatorFunction<I, O> {
  return function stageOperatorFunction(source) {
    return new Observable<O>((subscriber) => {
      const head = create(subscriber);
      const subscription = subscribeLinked(source, subscriber, head);
      return () => {
        head.dispose();
        subscription.unsubscribe();
      };
    });
  };
}
