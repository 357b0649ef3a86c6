import {
  config,
  defer,
  identity,
  type MonoTypeOperatorFunction,
  Observable,
  type OperatorFunction,
  Subject,
  type Subscription,
} from 'rxjs';
import { accumulateTurn, type TurnState } from '../accumulateTurn.js';
import type { AssembledEvent } from '../assembleToolCalls.js';
import { attemptPipeline } from '../attemptPipeline.js';
import { type BackoffOptions, backoff } from '../backoff.js';
import type { EffectKeyLookup } from '../dedupeByEffectKey.js';
import { isRetryable, UsageError } from '../errors.js';
import { isInstance } from '../internal/describeError.js';
import { describeValue } from '../internal/describeValue.js';
import { type AttemptScope, quietly, type TurnObserver, type TurnScope } from '../internal/telemetry.js';
import { type RequireUsableOptions, requireUsable } from '../requireUsable.js';
import type { RetryAsEventsOptions } from '../retryAsEvents.js';
import type { RetryBudget } from '../retryBudget.js';
import { turnPipeline } from '../turnPipeline.js';
import type { ProviderEvent, ResumeFrom, ToolCallEvent, TurnEvent } from '../types.js';
import {
  attemptTimeoutError,
  HANDED_OVER,
  TransportError,
  turnStoppedError,
  turnTimeoutError,
} from './errors.js';
import {
  endWithin,
  type FromSSEOptions,
  fromSSE,
  fromSSEJson,
  resolveTimeouts,
  type SseRequest,
  toFetchArgs,
} from './fromSSE.js';
import type { ResumeRequests } from './openaiBackground.js';
import { type ReplayInfo, replayApproved } from './replaySafety.js';
import { checkResumeOptions, resumeResponse } from './resumeResponse.js';
import { sseJson } from './sseJson.js';
import { resolveMaxBufferSize } from './sseParser.js';
import { type TurnReport, toTurnReport } from './turnReport.js';

/**
 * What one attempt of a turn runs, as {@link StreamTurnOptions.plan} chooses it: the request, the adapter of the
 * format its server speaks, and the names the turn's report bills the attempt under.
 *
 * @inline
 */
export interface AttemptPlan {
  /** Makes the attempt's HTTP request; pass `signal` on to fetch if you build a `Request`. */
  request: (context: { signal: AbortSignal }) => SseRequest | Promise<SseRequest>;
  /** The adapter of the server's wire format (`openaiChat()`, `anthropicMessages()`…). */
  adapter: OperatorFunction<never, ProviderEvent>;
  /** The provider's name, for the report (`AttemptReport.provider`). */
  provider?: string;
  /** The model's name, for the report (`AttemptReport.model`). */
  model?: string;
  /** Resume the attempt where its connection is cut instead of retrying it (see {@link StreamTurnOptions.resume}). */
  resume?: ResumeRequests;
}

/**
 * The timers of a turn (`streamTurn`'s `timeout`), each in milliseconds; `0` turns one off.
 *
 * Progress, for `chunkMs`, is any byte of the response: an SSE comment (`: keep-alive`) and a provider's keep-alive
 * event (Anthropic's `ping`, OpenAI Responses' `keepalive`) count, since they prove that the connection and the server
 * are alive (a model may think for minutes before its first token, and proxies send comments meanwhile). A server that
 * sends only those forever is what `attemptMs` is for: it caps each attempt however steadily bytes arrive.
 *
 * @inline
 */
export interface TurnTimeouts {
  /**
   * The whole turn: every attempt and every wait between them, from the subscription. Past it the live attempt is
   * aborted (or the wait cancelled) and the turn errors with a `TransportError` `turn-timeout`, not retryable. Default: off.
   */
  totalMs?: number;
  /**
   * Each attempt, from its start to its finish (resumes of a background response included): past it the attempt is
   * aborted with a `TransportError` `attempt-timeout`, retryable as a stall is. Default: off.
   */
  attemptMs?: number;
  /**
   * Between two pieces of the response (from the request to the first byte, then between bytes): past it the
   * attempt is aborted with a `TransportError` `stall`, retryable. Default 60 000, as `stallTimeout`, of which this is the new
   * name.
   */
  chunkMs?: number;
}

