/**
 * The event model of a streamed turn.
 *
 * Adapters turn a provider's wire format into {@link ProviderEvent}s; a user's own client can produce them
 * too. The operators of this package add an attempt number ({@link Attempted}), replace retries with typed
 * resets ({@link ResetEvent}) and stamp effect keys on tool calls ({@link KeyedToolCall}).
 *
 * @module
 */

/** Why a model stopped generating, mapped from each provider's own vocabulary. */
export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

/**
 * A fragment of answer text.
 *
 * @inline
 */
export interface TextEvent {
  type: 'text';
  /** The fragment, appended to the attempt's text so far. */
  text: string;
}

/**
 * A fragment of the model's thinking (reasoning summaries, thinking text). It belongs to its attempt like text: a
 * reset discards it, and it is never part of the answer text. A renderer shows it apart from the answer, or not
 * at all. What the provider needs back of it (signatures, encrypted reasoning) travels on the attempt's
 * {@link FinishEvent.output}, not on the fragments.
 *
 * @inline
 */
export interface ReasoningEvent {
  type: 'reasoning';
  /** The fragment, appended to the attempt's reasoning so far. */
  text: string;
}

/**
 * A fragment of a tool call as it streams; {@link assembleToolCalls} joins fragments into a {@link ToolCallEvent}.
 *
 * @inline
 */
export interface ToolCallDeltaEvent {
  type: 'tool-call-delta';
  /** Which call of the attempt this fragment belongs to; parallel calls have different indexes. */
  index: number;
  /** The provider's call id, usually on the first fragment only. */
  id?: string;
  /** The tool's name, usually on the first fragment only. */
  name?: string;
  /** A piece of the JSON argument text, appended in arrival order. */
  argsDelta: string;
}

/**
 * A complete tool call with parsed arguments.
 *
 * @inline
 */
export interface ToolCallEvent {
  type: 'tool-call';
  /** The provider's call id. It changes from attempt to attempt: never deduplicate by it. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The parsed arguments. */
  args: unknown;
}

/**
 * Token usage of the current attempt so far. Providers report usage cumulatively: a later `usage` event of
 * the same attempt replaces the fields it carries.
 *
 * @inline
 */
export interface UsageEvent {
  type: 'usage';
  /** Input tokens, those read from the provider's cache included. */
  inputTokens?: number;
  /** Output tokens, those spent on reasoning included. */
  outputTokens?: number;
  /** Of `inputTokens`, those read from the provider's prompt cache (billed at the cache rate). */
  cachedInputTokens?: number;
  /** Of `outputTokens`, those spent on reasoning the answer does not show. */
  reasoningTokens?: number;
}

/**
 * What an attempt produced, in its provider's own shape: everything the next request must send back (text,
 * calls with their ids and arguments as the provider sent them, reasoning with its signatures or encrypted
 * content, provider-run tools and their results), in stream order. The adapters of `cleanturn/providers` put
 * it on the attempt's finish, and their next-request builders read it; `format` names the wire format
 * (`openai-chat`, `openai-responses`, `anthropic-messages`, `gemini`, `ai-sdk`), and each adapter exports the
 * full type of its own.
 *
 * @inline
 */
export interface ProviderOutput {
  readonly format: string;
}

/**
 * The model finished this attempt.
 *
 * @inline
 */
export interface FinishEvent {
  type: 'finish';
  reason: FinishReason;
  /** The provider's own finish reason, when it differs from `reason`. */
  raw?: string;
  /**
   * The model's refusal message, when it refused (OpenAI's `refusal` deltas); the reason is then
   * `content-filter`. A refusal is not answer text, so adapters never emit it as `text`.
   */
  refusal?: string;
  /**
   * The provider's id of the response this attempt was (Responses `response.id`, Anthropic `message.id`, Chat
   * `id`, Gemini `responseId`), so that a next request chains from the final attempt (`previous_response_id`),
   * never from an abandoned one.
   */
  responseId?: string;
  /**
   * The model paused the turn and goes on when its output is sent back unchanged (Anthropic `pause_turn` of a
   * long server-tool run, `compaction`): the reason is `other`, and the turn is not over. See `nextStep`.
   */
  paused?: boolean;
  /** What the attempt produced in its provider's own shape, for the next request; see `ProviderOutput`. */
  output?: ProviderOutput;
}

