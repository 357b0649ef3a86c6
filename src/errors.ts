/**
 * Typed errors. Every error this package raises extends {@link CleanturnError} and says whether a new
 * attempt could succeed (`retryable`), which is what {@link retryAsEvents} consults by default.
 *
 * @module
 */

import { describeError, oneLine, readProperty } from './internal/describeError.js';

/** Where an error's kinds are kept: one symbol for every copy of this package that a program loads. */
const KINDS: unique symbol = Symbol.for('cleanturn.error.kinds') as never;

/**
 * The base class of every error raised by cleanturn. Each area has one subclass, and its `code` names the case:
 * {@link TurnError} (the core operators), {@link UsageError} (a function called wrongly), `ProviderError`
 * (`cleanturn/providers`), `TransportError` (`cleanturn/transport`) and `EffectError` (`cleanturn/effects` and its
 * ledgers).
 *
 * `instanceof` holds across two copies of the package in one program (its ESM and its CommonJS build, or two
 * versions in `node_modules`): it checks a brand that every copy writes the same way, not the prototype chain.
 *
 * @example
 * ```ts
 * if (error instanceof CleanturnError && !error.retryable) console.error(error.code, error.message);
 * ```
 */
export class CleanturnError<Code extends string = string> extends Error {
  /** The kind that `instanceof` checks: the class's name, written out so that minifiers cannot change it. */
  static readonly kind: string = 'CleanturnError';

  /** Whether `value` is an error of this class, made by any copy of this package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // A subclass of the user's own, without a kind of its own: the prototype chain decides.
    if (!Object.hasOwn(this, 'kind')) return Function.prototype[Symbol.hasInstance].call(this, value);
    const kinds = readProperty(value, KINDS);
    return Array.isArray(kinds) && kinds.includes((this as { kind: string }).kind);
  }

  /** Which case this is, in kebab case: `stall`, `retries-exhausted`, `lease-lost`… Each area lists its codes. */
  readonly code: Code;
  /** Whether a new attempt of the same turn could succeed. */
  readonly retryable: boolean;

  /**
   * @param code Which case this is.
   * @param message One line for people and logs.
   * @param options Whether a new attempt could succeed, and the error that caused this one.
   */
  constructor(code: Code, message: string, options: { retryable: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const kinds = kindsOf(new.target);
    this.name = kinds[kinds.length - 1] ?? 'CleanturnError';
    Object.defineProperty(this, KINDS, { value: kinds });
    this.code = code;
    this.retryable = options.retryable;
    // The fields of the case, which each area's class declares (`declare readonly status: number | undefined`).
    for (const [key, value] of Object.entries(options)) {
      if (key !== 'retryable' && key !== 'cause') (this as Record<string, unknown>)[key] = value;
    }
  }
}

/** The kinds a class and its ancestors declare, base first: `['CleanturnError', 'TransportError']`. */
function kindsOf(type: unknown): string[] {
  const kinds: string[] = [];
  for (let at = type; typeof at === 'function' && at !== Error; at = Object.getPrototypeOf(at)) {
    if (Object.hasOwn(at, 'kind')) kinds.unshift(String((at as unknown as { kind: unknown }).kind));
  }
  return kinds;
}

/**
 * Why an attempt that finished is of no use, as the checks of `requireUsable` name it: the model refused or its
 * output was filtered (`refusal`), it answered nothing (`empty`), the provider could not read the call it made
 * (`malformed-call`: Gemini's `MALFORMED_FUNCTION_CALL`), or a call's arguments fail the tool's schema
 * (`invalid-arguments`). A check of your own names its own code.
 *
 * @inline
 */
export type UnusableCode = 'refusal' | 'empty' | 'malformed-call' | 'invalid-arguments' | (string & {});

/**
 * The cases of a {@link TurnError}:
 *
 * | code | the case | retryable |
 * |---|---|---|
 * | `tool-call-invalid-json` | a streamed call's joined arguments are not JSON (`index`, `id`, `toolName`, `argsText`) | yes |
 * | `tool-call-missing-name` | no fragment of a streamed call named its tool (`index`, `id`, `argsText`) | yes |
 * | `missing-finish` | the source completed without a `finish` (`attempt`) | yes |
 * | `unusable` | `requireUsable` refused a finished attempt (`check`, `reason`, `attempt`) | yes |
 * | `retries-exhausted` | no further attempt is allowed: the retry cap was reached, or a shared retry budget refused the retry (`limit`, `attempts`, `failures`) | no |
 * | `effect-key` | a call's arguments cannot be keyed (`toolName`, `path`, `reason`) | no |
 *
 * @inline
 */
export type TurnErrorCode =
  | 'tool-call-invalid-json'
  | 'tool-call-missing-name'
  | 'missing-finish'
  | 'unusable'
  | 'retries-exhausted'
  | 'effect-key';

/**
 * What happened to one attempt that failed, as recorded by {@link retryAsEvents}.
 *
 * @inline
 */
export interface FailedAttempt {
  /**
   * Which attempt of the subscription this was: 1 for the first. Absolute, also when the records of earlier
   * attempts have been dropped (see the `attempts` of {@link TurnError}).
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
 * An error of the core operators; its code names the case, and the fields that its code
 * names are set (the others are `undefined`).
 *
 * Messages are one line:
 * - `tool call #0 (issue_refund): arguments are not valid JSON: "{\"order"` (`tool-call-invalid-json`);
 * - `attempt 2 completed without a finish event` (`missing-finish`);
 * - `attempt 1 is unusable (refusal): the model refused: "…"` (`unusable`), the reason of the `retry` and `reset`
 *   that follow;
 * - `gave up after 3 attempt(s): <reason of the last attempt>` (`retries-exhausted`), prefixed with `retry budget
 *   exhausted: ` when the budget refused;
 * - `cannot compute an effect key for issue_refund: args.when: a Date; the arguments must be JSON data`
 *   (`effect-key`).
 *
 * @example
 * ```ts
 * catchError((error) => {
 *   if (error instanceof TurnError && error.code === 'retries-exhausted') report(error.attempts);
 *   throw error;
 * });
 * ```
 */
export class TurnError extends CleanturnError<TurnErrorCode> {
  static override readonly kind: string = 'TurnError';

