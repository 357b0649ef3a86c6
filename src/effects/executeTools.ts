import {
  catchError,
  defer,
  filter,
  finalize,
  map,
  mergeMap,
  type Observable,
  type OperatorFunction,
  of,
  tap,
  throwError,
  timer,
} from 'rxjs';
import { isRetryable } from '../errors.js';
import { checkOneOf, checkOption } from '../internal/options.js';
import { quietly, type ToolObserver } from '../internal/telemetry.js';
import type { KeyedToolCall, ReleasedCall, TurnEvent } from '../types.js';
import { DEFAULT_LEASE_MS } from './defaults.js';
import { EffectError, effectInDoubtError, leaseLostError, missingEffectKeyError } from './errors.js';
import {
  answersRepeats,
  claimStep,
  completeFailure,
  executedResult,
  failedResult,
  pollDelay,
  replay,
  settledStep,
  type TimedRun,
  unknownToolResult,
  unrecordedRepeat,
} from './executeRules.js';
import { runTimed } from './handlerRun.js';
import { encodeResult, serializeError } from './json.js';
import { keepLease, type Lease } from './leaseRunner.js';
import { awaited, awaitedCancellable, record } from './ledgerCalls.js';
import { checkDuration } from './ledgerRules.js';
import { MemoryEffectLedger } from './MemoryEffectLedger.js';
import type { EffectLedger, ToolHandler, ToolHandlers, ToolResultEvent } from './types.js';

/**
 * Options of {@link executeTools}.
 *
 * @inline
 */
export interface ExecuteToolsOptions {
  /** The turn id: the ledger scope of the calls' effect keys. The same id as `cleanTurn`'s. */
  turnId: string;
  /**
   * Where effects are recorded. Default: a new {@link MemoryEffectLedger} per `executeTools()` call, shared by
   * its subscriptions (exactly once within one process only).
   */
  ledger?: EffectLedger;
  /** How many handlers may run at once. Default: 1, one after the other in call order. */
  concurrency?: number;
  /**
   * The order of the results when `concurrency` > 1: `'calls'` (default) emits them in the order of the calls,
   * holding an early result until the ones before it are out; `'completion'` emits each as soon as it is ready.
   */
  order?: 'calls' | 'completion';
  /**
   * How long a claim holds, in milliseconds. While a handler runs, and until its outcome is recorded, its lease
   * is renewed a beat (`leaseMs / 3`) after the previous renewal was sent, or as soon as that one answered if it
   * answered later: renewals never overlap (with a ledger that has `renew`; the built-in ones do). So a handler may
   * run longer than the lease: the lease is how long a restart waits for the claim of a process that crashed
   * mid-effect. With a ledger without `renew`, choose it longer than the slowest handler: past it, another process
   * may take the key over and run the handler again (with the same key).
   *
   * Keep a beat (`leaseMs / 3`) above twice the longest a ledger call may wait: one renewal can take that long
   * (a write that got no answer is asked twice), and one that fails then still leaves the next beat time to land
   * before the lease ends. Redis: 2 × `commandTimeoutMs` (5 000 by default, so `leaseMs` above 30 000); SQLite:
   * `busyTimeoutMs`; another ledger: the longest one of its calls may take. Default: 60 000.
   */
  leaseMs?: number;
  /**
   * How long a handler may run, in milliseconds; then its `signal` is aborted (reason: an `EffectError` `handler-timeout`)
   * and the call is reported as `failed` with that error at once. Its claim is neither released nor recorded,
   * since the handler may still be running: it expires after `leaseMs`, and the next run takes it over as in
   * doubt (see `inDoubt`). Default: none (a handler may run as long as it keeps its lease).
   */
  handlerTimeoutMs?: number;
  /**
   * What to do with a claim taken over from an earlier holder whose lease expired without an outcome
   * (`reclaimed`: that holder crashed, hung or timed out mid-effect, so the effect may or may not have happened):
   * - `'run'` (default): run the handler again with the same effect key and `reclaimed: true` in its context,
   *   and report `executed` with `reclaimed: true`. Right for services idempotent on the key (a payment API with
   *   an `Idempotency-Key`), which is what the handler is asked to pass the key to; and it is what a crash
   *   recovery needs to make progress without a human.
   * - `'report'`: run nothing; record the key as failed with an `EffectError` `in-doubt` and report that, so that
   *   later runs replay it too. For effects a service cannot deduplicate: someone checks and decides.
   */
  inDoubt?: 'run' | 'report';
  /**
   * What to do when another holder is running the same effect: `'wait'` (default) polls the ledger until the
   * effect is settled and replays it, or until the other lease expires and takes it over; `'report'` emits an
   * `in-progress` result at once, as an idempotency store that answers 409 Conflict would.
   */
  inProgress?: 'wait' | 'report';
  /** How often a waiting call asks the ledger again, in milliseconds. Default: 100. */
  pollMs?: number;
  /**
   * Which handler failures to record, so that later runs replay the error instead of running the handler again.
   * Failures that are not recorded are released: the next run of the turn runs the handler again (with the same
   * key). Default: record the errors that carry `retryable: false` (a declined card, like a 4xx that Stripe
   * stores), release the others (timeouts, network errors, bugs, as Powertools deletes the record).
   */
  recordFailure?: (error: unknown) => boolean;
  /**
   * Follows the handlers for tracing and metrics: `turnTelemetry()` of `cleanturn/otel` gives an `execute_tool`
   * span per handler that runs now, and counts the calls answered from the ledger instead (those never get one).
   * What it throws is dropped and never changes a call's outcome. Default: none.
   */
  telemetry?: ToolObserver;
}

