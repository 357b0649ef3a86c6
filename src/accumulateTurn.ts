import type { OperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { Attempted, FinishEvent, FinishReason, RepeatedToolCall, ToolCallEvent } from './types.js';

/** Token usage as the provider reported it. */
export interface Usage {
  /** Input tokens, those read from the provider's cache included. */
  inputTokens?: number;
  /** Output tokens, those spent on reasoning included. */
  outputTokens?: number;
  /** Of `inputTokens`, those read from the provider's prompt cache. */
  cachedInputTokens?: number;
  /** Of `outputTokens`, those spent on reasoning. */
  reasoningTokens?: number;
}

/**
 * What happened to one attempt:
 * - `streaming`: the live attempt, not finished yet;
 * - `completed`: it sent a `finish`;
 * - `failed`: it sent a `finish` with reason `error`;
 * - `abandoned`: a newer attempt replaced it.
 *
 * @inline
 */
export type AttemptOutcome = 'streaming' | 'completed' | 'failed' | 'abandoned';

/** The record of one attempt: what it cost and how it ended. */
export interface AttemptRecord {
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  /** Why it was abandoned (the reset's reason), when it was. */
  readonly reason?: string;
  /** Its finish reason, when it finished. */
  readonly finishReason?: FinishReason;
  /** Its usage, when the provider sent any; undefined means unknown, not zero. An abandoned attempt is billed too. */
  readonly usage?: Usage;
  /** Characters of text it streamed. */
  readonly textLength: number;
  /** Tool calls of it that reached this point of the pipeline (after buffering: the released ones). */
  readonly toolCalls: number;
  /**
   * How many times its connection was cut and resumed (`resume` events): the same generation went on, billed
   * once. Absent when it never was.
   */
  readonly resumes?: number;
}

/** A snapshot of the turn, as {@link accumulateTurn} emits it after every event. Never mutated. */
export interface TurnState<C = Attempted<ToolCallEvent> | RepeatedToolCall> {
  /** The live attempt. */
  readonly attempt: number;
  /** The live attempt's text only; an abandoned attempt's text is never part of it. */
  readonly text: string;
  /** The live attempt's reasoning text only (`reasoning` events); never part of `text`. */
  readonly reasoning: string;
  /**
   * The live attempt's tool calls that were released, in order, repeats (`tool-call-repeat`) included: the call
   * ids the next request must answer.
   */
  readonly toolCalls: readonly C[];
  /**
   * The live attempt's finish, once it arrived, with what the provider needs back in the next request
   * (`finish.output`, read by the next-request builders of `cleanturn/providers`).
   */
  readonly finish: Attempted<FinishEvent> | undefined;
  /**
   * The provider's id of the live attempt's response, once its finish carried one: what a next request chains
   * from (`previous_response_id`). An abandoned attempt's id is never here.
   */
  readonly responseId: string | undefined;
  /** The live attempt's usage, when the provider sent any. */
  readonly usage: Usage | undefined;
  /** One record per attempt, in order; the last one is the live attempt. */
  readonly attempts: readonly AttemptRecord[];
}

/** The tool-call events of an event type. */
type CallOf<E> = Extract<E, { type: 'tool-call' | 'tool-call-repeat' }>;

/**
 * Reduces the turn stream to the current turn state, emitting an immutable snapshot after every event.
 *
 * A `reset` (or `retry`, or any event of a newer attempt) starts a new live attempt: the text and released
 * calls start over and the previous attempt's record is closed as abandoned. A `resume` starts nothing: the
 * attempt's record counts it (`resumes`), and its text goes on. Events of older attempts, and
 * events of an attempt after its finish (usage excepted), are ignored: the rules of {@link AttemptTracker}. Every attempt keeps a record of its usage, text length and calls, so that a turn's full cost is
 * visible.
 *
 * ```text
 * source:   -a-u-x-b-k-f-|
 *           accumulateTurn()
 * result:   -S-T-U-V-W-Y-|
 *
 * where
 *   a = text "Refunding the dam", attempt 1
 *   u = usage in 88 / out 6, attempt 1
 *   x = reset to attempt 2 (connection reset)
 *   b = text "Refund started.", attempt 2
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   f = finish tool-calls, attempt 2
 *   S = state: attempt 1, text "Refunding the dam", 0 call(s), #1 streaming
 *   T = state: attempt 1, text "Refunding the dam", 0 call(s), #1 streaming
 *   U = state: attempt 2, text "", 0 call(s), #1 abandoned, #2 streaming
 *   V = state: attempt 2, text "Refund started.", 0 call(s), #1 abandoned, #2 streaming
 *   W = state: attempt 2, text "Refund started.", 1 call(s), #1 abandoned, #2 streaming
 *   Y = state: attempt 2, text "Refund started.", 1 call(s), #1 abandoned, #2 completed
 * ```
 *
 * Every case of `marbles/accumulateTurn.marbles.ts`, with pictures: `docs/operators/accumulateTurn.md`.
 *
 * State: the live attempt's text, calls, finish and usage, and the closed records of earlier attempts.
 *
 * ## Example
 * ```ts
 * import { last } from 'rxjs';
 * import { accumulateTurn, cleanTurn } from 'cleanturn';
 *
 * providerEvents$
 *   .pipe(cleanTurn({ turnId: 'turn-42' }), accumulateTurn(), last())
 *   .subscribe((turn) => {
 *     console.log(turn.text);
 *     for (const a of turn.attempts) console.log(a.attempt, a.outcome, a.usage ?? 'usage unknown');
 *   });
 * ```
 *
 * @see {@link cleanTurn}, whose output it is meant to read.
 * @returns An operator from turn events to turn snapshots.
 */
export function accumulateTurn<E extends { type: string; attempt: number }>(): OperatorFunction<
  E,
  TurnState<CallOf<E>>
> {
  return stageOperator((out: Sink<TurnState<CallOf<E>>>) => new AccumulateStage<E, CallOf<E>>(out));
}

/** The stage of {@link accumulateTurn}: the working state of one subscription, a snapshot out per event. */
class AccumulateStage<E extends { type: string; attempt: number }, C> extends Stage<E, TurnState<C>> {
  private readonly turn = new TurnAccumulator<C>();

  next(event: E): void {
    this.out.next(this.turn.add(event));
  }
}

/** An attempt record under construction (the fields of {@link AttemptRecord}, writable). */
type MutableRecord = { -readonly [K in keyof AttemptRecord]: AttemptRecord[K] };

/**
 * The mutable working state behind the snapshots.
 *
 * A snapshot costs three small allocations per event, never a copy of the state: the snapshot object, the
 * live attempt's record and the `attempts` array, whose closed records are shared by every snapshot (they never
 * change once closed). Text is appended to a string (V8 keeps appends as ropes: no copy either), and the calls
 * array is replaced, not copied, only when a call arrives.
 */
class TurnAccumulator<C> {
  /** Records of attempts that are over; an array is never changed once a snapshot holds it. */
  private closed: readonly AttemptRecord[] = [];
  /** The live attempt, and whether it finished. */
  private readonly attempts = new AttemptTracker();
  /** The live attempt's text. */
  private text = '';
  /** The live attempt's reasoning text. */
  private reasoning = '';
  /** The live attempt's released calls; replaced when one arrives. */
  private toolCalls: readonly C[] = [];
  /** The live attempt's finish. */
  private finish: Attempted<FinishEvent> | undefined = undefined;
  /** The live attempt's usage; replaced when a usage event arrives. */
  private usage: Usage | undefined = undefined;
  /** How many times the live attempt was resumed. */
  private resumes = 0;
  /** The last snapshot, returned again for stragglers. */
  private snapshot: TurnState<C> | undefined = undefined;

  add(event: { type: string; attempt: number }): TurnState<C> {
    const previous = this.attempts.attempt;
    const step = this.attempts.step(event);
    if (step === 'stale') return this.snapshot ?? this.snap();
    if (step === 'newer') {
      const reason =
        event.type === 'reset' || event.type === 'retry'
          ? (event as unknown as { reason?: string }).reason
          : undefined;
      this.startAttempt(previous, this.attempts.attempt, reason);
    }
    switch (event.type) {
      case 'text':
        this.text += (event as unknown as { text: string }).text;
        break;
      case 'reasoning':
        this.reasoning += (event as unknown as { text: string }).text;
        break;
      case 'tool-call':
      case 'tool-call-repeat':
        this.toolCalls = [...this.toolCalls, event as C];
        break;
      case 'usage': {
        const { inputTokens, outputTokens, cachedInputTokens, reasoningTokens } = event as unknown as Usage;
        const usage: Usage = { ...this.usage };
        if (inputTokens !== undefined) usage.inputTokens = inputTokens;
        if (outputTokens !== undefined) usage.outputTokens = outputTokens;
        if (cachedInputTokens !== undefined) usage.cachedInputTokens = cachedInputTokens;
        if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens;
        this.usage = usage;
        break;
      }
      case 'finish':
        this.finish = event as unknown as Attempted<FinishEvent>;
        break;
      case 'resume':
        this.resumes++;
        break;
    }
    return this.snap();
  }

  private startAttempt(previous: number, attempt: number, reason: string | undefined): void {
    // The reason says why the attempt just before `attempt` ended; with a gap, that is the last skipped one.
    const skipped = attempt - previous > 1;
    const closed = [...this.closed, this.record(previous, 'abandoned', skipped ? undefined : reason)];
    for (let gap = previous + 1; gap < attempt; gap++) {
      const record: MutableRecord = { attempt: gap, outcome: 'abandoned', textLength: 0, toolCalls: 0 };
      if (gap === attempt - 1 && reason !== undefined) record.reason = reason;
      closed.push(record);
    }
    this.closed = closed;
    this.text = '';
    this.reasoning = '';
    this.toolCalls = [];
    this.finish = undefined;
    this.usage = undefined;
    this.resumes = 0;
  }

  private record(attempt: number, endedAs: 'abandoned' | 'live', reason?: string): AttemptRecord {
    const outcome: AttemptOutcome =
      endedAs === 'abandoned'
        ? 'abandoned'
        : this.finish === undefined
          ? 'streaming'
          : this.finish.reason === 'error'
            ? 'failed'
            : 'completed';
    const record: MutableRecord = {
      attempt,
      outcome,
      textLength: this.text.length,
      toolCalls: this.toolCalls.length,
    };
    if (reason !== undefined) record.reason = reason;
    if (this.finish !== undefined) record.finishReason = this.finish.reason;
    if (this.usage !== undefined) record.usage = this.usage;
    if (this.resumes > 0) record.resumes = this.resumes;
    return record;
  }

  /** The live attempt's record; the common cases are single object literals (one shape each, no added keys). */
  private liveRecord(): AttemptRecord {
    const { attempt } = this.attempts;
    if (this.finish !== undefined || this.resumes > 0) return this.record(attempt, 'live');
    const { usage } = this;
    const textLength = this.text.length;
    const toolCalls = this.toolCalls.length;
    return usage === undefined
      ? { attempt, outcome: 'streaming', textLength, toolCalls }
      : { attempt, outcome: 'streaming', textLength, toolCalls, usage };
  }

  private snap(): TurnState<C> {
    const live = this.liveRecord();
    const { closed } = this;
    // Literals for the usual one or two attempts: the cheapest arrays to make.
    let attempts: AttemptRecord[];
    if (closed.length === 0) attempts = [live];
    else if (closed.length === 1) attempts = [closed[0] as AttemptRecord, live];
    else {
      attempts = closed.slice();
      attempts.push(live);
    }
    this.snapshot = {
      attempt: this.attempts.attempt,
      text: this.text,
      reasoning: this.reasoning,
      toolCalls: this.toolCalls,
      finish: this.finish,
      responseId: this.finish?.responseId,
      usage: this.usage,
      attempts,
    };
    return this.snapshot;
  }
}