/** Options of {@link streamTurn}: `request` and `adapter` for every attempt, or a `plan` per attempt. */
export interface StreamTurnOptions<I = unknown> {
  /** Makes the HTTP request of each attempt (1-based `attempt`); pass `signal` on to fetch if you build a `Request`. */
  request?: (context: { attempt: number; signal: AbortSignal }) => SseRequest | Promise<SseRequest>;
  /** The provider adapter, from parsed SSE payloads to provider events (`openaiChat()`, `anthropicMessages()`…). */
  adapter?: OperatorFunction<I, ProviderEvent>;
  /**
   * In place of `request` and `adapter`: what each attempt runs (1-based `attempt`), e.g. another provider after
   * two failures. The reset before the attempt makes a switch of model safe: the user never reads two
   * generations glued together, and the calls of an abandoned attempt never run. Called when the attempt
   * starts, synchronously; what it throws fails the attempt like any error (throw one with `retryable: false`,
   * e.g. when no provider is left, to end the turn). What it returns must be an `AttemptPlan` (not a
   * Promise of one): anything else (`undefined`, `{}`, an adapter that is not a function) ends the turn at once
   * with a `UsageError`, without a retry and without a request.
   */
  plan?: (context: { attempt: number }) => AttemptPlan;
  /**
   * Resume each attempt where its connection is cut instead of retrying it: OpenAI Responses in background mode,
   * with `openaiBackground({ headers })`, the `openaiResponses()` adapter, and a request that asks for
   * `background: true, stream: true`. A cut then emits a `resume` and the same generation goes on (see
   * `resumeResponse`); when resuming is impossible (no response id yet, 404, expired, a gap or an event without a
   * sequence number, resumes that keep failing), an ordinary retry takes over, its reason saying why. An abandoned response is cancelled (but for a turn its `turnServer` hands over). With a
   * `plan`, each attempt's plan names its own `resume`.
   */
  resume?: ResumeRequests;
  /**
   * The background response that the turn's first attempt goes on with, instead of sending `request`: a runner that
   * takes a turn over after its runner was lost passes `StepContext.resumeFrom` of `runSteps` here, and the same
   * generation goes on, read again from its start (`resume.retrieve` with `after: -1`), billed once, with no reset.
   * It needs `resume` (with a `plan`, attempt 1's). When the response cannot be read again, or reads otherwise than
   * `delivered` (`TransportError` `resume-not-found`, `resume-expired`, `resume-diverged`), an ordinary retry takes over.
   */
  resumeFrom?: ResumeFrom;
  /** The turn's id, stable across retries and restarts: the scope of effect keys. */
  turnId: string;
  /**
   * How many times a failed attempt is retried, counted as RxJS `retry` and `retryAsEvents` count: at most
   * `retry + 1` attempts. Default 2.
   */
  retry?: number;
  /**
   * A retry budget shared with other turns (`retryBudget()` of `cleanturn`): the turn deposits once, and each retry
   * is withdrawn before its wait; a refused retry fails the turn at once with a `TurnError` `retry-budget-exhausted`. Default:
   * none, only `retry` caps the retries.
   */
  budget?: RetryBudget;
  /**
   * Abort an attempt (retryable) after this many milliseconds without a byte of the response. Default 60 000, the
   * default of `fromSSE` as well; `0` turns it off. The older name of `timeout.chunkMs` (give one of them, not both).
   */
  stallTimeout?: number;
  /**
   * The turn's timers, in milliseconds: `totalMs` for the whole turn, `attemptMs` for each attempt, `chunkMs`
   * between two pieces of a response (see `TurnTimeouts`).
   */
  timeout?: TurnTimeouts;
  /**
   * Stops the turn when it aborts (a user's stop button): the live attempt's request is aborted, a wait before a
   * retry cancelled, a background response (`resume`) cancelled, and the turn errors with a `TransportError` `turn-stopped`
   * (`retryable: false`, never retried) that carries `signal.reason`; `onReport` says `stopped`. An already-aborted
   * signal stops the turn before any request. Unsubscribing stops the turn as well, as before, reported as
   * `cancelled`.
   */
  signal?: AbortSignal;
  /**
   * The most SSE text held at once, in characters (see `fromSSE`); past it the turn fails with a non-retryable
   * `TransportError` `sse-limit-*`. Default 16 MiB.
   */
  maxBufferSize?: number;
  /** The delay between attempts (see `backoff`); `false` retries at once. Default: `backoff()`'s defaults. */
  backoff?: BackoffOptions | false;
  /** The longest `retry-after` the turn will wait; a longer one fails the turn. Default 60 000 ms. */
  maxRetryAfter?: number;
  /** Pure reads that may run before their attempt finishes. */
  early?: (call: ToolCallEvent & { attempt: number }) => boolean;
  /** Effect keys that already ran (a ledger): their calls are released as `tool-call-repeat`s. */
  seen?: EffectKeyLookup;
  /**
   * The step of a run of turns that this turn is (1 for the first), entered into every effect key of its calls
   * (`effectKey(turnId, call, step)`, see `dedupeByEffectKey`): the same refund asked for again in a later step
   * of the same run is a second effect. Default none.
   */
  step?: number;
  /**
   * Retry an attempt that finished but cannot be used, as `requireUsable` of `cleanturn` decides: `true` for its
   * ready-made checks (a refusal, an empty answer, a call the provider could not read), or its options
   * (`validateArgs` to check tool arguments against their schemas, `checks` of your own). Such an attempt is retried
   * like a failed connection, under the same `retry` cap and `budget`: its `reset` says why, and its calls never
   * run. Default: off.
   */
  usable?: RequireUsableOptions | boolean;
  /**
   * Approves a retry that may repeat what the failed attempt did on the server: it is asked
   * about each failed attempt whose replay is `unsafe` (a Responses request with a `conversation` that may have run)
   * or `unknown` (a body it cannot read), with the attempt, the safety, its basis and reason, the request the attempt
   * made and the error; only `true` retries. A safe replay is retried without asking. Default: unknown replays are
   * retried, unsafe ones refused. A refused replay ends the turn with a `TransportError` `unsafe-replay` (not retryable), without
   * a `reset`; what the callback throws ends the turn with what it threw. With `resume`, a resumed cut is not a
   * replay and is never asked about; the fallback retry is.
   */
  replay?: (info: ReplayInfo) => boolean;
  /**
   * Called once when the turn ends (completed, failed, or unsubscribed) with what it cost. What it throws does not
   * change how the turn ends; it goes to RxJS's `config.onUnhandledError`.
   */
  onReport?: (report: TurnReport) => void;
  /**
   * Follows the turn for tracing and metrics: `turnTelemetry()` of `cleanturn/otel` gives OpenTelemetry spans (the
   * turn, each attempt, each resume) and the GenAI client metrics. It is told when each attempt issues its request,
   * its events, and how the attempt and the turn end; what it throws is dropped and never changes the turn.
   * Default: none.
   */
  telemetry?: TurnObserver;
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
}