/** Default `pollMs`. */
const DEFAULT_POLL_MS = 100;

/**
 * Runs the tool calls of a clean turn with your handlers, at most once per effect key across retries,
 * restarts and processes, and emits one `tool-result` per call.
 *
 * Each call's effect key is claimed in the ledger (scope: `turnId`) before its handler runs. A key that already
 * ran is replayed from the ledger; a key that another process is running is waited for; a key whose holder
 * crashed is taken over when its lease expires, and the handler runs again with the same key, which the
 * handler passes on so that the service (a payment API) is idempotent too. Unknown tools and handler failures
 * become typed results; nothing is dropped. Other events (text, resets, finish) are not passed on: share the
 * turn to render it and to execute it.
 *
 * ```text
 * source:   -B-K-L-F-|
 *           executeTools({ issue_refund, send_email }, { turnId: 'turn-42' })
 * result:   ---k-l---|
 *
 * where
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   L = tool-call c8 send_email({"to":"ada@example.com","template":"refund-started"}), attempt 2, key 0899a76822582476
 *   F = finish stop, attempt 2
 *   k = tool-result executed c7 issue_refund → {"refund_id":"re_7781","status":"pending"}, key 4d02b5b61ea1afa1
 *   l = tool-result executed c8 send_email, key 0899a76822582476
 * ```
 *
 * Every case of `marbles/executeTools.marbles.ts`, with pictures: `docs/operators/executeTools.md`.
 *
 * State per call: claim → run the handler → complete (or fail / release) → emit; with `order: 'calls'`, the
 * results that wait for an earlier one. Unsubscribing aborts the handlers' `signal` and writes nothing more
 * (a write already sent may still land): a claim whose handler was cut off expires after `leaseMs`, as if its
 * process had crashed.
 *
 * Every call gets exactly one result under its own call id, repeats too: a `tool-call-repeat` of
 * `dedupeByEffectKey` (or a second call with a key this subscription already ran) never runs its handler; it
 * is answered with its key's outcome, from this subscription or from the ledger.
 *
 * Leases: while a handler runs and until its outcome is recorded, its claim's lease is renewed every `leaseMs / 3`
 * (when the ledger has `renew`; the next renewal goes out only once the previous one answered), so that nobody
 * takes over a live handler. When a renewal says the lease is lost (or renewals keep failing past the lease)
 * while the handler runs, its `signal` is aborted with an `EffectError` `lease-lost` and its result carries `leaseLost: true`;
 * so does a result whose completion was fenced off. `handlerTimeoutMs` bounds a handler.
 *
 * Recording the outcome: the handler has run, so a `complete`, `fail` or `release` that fails with a retryable
 * error (a ledger that got no answer, `ledger-timeout`; memory full, `ledger-memory-full`; a lost connection; a lock
 * held, `ledger-busy`) is sent again under the same claim token, which every ledger takes twice safely: after
 * 100 ms, then twice as long each time (at most 2 s), five attempts in all, while the lease is renewed and
 * never once it would have ended. The handler never runs again within the run.
 *
 * The outcomes:
 * - `executed`: the handler ran now; `reclaimed: true` when it took over an expired claim (in doubt: see
 *   `inDoubt`); `leaseLost: true` when its lease was lost while it ran (its result is not the recorded one).
 * - `replayed`: the effect ran before (in an earlier run, or under an earlier call of this turn with the same
 *   key); `result` is the recorded one.
 * - `failed`: the handler threw (`replayed: false`, with `cause`), its result cannot be stored (`unstorable-result`:
 *   not JSON data, nested deeper than 256 levels, or too big; recorded, since the effect ran, so a rerun replays
 *   the failure and never runs the handler again), or its recorded failure was replayed (also
 *   for a repeat whose key left no record anywhere: `NoRecordedResultError`); `handler-timeout` past
 *   `handlerTimeoutMs`; `in-doubt` for a reclaimed claim with `inDoubt: 'report'`; `lease-lost`
 *   (with `leaseLost: true`) when the handler failed after its lease was lost.
 * - `unknown-tool`: no handler has that name; the ledger is not touched.
 * - `in-progress`: another holder is running it (only with `inProgress: 'report'`).
 *
 * The stream errors only when the ledger itself fails: a claim that fails (nothing ran), a write that records an
 * outcome and still fails after its attempts above, or refuses for good (`retryable: false`); the effect's record
 * is then unknown (the write may still land), and an unrecorded claim expires after its lease, so the next run
 * takes it over as in doubt. Or with an `EffectError` `missing-effect-key` for a call without an effect key.
 *
 * ## Example
 * ```ts
 * import { cleanTurn } from 'cleanturn';
 * import { executeTools } from 'cleanturn/effects';
 * import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
 *
 * const ledger = new SqliteEffectLedger({ database: 'effects.db' });
 * providerEvents$
 *   .pipe(
 *     cleanTurn({ turnId: 'turn-42' }),
 *     executeTools(
 *       {
 *         issue_refund: async (args, { effectKey, signal }) =>
 *           payments.refund(RefundArgs.parse(args).order_id, { idempotencyKey: effectKey, signal }),
 *       },
 *       { turnId: 'turn-42', ledger },
 *     ),
 *   )
 *   .subscribe((r) => console.log(r.call.name, r.outcome));
 * ```
 *
 * @see {@link MemoryEffectLedger}, `SqliteEffectLedger` and `RedisEffectLedger`; {@link EffectLedger} for the
 *   promises a ledger keeps.
 * @param handlers Tool handlers by tool name.
 * @param options `turnId`, and optionally `ledger`, `concurrency`, `order`, `leaseMs`, `handlerTimeoutMs`,
 *   `inDoubt`, `inProgress`, `pollMs`, `recordFailure`, `telemetry`.
 * @returns An operator from the clean turn stream to one `tool-result` per tool call.
 */
