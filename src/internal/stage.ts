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
 * writing to `out`. An operator is a stage run by {@link stageOperator}; adjacent stage operators run their
 * stages chained in one subscriber (however the user splits them into `pipe` calls, and in the composed
 * operators `cleanTurn` and `attemptPipeline`), so that an event crosses one RxJS subscriber instead of one per
 * operator (every hop through RxJS is a call that V8 cannot inline, since all operators share it). Each rule
 * stays written once, in its stage.
 *
 * Once the end of the chain is closed, a stage that would emit more than once for one input (a release of held
 * calls) checks {@link Stage.closed} between its emissions, as an operator would find its subscriber closed.
 *
 * What a stage's `next` throws goes up to the operator's subscription, which sends it to the subscriber as an
 * error notification (what `subscribeLinked` does for a hand-written operator).
 */
export abstract class Stage<I, O> implements Sink<I> {
  /** The end of the chain, read once: `closed` is asked on the path of every event. */
  private readonly end: Sink<unknown>;

  constructor(protected readonly out: Sink<O>) {
    this.end = out instanceof Stage ? out.end : out;
  }

  /** Whether the end of the chain is closed. */
  get closed(): boolean {
    return this.end.closed;
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

/** Builds the stage (or chain of stages) of one operator for one subscription, writing to `out`. */
type StageFactory = (out: Sink<never>) => Stage<never, unknown>;

/**
 * What a stage operator returns: the stages of one or more operators over the nearest upstream that is not a
 * stage operator's. Piping it into another stage operator makes a new one with that operator's stage appended
 * (the upstream and the stages before are shared, never changed), so that adjacent operators run chained in one
 * subscriber whether they are written in one `pipe` call or in several. Anything else in between (a `map`, a
 * `tap`) ends the run of stages: the operator after it starts a new one over it.
 */
class StagedObservable<O> extends Observable<O> {
  constructor(
    readonly upstream: Observable<unknown>,
    readonly factories: readonly StageFactory[],
  ) {
    super((subscriber) => {
      let out: Sink<never> = subscriber;
      for (let i = factories.length - 1; i >= 0; i--)
        out = (factories[i] as StageFactory)(out) as Sink<never>;
      const head = out as unknown as Stage<unknown, unknown>;
      const subscription = subscribeLinked(upstream, subscriber, head);
      return () => {
        head.dispose();
        subscription.unsubscribe();
      };
    });
  }
}

/**
 * An operator that runs the stage (or chain of stages) `create` builds, one per subscription. Piped right after
 * another stage operator, it fuses with it (see {@link StagedObservable}).
 *
 * @param create Builds the stages for one subscription, writing to `out`; returns the first.
 */
export function stageOperator<I, O>(create: (out: Sink<O>) => Stage<I, unknown>): OperatorFunction<I, O> {
  const factory = create as unknown as StageFactory;
  return function stageOperatorFunction(source) {
    return source instanceof StagedObservable
      ? new StagedObservable<O>(source.upstream, [...source.factories, factory])
      : new StagedObservable<O>(source, [factory]);
  };
}

/**
 * How many stages run in one subscriber over `observable`'s upstream (0 for an observable that no stage
 * operator made): what tests read to see that adjacent operators fused.
 */
export function fusedStages(observable: Observable<unknown>): number {
  return observable instanceof StagedObservable ? observable.factories.length : 0;
}
