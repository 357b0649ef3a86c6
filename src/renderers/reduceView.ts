import type { FinishReason, KeyedToolCall, ResetEvent, ToolResultLike } from 'cleanturn';
import { AttemptTracker } from '../AttemptTracker.js';
import { readRetryFacts } from '../internal/retryFacts.js';
import { type ToolResultDoubt, toolResultStatus } from '../toolResultStatus.js';
import type { PolicyEvent, RepeatedToolCall, RetryFacts } from '../types.js';
import { type ResetPresentation, resetPresentation } from './internal/options.js';

export type { ResetPresentation } from './internal/options.js';

/** What a view reads: the output of any policy ({@link PolicyEvent}, so `cleanTurn` too) and tool results. */
export type ViewEvent = PolicyEvent | RepeatedToolCall | ToolResultLike;

/**
 * Where a shown tool call is:
 * - `released`: the policy let it through; it runs now or waits for the executor;
 * - `repeat`: already done: an earlier call with the same effect key ran its effect (see `dedupeByEffectKey`),
 *   and the executor answers this one with the recorded result;
 * - `running`: the executor reports that it is running (in another process);
 * - `completed`: it ran, or its recorded result was replayed;
 * - `failed`: it did not happen (the tool failed, or no tool has its name).
 *
 * @inline
 */
export type ToolCallViewStatus = 'released' | 'repeat' | 'running' | 'completed' | 'failed';

/**
 * A tool call as a UI shows it. Never mutated: a change makes a new object.
 *
 * @inline
 */
export interface ToolCallView {
  /** The provider's call id. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The parsed arguments. */
  readonly args: unknown;
  /** The effect key, when the policy stamps one (`cleanTurn` does). */
  readonly effectKey: string | undefined;
  readonly status: ToolCallViewStatus;
  /** What the tool returned (`completed`) or why it failed (`failed`). */
  readonly output?: unknown;
  /**
   * Set when the call's effect may have happened twice (see `toolResultStatus`): show the result with a
   * warning, and check the effect before doing it again.
   */
  readonly inDoubt?: ToolResultDoubt;
}

/**
 * A message a UI shows beside the text: a retry is under way. It carries the facts of its reset that a person
 * reads (`RetryFacts`: how long the wait is, which retry of how many, the HTTP status and the error's
 * class), each one only when the reset had it; {@link retryMessage} says it in words: "retrying in 3 s (HTTP 503),
 * retry 1 of 2".
 *
 * @inline
 */
export interface RetryNotice
  extends Pick<RetryFacts, 'delay' | 'failedAttempt' | 'retryCount' | 'maxRetries' | 'errorName' | 'status'> {
  type: 'retrying';
  /** The attempt that starts (after `delay`, when the reset says how long the wait is). */
  attempt: number;
  /** Why the previous attempt was abandoned. */
  reason: string;
}

/**
 * What an abandoned attempt had shown, kept in view by `onReset: 'mark'`: a UI shows it struck through or faint,
 * labelled interrupted, apart from the live attempt's text.
 *
 * @inline
 */
export interface InterruptedAttempt {
  /** The abandoned attempt. */
  readonly attempt: number;
  /** Its text, as the user read it. */
  readonly text: string;
  /** Its reasoning, as the user read it. */
  readonly reasoning: string;
  /** Why it was abandoned: the reset's reason. */
  readonly reason: string;
}

/**
 * Options of {@link viewReducer} and {@link turnView}.
 *
 * @inline
 */
export interface ViewOptions {
  /**
   * What a reset does with what the abandoned attempt showed (`ResetPresentation`):
   * - `'rollback'` (the default): its text and reasoning disappear at the reset;
   * - `'mark'`: they move to {@link TurnView.interrupted}, never into `text`, until the new attempt's first text
   *   or reasoning (or its finish) replaces them.
   *
   * Either way `text` and `reasoning` are the live attempt's only, and the reset's notice shows during the wait.
   */
  onReset?: ResetPresentation;
}

/**
 * A message a UI shows beside the text: the connection was cut, and the same answer goes on (the text stays).
 *
 * @inline
 */
export interface ResumeNotice {
  type: 'resuming';
  /** The live attempt, which goes on. */
  attempt: number;
  /** Why the connection was cut. */
  reason: string;
}

/**
 * What a user should see now, as {@link reduceView} computes it. Never mutated: every change makes a new
 * snapshot that shares what did not change (the text string, the tool call array).
 */