export function executeTools(
  handlers: ToolHandlers,
  options: ExecuteToolsOptions,
): OperatorFunction<TurnEvent, ToolResultEvent> {
  const { executor, concurrency, order } = checkOptions(handlers, options);
  const { telemetry } = executor;
  return function executeToolsOperator(source) {
    return defer(() => {
      // Keys whose calls this subscription has started: a later call with one of them is a repeat.
      const started = new Set<string>();
      // The outcome of each key's call, once it is out: what a repeat of the key is answered with.
      const answers = new Map<string, ToolResultEvent>();
      const calls = source.pipe(
        filter(isReleasedCall),
        map((call) => markRepeat(call, started)),
      );
      const run = ({ call, repeat }: StartedCall) =>
        runCall(executor, call, repeat, answers).pipe(
          tap((result) => {
            if (!answers.has(result.effectKey) && answersRepeats(result))
              answers.set(result.effectKey, result);
            if (telemetry !== undefined) observeReplay(telemetry, executor.turnId, result);
          }),
        );
      if (order === 'completion' || concurrency === 1) return calls.pipe(mergeMap(run, concurrency));
      return calls.pipe(inCallOrder(run, concurrency));
    });
  };
}

/** What every call of one `executeTools()` reads: its handlers and its options, checked, with their defaults. */
interface Executor {
  handlers: ToolHandlers;
  turnId: string;
  ledger: EffectLedger;
  leaseMs: number;
  pollMs: number;
  handlerTimeoutMs: number | undefined;
  inDoubt: 'run' | 'report';
  inProgress: 'wait' | 'report';
  recordFailure: (error: unknown) => boolean;
  telemetry: ToolObserver | undefined;
}

