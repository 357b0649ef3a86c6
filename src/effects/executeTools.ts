import type { KeyedToolCall, ReleasedCall, TurnEvent } from 'cleanturn';
import { isRetryable } from 'cleanturn';
import {
  catchError,
  defaultIfEmpty,
  defer,
  filter,
  finalize,
  from,
  isObservable,
  map,
  mergeMap,
  Observable,
  type OperatorFunction,
  of,
  tap,
  throwError,
  timer,
} from 'rxjs';
import { DEFAULT_LEASE_MS } from './defaults.js';
import {
  EffectInDoubtError,
  EffectResultError,
  HandlerTimeoutError,
  LeaseLostError,
  MissingEffectKeyError,
} from './errors.js';
import { encodeResult, serializeError } from './json.js';
import { checkDuration } from './ledgerRules.js';
import { MemoryEffectLedger } from './MemoryEffectLedger.js';
import type {
  Awaitable,
  EffectLedger,
  JsonValue,
  SerializedError,
  ToolContext,
  ToolExecutedEvent,
  ToolFailedEvent,
  ToolHandler,
  ToolHandlers,
  ToolResultEvent,
} from './types.js';

/** Options of {@link executeTools}. */
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
   * How long a handler may run, in milliseconds; then its `signal` is aborted (reason: {@link HandlerTimeoutError})
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
   * - `'report'`: run nothing; record the key as failed with {@link EffectInDoubtError} and report that, so that
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
}

/** Default `pollMs`. */
const DEFAULT_POLL_MS = 100;

/** A handler's outcome as a value: handler failures are results, not stream errors. */
type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** How a handler run ended: it settled, or `handlerTimeoutMs` ran out first. */
type TimedRun = { settled: Settled } | { timedOut: HandlerTimeoutError };

/** The claim whose lease {@link keepLease} keeps: its record, its token, and when and for how long it was taken. */
interface LeaseTerms {
  turnId: string;
  effectKey: string;
  token: string;
  leaseMs: number;
  /** When the claim was sent (epoch milliseconds): the lease runs `leaseMs` from then until renewed. */
  claimedAt: number;
}

/** A claim's lease while its call runs and is recorded (see {@link keepLease}). */
interface Lease {
  /** When the lease ends as far as this holder knows (epoch ms): `leaseMs` after the last renewal that succeeded. */
  readonly endsAt: number;
  /** Whether the lease was lost while the handler ran: a renewal said so, or none succeeded until it ended. */
  readonly lost: boolean;
  /** The handler has settled: from now on the lease is only kept while the outcome is recorded. */
  settling(): void;
  /** Stops renewing; a renewal under way is aborted. */
  end(): void;
}