/**
 * What a retry says about the failure and the wait, as a UI or a log shows it ("retrying in 3 s (HTTP 503), retry 1
 * of 2"). `retryAsEvents` sets every field it knows; a `retry` of your own may carry any of them, and
 * `resetOnRetry` copies them onto its `reset`.
 *
 * @inline
 */
export interface RetryFacts {
  /**
   * Milliseconds from this event until the next attempt starts: `0` for at once. Absent when the wait is not
   * known in advance (a delay notifier of your own that does not say how long it waits).
   */
  delay?: number;
  /** The attempt that failed (1 for the first). */
  failedAttempt?: number;
  /** Whether the failed attempt had emitted anything: its output may have reached the user. */
  outputStarted?: boolean;
  /** This retry's number: 1 for the turn's first retry. */
  retryCount?: number;
  /** The most retries the turn makes; absent when there is no cap. */
  maxRetries?: number;
  /** The class of the error that failed the attempt (`TransportError`, `ProviderError`…). */
  errorName?: string;
  /** The HTTP status of the response that failed the attempt, when there was one (429, 503…). */
  status?: number;
}

/**
 * A new attempt starts after this event; everything the previous attempt streamed is void. It comes the moment
 * the attempt fails, before any wait: `delay` says how long until the next attempt starts.
 *
 * @inline
 */
export interface RetryEvent extends RetryFacts {
  type: 'retry';
  /** Why the previous attempt was abandoned, for people and logs. */
  reason: string;
  /** The error that ended the previous attempt, if there was one. */
  error?: unknown;
}

/**
 * The connection of the live attempt was cut and is resumed: the same generation goes on after `after`, where it
 * was cut (OpenAI Responses in background mode; `resumeResponse` of `cleanturn/transport` emits it). Unlike a
 * `retry`, no new attempt starts and nothing is discarded: what the user read stays, held calls stay held, and
 * nothing is billed twice. A UI may say "reconnecting" until the next text arrives.
 *
 * @inline
 */
export interface ResumeEvent {
  type: 'resume';
  /**
   * The last position of the stream that arrived before the cut: a Responses `sequence_number`, or, for a format whose
   * cursor is not a number, how many of its events had arrived, less one.
   */
  after: number;
  /** The last event's own cursor, when the format's cursor is not a number (a Gemini Interactions `event_id`). */
  cursor?: string;
  /** Why the connection was cut, for people and logs. */
  reason: string;
}

/**
 * The live attempt reads a background response, which the provider goes on generating while no connection reads
 * it (OpenAI Responses in background mode, Gemini Interactions); `responseId` names it. `resumeResponse` of
 * `cleanturn/transport` emits it as soon as the stream names the response (its first event, `response.created`),
 * so that a turn log holds it with what the attempt delivered: a runner that takes the turn over after its runner was lost reads the same response
 * again (`runSteps`' `resume`, `StepContext.resumeFrom`) instead of starting a new generation. Nothing to render.
 *
 * @inline
 */
export interface ResumableEvent {
  type: 'resumable';
  /** The provider's id of the response: a Responses `response.id`, an Interactions `interaction.id`. */
  responseId: string;
}

/**
 * A background response that a lost runner's attempt was reading, and what that attempt delivered of it: what the
 * runner that takes the turn over goes on with (`streamTurn({ resumeFrom })`, given by `StepContext.resumeFrom`).
 *
 * @inline
 */
export interface ResumeFrom {
  /** The response's id, from the attempt's `resumable` event. */
  readonly responseId: string;
  /**
   * The events the attempt delivered, in order: the response read again from its start must begin with their
   * text and reasoning, or it is not the same generation.
   */
  readonly delivered: readonly TurnEvent[];
}

