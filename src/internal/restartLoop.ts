/**
 * Runs a step (subscribe to an attempt, open a connection) again each time it asks for another run while it is
 * still running, as a synchronous source that fails while it is subscribed does: a loop in place of a recursion
 * that would grow the stack with every restart.
 */
export class RestartLoop {
  #running = false;
  #again = false;

  /**
   * @param step What each run does.
   * @param closed Whether the subscription ended: then no run follows.
   */
  constructor(
    private readonly step: () => void,
    private readonly closed: () => boolean,
  ) {}

  /**
   * Runs the step (`first` in its place for this call's first run), then again while a run asked for another; called
   * from inside a run, it has the loop run the step once more after that run returns.
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
      } while (this.#again && !this.closed());
    } finally {
      this.#running = false;
    }
  }
}