/** How many times a write that records an outcome (`complete`, `fail`, `release`) is sent, at most. */
const SETTLE_ATTEMPTS = 5;
/** The pause before such a write is sent again the first time; it doubles after each failure. */
const SETTLE_FIRST_PAUSE_MS = 100;
/** The longest pause between two of those attempts. */
const SETTLE_MAX_PAUSE_MS = 2_000;

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
 * while the handler runs, its `signal` is aborted with `LeaseLostError` and its result carries `leaseLost: true`;
 * so does a result whose completion was fenced off. `handlerTimeoutMs` bounds a handler.
 *
 * Recording the outcome: the handler has run, so a `complete`, `fail` or `release` that fails with a retryable
 * error (a ledger that got no answer, `LedgerTimeoutError`; memory full; a lost connection; a lock held,
 * `LedgerBusyError`) is sent again under the same claim token, which every ledger takes twice safely: after
 * 100 ms, then twice as long each time (at most 2 s), five attempts in all, while the lease is renewed and
 * never once it would have ended. The handler never runs again within the run.
 *
 * The outcomes:
 * - `executed`: the handler ran now; `reclaimed: true` when it took over an expired claim (in doubt: see
 *   `inDoubt`); `leaseLost: true` when its lease was lost while it ran (its result is not the recorded one).
 * - `replayed`: the effect ran before (in an earlier run, or under an earlier call of this turn with the same
 *   key); `result` is the recorded one.
 * - `failed`: the handler threw (`replayed: false`, with `cause`), its result cannot be stored (`EffectResultError`:
 *   not JSON data, nested deeper than 256 levels, or too big; recorded, since the effect ran, so a rerun replays
 *   the failure and never runs the handler again), or its recorded failure was replayed (also
 *   for a repeat whose key left no record anywhere: `NoRecordedResultError`); `HandlerTimeoutError` past
 *   `handlerTimeoutMs`; `EffectInDoubtError` for a reclaimed claim with `inDoubt: 'report'`; `LeaseLostError`
 *   (with `leaseLost: true`) when the handler failed after its lease was lost.
 * - `unknown-tool`: no handler has that name; the ledger is not touched.
 * - `in-progress`: another holder is running it (only with `inProgress: 'report'`).
 *
 * The stream errors only when the ledger itself fails: a claim that fails (nothing ran), a write that records an
 * outcome and still fails after its attempts above, or refuses for good (`retryable: false`); the effect's record
 * is then unknown (the write may still land), and an unrecorded claim expires after its lease, so the next run
 * takes it over as in doubt. Or with {@link MissingEffectKeyError} for a call without an effect key.
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
 *   `inDoubt`, `inProgress`, `pollMs`, `recordFailure`.
 * @returns An operator from the clean turn stream to one `tool-result` per tool call.
 */
