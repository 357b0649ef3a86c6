import {
  accumulateTurn,
  attemptPipeline,
  type BackoffOptions,
  backoff,
  type EffectKeyLookup,
  isRetryable,
  type ProviderEvent,
  type RetryBudget,
  type ToolCallEvent,
  type TurnEvent,
  type TurnState,
  turnPipeline,
} from 'cleanturn';
import { config, defer, identity, Observable, type OperatorFunction, of, Subject, tap, timer } from 'rxjs';
import { HttpStatusError } from './errors.js';
import { type FromSSEOptions, fromSSE, type SseRequest, toFetchArgs } from './fromSSE.js';
import type { ResumeRequests } from './openaiBackground.js';
import { checkResumeOptions, resumeResponse } from './resumeResponse.js';
import { sseJson } from './sseJson.js';
import { type TurnReport, toTurnReport } from './turnReport.js';

/**
 * What one attempt of a turn runs, as {@link StreamTurnOptions.plan} chooses it: the request, the adapter of the
 * format its server speaks, and the names the turn's report bills the attempt under.
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
   * starts; what it throws fails the attempt like any error (throw one with `retryable: false`, e.g. when no
   * provider is left, to end the turn).
   */
  plan?: (context: { attempt: number }) => AttemptPlan;
  /**
   * Resume each attempt where its connection is cut instead of retrying it: OpenAI Responses in background mode,
   * with `openaiBackground({ headers })`, the `openaiResponses()` adapter, and a request that asks for
   * `background: true, stream: true`. A cut then emits a `resume` and the same generation goes on (see
   * `resumeResponse`); when resuming is impossible (no response id yet, 404, expired, a gap, resumes that keep
   * failing), an ordinary retry takes over, its reason saying why. An abandoned response is cancelled. With a
   * `plan`, each attempt's plan names its own `resume`.
   */
  resume?: ResumeRequests;
  /** The turn's id, stable across retries and restarts: the scope of effect keys. */
  turnId: string;
  /**
   * How many times a failed attempt is retried, counted as RxJS `retry` and `retryAsEvents` count: at most
   * `retry + 1` attempts. Default 2.
   */
  retry?: number;
  /**
   * A retry budget shared with other turns (`retryBudget()` of `cleanturn`): the turn deposits once, and each retry
   * is withdrawn before its wait; a refused retry fails the turn at once with `RetryBudgetExhaustedError`. Default:
   * none, only `retry` caps the retries.
   */
  budget?: RetryBudget;
  /**
   * Abort an attempt (retryable) after this many milliseconds without a byte of the response. Default 60 000;
   * `0` turns it off.
   */
  stallTimeout?: number;
  /**
   * The most SSE text held at once, in characters (see `fromSSE`); past it the turn fails with a non-retryable
   * `SseLimitError`. Default 16 MiB.
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
   * Called once when the turn ends (completed, failed, or unsubscribed) with what it cost. What it throws does not
   * change how the turn ends; it goes to RxJS's `config.onUnhandledError`.
   */
  onReport?: (report: TurnReport) => void;
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
 * `RetriesExhaustedError` (with `retry: 0` nothing is retried, and the attempt's own error ends the turn,
 * as RxJS `retry` passes it through with a count of 0). With a `budget` shared by many turns, a retry the budget
 * refuses ends the turn at once with `RetryBudgetExhaustedError`, without its wait. `onReport` receives every
 * attempt's usage, the abandoned ones too.
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
 */
