import {
  concat,
  connect,
  defer,
  EMPTY,
  filter,
  identity,
  ignoreElements,
  type MonoTypeOperatorFunction,
  map,
  merge,
  type Observable,
  of,
  takeLast,
  tap,
} from 'rxjs';
import { accumulateTurn, type TurnState } from './accumulateTurn.js';
import { UsageError } from './errors.js';
import { describeValue } from './internal/describeValue.js';
import { type NextStep, nextStep } from './nextStep.js';
import type { ResetEvent, ResumeFrom, ToolResultLike, TurnEvent } from './types.js';

/**
 * What a step of a run ended with: the final turn state, the results of its calls, and what it asks next.
 *
 * @inline
 */
export interface StepOutcome {
  /** The step (1 for the first). */
  readonly step: number;
  /** The turn's final state (`accumulateTurn`'s last snapshot); `undefined` for a turn that emitted nothing. */
  readonly turn: TurnState | undefined;
  /** The executor's results of the step's released calls, in the order they came. */
  readonly results: readonly ToolResultLike[];
  /** What the final attempt's finish asks of the loop ({@link nextStep}): `answer`, `continue`, `done`, `failed`. */
  readonly next: NextStep;
}

/** What a step's functions are told: the run, the step, and how the step before it ended. */
export interface StepContext {
  /** The run's id, as given: the turn id of every step, and so the scope of every effect key of the run. */
  readonly runId: string;
  /** The step to run (1 for the first): pass it to `streamTurn({ step })` or `cleanTurn({ step })`. */
  readonly step: number;
  /** The step before this one; `undefined` for the first. Build the next request from it. */
  readonly previous: StepOutcome | undefined;
  /**
   * Every step before this one, in order (`previous` is the last): build the whole conversation from it when the
   * run may go on in another process (a run resumed from its log, `resume`, has no earlier calls of `turn`).
   */
  readonly history: readonly StepOutcome[];
  /**
   * Set when the step goes on after a lost runner whose attempt was reading a background response (its `resumable`
   * event is in `resume`): pass it as `streamTurn({ resumeFrom })`, and the same generation goes on, read again from
   * its start, without a reset and without a second generation. The events the lost runner delivered are not
   * emitted again; the turn state and the executor see the whole attempt.
   */
  readonly resumeFrom?: ResumeFrom;
}

/**
 * Why a run ended, on its last `step-end` event.
 *
 * @inline
 */
export type RunEnd =
  /** The final attempt's finish needs no answer (`nextStep`: `done`). */
  | 'done'
  /** The turn failed as a finish says it did, or never finished (`nextStep`: `failed`). */
  | 'failed'
  /** The step asked for another (`answer`, `continue`), but `maxSteps` steps have run. */
  | 'max-steps'
  /** The `until` predicate said so. */
  | 'until';

/**
 * The event a run emits after each step, when the step's turn and its executor have both completed.
 *
 * @inline
 */
export interface StepEndEvent extends StepOutcome {
  type: 'step-end';
  /** On the run's last step only: why the run ends there. */
  readonly end?: RunEnd;
}

/**
 * An event of a step's turn or executor, with the step it belongs to.
 *
 * @inline
 */
export type Stepped<E> = E & { readonly step: number };

/** What a run emits: each step's turn events and tool results, stamped with their step, and a `step-end` per step. */
export type RunEvent = Stepped<TurnEvent | ToolResultLike> | StepEndEvent;

/**
 * Options of {@link runSteps}.
 *
 * @inline
 */
export interface RunStepsOptions {
  /** The run's id, stable across restarts: every step's turn id, and so the scope of its effect keys. */
  runId: string;
  /**
   * Starts a step's turn: the clean turn events (`streamTurn`, or a provider stream through `cleanTurn`), with
   * `context.step` in its effect keys and the next request built from `context.previous` (its turn and results,
   * through the builder of the provider's format). Called once per step, when the step before it has ended.
   */
  turn: (context: StepContext) => Observable<TurnEvent>;
  /**
   * Runs the step's released calls, e.g. `(turn$) => turn$.pipe(executeTools(handlers, { turnId: runId, ledger }))`.
   * It reads the same events as the run emits (one subscription to the turn). Default: no calls run, and a step
   * that asks for answers gets none.
   */
  execute?: (turn: Observable<TurnEvent>, context: StepContext) => Observable<ToolResultLike>;
  /** The most steps the run takes. Default 10. */
  maxSteps?: number;
  /** Ends the run after a step that asked for another, when it returns `true` (a user's stop, a budget). */
  until?: (outcome: StepOutcome) => boolean;
  /**
   * The events this run already emitted, when it goes on after its runner was lost (`turnServer`'s
   * `context.takeover.events`): the finished steps are not run again (their `step-end` events give `history`), and
   * the run goes on at the step in progress. When that step had emitted events, its cut attempt is void: the run
   * first emits a `reset` to the next attempt, with `errorName: 'TransportError'`, and numbers the new turn's
   * attempts after the cut one. Calls the lost runner released come again in the new attempt, under the same
   * effect keys: an executor on a durable ledger answers them from it instead of running them again. When the cut
   * attempt was reading a background response (a `resumable` event), the step goes on with it instead
   * (`StepContext.resumeFrom`): no reset, the same attempt number, and nothing the lost runner emitted is emitted
   * again (its results neither).
   */
  resume?: readonly RunEvent[];
}