/** A call as the operator met it: `repeat` when its key already ran (or started) in this subscription. */
interface StartedCall {
  call: ReleasedCall;
  repeat: boolean;
}

/**
 * Checks the options of {@link executeTools} and fills in their defaults.
 *
 * @throws {UsageError} for a duration that is not a positive number, an `inDoubt` that is neither `'run'` nor
 *   `'report'`, or a `concurrency` that is not a positive integer (or infinity).
 */
function checkOptions(
  handlers: ToolHandlers,
  options: ExecuteToolsOptions,
): { executor: Executor; concurrency: number; order: 'calls' | 'completion' } {
  const {
    turnId,
    ledger = new MemoryEffectLedger(),
    concurrency = 1,
    order = 'calls',
    inProgress = 'wait',
    recordFailure = (error: unknown) => !isRetryable(error),
  } = options;
  const leaseMs = checkDuration('executeTools', 'leaseMs', options.leaseMs ?? DEFAULT_LEASE_MS);
  const pollMs = checkDuration('executeTools', 'pollMs', options.pollMs ?? DEFAULT_POLL_MS);
  const handlerTimeoutMs =
    options.handlerTimeoutMs === undefined
      ? undefined
      : checkDuration('executeTools', 'handlerTimeoutMs', options.handlerTimeoutMs);
  const inDoubt = options.inDoubt ?? 'run';
  checkOneOf('executeTools', 'inDoubt', inDoubt, ['run', 'report']);
  const { telemetry } = options;
  checkOption(
    telemetry === undefined ||
      (typeof telemetry === 'object' &&
        telemetry !== null &&
        typeof telemetry.run === 'function' &&
        typeof telemetry.replayed === 'function'),
    'executeTools',
    'telemetry',
    'a tool observer (with run and replayed), as turnTelemetry() makes',
    telemetry,
  );
  checkOption(
    concurrency >= 1 && (Number.isInteger(concurrency) || concurrency === Number.POSITIVE_INFINITY),
    'executeTools',
    'concurrency',
    'an integer >= 1 or Infinity',
    concurrency,
  );
  const executor = {
    handlers,
    turnId,
    ledger,
    leaseMs,
    pollMs,
    handlerTimeoutMs,
    inDoubt,
    inProgress,
    recordFailure,
    telemetry,
  };
  return { executor, concurrency, order };
}

/** Whether a clean turn event is a tool call to answer: a `tool-call` or a `tool-call-repeat`. */
function isReleasedCall(event: TurnEvent): event is ReleasedCall {
  return event.type === 'tool-call' || event.type === 'tool-call-repeat';
}

/**
 * Marks a call as a repeat when it is a `tool-call-repeat` or its key was started before in this subscription
 * (`started`, which it joins).
 *
 * @throws {EffectError} `missing-effect-key` for a call without an effect key.
 */
function markRepeat(call: ReleasedCall, started: Set<string>): StartedCall {
  if (typeof call.effectKey !== 'string') throw missingEffectKeyError(call.name);
  const repeat = call.type === 'tool-call-repeat' || started.has(call.effectKey);
  started.add(call.effectKey);
  return { call, repeat };
}

/**
 * Runs the calls `concurrency` at a time and emits their results in the order of the calls (`order: 'calls'`):
 * a result that is ready early waits until the ones before it are out.
 */
function inCallOrder<C>(
  run: (call: C) => Observable<ToolResultEvent>,
  concurrency: number,
): OperatorFunction<C, ToolResultEvent> {
  return (calls) => {
    // Results that are ready, by call index, waiting for the calls before them.
    const ready = new Map<number, ToolResultEvent>();
    // The index of the next result to emit.
    let next = 0;
    return calls.pipe(
      mergeMap((call, index) => run(call).pipe(map((result) => [index, result] as const)), concurrency),
      mergeMap(([index, result]) => {
        ready.set(index, result);
        const out: ToolResultEvent[] = [];
        for (let r = ready.get(next); r !== undefined; r = ready.get(next)) {
          ready.delete(next);
          next++;
          out.push(r);
        }
        return out;
      }),
    );
  };
}

/**
 * Claims the call's key and acts on the answer ({@link claimStep}); waits and asks again while another holder
 * runs it. A repeat (its key already ran) never runs its handler: it is answered from `answers`, the outcomes
 * of this subscription's calls by key, or from the ledger's record.
 */