export interface TurnView {
  /** The live attempt. */
  readonly attempt: number;
  /** The live attempt's text only: an abandoned attempt's text is never part of it. */
  readonly text: string;
  /**
   * The live attempt's reasoning (the model's thinking, `reasoning` events): shown apart from the answer, or
   * folded away; an abandoned attempt's reasoning is never part of it.
   */
  readonly reasoning: string;
  /** The live attempt's released tool calls, in order. */
  readonly toolCalls: readonly ToolCallView[];
  /** Whether the live attempt has finished. */
  readonly finished: boolean;
  /** The live attempt's finish reason, once it finished. */
  readonly finishReason: FinishReason | undefined;
  /** The model's refusal message, when the live attempt finished refusing: shown apart from the answer. */
  readonly refusal: string | undefined;
  /** Every reset so far, oldest first: `resets.length` is the number of retries the user sat through. */
  readonly resets: readonly ResetEvent[];
  /**
   * Set by a reset until the new attempt shows something (text, reasoning, a call) or finishes: "retrying in 3 s",
   * with the reset's facts; set by a `resume` until the answer goes on: "reconnecting…", with the text kept.
   */
  readonly notice: RetryNotice | ResumeNotice | undefined;
  /**
   * With `onReset: 'mark'`: what the abandoned attempt had shown, from its reset until the new attempt's first
   * text or reasoning (or its finish). Always `undefined` with the default `'rollback'`.
   */
  readonly interrupted: InterruptedAttempt | undefined;
}

/** The empty tool call list, shared by every view without calls. */
const noCalls: readonly ToolCallView[] = Object.freeze([]);

/** The view before the first event: attempt 1, nothing to show. */
export const initialView: TurnView = Object.freeze({
  attempt: 1,
  text: '',
  reasoning: '',
  toolCalls: noCalls,
  finished: false,
  finishReason: undefined,
  refusal: undefined,
  resets: Object.freeze([]),
  notice: undefined,
  interrupted: undefined,
});

/**
 * The view reducer: what a user should see after `event`, given what they saw before.
 *
 * Pure: it returns a new snapshot when `event` changes what is shown, and `view` itself when it does not
 * (usage, call fragments, stragglers of abandoned attempts, anything after a finish, results of calls that
 * are not shown or of abandoned attempts: the rules of `AttemptTracker`). A `reset`
 * drops the abandoned attempt's text, reasoning and calls and sets a "retrying" {@link TurnView.notice} with the
 * reset's facts (the wait, the retry count), which the new attempt's first text, reasoning or call clears. The
 * reducer of {@link viewReducer} with `onReset: 'mark'` moves the abandoned text and reasoning to
 * {@link TurnView.interrupted} instead. Text is appended to an immutable string and the call list is shared
 * until a call changes, so a text token costs one small object.
 *
 * State changes, event by event:
 * - `text` of the live attempt: `text` grows; the notice clears, and so does `interrupted`;
 * - `reasoning` of the live attempt: `reasoning` grows; the notice clears, and so does `interrupted`;
 * - `tool-call` of the live attempt: a `released` call is appended (a `tool-call-repeat`: a `repeat`); the
 *   notice clears;
 * - `finish`: `finished`, `finishReason` and `refusal`; the notice and `interrupted` clear;
 * - `reset` to a newer attempt (or any event of a newer attempt): text and calls start over, the reset is
 *   recorded in `resets` and shown as the notice (with its facts); with `onReset: 'mark'` the abandoned text and
 *   reasoning become `interrupted` (an attempt that showed neither leaves the earlier `interrupted` as it was);
 * - `resume` of the live attempt: text and calls stay; a "resuming" notice shows until the answer goes on;
 * - `tool-result` of a shown call: its status becomes `completed`, `running` or `failed`.
 *
 * ## Example
 * ```ts
 * import { initialView, reduceView, retryMessage } from 'cleanturn/renderers';
 *
 * let view = initialView;
 * socket.onmessage = (message) => {
 *   view = reduceView(view, JSON.parse(message.data)); // the clean turn, sent event by event
 *   bubble.textContent = view.text;
 *   banner.textContent = view.notice?.type === 'retrying' ? retryMessage(view.notice) : '';
 * };
 * ```
 *
 * @see {@link turnView}, the same reducer as an operator.
 * @param view What the user saw before `event`.
 * @see {@link viewReducer} for the same reducer with options (`onReset: 'mark'`).
 * @param event The next event of the turn, or a tool result.
 * @returns The view after `event`: `view` itself when nothing changed.
 */
export function reduceView(view: TurnView, event: ViewEvent): TurnView {
  return reduceWith(view, event, 'rollback');
}