/**
 * Runs a loop of turns: a turn, the executor on its released calls, then the next turn with the next request, until
 * a finish that needs no answer, `maxSteps`, or `until`.
 *
 * Each step is numbered by the run, never by the model, and the number enters every effect key of the step
 * (DESIGN rule 4): `turn` passes `context.step` to `streamTurn({ step })` (or `cleanTurn({ step })`), so that the
 * same refund retried inside step 1 is one effect, and the same refund asked for again in step 3 is a second one.
 * All steps share the run's id as their turn id, so one ledger scope holds the run's effects, and a run restarted
 * from step 1 answers a finished step's calls from the ledger instead of running them again.
 *
 * A step's turn is subscribed to once: its events go out stamped with `step`, and the same events feed the
 * executor and the turn state. When both complete, a `step-end` event says how the step ended (`StepOutcome`)
 * and, on the last step, why the run ends (`end`); the next step starts after it. What the turn or the executor
 * errors with ends the run with that error; so does what `turn`, `execute` or `until` throws. Unsubscribing stops
 * the live step (its request is aborted by `streamTurn`).
 *
 * ```text
 * source 1: -a-k-----f---|
 * source 2: -b-g-|
 *           runSteps({ runId: 'run-7', turn, execute })
 * result:   -A-(KR)--F---SB-G-(T|)
 *
 * where
 *   a = text "Checking order ORD-7781. ", attempt 1
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1, key fb6c1f20872d5ecd
 *   f = finish tool-calls, attempt 1
 *   b = text "Refund started.", attempt 1
 *   g = finish stop, attempt 1
 *   A = text "Checking order ORD-7781. ", attempt 1, step 1
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1, key fb6c1f20872d5ecd, step 1
 *   R = tool-result executed c7 issue_refund → {"refund_id":"R-1"}, key fb6c1f20872d5ecd, step 1
 *   F = finish tool-calls, attempt 1, step 1
 *   S = step-end 1: next answer, 1 result(s)
 *   B = text "Refund started.", attempt 1, step 2
 *   G = finish stop, attempt 1, step 2
 *   T = step-end 2: next done, 0 result(s), run ends (done)
 * ```
 *
 * Every case of `marbles/runSteps.marbles.ts`, with pictures: `docs/operators/runSteps.md`.
 *
 * ## Example
 * ```ts
 * import { runSteps } from 'cleanturn';
 * import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
 * import { openaiChat, toOpenAIChatMessages } from 'cleanturn/providers';
 * import { streamTurn } from 'cleanturn/transport';
 *
 * const conversation: unknown[] = [{ role: 'user', content: 'Please refund order ORD-7781.' }];
 * const ledger = new MemoryEffectLedger();
 * const handlers = { issue_refund: async () => ({ refund_id: 'R-1' }) };
 *
 * runSteps({
 *   runId: 'run-7',
 *   turn: ({ runId, step, previous }) => {
 *     // The next request: the step before as the provider sent it, and one answer per call id.
 *     if (previous?.turn) conversation.push(...toOpenAIChatMessages(previous.turn, previous.results));
 *     const body = JSON.stringify({ model: 'gpt-4.1', messages: conversation, stream: true });
 *     return streamTurn({
 *       turnId: runId,
 *       step, // in every effect key of the step
 *       adapter: openaiChat(),
 *       request: ({ signal }) => ({
 *         url: 'https://api.openai.com/v1/chat/completions',
 *         init: { method: 'POST', body, signal },
 *       }),
 *     });
 *   },
 *   execute: (turn$, { runId }) => turn$.pipe(executeTools(handlers, { turnId: runId, ledger })),
 * }).subscribe((event) => {
 *   if (event.type === 'text') render(event.step, event.text);
 *   if (event.type === 'step-end' && event.end !== undefined) render(`run ended: ${event.end}`);
 * });
 * ```
 *
 * @param options `runId`, `turn`, and optionally `execute`, `maxSteps` and `until`.
 * @returns The run's events: each step's events and results with their step, and a `step-end` after each step.
 * @throws UsageError when an option has the wrong type.
 */