export function executeTools(
  handlers: ToolHandlers,
  options: ExecuteToolsOptions,
): OperatorFunction<TurnEvent, ToolResultEvent> {
  const {
    turnId,
    ledger = new MemoryEffectLedger(),
    concurrency = 1,
    order = 'calls',
    inProgress = 'wait',
    recordFailure = (error: unknown) => !isRetryable(error),
  } = options;
  const leaseMs = checkDuration(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs');
  const pollMs = checkDuration(options.pollMs ?? DEFAULT_POLL_MS, 'pollMs');
  const handlerTimeoutMs =
    options.handlerTimeoutMs === undefined
      ? undefined
      : checkDuration(options.handlerTimeoutMs, 'handlerTimeoutMs');
  const inDoubt = options.inDoubt ?? 'run';
  if (inDoubt !== 'run' && inDoubt !== 'report') {
    throw new RangeError(`inDoubt must be 'run' or 'report', got ${String(inDoubt)}`);
  }
  if (!(concurrency >= 1 && (Number.isInteger(concurrency) || concurrency === Number.POSITIVE_INFINITY))) {
    throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
  }

  /**
   * Claims the call's key and acts on the answer; waits and asks again while another holder runs it. A repeat
   * (its key already ran) never runs its handler: it is answered from `answers`, the outcomes of this
   * subscription's calls by key, or from the ledger's record.
   */
  function runCall(
    call: ReleasedCall,
    repeat: boolean,
    answers: ReadonlyMap<string, ToolResultEvent>,
  ): Observable<ToolResultEvent> {
    const base = { type: 'tool-result', effectKey: call.effectKey, call } as const;
    if (repeat) {
      const answered = answers.get(call.effectKey);
      if (answered !== undefined) return of(replay(call, answered));
    }
    const handler = Object.hasOwn(handlers, call.name) ? handlers[call.name] : undefined;
    if (handler === undefined) {
      const error: SerializedError = {
        name: 'UnknownToolError',
        message: `no handler for tool ${call.name}`,
        retryable: false,
      };
      return of({ ...base, outcome: 'unknown-tool', error });
    }
    const attempt = (): Observable<ToolResultEvent> =>
      defer(() => {
        // The lease runs at least `leaseMs` from when the claim was sent.
        const sentAt = Date.now();
        return awaitedCancellable((signal) => ledger.claim(turnId, call.effectKey, { leaseMs, signal })).pipe(
          map((claim) => ({ claim, sentAt })),
        );
      }).pipe(
        mergeMap(({ claim, sentAt }): Observable<ToolResultEvent> => {
          switch (claim.status) {
            case 'completed':
              return of({ ...base, outcome: 'replayed', result: claim.result });
            case 'failed':
              return of({ ...base, outcome: 'failed', error: claim.error, replayed: true });
            case 'in-progress':
              // A repeat waits for its key's outcome whatever the option: its call needs a real answer.
              if (inProgress === 'report' && !repeat)
                return of({ ...base, outcome: 'in-progress', until: claim.until });
              return timer(Math.max(1, Math.min(pollMs, claim.until - Date.now()))).pipe(mergeMap(attempt));
            case 'claimed':
              // Not a repeat: a `tool-call` whose key this subscription meets for the first time.
              if (!repeat) {
                if (claim.reclaimed && inDoubt === 'report')
                  return reportInDoubt(call as KeyedToolCall, claim.token, sentAt);
                return execute(call as KeyedToolCall, handler, claim.token, claim.reclaimed, sentAt);
              }
              // A repeat whose key has no record: give the claim back and answer from this subscription's
              // outcome of the key (a failure that was not recorded), or say that there is none.
              return awaited(() => ledger.release(turnId, call.effectKey, claim.token)).pipe(
                map(() => {
                  const answered = answers.get(call.effectKey);
                  if (answered !== undefined) return replay(call, answered);
                  const error: SerializedError = {
                    name: 'NoRecordedResultError',
                    message: `${call.name} repeats effect ${call.effectKey}, whose result was not recorded`,
                    retryable: false,
                  };
                  return { ...base, outcome: 'failed', error, replayed: true } as const;
                }),
              );
          }
        }),
      );
    return attempt();
  }

  /** Records a reclaimed key as in doubt (`inDoubt: 'report'`), without running its handler. */
  function reportInDoubt(call: KeyedToolCall, token: string, claimedAt: number): Observable<ToolResultEvent> {
    const endsAt = claimedAt + leaseMs;
    return settle('fail', call, token, new EffectInDoubtError(turnId, call.effectKey), false, () => endsAt);
  }

  /**
   * Runs the handler of a claimed call and records its outcome, renewing the claim's lease from the claim until
   * the outcome is recorded (or the subscriber unsubscribes).
   */
  function execute(
    call: KeyedToolCall,
    handler: ToolHandler,
    token: string,
    reclaimed: boolean,
    claimedAt: number,
  ): Observable<ToolResultEvent> {
    const base = { type: 'tool-result', effectKey: call.effectKey, call } as const;
    const context = { effectKey: call.effectKey, turnId, call, reclaimed };
    return defer(() => {
      // The handler's signal: aborted for a lost lease, a timeout, or an unsubscribe while it runs.
      const controller = new AbortController();
      // Whether the handler has settled (or timed out): a lease lost after that aborts nothing.
      let handled = false;
      const terms = { turnId, effectKey: call.effectKey, token, leaseMs, claimedAt };
      const lease = keepLease(ledger, terms, () => {
        if (!handled) controller.abort(new LeaseLostError(turnId, call.effectKey));
      });
      const endsAt = () => lease.endsAt;
      return runTimed(handler, call, context, controller).pipe(
        mergeMap((run): Observable<ToolResultEvent> => {
          handled = true;
          if ('timedOut' in run) {
            // The handler may still be running: leave the claim to expire, as a crashed holder's.
            lease.end();
            const error = serializeError(run.timedOut);
            return of({ ...base, outcome: 'failed', error, replayed: false, cause: run.timedOut });
          }
          const settled = run.settled;
          const lost = lease.lost;
          lease.settling();
          if (settled.ok) {
            const executed: ToolExecutedEvent = {
              ...base,
              outcome: 'executed',
              result: settled.value as JsonValue | undefined,
              reclaimed,
            };
            const lostLease: ToolExecutedEvent = { ...executed, leaseLost: true };
            return defer(() => {
              // Checked here too, so that a ledger of one's own that forgets to check cannot store a non-JSON result.
              encodeResult(settled.value);
              return record(() => ledger.complete(turnId, call.effectKey, token, settled.value), endsAt);
            }).pipe(
              map(() => (lost ? lostLease : executed)),
              catchError((error: unknown) => {
                // The effect ran, but its result cannot be stored: record that as a failure, so that no later run
                // repeats an effect known to have happened.
                if (error instanceof EffectResultError)
                  return settle('fail', call, token, error, lost, endsAt);
                // Another holder took the key over after our lease was lost; its record stands, our result is real.
                if (error instanceof LeaseLostError) return of(lostLease);
                return throwError(() => error);
              }),
            );
          }
          if (lost) {
            // Aborted because the lease was lost: another holder's record (or claim) stands; write nothing.
            const error = serializeError(new LeaseLostError(turnId, call.effectKey));
            return of({
              ...base,
              outcome: 'failed',
              error,
              replayed: false,
              cause: settled.error,
              leaseLost: true,
            });
          }
          let recorded: boolean;
          try {
            recorded = recordFailure(settled.error);
          } catch (error) {
            return throwError(() => error);
          }
          return settle(recorded ? 'fail' : 'release', call, token, settled.error, false, endsAt);
        }),
        finalize(() => lease.end()),
      );
    });
  }

  /**
   * Runs a handler within `handlerTimeoutMs`: emits its outcome once it settles, or `timedOut` at the deadline
   * (its signal then aborted with {@link HandlerTimeoutError}). The timer is cleared when the handler settles or
   * the subscriber unsubscribes.
   */
  function runTimed(
    handler: ToolHandler,
    call: KeyedToolCall,
    context: Omit<ToolContext, 'signal'>,
    controller: AbortController,
  ): Observable<TimedRun> {
    const run = runHandler(handler, call.args, context, controller).pipe(map((settled) => ({ settled })));
    if (handlerTimeoutMs === undefined) return run;
    return new Observable<TimedRun>((subscriber) => {
      const deadline = setTimeout(() => {
        const error = new HandlerTimeoutError(call.name, call.effectKey, handlerTimeoutMs);
        // Aborted with the timeout first: unsubscribing would abort it without a reason.
        controller.abort(error);
        inner.unsubscribe();
        subscriber.next({ timedOut: error });
        subscriber.complete();
      }, handlerTimeoutMs);
      const inner = run.subscribe({
        next: (value) => {
          clearTimeout(deadline);
          subscriber.next(value);
        },
        complete: () => subscriber.complete(),
      });
      return () => {
        clearTimeout(deadline);
        inner.unsubscribe();
      };
    });
  }

  /** Records (`fail`) or releases a failed call and emits its `failed` result. */
  function settle(
    how: 'fail' | 'release',
    call: KeyedToolCall,
    token: string,
    cause: unknown,
    lost: boolean,
    endsAt: () => number,
  ): Observable<ToolResultEvent> {
    const error = serializeError(cause);
    const failed: ToolFailedEvent = {
      type: 'tool-result',
      effectKey: call.effectKey,
      call,
      outcome: 'failed',
      error,
      replayed: false,
      cause,
    };
    const lostLease: ToolFailedEvent = { ...failed, leaseLost: true };
    return record(
      () =>
        how === 'fail'
          ? ledger.fail(turnId, call.effectKey, token, error)
          : ledger.release(turnId, call.effectKey, token),
      endsAt,
    ).pipe(
      map(() => (lost ? lostLease : failed)),
      catchError((e: unknown) => (e instanceof LeaseLostError ? of(lostLease) : throwError(() => e))),
    );
  }

  return function executeToolsOperator(source) {
    return defer(() => {
      // Keys whose calls this subscription has started: a later call with one of them is a repeat.
      const started = new Set<string>();
      // The outcome of each key's call, once it is out: what a repeat of the key is answered with.
      const answers = new Map<string, ToolResultEvent>();
      const calls = source.pipe(
        filter(
          (event): event is ReleasedCall => event.type === 'tool-call' || event.type === 'tool-call-repeat',
        ),
        map((call) => {
          if (typeof call.effectKey !== 'string') throw new MissingEffectKeyError(call.name);
          const repeat = call.type === 'tool-call-repeat' || started.has(call.effectKey);
          started.add(call.effectKey);
          return { call, repeat };
        }),
      );
      const run = ({ call, repeat }: { call: ReleasedCall; repeat: boolean }) =>
        runCall(call, repeat, answers).pipe(
          tap((result) => {
            if (
              !answers.has(result.effectKey) &&
              result.outcome !== 'in-progress' &&
              result.outcome !== 'unknown-tool'
            )
              answers.set(result.effectKey, result);
          }),
        );
      if (order === 'completion' || concurrency === 1) return calls.pipe(mergeMap(run, concurrency));
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
    });
  };
}

/**
 * Sends a write that records a call's outcome (`complete`, `fail`, `release`) until it lands. The handler has
 * run, and every write is safe to send twice under its claim token, so a write that fails with a retryable
 * error (no answer, a lock held, memory full, a connection lost) is sent again after a growing pause (100 ms,
 * doubling), at most {@link SETTLE_ATTEMPTS} times in all and never once the lease would have ended (`endsAt`:
 * past it, another run may take the key over). Then the last error goes on. Unsubscribing cancels the pause.
 */
function record(write: () => Awaitable<void>, endsAt: () => number): Observable<void> {
  const attempt = (n: number): Observable<void> =>
    awaited(write).pipe(
      catchError((error: unknown) => {
        const left = endsAt() - Date.now();
        if (!isRetryable(error) || n >= SETTLE_ATTEMPTS || left <= 0) return throwError(() => error);
        // The pause ends by the lease's end at the latest; renewals meanwhile may move that end on.
        const pause = Math.min(SETTLE_FIRST_PAUSE_MS * 2 ** (n - 1), SETTLE_MAX_PAUSE_MS, left);
        return timer(pause).pipe(
          mergeMap(() => (Date.now() < endsAt() ? attempt(n + 1) : throwError(() => error))),
        );
      }),
    );
  return attempt(1);
}

/**
 * Keeps a claim's lease while its call runs and is recorded: renews it (when the ledger can) `leaseMs / 3` after
 * the previous renewal was sent, and never while one is under way, so renewals never overlap however long one
 * takes. While the handler runs, a renewal that answers `false`, or renewals that fail until the lease has
 * ended, count the lease as lost (`onLost` aborts the handler). Once it settled ({@link Lease.settling}), a
 * renewal that answers `false` only stops the heartbeat: the outcome may be recorded already, by a write whose
 * answer got lost, and the write sent again says which.
 */
function keepLease(ledger: EffectLedger, claim: LeaseTerms, onLost: () => void): Lease {
  const { turnId, effectKey, token, leaseMs, claimedAt } = claim;
  // Ends a renewal still waiting (for a lock) once the lease is no longer kept: none outlives it.
  const renewals = new AbortController();
  // When the last renewal that succeeded was sent (the claim, at first): the lease runs `leaseMs` from then.
  let renewedAt = claimedAt;
  // When the last renewal was sent: the next is due a beat after it.
  let sentAt = claimedAt;
  // Whether a renewal is under way (then the next waits for its answer).
  let renewing = false;
  let lost = false;
  let settling = false;
  // Whether the heartbeat has stopped (ended, lost, or refused while settling); at once without `renew`.
  let stopped = ledger.renew === undefined;
  // The one timer: the next renewal, or (while one is under way) the end of the lease.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const beatMs = Math.max(1, Math.floor(leaseMs / 3));
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    renewals.abort();
  };
  const lose = () => {
    if (stopped) return;
    stop();
    if (settling) return;
    lost = true;
    onLost();
  };
  const arm = () => {
    clearTimeout(timer);
    if (stopped) return;
    const end = renewedAt + leaseMs;
    const due = renewing ? end : Math.min(sentAt + beatMs, end);
    timer = setTimeout(tick, Math.max(0, due - Date.now()));
  };
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    if (Date.now() - renewedAt >= leaseMs) lose();
    else if (renewing) arm();
    else renew();
  };
  const renew = () => {
    const send = ledger.renew;
    if (send === undefined) return;
    const sent = Date.now();
    sentAt = sent;
    renewing = true;
    const answered = (ok: boolean) => {
      renewing = false;
      if (stopped) return;
      if (!ok) {
        lose();
        return;
      }
      renewedAt = Math.max(renewedAt, sent);
      arm();
    };
    // A renewal that failed (a network error, a timeout) is tried again at the next beat, until the lease ends.
    const failed = () => {
      renewing = false;
      arm();
    };
    try {
      const answer = send.call(ledger, turnId, effectKey, token, leaseMs, { signal: renewals.signal });
      if (isThenable(answer)) answer.then(answered, failed);
      else answered(answer);
    } catch {
      failed();
    }
    if (renewing) arm();
  };
  arm();
  return {
    get endsAt() {
      return renewedAt + leaseMs;
    },
    get lost() {
      return lost;
    },
    settling() {
      settling = true;
    },
    end: stop,
  };
}