  /** The attempt the error is about, when the stream carried attempt numbers (`missing-finish`, `unusable`). */
  declare readonly attempt: number | undefined;
  /** A streamed call's `index` within its attempt (`tool-call-*`). */
  declare readonly index: number | undefined;
  /** A streamed call's id, if its fragments carried one (`tool-call-*`). */
  declare readonly id: string | undefined;
  /** The tool's name, if known (`tool-call-*`, `effect-key`). */
  declare readonly toolName: string | undefined;
  /** A streamed call's joined argument text as received: nothing is lost (`tool-call-*`). */
  declare readonly argsText: string | undefined;
  /** Which check of `requireUsable` refused the attempt: `refusal`, `empty`, … or a code of your own (`unusable`). */
  declare readonly check: UnusableCode | undefined;
  /**
   * What was found, on one line: `the model refused: "I can't help with that."` (`unusable`); `a Map`, `NaN is not a
   * finite number` (`effect-key`).
   */
  declare readonly reason: string | undefined;
  /** Where the value that cannot be keyed is: `args`, `args.order_id`, `args.lines[2]`, or `step` (`effect-key`). */
  declare readonly path: string | undefined;
  /**
   * The most recent failed attempts, oldest first; the last one is the error that hit the limit
   * (`retries-exhausted`). Bounded, so that a long-lived retried stream does not keep every error it ever saw:
   * {@link retryAsEvents} keeps at most the 32 most recent records, and with `resetOnSuccess` only those since the
   * retry count was last reset. Each record keeps its absolute attempt number.
   */
  declare readonly attempts: readonly FailedAttempt[] | undefined;
  /** How many attempts failed in total, those whose records were dropped included (`retries-exhausted`). */
  declare readonly failures: number | undefined;
  /**
   * Which limit ended the turn (`retries-exhausted`): the retry `count` of {@link retryAsEvents} (`cap`), or a shared
   * retry budget that refused the retry (`budget`), in which case the turn ended at once, without the retry's delay.
   */
  declare readonly limit: 'cap' | 'budget' | undefined;