export function runSteps(options: RunStepsOptions): Observable<RunEvent> {
  checkRunOptions(options);
  return defer(() => {
    if (options.resume === undefined) return runStep(options, []);
    const { history, ended, cut } = resumePoint(options.resume);
    return ended ? EMPTY : runStep(options, history, cut);
  });
}

/** Checks runSteps' options: a wrong one is a `UsageError` at once, before any step. */
function checkRunOptions(options: RunStepsOptions): void {
  if (typeof options !== 'object' || options === null)
    throw new UsageError('runSteps', 'options', `must be an object, not ${describeValue(options)}`);
  const { runId, turn, execute, maxSteps = 10, until } = options;
  if (typeof runId !== 'string' || runId === '')
    throw new UsageError('runSteps', 'runId', `must be a non-empty string, not ${describeValue(runId)}`);
  if (typeof turn !== 'function')
    throw new UsageError('runSteps', 'turn', `must be a function, not ${describeValue(turn)}`);
  for (const [name, value] of [
    ['execute', execute],
    ['until', until],
  ] as const)
    if (value !== undefined && typeof value !== 'function')
      throw new UsageError('runSteps', name, `must be a function, not ${describeValue(value)}`);
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1)
    throw new UsageError('runSteps', 'maxSteps', `must be an integer >= 1, not ${describeValue(maxSteps)}`);

  if (options.resume !== undefined && !Array.isArray(options.resume))
    throw new UsageError(
      'runSteps',
      'resume',
      `must be an array of run events, not ${describeValue(options.resume)}`,
    );
}

/**
 * Step `history.length + 1` and the steps after it: its turn, subscribed to once, feeds the run's output, the turn
 * state and the executor; when all end, a `step-end` says how, and the next step starts unless the run ends there.
 */
function runStep(
  options: RunStepsOptions,
  history: readonly StepOutcome[],
  cut?: CutStep,
): Observable<RunEvent> {
  const { runId, turn, execute, maxSteps = 10, until } = options;
  return defer(() => {
    const step = history.length + 1;
    const base: StepContext = { runId, step, previous: history[history.length - 1], history };
    const resuming = cut?.kind === 'resume' ? cut : undefined;
    const context: StepContext = resuming === undefined ? base : { ...base, resumeFrom: resuming.resumeFrom };
    let state: TurnState | undefined;
    const results: ToolResultLike[] = [];
    const started = turn(context);
    const turnEvents =
      cut === undefined
        ? started
        : cut.kind === 'resume'
          ? started.pipe(map(cut.renumber))
          : concat(of(cut.reset), started.pipe(map(cut.renumber)));
    const events = turnEvents.pipe(
      connect((shared) =>
        merge(
          resuming === undefined
            ? shared
            : shared.pipe(dropDelivered(resuming.resumeFrom.delivered.length, resuming.attempt)),
          // The step's state, from the same events.
          shared.pipe(
            accumulateTurn(),
            takeLast(1),
            tap((last) => {
              state = last as TurnState;
            }),
            ignoreElements(),
          ),
          execute === undefined
            ? EMPTY
            : execute(shared, context).pipe(
                tap((result) => results.push(result)),
                resuming === undefined
                  ? identity
                  : filter((result) => !resuming.logged.has(resultKey(result))),
              ),
        ),
      ),
      map((event): RunEvent => Object.assign({}, event, { step })),
    );
    return concat(
      events,
      defer(() => {
        const outcome: StepOutcome = { step, turn: state, results, next: nextStep(state?.finish) };
        const end = runEnd(outcome, maxSteps, until);
        const stepEnd: StepEndEvent =
          end === undefined ? { type: 'step-end', ...outcome } : { type: 'step-end', ...outcome, end };
        return end === undefined ? concat(of(stepEnd), runStep(options, [...history, outcome])) : of(stepEnd);
      }),
    );
  });
}

/**
 * How a step cut by a lost runner goes on: a reset first and the new turn's attempts after the cut one (`restart`),
 * or, for an attempt that was reading a background response, that response again under the cut attempt's number,
 * with what the lost runner emitted (its events, its results) not emitted again (`resume`).
 */