/**
 * Runs one streamed turn over SSE with retries, and emits the clean turn.
 *
 * Composed only of public operators, as you would compose your own:
 *
 * ```text
 * fromSSE → sseJson → attemptPipeline(adapter), which ends at the finish   (one attempt)
 *   with `usable`: → requireUsable(usable), which fails an unusable finish
 *   with `resume`: resumeResponse({ create: fromSSE → sseJson, retrieve: fromSSE → sseJson, adapter })
 *                  → attemptPipeline(identity)
 *   → turnPipeline({ turnId, early, seen, retry: { count: retry, budget, delay: backoff, honouring retry-after } })
 * ```
 *
 * Each attempt is a new request; an abandoned attempt's request is aborted. An attempt ends at its finish (the
 * adapter releases it at the format's end: `[DONE]`, the usage chunk, `message_stop`…): its request is closed
 * then, so a reset or a silent connection after the finish cannot fail or retry a finished turn. An adapter of
 * your own therefore emits the attempt's `usage` before its `finish`, as the shipped adapters do.
 *
 * Errors that are not retryable (a 401, an invalid request, a response that is not an event stream, SSE text
 * past `maxBufferSize`) end the turn at once; after `retry` retries the turn errors with
 * `TurnError` `retries-exhausted` (with `retry: 0` nothing is retried, and the attempt's own error ends the turn,
 * as RxJS `retry` passes it through with a count of 0). With a `budget` shared by many turns, a retry the budget
 * refuses ends the turn at once with a `TurnError` `retry-budget-exhausted`, without its wait. `onReport` receives every
 * attempt's usage, the abandoned ones too.
 *
 * A retry sends the attempt's request again, so each one is checked first: a request that may have
 * run and changes state on the server (a Responses `conversation`) is not sent again unless `replay` approves, and
 * the turn ends with a `TransportError` `unsafe-replay` instead, without a reset. A request that never reached the server, or
 * keeps no state there (Chat Completions, Messages, Gemini, Responses without a conversation), is retried.
 *
 * Options of the wrong shape (a `turnId` that is not a string, an `adapter` that is not a function, a negative
 * `stallTimeout`…) throw a `UsageError` from `streamTurn` itself. A `plan` that returns something other than an
 * `AttemptPlan` ends the turn with a `UsageError` when that attempt starts: no retry, no reset, no request.
 *
 * ## Example
 * ```ts
 * import { openaiChat } from 'cleanturn/providers';
 * import { streamTurn } from 'cleanturn/transport';
 *
 * streamTurn({
 *   turnId: 'turn-42',
 *   adapter: openaiChat(),
 *   request: ({ signal }) => ({
 *     url: 'https://api.openai.com/v1/chat/completions',
 *     init: { method: 'POST', headers, body: JSON.stringify({ model, messages, tools, stream: true }), signal },
 *   }),
 *   onReport: (report) => billing.record(report),
 * }).subscribe(render);
 * ```
 *
 * @param options The request and the adapter (or a `plan` per attempt), the turn id, and the retry policy.
 * @returns A cold Observable of the clean turn; each subscription runs the turn.
 * @throws UsageError when an option has the wrong shape.
 */