/** The answer of a repeat: the outcome of its key's earlier call, under the repeat's own call. */
function replay(call: ReleasedCall, answered: ToolResultEvent): ToolResultEvent {
  const base = { type: 'tool-result', effectKey: call.effectKey, call } as const;
  switch (answered.outcome) {
    case 'executed':
    case 'replayed':
      return { ...base, outcome: 'replayed', result: answered.result };
    case 'failed':
      return { ...base, outcome: 'failed', error: answered.error, replayed: true };
    default:
      return { ...answered, call };
  }
}

/** A ledger answer as an observable: synchronous answers stay synchronous. */
function awaited<T>(call: () => Awaitable<T>): Observable<T> {
  return defer(() => {
    const value = call();
    return isThenable(value) ? from(value) : of(value);
  });
}

/**
 * As {@link awaited}, for a ledger call that can wait: unsubscribing before it answers aborts its `signal`, so
 * that a ledger waiting for a lock gives up and writes nothing for a turn that is gone.
 */
function awaitedCancellable<T>(call: (signal: AbortSignal) => Awaitable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    const inner = awaited(() => call(controller.signal)).subscribe(subscriber);
    return () => {
      inner.unsubscribe();
      controller.abort();
    };
  });
}

/**
 * Runs a handler and emits its outcome once as a {@link Settled} value. Accepts a plain value, a promise (or
 * any thenable) or an observable (its first value; none means `undefined`). The handler's `signal` is
 * `controller`'s (the caller aborts it for a lost lease or a timeout); unsubscribing before it settles aborts it.
 */
function runHandler(
  handler: ToolHandler,
  args: unknown,
  context: Omit<ToolContext, 'signal'>,
  controller: AbortController,
): Observable<Settled> {
  return new Observable<Settled>((subscriber) => {
    // Whether the handler has settled; only an unsettled handler is aborted on unsubscribe.
    let done = false;
    const settle = (settled: Settled) => {
      if (done || subscriber.closed) return;
      done = true;
      subscriber.next(settled);
      subscriber.complete();
    };
    const abort = () => {
      if (!done) controller.abort();
    };
    let output: unknown;
    try {
      output = handler(args, { ...context, signal: controller.signal });
    } catch (error) {
      settle({ ok: false, error });
      return;
    }
    if (isObservable(output)) {
      const inner = output.pipe(defaultIfEmpty(undefined)).subscribe({
        next: (value) => settle({ ok: true, value }),
        error: (error: unknown) => settle({ ok: false, error }),
      });
      return () => {
        abort();
        inner.unsubscribe();
      };
    }
    if (isThenable(output)) {
      output.then(
        (value) => settle({ ok: true, value }),
        (error: unknown) => settle({ ok: false, error }),
      );
    } else {
      settle({ ok: true, value: output });
    }
    return abort;
  });
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