type CutStep =
  | {
      readonly kind: 'restart';
      readonly reset: ResetEvent;
      readonly renumber: (event: TurnEvent) => TurnEvent;
    }
  | {
      readonly kind: 'resume';
      readonly renumber: (event: TurnEvent) => TurnEvent;
      readonly resumeFrom: ResumeFrom;
      /** The cut attempt's number. */
      readonly attempt: number;
      /** The results the lost runner emitted (`resultKey`). */
      readonly logged: ReadonlySet<string>;
    };

/**
 * Where a run goes on from the events it emitted: the finished steps (from their `step-end` events), whether the run
 * had ended, and, when the step in progress had emitted events, how it goes on.
 */
function resumePoint(events: readonly RunEvent[]): { history: StepOutcome[]; ended: boolean; cut?: CutStep } {
  const history: StepOutcome[] = [];
  let ended = false;
  let partial: RunEvent[] = [];
  for (const event of events) {
    if (event.type === 'step-end') {
      const { type: _, end, ...outcome } = event;
      history.push(outcome);
      ended ||= end !== undefined;
      partial = [];
    } else partial.push(event);
  }
  if (ended || partial.length === 0) return { history, ended };
  let attempt = 0;
  for (const event of partial)
    if ('attempt' in event && typeof event.attempt === 'number') attempt = Math.max(attempt, event.attempt);
  const resumable = partial.find((event) => event.type === 'resumable' && event.attempt === attempt);
  if (resumable !== undefined && resumable.type === 'resumable') {
    // The cut attempt's events, as the turn emitted them (without their step), but the reset that started it and
    // the resumes of its connection: what the response read again gives once more.
    const delivered = partial.flatMap((event): TurnEvent[] => {
      if (event.type === 'tool-result' || event.type === 'step-end') return [];
      if (event.type === 'reset' || event.type === 'resume') return [];
      if (event.attempt !== attempt) return [];
      const { step: _, ...turnEvent } = event;
      return [turnEvent as TurnEvent];
    });
    const logged = new Set(
      partial.flatMap((event) => (event.type === 'tool-result' ? [resultKey(event)] : [])),
    );
    const resumeFrom = { responseId: resumable.responseId, delivered };
    return {
      history,
      ended,
      cut: { kind: 'resume', renumber: renumberBy(attempt - 1), resumeFrom, attempt, logged },
    };
  }
  const offset = Math.max(attempt, 1);
  const reset: ResetEvent = {
    type: 'reset',
    attempt: offset + 1,
    reason: 'the runner was lost',
    errorName: 'TransportError',
    failedAttempt: offset,
    outputStarted: true,
  };
  return {
    history,
    ended,
    cut: { kind: 'restart', reset, renumber: renumberBy(offset) },
  };
}

/** Numbers a turn's attempts `offset` later, its resets' failed attempts too. */
function renumberBy(offset: number): (event: TurnEvent) => TurnEvent {
  return (event) => {
    if (offset === 0) return event;
    const moved = { ...event, attempt: event.attempt + offset };
    if (moved.type === 'reset' && moved.failedAttempt !== undefined) moved.failedAttempt += offset;
    return moved;
  };
}

/**
 * Drops the first `count` events of attempt `attempt` (the resumes of a connection aside, which are dropped while
 * the count lasts): what a lost runner emitted of a response that is read again. A reset, or an event of another
 * attempt, ends the dropping: everything after it is new.
 */
function dropDelivered(count: number, attempt: number): MonoTypeOperatorFunction<TurnEvent> {
  return (source) =>
    defer(() => {
      let left = count;
      return source.pipe(
        filter((event) => {
          if (left <= 0) return true;
          if (event.type === 'reset' || event.attempt !== attempt) {
            left = 0;
            return true;
          }
          if (event.type !== 'resume') left--;
          return false;
        }),
      );
    });
}

/** What names a result among a step's: its effect key and its call's id. */
function resultKey(result: ToolResultLike): string {
  return `${result.effectKey}\u0000${result.call.id}`;
}

/** Whether the run ends after `outcome`, and why; `undefined` when it takes another step. */
function runEnd(outcome: StepOutcome, maxSteps: number, until: RunStepsOptions['until']): RunEnd | undefined {
  if (outcome.next === 'done' || outcome.next === 'failed') return outcome.next;
  if (outcome.step >= maxSteps) return 'max-steps';
  if (until?.(outcome) === true) return 'until';
  return undefined;
}