export function streamTurn<I>(options: StreamTurnOptions<I>): Observable<TurnEvent> {
  const settings = settingsOf(options);
  const { turnId, timeouts, signal, onReport, telemetry } = settings;
  return defer(() => {
    // The observer of this run of the turn, and of its live attempt.
    const scope = telemetry === undefined ? undefined : quietly(() => telemetry.turn({ turnId }));
    let watch: AttemptWatch | undefined;
    // The attempt the next subscription to the source makes.
    let attempt = 0;
    // The provider and model of each attempt that started, for the report: an attempt announced by a reset whose
    // wait the turn did not outlive never started, and is not reported.
    const labels = new Map<number, { provider?: string; model?: string }>();
    // The live attempt's request, once its `request` function has returned it: what a retry would send again.
    let sent: SentRequest | undefined;
    const oneAttempt = defer(() => {
      attempt++;
      const record: SentRequest = { attempt, request: undefined, readable: undefined };
      sent = record;
      labels.set(attempt, {});
      watch = undefined;
      const chosen = settings.plan(attempt);
      labels.set(attempt, { provider: chosen.provider, model: chosen.model });
      if (scope === undefined) return attemptOf(settings, chosen, attempt, recorded(chosen.request, record));
      const watched = new AttemptWatch(scope, attempt, chosen);
      watch = watched;
      return attemptOf(
        settings,
        chosen,
        attempt,
        watched.requests(recorded(chosen.request, record)),
        watched,
      );
    }).pipe(
      endWithin(timeouts.attemptMs, () => attemptTimeoutError(timeouts.attemptMs ?? 0)),
      scope === undefined ? identity : watching(() => watch),
    );
    const events = oneAttempt.pipe(
      turnPipeline({
        turnId,
        step: settings.step,
        early: settings.early,
        seen: settings.seen,
        retry: retryRule(settings, () => sent ?? { attempt, request: undefined }),
      }),
    );
    // The turn's own ends, outside the retries: its time is up, or it was stopped.
    const turn = events.pipe(
      endWithin(timeouts.totalMs, () => turnTimeoutError(timeouts.totalMs ?? 0)),
      stoppedBy(signal),
    );
    const observed = scope === undefined ? turn : observing(turn, scope);
    if (onReport === undefined) return observed;
    return reporting(observed, turnId, onReport, labels);
  });
}

/** streamTurn's options, checked, with their defaults. */
interface TurnSettings {
  turnId: string;
  step: number | undefined;
  retry: number;
  maxRetryAfter: number;
  early: StreamTurnOptions['early'];
  seen: EffectKeyLookup | undefined;
  onReport: StreamTurnOptions['onReport'];
  telemetry: TurnObserver | undefined;
  budget: RetryBudget | undefined;
  replay: StreamTurnOptions['replay'];
  fetch: typeof fetch | undefined;
  signal: AbortSignal | undefined;
  timeouts: TurnTimeouts;
  sse: FromSSEOptions;
  plan: (attempt: number) => AttemptPlan;
  resumeFrom: ResumeFrom | undefined;
  wait: ReturnType<typeof backoff> | undefined;
  usable: MonoTypeOperatorFunction<AssembledEvent<ProviderEvent>>;
}

/** Checks streamTurn's options: a wrong one is a `UsageError` at once, before any request. */
function settingsOf<I>(options: StreamTurnOptions<I>): TurnSettings {
  if (typeof options !== 'object' || options === null)
    throw usage('options', 'must be an object with turnId and request and adapter (or a plan)', options);
  const { turnId, step, retry = 2, maxRetryAfter = 60_000, early, seen, onReport, budget, replay } = options;
  if (typeof turnId !== 'string' || turnId === '')
    throw usage('turnId', 'must be a non-empty string', turnId);
  if (!Number.isInteger(retry) || retry < 0) throw usage('retry', 'must be an integer >= 0', retry);
  if (step !== undefined && !(Number.isSafeInteger(step) && step >= 0))
    throw usage('step', 'must be an integer >= 0', step);
  // fromSSE's default and rule for the chunk timer; 0 (off) is passed on as 0, which fromSSE reads as off too.
  const timeouts = resolveTimeouts('streamTurn', options.timeout, options.stallTimeout);
  const { signal } = options;
  if (signal !== undefined && !isAbortSignal(signal))
    throw usage('signal', 'must be an AbortSignal (AbortController.signal)', signal);
  const maxBufferSize = checkMaxBufferSize(options.maxBufferSize);
  if (typeof maxRetryAfter !== 'number' || !(maxRetryAfter >= 0))
    throw usage('maxRetryAfter', 'must be a number of milliseconds >= 0', maxRetryAfter);
  optionalFunction('early', early);
  optionalFunction('onReport', onReport);
  const { telemetry } = options;
  if (telemetry !== undefined && !hasMethods(telemetry, 'turn'))
    throw usage('telemetry', 'must be a turn observer (with turn), as turnTelemetry() makes', telemetry);
  optionalFunction('replay', replay);
  optionalFunction('fetch', options.fetch);
  if (seen !== undefined && !hasMethods(seen, 'has'))
    throw usage('seen', 'must be a Set of effect keys or an effect ledger (with has)', seen);
  if (budget !== undefined && !hasMethods(budget, 'deposit', 'tryWithdraw'))
    throw usage('budget', 'must be a retry budget (deposit, tryWithdraw), as retryBudget() makes', budget);
  const plan = planOf(options);
  const { resumeFrom } = options;
  if (resumeFrom !== undefined) checkResumeFrom(resumeFrom, options);
  const sse: FromSSEOptions = { fetch: options.fetch, stallTimeout: timeouts.chunkMs ?? 0, maxBufferSize };
  const wait = waitOf(options.backoff);
  const usable = usableOf(options.usable);
  return {
    ...{ turnId, step, retry, maxRetryAfter, early, seen, onReport, telemetry, budget, replay },
    fetch: options.fetch,
    ...{ signal, timeouts, sse, plan, resumeFrom, wait, usable },
  };
}

/**
 * One attempt as its plan says: the request's stream through the adapter, or, with `resume`, a background response
 * resumed where it is cut (and, for a takeover's first attempt, the lost runner's response read again).
 */
