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
  /** 1 for the first attempt. */
  attempt: number;
  /** A short description of the error, as the `retry` event gave it. */
  reason: string;
  /** The error that ended the attempt. */
  error: unknown;
  /** How many values the attempt emitted before it failed (what a consumer already saw of it). */
  emitted: number;
}

/** The retry cap was reached: the last attempt failed and no further attempt is allowed. */
export class RetriesExhaustedError extends CleanturnError {
  /** Every attempt of the turn, in order; the last one is the error that hit the cap. */
  readonly attempts: readonly FailedAttempt[];

  constructor(attempts: readonly FailedAttempt[]) {
    const last = attempts[attempts.length - 1];
    super(`gave up after ${attempts.length} attempt(s): ${last?.reason ?? 'unknown error'}`, {
      retryable: false,
      cause: last?.error,
    });
    this.attempts = attempts;
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
