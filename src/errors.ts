/**
 * Typed errors. Every error this package raises extends {@link CleanturnError} and says whether a new
 * attempt could succeed (`retryable`), which is what {@link retryAsEvents} consults by default.
 *
 * @module
 */

import { describeError, oneLine, readProperty } from './internal/describeError.js';

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

/**
 * Why an attempt that finished is of no use, as the checks of `requireUsable` name it: the model refused or its
 * output was filtered (`refusal`), it answered nothing (`empty`), the provider could not read the call it made
 * (`malformed-call`: Gemini's `MALFORMED_FUNCTION_CALL`), or a call's arguments fail the tool's schema
 * (`invalid-arguments`). A check of your own names its own code.
 */
export type UnusableCode = 'refusal' | 'empty' | 'malformed-call' | 'invalid-arguments' | (string & {});

/**
 * An attempt finished but cannot be used (a refusal, an empty answer, a malformed or invalid tool call):
 * `requireUsable` raises it in place of the attempt's `finish`, so that {@link retryAsEvents} retries the attempt
 * like a failed connection, counted against the same cap and budget. Retryable.
 *
 * The message reads `attempt <n> is unusable (<code>): <reason>` (`the attempt is unusable (<code>): <reason>` on a
 * stream without attempt numbers); it is the reason of the `retry` and of the `reset` that follow.
 */
export class UnusableAttemptError extends CleanturnError {
  /** Which check failed: `refusal`, `empty`, `malformed-call`, `invalid-arguments`, or a code of your own. */
  readonly code: UnusableCode;
  /** What the check found, on one line, for people and logs: `the model refused: "I can't help with that."`. */
  readonly reason: string;
  /** The attempt that finished unusable, when the stream carried attempt numbers. */
  readonly attempt: number | undefined;

  /**
   * @param code Which check failed.
   * @param reason What it found.
   * @param attempt The attempt, when the stream carried attempt numbers.
   */
  constructor(code: UnusableCode, reason: string, attempt?: number) {
    const which = attempt === undefined ? 'the attempt' : `attempt ${attempt}`;
    // One line, whatever the check said (a validator's report over several lines, a tool name from the model).
    const said = oneLine(reason, 300);
    super(`${which} is unusable (${oneLine(code, 80)}): ${said}`, { retryable: true });
    this.code = code;
    this.reason = said;
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
 * The message is one line: `gave up after <failures> attempt(s): <reason of the last attempt>` (without the colon and
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
    // One line, whatever the reason holds (a body with line breaks, a terminal escape): the record keeps it as it was.
    const last = attempts[attempts.length - 1]?.reason;
    const reason = typeof last === 'string' ? oneLine(last) : '';
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

/**
 * A tool call's arguments cannot be keyed: they are not JSON data that one key can stand for (`undefined` in an
 * array, `NaN`, an integer beyond `Number.MAX_SAFE_INTEGER`, a `Map`, a class instance, a function, a `bigint`, a
 * cycle, nesting deeper than 256 levels; see `effectKey`). The call must not run: `dedupeByEffectKey` (and so
 * `cleanTurn`) fails the turn with this error at that call. Not retryable: the same arguments fail the same way.
 */
export class EffectKeyError extends CleanturnError {
  /** The tool's name. */
  readonly toolName: string;
  /** Where the value that cannot be keyed is: `args`, `args.order_id`, `args.lines[2]`, or `step`. */
  readonly path: string;
  /** What is wrong with it: `a Map`, `undefined in an array`, `NaN is not a finite number`… */
  readonly problem: string;

  /**
   * @param toolName The tool's name.
   * @param cause What computing the key threw, if anything threw (a getter of the arguments), else `undefined`.
   * @param where Where the value is and what is wrong with it; by default `args` and the cause's message.
   */
  constructor(
    toolName: string,
    cause: unknown,
    where: { path: string; problem: string } = { path: 'args', problem: describeError(cause) },
  ) {
    super(
      `cannot compute an effect key for ${toolName}: ${where.path}: ${where.problem}; the arguments must be JSON data`,
      { retryable: false, cause },
    );
    this.toolName = toolName;
    this.path = where.path;
    this.problem = where.problem;
  }
}

/**
 * A function of this package was called wrongly: an option of the wrong type or out of its range
 * (`retryBudget({ ttlMs: 1e-3 })`), or a callback that returned what it must not (a `plan` of `streamTurn` that
 * returns no plan). A mistake in the calling code: never retryable, since a new attempt would make the same call.
 *
 * The message reads `<operator>: <option> must be <what it must be>, not <what it was>`.
 */
export class UsageError extends CleanturnError {
  /** The function that refused the call (`retryBudget`, `streamTurn`). */
  readonly operator: string;
  /** The option, argument or callback at fault (`ttlMs`, `plan`, `plan().adapter`). */
  readonly option: string;

  /**
   * @param operator The function that refused the call.
   * @param option The option at fault.
   * @param problem What it must be and what it was: `must be a function, not 5`.
   * @param cause What a callback threw, when that is the problem.
   */
  constructor(operator: string, option: string, problem: string, cause?: unknown) {
    super(`${operator}: ${option} ${problem}`, { retryable: false, cause });
    this.operator = operator;
    this.option = option;
  }
}

/**
 * Whether an error says a new attempt could succeed: `false` only when it carries `retryable: false`.
 * Errors without that flag (network failures, plain `Error`s), and errors whose flag cannot be read (a getter
 * that throws), count as retryable.
 */
export function isRetryable(error: unknown): boolean {
  // Read without throwing: a getter or a Proxy trap that throws leaves the flag unread, so the error counts as
  // retryable, as any error without the flag.
  return readProperty(error, 'retryable') !== false;
}

/** A string for a message: quoted, and shortened past 80 characters. @internal */
export function preview(text: string): string {
  return text.length <= 80
    ? JSON.stringify(text)
    : `${JSON.stringify(text.slice(0, 80))}… (${text.length} chars)`;
}

// The one way to read a foreign error as a line of text, which never throws (a getter or a Proxy trap that throws
// is read as absent): public here, written beside the other readers of foreign errors in internal/describeError.ts.
export { describeError };