function attemptOf(
  settings: TurnSettings,
  chosen: AttemptPlan,
  attempt: number,
  sendRequest: AttemptPlan['request'],
  watch?: AttemptWatch,
): Observable<AssembledEvent<ProviderEvent>> {
  const { sse, usable, resumeFrom, signal } = settings;
  const { resume } = chosen;
  if (resume === undefined && attempt === 1 && resumeFrom !== undefined)
    throw usage('resumeFrom', 'needs resume requests for attempt 1 (plan({ attempt: 1 }).resume)', resume);
  if (resume === undefined)
    return fromSSEJson<never>(sendRequest, sse).pipe(attemptPipeline(chosen.adapter), usable);
  const doFetch = settings.fetch ?? globalThis.fetch;
  return resumeResponse({
    create: () => fromSSE(sendRequest, sse).pipe(sseJson()),
    retrieve: ({ id, after, cursor }) =>
      fromSSE(({ signal: abort }) => {
        const made = resume.retrieve(
          cursor === undefined ? { id, after, signal: abort } : { id, after, cursor, signal: abort },
        );
        // A takeover's attempt reads a response it did not create: its first request is this one.
        return watch === undefined ? made : watch.issuing(made);
      }, sse).pipe(sseJson()),
    // A turn handed over to another runner leaves its response generating: that runner goes on with it.
    cancel:
      resume.cancel &&
      (({ id }) => (signal?.reason === HANDED_OVER ? undefined : sendCancel(resume, id, doFetch))),
    adapter: chosen.adapter,
    maxResumes: resume.maxResumes,
    delay: resume.delay,
    format: resume.format,
    resumeFrom: attempt === 1 ? resumeFrom : undefined,
  }).pipe(attemptPipeline(identity), usable);
}

/**
 * When and after how long a failed attempt is retried: a retryable error, not asking to wait past `maxRetryAfter`,
 * whose replay is safe or approved; after the server's `retry-after` when it gave one, else the backoff's delay.
 */
function retryRule(
  settings: TurnSettings,
  sent: () => Parameters<typeof replayApproved>[0],
): RetryAsEventsOptions {
  const { retry, budget, maxRetryAfter, replay, wait } = settings;
  return {
    count: retry,
    budget,
    shouldRetry: (error, retryNumber) =>
      isRetryable(error) &&
      !(
        isInstance(error, TransportError) &&
        error.code === 'http-status' &&
        (error.retryAfterMs ?? 0) > maxRetryAfter
      ) &&
      // Past the cap the turn ends with a TurnError retries-exhausted: no replay to decide. Else an unsafe replay
      // that `replay` does not approve throws a TransportError unsafe-replay, which ends the turn without a retry.
      (retryNumber > retry || replayApproved(sent(), error, replay)),
    // Milliseconds (or backoff's timer, which says how long it waits): the retry event carries the delay.
    delay: (error, retryCount) => {
      const asked =
        isInstance(error, TransportError) && error.code === 'http-status' ? (error.retryAfterMs ?? 0) : 0;
      if (asked > 0 || wait === undefined) return asked;
      return wait(error, retryCount);
    },
  };
}

/**
 * Mirrors `events`, telling `next` each event and `end` once how the turn ended, however it ended: `completed`,
 * `stopped` (a `TransportError` `turn-stopped`), `failed`, or `cancelled` when the consumer unsubscribed first. What
 * the turn's report and its observer both read.
 */
function endingOnce(
  events: Observable<TurnEvent>,
  next: (event: TurnEvent) => void,
  end: (outcome: TurnReport['outcome'], error?: unknown) => void,
): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    let ended = false;
    const once = (outcome: TurnReport['outcome'], error?: unknown) => {
      if (ended) return;
      ended = true;
      end(outcome, error);
    };
    const subscription = events.subscribe({
      next: (event) => {
        next(event);
        subscriber.next(event);
      },
      error: (error: unknown) => {
        once(
          isInstance(error, TransportError) && error.code === 'turn-stopped' ? 'stopped' : 'failed',
          error,
        );
        subscriber.error(error);
      },
      complete: () => {
        once('completed');
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      once('cancelled');
    };
  });
}

/** Mirrors `events` and calls `onReport` exactly once when the turn ends, however it ends. */
function reporting(
  events: Observable<TurnEvent>,
  turnId: string,
  onReport: (report: TurnReport) => void,
  labels: ReadonlyMap<number, { provider?: string; model?: string }>,
): Observable<TurnEvent> {
  return defer(() => {
    // The clean events also feed the turn state, synchronously and in order.
    let state: TurnState<unknown> | undefined;
    const feed = new Subject<TurnEvent>();
    const fold = feed.pipe(accumulateTurn()).subscribe((s) => {
      state = s;
    });
    return endingOnce(
      events,
      (event) => feed.next(event),
      (outcome, error) => {
        fold.unsubscribe();
        try {
          onReport(
            toTurnReport(turnId, state, error === undefined ? { outcome } : { outcome, error }, labels),
          );
        } catch (thrown) {
          // A failing report must not change how the turn ends for its consumer: report it as RxJS reports an
          // error nobody handles.
          if (config.onUnhandledError) config.onUnhandledError(thrown);
          else
            setTimeout(() => {
              throw thrown;
            });
        }
      },
    );
  });
}