function runCall(
  x: Executor,
  call: ReleasedCall,
  repeat: boolean,
  answers: ReadonlyMap<string, ToolResultEvent>,
): Observable<ToolResultEvent> {
  if (repeat) {
    const answered = answers.get(call.effectKey);
    if (answered !== undefined) return of(replay(call, answered));
  }
  const handler = Object.hasOwn(x.handlers, call.name) ? x.handlers[call.name] : undefined;
  if (handler === undefined) return of(unknownToolResult(call));
  const policy = { inProgress: x.inProgress, inDoubt: x.inDoubt };
  const claimAndAct = (): Observable<ToolResultEvent> =>
    claim(x, call).pipe(
      mergeMap(({ claimed, sentAt }): Observable<ToolResultEvent> => {
        const step = claimStep(call, repeat, claimed, policy);
        switch (step.type) {
          case 'answer':
            return of(step.result);
          case 'wait':
            return timer(pollDelay(x.pollMs, step.until, Date.now())).pipe(mergeMap(claimAndAct));
          case 'in-doubt':
            return reportInDoubt(x, call as KeyedToolCall, step.token, sentAt);
          case 'run':
            return execute(x, call as KeyedToolCall, handler, step.token, step.reclaimed, sentAt);
          case 'give-back':
            // Answered from this subscription's outcome of the key once the claim is given back.
            return awaited(() => x.ledger.release(x.turnId, call.effectKey, step.token)).pipe(
              map(() => unrecordedRepeat(call, answers.get(call.effectKey))),
            );
        }
      }),
    );
  return claimAndAct();
}

/** Sends one claim of the call's key; emits its answer with when it was sent. */
function claim(x: Executor, call: ReleasedCall) {
  return defer(() => {
    // The lease runs at least `leaseMs` from when the claim was sent.
    const sentAt = Date.now();
    return awaitedCancellable((signal) =>
      x.ledger.claim(x.turnId, call.effectKey, { leaseMs: x.leaseMs, signal }),
    ).pipe(map((claimed) => ({ claimed, sentAt })));
  });
}

/** Records a reclaimed key as in doubt (`inDoubt: 'report'`), without running its handler. */
function reportInDoubt(
  x: Executor,
  call: KeyedToolCall,
  token: string,
  claimedAt: number,
): Observable<ToolResultEvent> {
  const endsAt = claimedAt + x.leaseMs;
  return settle(x, 'fail', call, token, effectInDoubtError(x.turnId, call.effectKey), false, () => endsAt);
}

/**
 * Runs the handler of a claimed call and records its outcome, renewing the claim's lease from the claim until
 * the outcome is recorded (or the subscriber unsubscribes).
 */
function execute(
  x: Executor,
  call: KeyedToolCall,
  handler: ToolHandler,
  token: string,
  reclaimed: boolean,
  claimedAt: number,
): Observable<ToolResultEvent> {
  const context = { effectKey: call.effectKey, turnId: x.turnId, call, reclaimed };
  return defer(() => {
    // The handler's signal: aborted for a lost lease, a timeout, or an unsubscribe while it runs.
    const controller = new AbortController();
    // Whether the handler has settled (or timed out): a lease lost after that aborts nothing.
    let handled = false;
    const terms = { turnId: x.turnId, effectKey: call.effectKey, token, leaseMs: x.leaseMs, claimedAt };
    const lease = keepLease(x.ledger, terms, () => {
      if (!handled) controller.abort(leaseLostError(x.turnId, call.effectKey));
    });
    const timed = runTimed(handler, call, context, controller, x.handlerTimeoutMs);
    return (x.telemetry === undefined ? timed : observedRun(x.telemetry, x.turnId, call, timed)).pipe(
      mergeMap((run) => {
        handled = true;
        return recordRun(x, call, token, reclaimed, run, lease);
      }),
      finalize(() => lease.end()),
    );
  });
}

/**
 * Tells the observer that the handler runs now (when the run is subscribed) and how it settled: its result, what
 * it threw, a timeout, or an unsubscribe before it settled. Nothing of the call's effect key is passed on.
 */
