import type { MonoTypeOperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { NotInferred } from './internal/types.js';

/**
 * Options of {@link bufferUntilFinish}.
 *
 * @inline
 */
export interface BufferUntilFinishOptions<C> {
  /**
   * Lets a call through at once instead of holding it: for pure reads whose early start saves latency and
   * whose repetition costs nothing. Never use it for calls that change state.
   */
  early?: (call: C) => boolean;
}

/**
 * Holds `tool-call` events until their attempt finishes, then releases them in arrival order immediately
 * before that attempt's `finish`, in the same frame.
 *
 * Calls of an attempt that never finishes are never released: a `reset` or `retry` (or any event of a newer
 * attempt), an error, or a completion without `finish` discards them. A consumer that starts a newer attempt
 * while the calls are being released (a retry pushed from its handler) receives none of the rest, nor the
 * old finish. All other events pass through at once, except stragglers of older attempts and anything after
 * a finish, which are dropped (the rules of {@link AttemptTracker}). Place it after {@link tagAttempts} (and
 * usually {@link resetOnRetry}).
 *
 * ```text
 * source:   -A-C-D-X-B-K-E-F----|
 *           bufferUntilFinish()
 * result:   -A---D-X-B---E-(KF)-|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/bufferUntilFinish.marbles.ts`, with pictures: `docs/operators/bufferUntilFinish.md`.
 *
 * State: the held calls of the live attempt, and an {@link AttemptTracker}.
 *
 * ## Example
 * ```ts
 * import { bufferUntilFinish, resetOnRetry, tagAttempts } from 'cleanturn';
 *
 * providerEvents$
 *   .pipe(
 *     tagAttempts(),
 *     resetOnRetry(),
 *     bufferUntilFinish({ early: (call) => call.name === 'lookup_order' }), // a pure read may start early
 *   )
 *   .subscribe(render);
 * ```
 *
 * @see {@link cleanTurn}, the recommended policy that includes it.
 * @param options `early` lets pure reads through without waiting.
 * @returns An operator that delays state-changing calls to the end of their attempt.
 */
export function bufferUntilFinish<E extends { type: string; attempt: number }>(
  // Not inferred from `early`: a named predicate such as `(call: { name: string }) => boolean` would make `E`
  // its constraint (and the output type too); `E` comes from the source.
  options: BufferUntilFinishOptions<NotInferred<Extract<E, { type: 'tool-call' }>>> = {},
): MonoTypeOperatorFunction<E> {
  return stageOperator((out: Sink<E>) => new BufferStage<E>(out, options.early));
}

/** The stage of {@link bufferUntilFinish}. */
export class BufferStage<E extends { type: string; attempt: number }> extends Stage<E, E> {
  private readonly attempts = new AttemptTracker();
  /** Calls of the live attempt, waiting for its finish. */
  private held: E[] = [];

  constructor(
    out: Sink<E>,
    private readonly early: ((call: never) => boolean) | undefined,
  ) {
    super(out);
  }

  next(event: E): void {
    const step = this.attempts.step(event);
    if (step === 'stale') return;
    if (step === 'newer') this.held = [];
    if (event.type === 'tool-call') {
      if (this.early?.(event as never) === true) this.out.next(event);
      else this.held.push(event);
      return;
    }
    if (event.type === 'finish' && this.held.length > 0) {
      const release = this.held;
      this.held = [];
      for (const call of release) {
        this.out.next(call);
        // The consumer may have started a newer attempt (a retry pushed from its handler) or unsubscribed:
        // then this attempt's remaining calls and its finish are void.
        if (this.closed || !this.attempts.isLive(event.attempt)) return;
      }
    }
    this.out.next(event);
  }

  protected override clear(): void {
    this.held = [];
  }
}