/**
 * What the turn's observer learns of one attempt: the attempt's scope, opened when its first request is issued (its
 * URL known), its events, and its end, told once.
 */
class AttemptWatch {
  /** The observer's scope of the attempt, once its first request was issued. */
  #scope: AttemptScope | undefined;
  /** Whether the first request was issued (the scope asked for), and whether the end was told. */
  #issued = false;
  #ended = false;

  constructor(
    private readonly turn: TurnScope,
    private readonly attempt: number,
    private readonly plan: AttemptPlan,
  ) {}

  /** The attempt's request function, telling the observer when the request it made is issued. */
  requests(make: AttemptPlan['request']): AttemptPlan['request'] {
    return async (context) => this.issued(await make(context));
  }

  /** A request (or the promise of one) that is about to be issued. */
  issuing(made: SseRequest | Promise<SseRequest>): SseRequest | Promise<SseRequest> {
    return made instanceof Promise ? made.then((request) => this.issued(request)) : this.issued(made);
  }

  issued(request: SseRequest): SseRequest {
    if (!this.#issued && !this.#ended) {
      this.#issued = true;
      const { provider, model } = this.plan;
      const url = quietly(() => urlOf(request));
      this.#scope = quietly(() => this.turn.attempt({ attempt: this.attempt, provider, model, url }));
    }
    return request;
  }

  event(event: AssembledEvent<ProviderEvent>): void {
    const scope = this.#scope;
    if (scope !== undefined && !this.#ended) quietly(() => scope.event(event));
  }

  end(result: { error?: unknown; abandoned?: boolean }): void {
    if (this.#ended) return;
    this.#ended = true;
    const scope = this.#scope;
    if (scope !== undefined) quietly(() => scope.end(result));
  }
}

/** The URL a request goes to, as a string. */
function urlOf(request: SseRequest): string {
  const [input] = toFetchArgs(request);
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}

/**
 * Mirrors the attempts, telling the live attempt's watch (`current`, set when the attempt starts) each event and
 * how the attempt ended: finished, failed, or abandoned when unsubscribed before either.
 */
function watching<T extends AssembledEvent<ProviderEvent>>(
  current: () => AttemptWatch | undefined,
): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      // The attempt this subscription runs: the watch set when the source was subscribed.
      let watch: AttemptWatch | undefined;
      const subscription = source.subscribe({
        next: (event) => {
          watch ??= current();
          watch?.event(event);
          subscriber.next(event);
        },
        error: (error: unknown) => {
          (watch ?? current())?.end({ error });
          subscriber.error(error);
        },
        complete: () => {
          (watch ?? current())?.end({});
          subscriber.complete();
        },
      });
      watch ??= current();
      return () => {
        subscription.unsubscribe();
        watch?.end({ abandoned: true });
      };
    });
}

/**
 * Mirrors the turn, telling its observer the consumer's resets and repeats, and how the turn ended, once (after
 * the live attempt's own end: unsubscribing from the turn ends its attempt first).
 */
function observing(events: Observable<TurnEvent>, scope: TurnScope): Observable<TurnEvent> {
  return endingOnce(
    events,
    (event) => {
      // Only what the observer needs: a repeat's effect key is never passed on.
      if (event.type === 'reset') {
        const { attempt, reason } = event;
        quietly(() => scope.event({ type: 'reset', attempt, reason }));
      } else if (event.type === 'tool-call-repeat') {
        const { attempt, name, id } = event;
        quietly(() => scope.event({ type: 'tool-call-repeat', attempt, name, id }));
      }
    },
    (outcome, error) => quietly(() => scope.end(outcome, error)),
  );
}

/**
 * Mirrors the turn until `signal` aborts; then unsubscribes from it (which aborts the live request, cancels a wait
 * and a background response) and errors with a `TransportError` `turn-stopped`. An aborted signal errors at once, before
 * the subscription. The listener is removed when the turn ends.
 */
function stoppedBy<T>(signal: AbortSignal | undefined): MonoTypeOperatorFunction<T> {
  return (source) => {
    if (signal === undefined) return source;
    return new Observable<T>((subscriber) => {
      if (signal.aborted) {
        subscriber.error(turnStoppedError(signal.reason));
        return;
      }
      let subscription: Subscription | undefined;
      const stop = () => {
        // The turn first, so that its request is aborted before the consumer hears of the stop.
        subscription?.unsubscribe();
        subscriber.error(turnStoppedError(signal.reason));
      };
      signal.addEventListener('abort', stop, { once: true });
      subscription = source.subscribe({
        // An observer of its own, not `subscriber`: unsubscribing from the source must leave the result open.
        next: (value) => subscriber.next(value),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        signal.removeEventListener('abort', stop);
        subscription?.unsubscribe();
      };
    });
  };
}

function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof AbortSignal !== 'undefined' && value instanceof AbortSignal) return true;
  // An AbortSignal of another realm (an iframe, a polyfill) by its shape.
  return (
    hasMethods(value, 'addEventListener', 'removeEventListener') &&
    typeof (value as { aborted?: unknown }).aborted === 'boolean'
  );
}

