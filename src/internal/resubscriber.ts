import type { Observable, Subscription } from 'rxjs';

/**
 * Where a {@link Resubscriber}'s runs end up: the subscriber of the Observable it drives. A wait that errors
 * errors it, and one that completes before it fired completes it.
 */
interface ResubscribeTarget {
  readonly closed: boolean;
  error(error: unknown): void;
  complete(): void;
}

/**
 * The one resubscribe driver: runs a step (subscribe to an attempt, open a connection) and, each time a policy
 * says another run follows, runs it again after the wait the policy chose. What a cut means (fail, complete,
 * again and after how long) is the policy's pure decision: `retryAsEvents` (`retryDecisions.ts`),
 * `resumeResponse` (`resumeVerdict`) and `fromSSE`'s reconnect (`reconnectVerdict`). The driver owns what they
 * share:
 *
 * - the wait: a timer or a notifier, of which the first value starts the next run; unsubscribed by `close`;
 * - the loop: a step asked for again while it is still running (a synchronous source that fails while it is
 *   subscribed) runs once that run has returned, in place of a recursion that would grow the stack with every
 *   restart;
 * - nothing runs once the target is closed.
 */
export class Resubscriber {
  #running = false;
  #again = false;
  #waiting: Subscription | undefined;

  /**
   * @param step What each run does.
   * @param target The subscriber the runs emit into: closed, no run follows.
   */
  constructor(
    private readonly step: () => void,
    private readonly target: ResubscribeTarget,
  ) {}

  /**
   * Runs the step (`first` in its place for this call's first run), then again while a run asked for another;
   * called from inside a run, it has the loop run the step once more after that run returns.
   */
  run(first: () => void = this.step): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    try {
      let next = first;
      do {
        this.#again = false;
        next();
        next = this.step;
      } while (this.#again && !this.target.closed);
    } finally {
      this.#running = false;
    }
  }

  /**
   * Runs the step again: at once (from the loop, when a run is live) without a wait; else on the wait's first
   * value. A wait that errors errors the target; one that completes without a value completes it.
   */
  again(wait?: Observable<unknown>): void {
    if (this.target.closed) return;
    if (wait === undefined) {
      this.run();
      return;
    }
    let fired = false;
    const subscription = wait.subscribe({
      next: () => {
        if (fired) return;
        fired = true;
        this.#waiting?.unsubscribe();
        this.#waiting = undefined;
        this.run();
      },
      error: (error: unknown) => this.target.error(error),
      complete: () => {
        if (!fired) this.target.complete();
      },
    });
    // A wait that fired synchronously is done, and may have started a run that is waiting on a wait of its own
    // by now: keep that one.
    if (fired) subscription.unsubscribe();
    else this.#waiting = subscription;
  }

  /** Ends a pending wait: no run follows it. */
  close(): void {
    this.#waiting?.unsubscribe();
    this.#waiting = undefined;
  }
}