/** Everything a provider stream can say, in provider-neutral form. */
export type ProviderEvent =
  | TextEvent
  | ReasoningEvent
  | ToolCallDeltaEvent
  | ToolCallEvent
  | UsageEvent
  | FinishEvent
  | RetryEvent
  | ResumeEvent
  | ResumableEvent;

/**
 * An event stamped with the attempt it belongs to (1 for the first attempt). A `retry` carries the number of
 * the attempt it starts.
 */
export type Attempted<E> = E & { attempt: number };

/**
 * Tells every consumer: discard everything that attempts before `attempt` delivered. It comes when the previous
 * attempt failed, before the wait for the next one: the facts of its `retry` (`RetryFacts`: the delay, the
 * retry count and cap, the error's class and status) come with it, so that a UI can say "retrying in 3 s" at once.
 */
export interface ResetEvent extends RetryFacts {
  type: 'reset';
  /** The attempt that starts now. */
  attempt: number;
  /** Why the previous attempt was abandoned. */
  reason: string;
}

/** A tool call stamped with its attempt and its effect key (see {@link effectKey}). */
export type KeyedToolCall = Attempted<ToolCallEvent> & {
  /** The call's effect key: the same for every call with the same meaning in this turn. */
  effectKey: string;
};

/**
 * A call of the turn whose effect key already ran: an earlier call was released with it (an early read of an
 * abandoned attempt, or the same call twice in one attempt), or the `seen` lookup holds it. It has the fields of
 * a {@link KeyedToolCall} under its own type, so that code that runs `tool-call`s never runs it again; its call
 * id still needs an answer (the provider rejects a next request that leaves one unanswered): the recorded
 * result of its key.
 *
 * @inline
 */
export type RepeatedToolCall = Omit<KeyedToolCall, 'type'> & { type: 'tool-call-repeat' };

/**
 * A released call of the clean turn: a call to run, or a repeat to answer with its key's recorded result.
 *
 * @inline
 */
export type ReleasedCall = KeyedToolCall | RepeatedToolCall;

/**
 * What a policy emits: attempted events, with retries turned into resets.
 */
export type PolicyEvent = Attempted<Exclude<ProviderEvent, RetryEvent>> | ResetEvent;

/** The clean turn stream that {@link cleanTurn} emits: like {@link PolicyEvent}, with keyed tool calls. */
export type TurnEvent =
  | Attempted<
      | TextEvent
      | ReasoningEvent
      | ToolCallDeltaEvent
      | UsageEvent
      | FinishEvent
      | ResumeEvent
      | ResumableEvent
    >
  | KeyedToolCall
  | RepeatedToolCall
  | ResetEvent;

/**
 * The part of a tool call that its effect key depends on.
 *
 * @inline
 */
export type ToolCallMeaning = Pick<ToolCallEvent, 'name' | 'args'>;

/**
 * The result of running a released call, as an executor reports it. The `tool-result` events of
 * `cleanturn/effects` have this shape; any executor can produce them. The renderers and the ACP adapter read
 * them to show a call's progress.
 */
export interface ToolResultLike {
  type: 'tool-result';
  /** The call's effect key. */
  effectKey: string;
  /** The call the result belongs to: a call that ran, or a repeat answered with its key's recorded result. */
  call: ReleasedCall;
  /**
   * `executed` or `replayed`: the effect happened; `in-progress`: another process runs it; anything else
   * (`failed`, `unknown-tool`): it did not happen.
   */
  outcome: string;
  /** What the tool returned, when it ran. */
  result?: unknown;
  /** Why it failed, when it failed. */
  error?: unknown;
  /** `true` when the run took over an expired claim: an earlier run may have performed the effect too. */
  reclaimed?: boolean;
  /** `true` when the run's lease was lost while it ran: another holder may have performed the effect too. */
  leaseLost?: boolean;
}