/** The plan of each attempt: the user's, checked, or the same request and adapter every time. */
function planOf<I>(options: StreamTurnOptions<I>): (attempt: number) => AttemptPlan {
  const { request, adapter, plan, resume } = options;
  if (plan !== undefined) {
    if (typeof plan !== 'function') throw usage('plan', 'must be a function of the attempt', plan);
    if (request !== undefined || adapter !== undefined || resume !== undefined)
      throw usage(
        'plan',
        'must come alone: pass either a plan or request, adapter and resume, not both',
        plan,
      );
    return (attempt) => checkedPlan(plan({ attempt }));
  }
  if (typeof request !== 'function')
    throw usage('request', 'must be a function that makes the request (or pass a plan)', request);
  if (typeof adapter !== 'function')
    throw usage('adapter', 'must be a provider adapter (an operator function such as openaiChat())', adapter);
  if (resume !== undefined) checkResume('resume', resume);
  const same = adapter as OperatorFunction<never, ProviderEvent>;
  return (attempt) => {
    const chosen: AttemptPlan = { adapter: same, request: ({ signal }) => request({ attempt, signal }) };
    if (resume !== undefined) chosen.resume = resume;
    return chosen;
  };
}

/**
 * What a plan returned, if it is an `AttemptPlan`; else a `UsageError` (not retryable: the plan would return
 * the same again), thrown when the attempt starts, so that the turn ends at once, before any request.
 */
function checkedPlan(chosen: unknown): AttemptPlan {
  const what = 'must return an AttemptPlan ({ request, adapter }), synchronously';
  if (
    typeof chosen !== 'object' ||
    chosen === null ||
    typeof (chosen as { then?: unknown }).then === 'function'
  )
    throw usage('plan', what, chosen);
  const { request, adapter, provider, model, resume } = chosen as Record<string, unknown>;
  if (typeof request !== 'function')
    throw usage('plan().request', 'must be a function that makes the request', request);
  if (typeof adapter !== 'function')
    throw usage(
      'plan().adapter',
      'must be a provider adapter (an operator function such as openaiChat())',
      adapter,
    );
  if (provider !== undefined && typeof provider !== 'string')
    throw usage('plan().provider', 'must be a string', provider);
  if (model !== undefined && typeof model !== 'string')
    throw usage('plan().model', 'must be a string', model);
  if (resume !== undefined) checkResume('plan().resume', resume);
  return chosen as AttemptPlan;
}

/** `resumeFrom`: a response id and the events delivered of it, with resume requests to read it again. */
function checkResumeFrom(resumeFrom: unknown, options: { plan?: unknown; resume?: unknown }): void {
  const { responseId, delivered } = (resumeFrom ?? {}) as Partial<ResumeFrom>;
  if (typeof responseId !== 'string' || responseId === '' || !Array.isArray(delivered))
    throw usage(
      'resumeFrom',
      'must be { responseId, delivered }, as StepContext.resumeFrom gives it',
      resumeFrom,
    );
  if (options.plan === undefined && options.resume === undefined)
    throw usage('resumeFrom', 'needs resume (openaiBackground() or geminiBackground())', resumeFrom);
}

/** Resume options: an object with `retrieve`, and `cancel`, `maxResumes` and `delay` in their ranges. */
function checkResume(option: string, resume: unknown): asserts resume is ResumeRequests {
  if (typeof resume !== 'object' || resume === null)
    throw usage(option, 'must be resume requests ({ retrieve }), as openaiBackground() makes', resume);
  const { retrieve, cancel, maxResumes, delay, format } = resume as Record<string, unknown>;
  if (format !== undefined && format !== 'responses' && format !== 'interactions')
    throw usage(`${option}.format`, "must be 'responses' or 'interactions'", format);
  if (typeof retrieve !== 'function')
    throw usage(`${option}.retrieve`, 'must be a function that makes the retrieve request', retrieve);
  if (cancel !== undefined && typeof cancel !== 'function')
    throw usage(`${option}.cancel`, 'must be a function that makes the cancel request', cancel);
  // The ranges are resumeResponse's own rule, asked one option at a time to name the one at fault.
  asUsage(`${option}.maxResumes`, maxResumes, () =>
    checkResumeOptions('streamTurn', maxResumes as number | undefined, undefined),
  );
  asUsage(`${option}.delay`, delay, () =>
    checkResumeOptions('streamTurn', undefined, delay as number | undefined),
  );
}

/** The transports' `maxBufferSize` rule (`resolveMaxBufferSize`), refused as a `UsageError`. */
function checkMaxBufferSize(maxBufferSize: unknown): number | undefined {
  if (maxBufferSize === undefined) return undefined;
  if (typeof maxBufferSize !== 'number')
    throw usage('maxBufferSize', 'must be a number of characters > 0', maxBufferSize);
  asUsage('maxBufferSize', maxBufferSize, () => resolveMaxBufferSize('streamTurn', maxBufferSize));
  return maxBufferSize;
}

