import type { OperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { preview, type UnusableCode, UsageError, unusableAttemptError } from './errors.js';
import { describeError, oneLine } from './internal/describeError.js';
import { describeValue } from './internal/describeValue.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { WholeCallEvents } from './internal/types.js';
import type { FinishEvent, ToolCallEvent } from './types.js';

/**
 * What the checks of {@link requireUsable} see of an attempt when its `finish` arrives.
 *
 * @inline
 */
export interface FinishedAttempt {
  /** The attempt's answer text, joined. */
  readonly text: string;
  /** The attempt's reasoning text, joined. */
  readonly reasoning: string;
  /** The attempt's whole tool calls, in arrival order. */
  readonly calls: readonly ToolCallEvent[];
  /** The attempt's finish. */
  readonly finish: FinishEvent;
}

/**
 * What a check of {@link requireUsable} says of an unusable attempt: why, in a code and a line of text.
 *
 * @inline
 */
export interface UnusableVerdict {
  /** Which case it is: `refusal`, `empty`, `malformed-call`, `invalid-arguments`, or a code of your own. */
  code: UnusableCode;
  /** What the check found, for people and logs; it ends up in the reason of the reset. */
  reason: string;
}

/**
 * A check of your own: a verdict when the finished attempt is unusable, `undefined` when it is fine.
 *
 * @inline
 */
export type UsableCheck = (attempt: FinishedAttempt) => UnusableVerdict | undefined;

/**
 * Options of {@link requireUsable}: which of the ready-made checks run, and checks of your own.
 *
 * @inline
 */
export interface RequireUsableOptions {
  /** Reject a `content-filter` finish: the model refused, or the provider filtered its output. Default `true`. */
  refusal?: boolean;
  /**
   * Reject a `stop` (or `tool-calls`) finish with no tool call and no answer text (whitespace and reasoning alone
   * count as none). Default `true`.
   */
  empty?: boolean;
  /**
   * Reject a finish whose tool call the provider could not read: `error` with raw `MALFORMED_FUNCTION_CALL` (what
   * `geminiContent()` maps Gemini's finish to). Default `true`.
   */
  malformedCall?: boolean;
  /**
   * Checks each tool call of the attempt, in arrival order, against its tool's schema: a line of text saying what
   * is wrong, or `undefined` when the arguments are valid. A validator of your choice goes here (Ajv, Zod…); none
   * is bundled. Default: none.
   */
  validateArgs?: (call: ToolCallEvent) => string | undefined;
  /** Checks of your own, run after the ready-made ones, in order; the first verdict wins. */
  checks?: readonly UsableCheck[];
}

/**
 * Errors with a retryable {@link TurnError} (code `unusable`) in place of a `finish` whose attempt cannot be used: a
 * refusal, an empty answer, a tool call the provider could not read, arguments that fail the tool's schema.
 *
 * An attempt can end well on the wire and still be of no use. Place this after {@link requireFinish} (or
 * `attemptPipeline`), inside what {@link retryAsEvents} resubscribes to, and such an attempt is retried like a
 * failed connection: counted against the same `count` and `budget`, shown downstream as a `reset` whose reason
 * says why, and past the cap the turn errors with a `retries-exhausted` `TurnError` whose records hold each verdict.
 * Events pass through as they come; only the finish waits for the checks. The calls of an unusable attempt never
 * run: `bufferUntilFinish` (in `cleanTurn`) discards held calls on the error.
 *
 * By default the `refusal`, `empty` and `malformedCall` checks run; `validateArgs` and `checks` add yours. The
 * first check that finds a problem decides, in that order. On a tagged stream each attempt is checked on its
 * own, and a straggler of an older attempt is passed on but not counted. What a check throws errors the stream
 * with a `UsageError` (not retryable, what it threw as its `cause`): a bug of the check, which a new attempt would
 * only bill again.
 *
 * ```text
 * source:   -a-k-f-|
 *           requireUsable({ validateArgs })
 * result:   -a-k-#
 *
 * where
 *   a = text "Refunding everything. "
 *   k = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"everything"})
 *   f = finish tool-calls
 *   # = error: TurnError unusable (the attempt is unusable (invalid-arguments): tool call c1 (issue_refund): amount must be "full" or "partial")
 * ```
 *
 * Every case of `marbles/requireUsable.marbles.ts`, with pictures: `docs/operators/requireUsable.md`.
 *
 * State: the live attempt (an {@link AttemptTracker}), its text, reasoning and tool calls so far.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { cleanTurn, requireFinish, requireUsable, retryAsEvents } from 'cleanturn';
 *
 * // With Ajv: `const validate = ajv.compile(schema)`, then
 * // `return validate(call.args) ? undefined : ajv.errorsText(validate.errors)`.
 * const validateArgs = (call: { name: string; args: unknown }) => {
 *   if (call.name !== 'issue_refund') return undefined;
 *   try {
 *     RefundArgs.parse(call.args);
 *     return undefined;
 *   } catch (error) {
 *     return String(error);
 *   }
 * };
 *
 * const turn$ = defer(() => streamFromProvider()).pipe(
 *   requireFinish(),
 *   requireUsable({ validateArgs }),
 *   retryAsEvents({ count: 2 }),
 *   cleanTurn({ turnId: 'turn-42' }),
 * );
 * ```
 *
 * @see {@link retryAsEvents}, which retries the error this raises; {@link requireFinish}, its twin for a stream
 *   that ends without a finish.
 * @param options Which ready-made checks run (`refusal`, `empty`, `malformedCall`: on by default), a validator
 *   of tool arguments, and checks of your own.
 * @returns An operator that passes events through and turns the finish of an unusable attempt into an error.
 * @throws UsageError when an option has the wrong type.
 */
export function requireUsable<E extends WholeCallEvents<E, 'requireUsable()'>>(
  options: RequireUsableOptions = {},
): OperatorFunction<E, E> {
  const checks = checksOf(options);
  return stageOperator((out: Sink<E>) => new RequireUsableStage<E>(out, checks));
}

/** A check, and the option it came from (named when it returns what it must not). */
interface NamedCheck {
  option: string;
  run: UsableCheck;
}

/** The stage of {@link requireUsable}. */
class RequireUsableStage<E extends { type: string }> extends Stage<E, E> {
  /** The live attempt and whether it has finished. */
  private readonly attempts = new AttemptTracker();
  /** Whether the events carry attempt numbers (the error then names the attempt). */
  private tagged = false;
  /** The live attempt's answer text so far. */
  private text = '';
  /** The live attempt's reasoning text so far. */
  private reasoning = '';
  /** The live attempt's tool calls so far. */
  private calls: ToolCallEvent[] = [];

  constructor(
    out: Sink<E>,
    private readonly checks: readonly NamedCheck[],
  ) {
    super(out);
  }

  next(event: E): void {
    const step = this.attempts.step(event);
    if (typeof (event as { attempt?: unknown }).attempt === 'number') this.tagged = true;
    if (step === 'newer') this.clear();
    if (step !== 'stale') {
      if (event.type === 'finish') {
        const verdict = this.verdict(event as unknown as FinishEvent);
        this.clear();
        if (verdict !== undefined) {
          const attempt = this.tagged ? this.attempts.attempt : undefined;
          this.out.error(unusableAttemptError(verdict.code, verdict.reason, attempt));
          return;
        }
      } else this.collect(event);
    }
    this.out.next(event);
  }

  /** Keeps what the checks read at the finish: the live attempt's text, reasoning and calls. */
  private collect(event: E): void {
    const { type } = event;
    if (type === 'tool-call') this.calls.push(event as unknown as ToolCallEvent);
    else if (type === 'text' || type === 'reasoning') {
      const { text } = event as unknown as { text: string };
      if (type === 'text') this.text += text;
      else this.reasoning += text;
    }
  }

  /** The first verdict of the checks on the attempt that ends with `finish`; a check that throws is a UsageError. */
  private verdict(finish: FinishEvent): UnusableVerdict | undefined {
    const attempt: FinishedAttempt = {
      text: this.text,
      reasoning: this.reasoning,
      calls: this.calls,
      finish,
    };
    for (const check of this.checks) {
      let verdict: UnusableVerdict | undefined;
      try {
        verdict = check.run(attempt);
      } catch (thrown) {
        // A check that throws is a bug of the check, not an unusable answer: a retry would only bill it again.
        if (thrown instanceof UsageError) throw thrown;
        throw new UsageError(
          'requireUsable',
          check.option,
          `threw: ${oneLine(describeError(thrown), 200)}`,
          thrown,
        );
      }
      if (verdict === undefined) continue;
      if (
        typeof verdict !== 'object' ||
        verdict === null ||
        typeof verdict.code !== 'string' ||
        typeof verdict.reason !== 'string'
      )
        throw new UsageError(
          'requireUsable',
          check.option,
          `must return undefined or { code, reason } (two strings), not ${describeValue(verdict)}`,
        );
      return verdict;
    }
    return undefined;
  }

  protected override clear(): void {
    this.text = '';
    this.reasoning = '';
    this.calls = [];
  }
}

/** The options of {@link requireUsable}, for the check of misspelt ones. */
const OPTION_KEYS: readonly string[] = ['refusal', 'empty', 'malformedCall', 'validateArgs', 'checks'];

/** The checks the options ask for, in order; a `UsageError` for an option of the wrong type or name. */
function checksOf(options: RequireUsableOptions): NamedCheck[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw usage('options', 'must be an object of checks', options);
  for (const key of Object.keys(options))
    if (!OPTION_KEYS.includes(key))
      throw new UsageError(
        'requireUsable',
        'options',
        `has no ${JSON.stringify(key)}: its options are ${OPTION_KEYS.join(', ')}`,
      );
  const { refusal = true, empty = true, malformedCall = true, validateArgs, checks = [] } = options;
  for (const [option, value] of [
    ['refusal', refusal],
    ['empty', empty],
    ['malformedCall', malformedCall],
  ] as const)
    if (typeof value !== 'boolean') throw usage(option, 'must be a boolean', value);
  if (validateArgs !== undefined && typeof validateArgs !== 'function')
    throw usage('validateArgs', 'must be a function of a tool call', validateArgs);
  if (!Array.isArray(checks)) throw usage('checks', 'must be an array of check functions', checks);
  const named: NamedCheck[] = [];
  if (refusal) named.push({ option: 'refusal', run: refused });
  if (malformedCall) named.push({ option: 'malformedCall', run: malformed });
  if (empty) named.push({ option: 'empty', run: emptyAnswer });
  if (validateArgs !== undefined) named.push({ option: 'validateArgs', run: invalidArguments(validateArgs) });
  checks.forEach((check: unknown, i) => {
    if (typeof check !== 'function') throw usage(`checks[${i}]`, 'must be a function', check);
    named.push({ option: `checks[${i}]`, run: check as UsableCheck });
  });
  return named;
}

/** The `refusal` check: a `content-filter` finish. */
function refused({ finish }: FinishedAttempt): UnusableVerdict | undefined {
  if (finish.reason !== 'content-filter') return undefined;
  const { refusal, raw } = finish;
  if (typeof refusal === 'string' && refusal !== '')
    return { code: 'refusal', reason: `the model refused: ${preview(refusal)}` };
  const why = raw === undefined ? '' : ` (${raw})`;
  return { code: 'refusal', reason: `the model refused or its output was filtered${why}` };
}

/** The `malformedCall` check: a finish that says the provider could not read the model's call. */
function malformed({ finish }: FinishedAttempt): UnusableVerdict | undefined {
  if (finish.reason !== 'error' || finish.raw !== 'MALFORMED_FUNCTION_CALL') return undefined;
  return {
    code: 'malformed-call',
    reason: 'the provider could not read the tool call the model made (MALFORMED_FUNCTION_CALL)',
  };
}

/** The `empty` check: a normal finish with no call and no answer text. */
function emptyAnswer({ finish, text, reasoning, calls }: FinishedAttempt): UnusableVerdict | undefined {
  if (finish.reason !== 'stop' && finish.reason !== 'tool-calls') return undefined;
  if (calls.length > 0 || /\S/.test(text)) return undefined;
  const only = reasoning === '' ? '' : ' (only reasoning)';
  return { code: 'empty', reason: `the model finished with no answer text and no tool call${only}` };
}

/** The `validateArgs` check: the first call whose arguments the validator rejects. */
function invalidArguments(validate: (call: ToolCallEvent) => string | undefined): UsableCheck {
  return function invalidArgumentsCheck({ calls }) {
    for (const call of calls) {
      const problem: unknown = validate(call);
      if (problem === undefined) continue;
      if (typeof problem !== 'string')
        throw new UsageError(
          'requireUsable',
          'validateArgs',
          `must return a string or undefined, not ${describeValue(problem)}`,
        );
      const what = problem === '' ? 'the arguments are invalid' : problem;
      return { code: 'invalid-arguments', reason: `tool call ${call.id} (${call.name}): ${what}` };
    }
    return undefined;
  };
}

/** The `UsageError` of a requireUsable option: what it must be, and what it was. */
function usage(option: string, rule: string, value: unknown): UsageError {
  return new UsageError('requireUsable', option, `${rule}, not ${describeValue(value)}`);
}
