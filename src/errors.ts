/**
 * Typed errors. Every error this package raises extends {@link CleanturnError} and says whether a new
 * attempt could succeed (`retryable`), which is what {@link retryAsEvents} consults by default.
 *
 * @module
 */

/** The base class of every error raised by cleanturn. */
export class CleanturnError extends Error {
  /** Whether a new attempt of the same turn could succeed. */
  readonly retryable: boolean;

  constructor(message: string, options: { retryable: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable;
  }
}

/** What went wrong while joining tool-call fragments. */
export type ToolCallAssemblyProblem = 'invalid-json' | 'missing-name';

/**
 * A streamed tool call could not be assembled: its arguments are not valid JSON (a truncated or garbled
 * generation) or it never said which tool it calls. Retryable: a new attempt usually produces a valid call.
 * The raw argument text is kept so that nothing is lost.
 */
export class ToolCallAssemblyError extends CleanturnError {
  /** Which check failed. */
  readonly problem: ToolCallAssemblyProblem;
  /** The call's `index` within its attempt. */
  readonly index: number;
  /** The call id, if the fragments carried one. */
  readonly id: string | undefined;
  /** The tool name, if the fragments carried one. */
  readonly toolName: string | undefined;
  /** The joined argument text as received. */
  readonly argsText: string;

  constructor(
    problem: ToolCallAssemblyProblem,
    call: { index: number; id: string | undefined; name: string | undefined; argsText: string },
    cause?: unknown,
  ) {
    const what =
      call.name === undefined ? `tool call #${call.index}` : `tool call #${call.index} (${call.name})`;
    const message =
      problem === 'invalid-json'
        ? `${what}: arguments are not valid JSON: ${preview(call.argsText)}`
        : `${what}: no fragment named the tool`;
    super(message, { retryable: true, cause });
    this.problem = problem;
    this.index = call.index;
    this.id = call.id;
    this.toolName = call.name;
    this.argsText = call.argsText;
  }
}

/**
 * The source completed without a `finish` event: the stream was cut off cleanly (a socket closed just
 * before the finish is the common case). Retryable.
 */
export class MissingFinishError extends CleanturnError {
  /** The attempt that ended without a finish, when the stream carried attempt numbers. */
  readonly attempt: number | undefined;

  constructor(attempt?: number) {
    super(
      attempt === undefined
        ? 'the stream completed without a finish event'
        : `attempt ${attempt} completed without a finish event`,
      { retryable: true },
    );
    this.attempt = attempt;
  }
}

/** What happened to one attempt that failed, as recorded by {@link retryAsEvents}. */
export interface FailedAttempt {
  /**
   * Which attempt of the subscription this was: 1 for the first. Absolute, also when the records of earlier
   * attempts have been dropped (see {@link RetriesExhaustedError.attempts}).
   */
  attempt: number;
  /** A short description of the error, as the `retry` event gave it. */
  reason: string;
  /** The error that ended the attempt. */
  error: unknown;
  /** How many values the attempt emitted before it failed (what a consumer already saw of it). */
  emitted: number;
}

/**
 * The last attempt failed and no further attempt is allowed: the retry cap was reached, or (the subclass
 * {@link RetryBudgetExhaustedError}) a shared retry budget refused the retry.
 *
 * The message reads `gave up after <failures> attempt(s): <reason of the last attempt>` (without the colon and
 * reason when the reason is empty).
 */
export class RetriesExhaustedError extends CleanturnError {
  /**
   * The most recent failed attempts, oldest first; the last one is the error that hit the cap. Bounded, so that
   * a long-lived retried stream does not keep every error it ever saw: {@link retryAsEvents} keeps at most the
   * 32 most recent records, and with `resetOnSuccess` only those since the retry count was last reset. Each
   * record keeps its absolute attempt number.
   */
  readonly attempts: readonly FailedAttempt[];
  /**
   * How many attempts failed in total, those whose records were dropped included. Equal to `attempts.length`
   * when nothing was dropped.
   */
  readonly failures: number;

  /**
   * @param attempts The records kept, oldest first.
   * @param failures How many attempts failed in total (default: `attempts.length`).
   */
  constructor(attempts: readonly FailedAttempt[], failures: number = attempts.length) {
    const reason = attempts[attempts.length - 1]?.reason ?? '';
    const summary = `gave up after ${failures} attempt(s)`;
    // No `cause`: the last failure is in the message already and its error in `attempts`; a cause would make every
    // printer of error chains repeat it.
    super(reason === '' ? summary : `${summary}: ${reason}`, { retryable: false });
    this.attempts = attempts;
    this.failures = failures;
  }
}

/**
 * A retry budget shared by many turns (see `retryBudget`) refused the retry that this turn's last failure asked for:
 * the turn ends at once, without the retry's delay. Not retryable.
 *
 * A {@link RetriesExhaustedError} (no further attempt is allowed), with the same `attempts` and `failures`; its message
 * reads `retry budget exhausted: gave up after <failures> attempt(s): <reason of the last attempt>`.
 */
export class RetryBudgetExhaustedError extends RetriesExhaustedError {
  /**
   * @param attempts The records kept, oldest first; the last one is the failure whose retry was refused.
   * @param failures How many attempts failed in total (default: `attempts.length`).
   */
  constructor(attempts: readonly FailedAttempt[], failures: number = attempts.length) {
    super(attempts, failures);
    this.message = `retry budget exhausted: ${this.message}`;
  }
}

/** A tool call's arguments cannot be turned into canonical JSON (a cycle, a BigInt). */
export class EffectKeyError extends CleanturnError {
  constructor(toolName: string, cause: unknown) {
    super(`cannot compute an effect key for ${toolName}: arguments are not JSON data`, {
      retryable: false,
      cause,
    });
  }
}

/**
 * Whether an error says a new attempt could succeed: `false` only when it carries `retryable: false`.
 * Errors without that flag (network failures, plain `Error`s) count as retryable.
 */
export function isRetryable(error: unknown): boolean {
  return !(
    typeof error === 'object' &&
    error !== null &&
    (error as { retryable?: unknown }).retryable === false
  );
}

function preview(text: string): string {
  return text.length <= 80
    ? JSON.stringify(text)
    : `${JSON.stringify(text.slice(0, 80))}… (${text.length} chars)`;
}

/**
 * An error as one line of text for people and logs: the `reason` of a `retry` event, a failed call's line, a
 * report. One rule everywhere:
 * - an `Error`, or any object with a string `message`: that message, or its `name` when the message is empty;
 * - a string: itself;
 * - `undefined` or `null`, or an empty string: `unknown error`;
 * - a number, boolean, bigint or symbol: `String(value)`;
 * - any other object: its JSON text (shortened to 200 characters), or `String(value)` when it has none.
 *
 * @param error Whatever was thrown or sent as an error notification.
 * @returns A non-empty line of text.
 */
export function describeError(error: unknown): string {
  if (typeof error === 'string') return error === '' ? UNKNOWN : error;
  if (error === undefined || error === null) return UNKNOWN;
  if (typeof error === 'object') {
    const { message, name } = error as { message?: unknown; name?: unknown };
    if (typeof message === 'string' || error instanceof Error) {
      if (typeof message === 'string' && message !== '') return message;
      return typeof name === 'string' && name !== '' ? name : UNKNOWN;
    }
  } else {
    return String(error);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(error);
  } catch {
    json = undefined;
  }
  if (json === undefined) return String(error);
  return json.length <= 200 ? json : `${json.slice(0, 199)}…`;
}

const UNKNOWN = 'unknown error';
