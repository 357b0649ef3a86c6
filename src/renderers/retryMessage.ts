import type { RetryFacts } from '../types.js';

/**
 * What {@link retryMessage} reads: a {@link RetryNotice} of a view, or a `reset` event itself.
 *
 * @inline
 */
export type RetryMessageFacts = Pick<
  RetryFacts,
  'delay' | 'retryCount' | 'maxRetries' | 'status' | 'errorName'
> & {
  /** Why the attempt was abandoned. */
  reason: string;
};

/**
 * Options of {@link retryMessage}.
 *
 * @inline
 */
export interface RetryMessageOptions {
  /**
   * The milliseconds left of the wait, for a live countdown: `delay` minus the time since the notice appeared.
   * Default the notice's `delay`. At or below 0 the message says "retrying now".
   */
  remaining?: number;
}

/** Longest cause shown: an error message can be a page long. */
const CAUSE_SHOWN = 80;

/**
 * Says a retry notice in words, for people: `retrying in 3 s (HTTP 503), retry 1 of 2`.
 *
 * The wait comes first: `in 3 s` (rounded up, as a countdown shows it: tenths of a second below one second, whole
 * seconds below two minutes, minutes from there), `now` for no wait, nothing when the notice does not know it.
 * The cause follows in parentheses: `HTTP 503` when there was a status, else the reason (shortened to 80
 * characters). Last the retry count, `retry 1 of 2`, or `retry 1` without a cap. A fact that is not a number
 * is left out.
 *
 * ```text
 * { delay: 3000, status: 503, retryCount: 1, maxRetries: 2 }   retrying in 3 s (HTTP 503), retry 1 of 2
 * { delay: 0, reason: 'connection reset' }                      retrying now (connection reset)
 * { reason: 'connection reset' }                                retrying (connection reset)
 * ```
 *
 * ## Example
 * ```ts
 * import { retryMessage, turnView } from 'cleanturn/renderers';
 *
 * turn$.pipe(turnView()).subscribe((view) => {
 *   banner.textContent = view.notice?.type === 'retrying' ? retryMessage(view.notice) : '';
 * });
 * ```
 *
 * @see {@link turnView}, whose notices it reads; `toTerminal` prints it on the reset's line.
 * @param notice A view's `retrying` notice, or a `reset` event.
 * @param options `remaining`: the time left of the wait, for a countdown.
 * @returns One line of text.
 */
export function retryMessage(notice: RetryMessageFacts, options: RetryMessageOptions = {}): string {
  const wait = number(options.remaining) ?? number(notice.delay);
  let message = wait === undefined ? 'retrying' : `retrying ${inWords(wait)}`;
  const cause = causeOf(notice);
  if (cause !== '') message += ` (${cause})`;
  const count = number(notice.retryCount);
  if (count !== undefined) {
    const cap = number(notice.maxRetries);
    message += `, retry ${count}${cap === undefined ? '' : ` of ${cap}`}`;
  }
  return message;
}

/** `value` when it is a finite number. */
function number(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A wait in words, rounded up: `now`, `in 0.3 s`, `in 3 s`, `in 2 min`. */
function inWords(ms: number): string {
  if (ms <= 0) return 'now';
  if (ms < 1000) {
    const tenths = Math.ceil(ms / 100);
    return tenths >= 10 ? 'in 1 s' : `in 0.${tenths} s`;
  }
  const seconds = Math.ceil(ms / 1000);
  return seconds < 120 ? `in ${seconds} s` : `in ${Math.ceil(ms / 60_000)} min`;
}

/** Why, in a few words: the HTTP status when there was one, else the reason, else the error's class. */
function causeOf(notice: RetryMessageFacts): string {
  const status = number(notice.status);
  if (status !== undefined) return `HTTP ${status}`;
  const reason = typeof notice.reason === 'string' ? notice.reason.replace(/\s+/g, ' ').trim() : '';
  if (reason !== '') return reason.length > CAUSE_SHOWN ? `${reason.slice(0, CAUSE_SHOWN - 1)}…` : reason;
  return typeof notice.errorName === 'string' ? notice.errorName : '';
}