/**
 * The view reducer with options: {@link reduceView}, or with `onReset: 'mark'` a reducer that keeps what an
 * abandoned attempt showed in {@link TurnView.interrupted} instead of dropping it at the reset. It takes two
 * arguments, as `Array.prototype.reduce` and a framework's `useReducer` call it.
 *
 * ## Example
 * ```ts
 * import { initialView, retryMessage, viewReducer } from 'cleanturn/renderers';
 *
 * const reduce = viewReducer({ onReset: 'mark' });
 * let view = initialView;
 * socket.onmessage = (message) => {
 *   view = reduce(view, JSON.parse(message.data));
 *   bubble.textContent = view.text;
 *   interrupted.textContent = view.interrupted?.text ?? ''; // struck through by its stylesheet
 *   banner.textContent = view.notice?.type === 'retrying' ? retryMessage(view.notice) : '';
 * };
 * ```
 *
 * @param options `onReset`: `'rollback'` (the default) or `'mark'`.
 * @returns A reducer from a view and an event to the next view.
 * @throws UsageError when `options` is not an object or `onReset` is neither `'rollback'` nor `'mark'`.
 */
export function viewReducer(options?: ViewOptions): (view: TurnView, event: ViewEvent) => TurnView {
  const onReset = resetPresentation('viewReducer', options);
  if (onReset === 'rollback') return reduceView;
  return function reduceMarkedView(view: TurnView, event: ViewEvent): TurnView {
    return reduceWith(view, event, onReset);
  };
}

/** {@link reduceView} with the presentation of a reset chosen. */
function reduceWith(view: TurnView, event: ViewEvent, onReset: ResetPresentation): TurnView {
  const attempts = new AttemptTracker(view.attempt, view.finished);
  if (event.type === 'tool-result')
    return attempts.isLive(event.call.attempt) ? withResult(view, event) : view;
  const step = attempts.step(event);
  if (step === 'stale') return view;
  // An event of a newer attempt without a reset before it (a stream that skipped resetOnRetry) still starts over.
  const live =
    step === 'newer'
      ? startAttempt(
          view,
          event.type === 'reset' ? event : { type: 'reset', attempt: event.attempt, reason: 'retry' },
          onReset,
        )
      : view;
  switch (event.type) {
    case 'text':
      return event.text === ''
        ? live
        : { ...live, text: live.text + event.text, notice: undefined, interrupted: undefined };
    case 'reasoning':
      return event.text === ''
        ? live
        : { ...live, reasoning: live.reasoning + event.text, notice: undefined, interrupted: undefined };
    case 'tool-call':
    case 'tool-call-repeat': {
      const keyed = event as Partial<Pick<KeyedToolCall, 'effectKey'>>;
      const call: ToolCallView = {
        id: event.id,
        name: event.name,
        args: event.args,
        effectKey: typeof keyed.effectKey === 'string' ? keyed.effectKey : undefined,
        status: event.type === 'tool-call-repeat' ? 'repeat' : 'released',
      };
      return { ...live, toolCalls: [...live.toolCalls, call], notice: undefined };
    }
    case 'finish':
      return {
        ...live,
        finished: true,
        finishReason: event.reason,
        refusal: typeof event.refusal === 'string' ? event.refusal : undefined,
        notice: undefined,
        interrupted: undefined,
      };
    case 'resume':
      return { ...live, notice: { type: 'resuming', attempt: live.attempt, reason: event.reason } };
    default:
      return live;
  }
}

/** The view at the start of the attempt `reset` starts; `mark` keeps what the abandoned attempt showed apart. */
function startAttempt(view: TurnView, reset: ResetEvent, onReset: ResetPresentation): TurnView {
  const shown = view.text !== '' || view.reasoning !== '';
  const interrupted: InterruptedAttempt | undefined =
    onReset === 'rollback'
      ? undefined
      : shown
        ? { attempt: view.attempt, text: view.text, reasoning: view.reasoning, reason: reset.reason }
        : // An attempt that showed nothing leaves on screen what the user last read.
          view.interrupted;
  // A new attempt shows what the first view shows, but for the resets, the notice and what stays marked.
  return {
    ...initialView,
    attempt: reset.attempt,
    resets: [...view.resets, reset],
    notice: retryNotice(reset),
    interrupted,
  };
}

/** The "retrying" notice of `reset`, with each of its facts that has its type (all but `outputStarted`). */
function retryNotice(reset: ResetEvent): RetryNotice {
  const { outputStarted: _, ...facts } = readRetryFacts(reset);
  return { type: 'retrying', attempt: reset.attempt, reason: reset.reason, ...facts };
}

/** The view with a shown call's status updated from its result. */
function withResult(view: TurnView, result: ToolResultLike): TurnView {
  const index = view.toolCalls.findIndex((c) => c.id === result.call.id);
  const shown = view.toolCalls[index];
  if (shown === undefined) return view;
  const { status, inDoubt } = toolResultStatus(result);
  const output = status === 'completed' ? result.result : status === 'failed' ? result.error : undefined;
  const updated: ToolCallView = {
    ...shown,
    status,
    ...(status === 'running' ? {} : { output }),
    ...(inDoubt === undefined ? {} : { inDoubt }),
  };
  const toolCalls = view.toolCalls.slice();
  toolCalls[index] = updated;
  return { ...view, toolCalls };
}