  /**
   * @param code Which case this is.
   * @param message One line for people and logs.
   * @param details The fields of the case, whether a new attempt could succeed, and the cause.
   */
  constructor(
    code: TurnErrorCode,
    message: string,
    details: Partial<Omit<TurnError, keyof CleanturnError>> & { retryable: boolean; cause?: unknown },
  ) {
    super(code, message, details);
  }
}

/**
 * A streamed tool call could not be assembled: its arguments are not valid JSON (a truncated or garbled
 * generation) or it never said which tool it calls. Retryable: a new attempt usually produces a valid call.
 * @internal
 */
export function toolCallAssemblyError(
  code: 'tool-call-invalid-json' | 'tool-call-missing-name',
  call: { index: number; id: string | undefined; name: string | undefined; argsText: string },
  cause?: unknown,
): TurnError {
  const what =
    call.name === undefined ? `tool call #${call.index}` : `tool call #${call.index} (${call.name})`;
  const message =
    code === 'tool-call-invalid-json'
      ? `${what}: arguments are not valid JSON: ${preview(call.argsText)}`
      : `${what}: no fragment named the tool`;
  return new TurnError(code, message, {
    retryable: true,
    cause,
    index: call.index,
    id: call.id,
    toolName: call.name,
    argsText: call.argsText,
  });
}

/** The source completed without a `finish` event. Retryable. @internal */
export function missingFinishError(attempt?: number): TurnError {
  return new TurnError(
    'missing-finish',
    attempt === undefined
      ? 'the stream completed without a finish event'
      : `attempt ${attempt} completed without a finish event`,
    { retryable: true, attempt },
  );
}

/** An attempt finished but cannot be used: `requireUsable` raises it in place of the `finish`. Retryable. @internal */
export function unusableAttemptError(check: UnusableCode, reason: string, attempt?: number): TurnError {
  const which = attempt === undefined ? 'the attempt' : `attempt ${attempt}`;
  // One line, whatever the check said (a validator's report over several lines, a tool name from the model).
  const said = oneLine(reason, 300);
  return new TurnError('unusable', `${which} is unusable (${oneLine(check, 80)}): ${said}`, {
    retryable: true,
    check,
    reason: said,
    attempt,
  });
}

/**
 * No further attempt is allowed: the retry cap was reached (`cap`), or a shared retry budget refused the retry
 * (`budget`). Not retryable. @internal
 */
export function retriesExhaustedError(
  limit: 'cap' | 'budget',
  attempts: readonly FailedAttempt[],
  failures: number = attempts.length,
): TurnError {
  // One line, whatever the reason holds (a body with line breaks, a terminal escape): the record keeps it as it was.
  const last = attempts[attempts.length - 1]?.reason;
  const reason = typeof last === 'string' ? oneLine(last) : '';
  const summary = `gave up after ${failures} attempt(s)`;
  const message = reason === '' ? summary : `${summary}: ${reason}`;
  // No `cause`: the last failure is in the message already and its error in `attempts`; a cause would make every
  // printer of error chains repeat it.
  return new TurnError(
    'retries-exhausted',
    limit === 'budget' ? `retry budget exhausted: ${message}` : message,
    {
      retryable: false,
      attempts,
      failures,
      limit,
    },
  );
}

/**
 * A tool call's arguments cannot be keyed (see `effectKey`): the call must not run. Not retryable: the same
 * arguments fail the same way. @internal
 */
export function effectKeyError(
  toolName: string,
  cause: unknown,
  where: { path: string; problem: string } = { path: 'args', problem: describeError(cause) },
): TurnError {
  return new TurnError(
    'effect-key',
    `cannot compute an effect key for ${toolName}: ${where.path}: ${where.problem}; the arguments must be JSON data`,
    { retryable: false, cause, toolName, path: where.path, reason: where.problem },
  );
}

/**
 * A function of this package was called wrongly: an option of the wrong type or out of its range
 * (`retryBudget({ ttlMs: 1e-3 })`), or a callback that returned what it must not (a `plan` of `streamTurn` that
 * returns no plan). A mistake in the calling code: never retryable, since a new attempt would make the same call.
 * Every area raises it; its code is always `usage`.
 *
 * The message reads `<operator>: <option> must be <what it must be>, not <what it was>`.
 */
export class UsageError extends CleanturnError<'usage'> {
  static override readonly kind: string = 'UsageError';

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
    super('usage', `${operator}: ${option} ${problem}`, { retryable: false, cause });
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