function observedRun(
  telemetry: ToolObserver,
  turnId: string,
  call: KeyedToolCall,
  run: Observable<TimedRun>,
): Observable<TimedRun> {
  return defer(() => {
    const scope = quietly(() => telemetry.run({ turnId, name: call.name, callId: call.id, args: call.args }));
    if (scope === undefined) return run;
    let ended = false;
    const end = (result: { error?: unknown; result?: unknown; abandoned?: boolean }) => {
      if (ended) return;
      ended = true;
      quietly(() => scope.end(result));
    };
    return run.pipe(
      tap((timed) => {
        if ('timedOut' in timed) end({ error: timed.timedOut });
        else if (timed.settled.ok) end({ result: timed.settled.value });
        else end({ error: timed.settled.error });
      }),
      finalize(() => end({ abandoned: true })),
    );
  });
}

/** Tells the observer of a call answered with its key's recorded outcome instead of running its handler. */
function observeReplay(telemetry: ToolObserver, turnId: string, result: ToolResultEvent): void {
  const failed = result.outcome === 'failed' && result.replayed;
  if (result.outcome !== 'replayed' && !failed) return;
  quietly(() => telemetry.replayed({ turnId, name: result.call.name, callId: result.call.id, failed }));
}

/**
 * Records how a handler run ended ({@link settledStep}) and emits its result: a timeout writes nothing (the
 * handler may still be running), a result is completed, a failure is recorded or released as `recordFailure`
 * says, and one after a lost lease writes nothing.
 */
function recordRun(
  x: Executor,
  call: KeyedToolCall,
  token: string,
  reclaimed: boolean,
  run: TimedRun,
  lease: Lease,
): Observable<ToolResultEvent> {
  if ('timedOut' in run) {
    // The handler may still be running: leave the claim to expire, as a crashed holder's.
    lease.end();
    return of(failedResult(call, serializeError(run.timedOut), run.timedOut, false));
  }
  const lost = lease.lost;
  lease.settling();
  const endsAt = () => lease.endsAt;
  const step = settledStep(call, x.turnId, run.settled, lost);
  switch (step.type) {
    case 'complete':
      return complete(x, call, token, step.value, reclaimed, lost, endsAt);
    case 'lost':
      // Aborted because the lease was lost: another holder's record (or claim) stands; write nothing.
      return of(step.result);
    case 'failed': {
      let recorded: boolean;
      try {
        recorded = x.recordFailure(step.error);
      } catch (error) {
        return throwError(() => error);
      }
      return settle(x, recorded ? 'fail' : 'release', call, token, step.error, false, endsAt);
    }
  }
}

/** Records a handler's result (`complete`) and emits its `executed` result ({@link completeFailure}). */
function complete(
  x: Executor,
  call: KeyedToolCall,
  token: string,
  value: unknown,
  reclaimed: boolean,
  lost: boolean,
  endsAt: () => number,
): Observable<ToolResultEvent> {
  return defer(() => {
    // Checked here too, so that a ledger of one's own that forgets to check cannot store a non-JSON result.
    encodeResult(value);
    return record(() => x.ledger.complete(x.turnId, call.effectKey, token, value), endsAt);
  }).pipe(
    map(() => executedResult(call, value, reclaimed, lost)),
    catchError((error: unknown) => {
      switch (completeFailure(error)) {
        case 'record-failure':
          // The effect ran, but its result cannot be stored: record that as a failure, so that no later run
          // repeats an effect known to have happened.
          return settle(x, 'fail', call, token, error, lost, endsAt);
        case 'lease-lost':
          // Another holder took the key over after our lease was lost; its record stands, our result is real.
          return of(executedResult(call, value, reclaimed, true));
        case 'rethrow':
          return throwError(() => error);
      }
    }),
  );
}

/** Records (`fail`) or releases a failed call and emits its `failed` result. */
function settle(
  x: Executor,
  how: 'fail' | 'release',
  call: KeyedToolCall,
  token: string,
  cause: unknown,
  lost: boolean,
  endsAt: () => number,
): Observable<ToolResultEvent> {
  const error = serializeError(cause);
  return record(
    () =>
      how === 'fail'
        ? x.ledger.fail(x.turnId, call.effectKey, token, error)
        : x.ledger.release(x.turnId, call.effectKey, token),
    endsAt,
  ).pipe(
    map(() => failedResult(call, error, cause, lost)),
    // A write fenced off: another holder took the key over after our lease was lost; its record stands.
    catchError((e: unknown) =>
      e instanceof EffectError && e.code === 'lease-lost'
        ? of(failedResult(call, error, cause, true))
        : throwError(() => e),
    ),
  );
}