/** The check of finished attempts: `requireUsable` of the options (its own rules, refused as a `UsageError`), or none. */
function usableOf(options: unknown): MonoTypeOperatorFunction<AssembledEvent<ProviderEvent>> {
  if (options === undefined || options === false) return identity;
  if (options !== true && (typeof options !== 'object' || options === null))
    throw usage('usable', 'must be true, false or the options of requireUsable', options);
  try {
    return requireUsable<AssembledEvent<ProviderEvent>>(
      options === true ? {} : (options as RequireUsableOptions),
    );
  } catch (error) {
    if (!isInstance(error, UsageError)) throw error;
    const problem = error.message.slice(`requireUsable: ${error.option} `.length);
    throw new UsageError('streamTurn', `usable.${error.option}`, problem);
  }
}

/** The delay between attempts: `backoff()` of the options (its own ranges, refused as a `UsageError`), or none. */
function waitOf(options: unknown): ReturnType<typeof backoff> | undefined {
  if (options === false) return undefined;
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw usage('backoff', 'must be backoff options or false', options);
  let made: ReturnType<typeof backoff> | undefined;
  asUsage('backoff', options, () => {
    made = backoff((options ?? {}) as BackoffOptions);
  });
  return made;
}

/** Runs a check of another module and turns the `UsageError` or `RangeError` it throws into one naming `option`. */
function asUsage(option: string, value: unknown, check: () => unknown): void {
  try {
    check();
  } catch (error) {
    if (error instanceof UsageError) {
      // The other module's refusal, named as the option of streamTurn: `<operator>: <option> <problem>`.
      const at = `${error.operator}: ${error.option} `;
      throw new UsageError(
        'streamTurn',
        option,
        error.message.startsWith(at) ? error.message.slice(at.length) : error.message,
      );
    }
    if (!(error instanceof RangeError)) throw error;
    const rule = error.message.replace(/^[^:]*: /, '');
    const must = rule.replace(/^\S+ must /, 'must ');
    throw usage(option, must.startsWith('must ') ? must : `must be valid (${rule})`, value);
  }
}

function optionalFunction(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'function') throw usage(option, 'must be a function', value);
}

function hasMethods(value: unknown, ...methods: string[]): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  );
}

/** The `UsageError` of a streamTurn option: what it must be, and what it was. */
function usage(option: string, rule: string, value: unknown): UsageError {
  return new UsageError('streamTurn', option, `${rule}, not ${describeValue(value)}`);
}

/** How long a cancel request may take; it runs after its turn, so it must end on its own. */
const CANCEL_TIMEOUT_MS = 10_000;

/** Sends the cancel request of response `id` and discards its answer. */
async function sendCancel(resume: ResumeRequests, id: string, doFetch: typeof fetch): Promise<void> {
  const make = resume.cancel;
  if (make === undefined) return;
  const controller = new AbortController();
  const timeout = setTimeout(() => controller.abort(), CANCEL_TIMEOUT_MS);
  try {
    const [input, init] = toFetchArgs(await make({ id, signal: controller.signal }));
    const response = await doFetch(input, { ...init, signal: controller.signal });
    await response.body?.cancel();
  } finally {
    clearTimeout(timeout);
  }
}

/**
 * What one attempt sent, for the replay rule: its number and its request once its `request` function has returned
 * it (undefined until then: a failure before it sent nothing).
 */
interface SentRequest {
  attempt: number;
  /** The request as the function returned it. */
  request: SseRequest | undefined;
  /** A `Request` object's method, URL and body, read from a clone before it was sent (its body cannot be read later). */
  readable: SseRequest | undefined;
}

/** The most of a `Request` object's body that is read to classify its replay; past it the request is unreadable. */
const READ_BODY_LIMIT = 1 << 20;

/**
 * The attempt's request function, recording what it returns in `record`. A `Request` object's body can be read
 * only once, by fetch: a copy of it is read beside the request, up to {@link READ_BODY_LIMIT} bytes and only while
 * the attempt lasts (its signal), so that a body that streams is neither held back nor read after the attempt.
 * A body not read by the time the attempt fails leaves the request unreadable: its replay is `unknown`.
 */
function recorded(
  make: AttemptPlan['request'],
  record: SentRequest,
): (context: { signal: AbortSignal }) => Promise<SseRequest> {
  return async (context) => {
    const made = await make(context);
    record.request = made;
    if (typeof Request !== 'undefined' && made instanceof Request && made.body !== null) {
      let copy: Request;
      try {
        copy = made.clone();
      } catch {
        // A body already read or locked: the rule finds the request unreadable, and fetch reports the body.
        return made;
      }
      void readBody(copy, context.signal).then((body) => {
        if (body !== undefined) record.readable = { url: made.url, init: { method: made.method, body } };
      });
    }
    return made;
  };
}

/** The text of `request`'s body, or undefined when it is larger than the limit or `signal` aborts first. */
async function readBody(request: Request, signal: AbortSignal): Promise<string | undefined> {
  const reader = request.body?.getReader();
  if (reader === undefined) return '';
  const stop = () => {
    reader.cancel().catch(() => undefined);
  };
  if (signal.aborted) {
    stop();
    return undefined;
  }
  signal.addEventListener('abort', stop, { once: true });
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return signal.aborted ? undefined : text + decoder.decode();
      size += value.byteLength;
      if (size > READ_BODY_LIMIT) {
        stop();
        return undefined;
      }
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return undefined;
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
