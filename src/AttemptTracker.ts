/**
 * What one event means to the turn, as {@link AttemptTracker.step} decides it:
 * - `live`: an event of the live attempt, to be used;
 * - `newer`: the first event of a newer attempt, which is live from now on: discard what older attempts left
 *   (text, held calls, a shown message), then use the event;
 * - `stale`: ignore it. Either a straggler, a late event of an attempt that is no longer live (or a reset
 *   that starts nothing new), or an event of the live attempt after its `finish`: the attempt is over, and a
 *   second `finish`, or text or a call after the first, is not part of the turn.
 *
 * @inline
 */
export type AttemptStep = 'live' | 'newer' | 'stale';

/**
 * The rules of attempts, written once: which attempt is live, what a straggler is, what a newer attempt
 * means and what may follow a finish. Every operator and renderer of this package that reads attempts keeps
 * one tracker per subscription and asks it about each event; a custom operator or renderer can do the same.
 *
 * The rules:
 * 1. The live attempt starts at 1. An event whose `attempt` is greater starts that attempt (a `reset` or
 *    `retry` usually does, but any event of a newer attempt does too); everything of older attempts is void.
 * 2. An event whose `attempt` is smaller than the live one is a straggler; so is a `reset` or `retry` that
 *    does not start a newer attempt.
 * 3. After the live attempt's `finish`, only `usage` of that attempt still counts (providers send the final
 *    usage after the finish); anything else of that attempt is ignored, a second `finish` included.
 * 4. An event without an `attempt` number belongs to the live attempt, except an untagged `retry` or
 *    `reset`, which starts the next one (what {@link tagAttempts} numbers).
 * 5. A tool result belongs to its call's attempt. The result of a call of an attempt that is no longer live
 *    is a straggler too: its call was discarded with its attempt, and a consumer that answers the calls of
 *    the final attempt gets that attempt's own answers (see {@link dedupeByEffectKey}'s repeats). Every
 *    renderer ignores it ({@link AttemptTracker.isLive}).
 *
 * ## Example
 * ```ts
 * import { AttemptTracker } from 'cleanturn';
 *
 * const attempts = new AttemptTracker();
 * let text = '';
 * for (const event of cleanEvents) {
 *   const step = attempts.step(event);
 *   if (step === 'stale') continue;
 *   if (step === 'newer') text = '';
 *   if (event.type === 'text') text += event.text;
 * }
 * ```
 */
export class AttemptTracker {
  /**
   * @param attempt The live attempt: 1 for a new turn (a reducer that keeps its state elsewhere passes what it
   *   kept).
   * @param finished Whether the live attempt has sent its `finish`.
   */
  constructor(
    public attempt = 1,
    public finished = false,
  ) {}

  /**
   * Classifies `event` and moves the tracker on: a newer attempt becomes live, a `finish` of the live attempt
   * finishes it.
   *
   * @param event An event of the turn, tagged with its attempt or not.
   * @returns What the event means; see `AttemptStep`.
   */
  step(event: { readonly type: string; readonly attempt?: number }): AttemptStep {
    const { type } = event;
    const starts = type === 'reset' || type === 'retry';
    let attempt = event.attempt;
    if (typeof attempt !== 'number') attempt = starts ? this.attempt + 1 : this.attempt;
    if (attempt > this.attempt) {
      this.attempt = attempt;
      this.finished = type === 'finish';
      return 'newer';
    }
    if (attempt < this.attempt || starts) return 'stale';
    if (this.finished) return type === 'usage' ? 'live' : 'stale';
    if (type === 'finish') this.finished = true;
    return 'live';
  }

  /**
   * Whether `attempt` is the live attempt: what a tool result (whose `call.attempt` says which attempt its
   * call came from) is checked with.
   */
  isLive(attempt: number): boolean {
    return attempt === this.attempt;
  }
}