export function streamTurn<I>(options: StreamTurnOptions<I>): Observable<TurnEvent> {
  const {
    turnId,
    retry = 2,
    stallTimeout = 60_000,
    maxBufferSize,
    maxRetryAfter = 60_000,
    early,
    seen,
    onReport,
    budget,
  } = options;
  if (!Number.isInteger(retry) || retry < 0)
    throw new RangeError('streamTurn: retry must be an integer >= 0');
  const plan = planOf(options);
  const wait = options.backoff === false ? undefined : backoff(options.backoff ?? {});

  return defer(() => {
    // The attempt the next subscription to the source makes.
    let attempt = 0;
    // The provider and model of each attempt, for the report.
    const labels = new Map<number, { provider?: string; model?: string }>();
    const oneAttempt = defer(() => {
      attempt++;
      const chosen = plan(attempt);
      labels.set(attempt, { provider: chosen.provider, model: chosen.model });
      const sse: FromSSEOptions = {
        fetch: options.fetch,
        stallTimeout: stallTimeout > 0 ? stallTimeout : undefined,
        maxBufferSize,
      };
      const { resume } = chosen;
      if (resume !== undefined) checkPlannedResume(resume);
      if (resume === undefined)
        return fromSSE(chosen.request, sse).pipe(sseJson<never>(), attemptPipeline(chosen.adapter));
      return resumeResponse({
        create: () => fromSSE(chosen.request, sse).pipe(sseJson()),
        retrieve: ({ id, after }) =>
          fromSSE(({ signal }) => resume.retrieve({ id, after, signal }), sse).pipe(sseJson()),
        cancel: resume.cancel && (({ id }) => sendCancel(resume, id, options.fetch ?? globalThis.fetch)),
        adapter: chosen.adapter,
        maxResumes: resume.maxResumes,
        delay: resume.delay,
      }).pipe(attemptPipeline(identity));
    });
    const events = oneAttempt.pipe(
      turnPipeline({
        turnId,
        early,
        seen,
        retry: {
          count: retry,
          budget,
          shouldRetry: (error) =>
            isRetryable(error) &&
            !(error instanceof HttpStatusError && (error.retryAfterMs ?? 0) > maxRetryAfter),
          delay: (error, retryCount) => {
            const asked = error instanceof HttpStatusError ? (error.retryAfterMs ?? 0) : 0;
            if (wait === undefined) return asked > 0 ? timer(asked) : of(0);
            return asked > 0 ? timer(asked) : wait(error, retryCount);
          },
        },
      }),
    );
    if (onReport === undefined) return events;
    return reporting(events, turnId, onReport, labels);
  });
}

/** Mirrors `events` and calls `onReport` exactly once when the turn ends, however it ends. */
function reporting(
  events: Observable<TurnEvent>,
  turnId: string,
  onReport: (report: TurnReport) => void,
  labels: ReadonlyMap<number, { provider?: string; model?: string }>,
): Observable<TurnEvent> {
  return new Observable<TurnEvent>((subscriber) => {
    let state: TurnState<unknown> | undefined;
    let reported = false;
    const report = (end: { outcome: TurnReport['outcome']; error?: unknown }) => {
      if (reported) return;
      reported = true;
      try {
        onReport(toTurnReport(turnId, state, end, labels));
      } catch (error) {
        // A failing report must not change how the turn ends for its consumer: report it as RxJS reports an
        // error nobody handles.
        if (config.onUnhandledError) config.onUnhandledError(error);
        else
          setTimeout(() => {
            throw error;
          });
      }
    };
    // The clean events also feed the turn state, synchronously and in order.
    const feed = new Subject<TurnEvent>();
    const fold = feed.pipe(accumulateTurn()).subscribe((s) => {
      state = s;
    });
    const subscription = events
      .pipe(
        tap({
          next: (event) => feed.next(event),
          error: (error: unknown) => report({ outcome: 'failed', error }),
          complete: () => report({ outcome: 'completed' }),
        }),
      )
      .subscribe(subscriber);
    return () => {
      subscription.unsubscribe();
      fold.unsubscribe();
      report({ outcome: 'cancelled' });
    };
  });
}

/** The plan of each attempt: the user's, or the same request and adapter every time. */
function planOf<I>(options: StreamTurnOptions<I>): (attempt: number) => AttemptPlan {
  const { request, adapter, plan, resume } = options;
  if (plan !== undefined) {
    if (request !== undefined || adapter !== undefined || resume !== undefined)
      throw new TypeError('streamTurn: pass either a plan or request, adapter and resume, not both');
    return (attempt) => plan({ attempt });
  }
  if (request === undefined || adapter === undefined)
    throw new TypeError('streamTurn: request and adapter (or a plan) are required');
  if (resume !== undefined) checkResumeOptions('streamTurn', resume.maxResumes, resume.delay);
  const same = adapter as OperatorFunction<never, ProviderEvent>;
  return (attempt) => {
    const chosen: AttemptPlan = { adapter: same, request: ({ signal }) => request({ attempt, signal }) };
    if (resume !== undefined) chosen.resume = resume;
    return chosen;
  };
}

/** A plan's resume options, checked when the attempt starts: a bad one ends the turn at once, as no retry fixes it. */
function checkPlannedResume(resume: ResumeRequests): void {
  try {
    checkResumeOptions('streamTurn (plan)', resume.maxResumes, resume.delay);
  } catch (error) {
    throw Object.assign(error as RangeError, { retryable: false });
  }
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
