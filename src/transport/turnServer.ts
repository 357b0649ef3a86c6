import {
  catchError,
  config,
  defer,
  lastValueFrom,
  map,
  mergeAll,
  Observable,
  of,
  type Subscription,
  take,
  toArray,
} from 'rxjs';
import { CleanturnError, describeError, isRetryable } from '../errors.js';
import { errorName, isInstance, readString } from '../internal/describeError.js';
import { checkInteger, checkNumber, checkOption } from '../internal/options.js';
import { MAX_TIMER_DELAY } from '../internal/wait.js';
import {
  HANDED_OVER,
  lastEventIdError,
  runnerLostError,
  serverClosedError,
  sseFieldError,
  TransportError,
  turnStoppedError,
} from './errors.js';
import { checkTurnId, type TurnFailure, type TurnLog, type TurnLogEntry } from './turnLog.js';

/**
 * One server-sent event of a served turn, in the shape NestJS's `@Sse()` handlers return (`MessageEvent`): `id`
 * is `<turnId>:<seq>` with the turn id percent-encoded (`encodeURIComponent`: `turn-42:7`, `turn%2042%3A%E6%97%A5:7`),
 * so that it is printable ASCII without `:` whatever the turn id holds, never starts a line of its own, and is sent
 * back unchanged as the `Last-Event-ID` header. `type` says what `data` (JSON, one line) holds: an event of the clean
 * turn (`turn`), the turn's end (`end`, `{ "outcome": "completed" }`), or why it failed (`failed`, a
 * `TurnFailure`: the turn failed, or the log cannot give it, for good). Not `error`, which a browser's
 * `EventSource` keeps for its own connection errors. A failed message for a turn id that cannot be served (a
 * `TransportError` `turn-id-*`) has the id `''`.
 */
export interface TurnMessage {
  id: string;
  type: 'turn' | 'end' | 'failed';
  data: string;
}

/**
 * Options of {@link turnServer}.
 *
 * @inline
 */
export interface TurnServerOptions<E> {
  /** Where running turns keep their events for reconnecting clients: `memoryTurnLog()` or `redisTurnLog()`. */
  log: TurnLog<E>;
  /**
   * Called when the log refuses an entry of a running turn (its store is down): the turn is stopped, its end is
   * written as failed if the log takes it (its readers end), and the server forgets the run. Default: RxJS's `config.onUnhandledError` if set, else `console.error`
   * (never a thrown error: a store that is down must not crash the server).
   */
  onLogError?: (error: unknown, turnId: string) => void;
  /**
   * The bounds of taking over turns whose runner was lost, on a log with leases ({@link TurnLog.leaseMs}): a turn
   * is taken over at most `max` times (default 2) and only within `withinMs` of its first claim (default 10
   * minutes); past either, the reader that finds the lease lapsed ends the turn as failed with a
   * `TransportError` `runner-lost` instead, and its readers keep what they read.
   */
  takeover?: TakeoverBounds;
}

/**
 * How often, and for how long, {@link turnServer} takes over a turn whose runner was lost.
 *
 * @inline
 */
export interface TakeoverBounds {
  /** The most takeovers of one turn. Default 2; 0 never takes a turn over (it ends as failed at once). */
  max?: number;
  /** How long after its first claim a turn may still be taken over, in milliseconds. Default 600 000. */
  withinMs?: number;
}

/**
 * What a run is told: its stop signal, and, when it takes over a turn whose runner was lost, what that runner did.
 *
 * @inline
 */
export interface RunContext<E> {
  /** Aborts when the turn is asked to stop. */
  readonly signal: AbortSignal;
  /**
   * Set when this run takes over a turn whose runner was lost: `count` (1 for the first takeover) and the
   * `events` the turn's log holds, which every reader has read or will read. The run continues after them:
   * `runSteps({ resume: takeover.events })` goes on at the step in progress (with the same background response,
   * `StepContext.resumeFrom`, when the cut attempt read one; else with a reset) and never repeats a finished step.
   */
  readonly takeover?: { readonly count: number; readonly events: readonly E[] };
}

/**
 * What {@link TurnServer.serve} takes: the turn, and where the client is in it.
 *
 * @inline
 */
export interface ServeTurnOptions<E> {
  /** The turn's id, stable across reconnects (and across server instances that share the log). */
  turnId: string;
  /**
   * Runs the turn, e.g. `streamTurn(…)` then `executeTools(…)`: called once per turn id across every server
   * sharing the log, never per reconnect, and once more per takeover (its runner was lost: `context.takeover`).
   * The run is the server's, not the connection's: it goes on when the client goes away, so that a client that
   * comes back reads the rest.
   *
   * `signal` aborts when the turn is asked to stop ({@link TurnServer.stop}, here or on another server sharing the
   * log): pass it on as `streamTurn({ signal })`, so that the provider request is aborted at once and the turn ends
   * with a `TransportError` `turn-stopped`. A run that ignores it is unsubscribed, and its log ends the same way.
   */
  run: (context: RunContext<E>) => Observable<E>;
  /**
   * The request's `Last-Event-ID` header, when the client reconnects: it reads the events after it. An id of another
   * turn (or none) makes a first connection; an id of this turn whose position is not a canonical decimal seq
   * (`-1`, `0`, `1`, … up to `Number.MAX_SAFE_INTEGER`) is a `TransportError` `last-event-id`.
   */
  lastEventId?: string | null;
}

/** Serves turns as server-sent events that a reconnecting client resumes. */
export interface TurnServer<E> {
  /**
   * The turn's messages for one client connection: everything after `lastEventId` (or from the start), then each
   * new event, up to the end. The first connection of a turn id starts it (`run`); every other connection,
   * here or on another server sharing the log, only reads. Unsubscribing (the client went away) stops the
   * reading only. A turn id that is not a well-formed string of 1 to 256 UTF-16 code units, or a `lastEventId` that this server cannot have
   * issued, gets one `failed` message at once, and runs nothing.
   */
  serve(options: ServeTurnOptions<E>): Observable<TurnMessage>;
  /**
   * Stops turn `turnId` (a user's stop request, e.g. `POST /turns/<id>/stop`; a dropped connection is not one): the
   * run's `signal` aborts with `reason`, and the turn's log ends as failed with a `TransportError` `turn-stopped` (not
   * retryable), which its readers' clients get (`fromTurnSSE` errors with a `turn-stopped` too). A turn run by another server
   * is stopped through the log: a stop mark that its runner watches ({@link TurnLog.requestStop}); a log without
   * stop marks stops only the turns this server runs.
   *
   * @returns true when a running turn was asked to stop; false when none runs under that id (it ended, or never
   *   started), e.g. for a 404.
   */
  stop(turnId: string, reason?: string): Promise<boolean>;
  /** How many turns this server runs now. */
  readonly running: number;
  /**
   * Stops the turns this server runs (a shutdown); each one's log ends as failed (a `TransportError`
   * `server-closed`, retryable), so that its readers end too. With `handOver: true`, on a log with leases, nothing
   * is written instead: the runs stop, their leases lapse, and a reader on another instance takes each turn over
   * (a deploy that restarts instances one at a time loses no turn); their background responses are left
   * generating, not cancelled, for the runner that takes over.
   */
  close(options?: { handOver?: boolean }): Promise<void>;
}

/**
 * A server of turns over SSE whose clients may lose their connection: each turn runs once and its clean events go
 * to a {@link TurnLog}; each connection reads the log after the client's `Last-Event-ID`, so a client that
 * reconnects (to this instance or, with a shared log, another) reads the rest of the same turn, without a reset
 * and without a second provider request. Resets and repeats of the turn itself are events like the others.
 *
 * With NestJS, an `@Sse()` handler returns `turns.serve(…)` as it is; with Node's `http`, write each message with
 * {@link toSSE}. On the client, `fromTurnSSE` reconnects with `Last-Event-ID`.
 *
 * ## Example
 * ```ts
 * import { createServer } from 'node:http';
 * import { memoryTurnLog, streamTurn, toSSE, turnServer } from 'cleanturn/transport';
 *
 * const turns = turnServer({ log: memoryTurnLog() });
 * createServer((req, res) => {
 *   const turnId = new URL(req.url ?? '/', 'http://x').searchParams.get('turn') ?? 'turn-42';
 *   res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
 *   const subscription = turns
 *     .serve({ turnId, lastEventId: req.headers['last-event-id'] as string | undefined, run: () => streamTurn(options(turnId)) })
 *     .subscribe({ next: (message) => res.write(toSSE(message)), complete: () => res.end(), error: () => res.destroy() });
 *   res.on('close', () => subscription.unsubscribe());
 * }).listen(3000);
 * ```
 *
 * @param options The log.
 * @returns The server.
 */
export function turnServer<E>(options: TurnServerOptions<E>): TurnServer<E> {
  const server = new Server(options);
  // Plain functions, so that a caller may pass `turns.serve` on as it is.
  return {
    serve: (serveOptions) => server.serve(serveOptions),
    stop: (turnId, reason) => server.stop(turnId, reason),
    get running() {
      return server.running;
    },
    close: (closeOptions) => server.close(closeOptions),
  };
}

/**
 * The lease timings of a log that keeps leases: the runner renews a third of the way through, a quiet reader checks
 * four times per lease whether it lapsed (each at most as far apart as a timer holds: past it, a timer fires at
 * once). Undefined for a log without leases.
 */
function leaseTimings(log: TurnLog<unknown>): { renewMs: number; checkMs: number } | undefined {
  const leaseMs = log.renew !== undefined && log.takeOver !== undefined ? log.leaseMs : undefined;
  if (leaseMs === undefined) return undefined;
  checkNumber('turnServer', "the log's leaseMs", leaseMs, 'positive');
  return { renewMs: Math.min(leaseMs / 3, MAX_TIMER_DELAY), checkMs: Math.min(leaseMs / 4, MAX_TIMER_DELAY) };
}

/** The takeover bounds, with their defaults, checked. */
function takeoverBounds(bounds: TakeoverBounds | undefined): Required<TakeoverBounds> {
  const max = bounds?.max ?? 2;
  const withinMs = bounds?.withinMs ?? 600_000;
  checkInteger('turnServer', 'takeover.max', max, 0);
  checkOption(withinMs > 0, 'turnServer', 'takeover.withinMs', 'a number > 0', withinMs);
  return { max, withinMs };
}

/**
 * Reports an error of the log. A store that is down must not take the server down with it: the default reports,
 * and does not throw; nor does a callback that throws.
 */
function reportLogError(
  onLogError: TurnServerOptions<unknown>['onLogError'],
  error: unknown,
  turnId: string,
): void {
  try {
    if (onLogError !== undefined) {
      onLogError(error, turnId);
      return;
    }
  } catch (thrown) {
    error = thrown;
  }
  if (config.onUnhandledError) config.onUnhandledError(error);
  else console.error(`cleanturn: the turn log refused an entry of turn ${turnId}:`, error);
}

/** Where a run starts: at the log's next seq, and, for a takeover, with what the lost runner did. */
interface RunStart<E> {
  seq: number;
  takeover?: RunContext<E>['takeover'];
}

/** The turn server: the runs it holds, and how it serves, starts, takes over and stops them. */
class Server<E> implements TurnServer<E> {
  readonly #log: TurnLog<E>;
  readonly #onLogError: TurnServerOptions<E>['onLogError'];
  readonly #bounds: Required<TakeoverBounds>;
  readonly #lease: { renewMs: number; checkMs: number } | undefined;
  readonly #runs = new Map<string, Run>();

  constructor(options: TurnServerOptions<E>) {
    this.#log = options.log;
    this.#onLogError = options.onLogError;
    this.#bounds = takeoverBounds(options.takeover);
    this.#lease = leaseTimings(options.log);
  }

  get running(): number {
    return this.#runs.size;
  }

  serve({ turnId, run, lastEventId }: ServeTurnOptions<E>): Observable<TurnMessage> {
    // The id of the last entry this connection delivered (or the client had): a failed message carries it, so
    // that a client that reconnects anyway (a browser's EventSource does) reads on from there. Empty until the
    // turn id is known to be one.
    let last = '';
    return defer(async () => {
      checkTurnId(turnId);
      const prefix = idPrefixOf(turnId);
      last = `${prefix}:-1`;
      const after = positionOf(lastEventId, prefix, turnId);
      if (after !== undefined) last = `${prefix}:${after}`;
      // Only a first connection may start the turn: a client that names the turn in its Last-Event-ID had it
      // once, and must never start it again.
      if (after === undefined && (await this.#log.claim(turnId))) this.#start(turnId, run);
      return this.#follow(turnId, after ?? -1, run).pipe(
        map((entry) => {
          const message = messageOf(prefix, entry);
          last = message.id;
          return message;
        }),
      );
    }).pipe(
      mergeAll(),
      catchError((error: unknown) => {
        // An error that may pass (a timeout of the log) drops the connection: the client reconnects from its
        // last id. A final one is told, as a message, instead of a broken connection it would reconnect to.
        if (isRetryable(error)) throw error;
        return of<TurnMessage>({ id: last, type: 'failed', data: JSON.stringify(failureOf(error)) });
      }),
    );
  }

  async stop(turnId: string, reason = 'a stop was requested'): Promise<boolean> {
    checkTurnId(turnId);
    const record = this.#runs.get(turnId);
    if (record !== undefined) {
      if (record.ended) return false;
      record.stop(reason);
      return true;
    }
    return (await this.#log.requestStop?.(turnId, reason)) ?? false;
  }

  async close(closeOptions: { handOver?: boolean } = {}): Promise<void> {
    const closing = [...this.#runs.entries()];
    const handingOver = closeOptions.handOver === true && this.#lease !== undefined;
    for (const [turnId, record] of closing) {
      // A run that ended already has its end on the way; the others stop, and their log ends as failed (or, handed
      // over, is left for a reader elsewhere to take over once the lease lapses).
      const ended = record.ended;
      if (handingOver) handOver(record);
      else halt(record, false);
      if (ended || handingOver) continue;
      record.written = record.written.then(async () => {
        if (record.failed) return;
        try {
          const error = failureOf(serverClosedError(turnId));
          await this.#log.append(turnId, { seq: record.seq, end: 'failed', error });
        } catch (failure) {
          this.#logError(failure, turnId);
        }
      });
    }
    await Promise.all(closing.map(([, record]) => record.written));
    for (const [turnId, record] of closing) if (this.#runs.get(turnId) === record) this.#runs.delete(turnId);
  }

  #logError(error: unknown, turnId: string): void {
    reportLogError(this.#onLogError, error, turnId);
  }

  /** Starts turn `turnId`'s run here: its entries go to the log, its lease is renewed, its stop mark watched. */
  #start(turnId: string, run: ServeTurnOptions<E>['run'], from: RunStart<E> = { seq: 0 }): void {
    const stopping = new AbortController();
    const record: Run = {
      stopping,
      seq: from.seq,
      ended: false,
      failed: false,
      written: Promise.resolve(),
      source: undefined,
      watch: undefined,
      renewing: undefined,
      stop: (reason) => {
        if (record.ended) return;
        stopping.abort(reason);
        // A run that passed the signal on has ended on it (streamTurn errors with turn-stopped at once); one
        // that ignores it is ended here, the same way.
        if (record.ended) return;
        record.source?.unsubscribe();
        this.#write(turnId, record, {
          seq: record.seq++,
          end: 'failed',
          error: failureOf(turnStoppedError(reason)),
        });
      },
    };
    this.#runs.set(turnId, record);
    if (this.#lease !== undefined)
      record.renewing = setInterval(() => this.#renew(turnId, record), this.#lease.renewMs);
    const context: RunContext<E> =
      from.takeover === undefined
        ? { signal: stopping.signal }
        : { signal: stopping.signal, takeover: from.takeover };
    record.source = defer(() => run(context)).subscribe({
      next: (event) => this.#write(turnId, record, { seq: record.seq++, event }),
      error: (error: unknown) =>
        this.#write(turnId, record, { seq: record.seq++, end: 'failed', error: failureOf(error) }),
      complete: () => this.#write(turnId, record, { seq: record.seq++, end: 'completed' }),
    });
    // A stop asked of another server reaches this one, the runner, through the log's stop mark.
    if (!record.ended && this.#log.watchStop !== undefined) {
      const watch = this.#log.watchStop(turnId).subscribe({
        next: (reason) => record.stop(reason),
        // A log that cannot watch leaves the turn stoppable here only.
        error: () => undefined,
      });
      if (record.ended) watch.unsubscribe();
      else record.watch = watch;
    }
  }

  /**
   * Writes an entry of a run, after the ones before it. After a refused one the run stops, its readers are told
   * (if the log takes that last entry), and the server forgets the run; a refusal because the turn is another
   * runner's now (this one's lease lapsed while it was slow) stops it and writes nothing more.
   */
  #write(turnId: string, record: Run, entry: TurnLogEntry<E>): void {
    if ('end' in entry) {
      record.ended = true;
      record.watch?.unsubscribe();
    }
    record.written = record.written.then(async () => {
      if (record.failed) return;
      try {
        await this.#log.append(turnId, entry);
      } catch (error) {
        if (isInstance(error, TransportError) && error.code === 'turn-taken-over')
          return this.#lost(turnId, record);
        halt(record, true);
        this.#logError(error, turnId);
        if (!('end' in entry)) {
          const end: TurnLogEntry<E> = { seq: entry.seq, end: 'failed', error: failureOf(error) };
          await this.#log.append(turnId, end).catch(() => undefined);
        }
        this.#forget(turnId, record);
      }
    });
    if ('end' in entry) void record.written.then(() => this.#forget(turnId, record));
  }

  /** Renews a run's lease; a lease another runner holds now stops the run. */
  #renew(turnId: string, record: Run): void {
    this.#log.renew?.(turnId).then(
      (held) => {
        if (!held && !record.ended) this.#lost(turnId, record);
      },
      // A renewal that fails may pass: the next one tries again, and the lease covers two misses.
      () => undefined,
    );
  }

  /** The turn is another runner's now: the run stops, writes nothing more, and is forgotten. */
  #lost(turnId: string, record: Run): void {
    handOver(record);
    this.#forget(turnId, record);
  }

  /** Stops a run and forgets it, unless another run of the turn replaced it. */
  #forget(turnId: string, record: Run): void {
    halt(record, false);
    if (this.#runs.get(turnId) === record) this.#runs.delete(turnId);
  }

  /**
   * Takes turn `turnId` over when its lease lapsed (its runner was lost): runs it again from the log's entries, or,
   * past the bounds, ends it as failed. Nothing happens when the lease is alive or this server runs the turn.
   */
  async #takeOver(turnId: string, run: ServeTurnOptions<E>['run']): Promise<void> {
    if (this.#runs.has(turnId)) return;
    const takeover = await this.#log.takeOver?.(turnId);
    if (takeover === undefined) return;
    const past = takeover.count > this.#bounds.max || Date.now() - takeover.claimedAt > this.#bounds.withinMs;
    const end = (error: unknown) =>
      this.#log
        .append(turnId, { seq: takeover.next, end: 'failed', error: failureOf(error) })
        .catch((failure: unknown) => this.#logError(failure, turnId));
    if (past) {
      await end(runnerLostError(turnId, takeover.count - 1));
      return;
    }
    let events: E[];
    try {
      const entries =
        takeover.next === 0
          ? []
          : await lastValueFrom(this.#log.read(turnId, -1).pipe(take(takeover.next), toArray()));
      events = entries.flatMap((entry) => ('event' in entry ? [entry.event] : []));
    } catch (error) {
      await end(error);
      return;
    }
    this.#start(turnId, run, { seq: takeover.next, takeover: { count: takeover.count, events } });
  }

  /**
   * The turn's entries after `after`, and meanwhile, on a log with leases, checks after each quiet quarter of a lease
   * whether the runner was lost: then this reader takes the turn over (one of many gets it) and reads on.
   */
  #follow(turnId: string, after: number, run: ServeTurnOptions<E>['run']): Observable<TurnLogEntry<E>> {
    const entries = this.#log.read(turnId, after);
    const lease = this.#lease;
    if (lease === undefined) return entries;
    return new Observable<TurnLogEntry<E>>((subscriber) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        // Each entry restarts the quiet quarter: Node's timers restart in place (no new timer per entry).
        if (timer !== undefined) {
          if (restart(timer)) return;
          clearTimeout(timer);
        }
        timer = setTimeout(check, lease.checkMs);
      };
      const check = () => {
        timer = undefined;
        this.#takeOver(turnId, run).then(
          () => {
            if (!subscriber.closed) arm();
          },
          (error: unknown) => {
            // A log that cannot answer now may later: keep reading, and check again.
            if (!isRetryable(error)) this.#logError(error, turnId);
            if (!subscriber.closed) arm();
          },
        );
      };
      const reading = entries.subscribe({
        next: (entry) => {
          arm();
          subscriber.next(entry);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      if (!subscriber.closed) arm();
      return () => {
        if (timer !== undefined) clearTimeout(timer);
        reading.unsubscribe();
      };
    });
  }
}

/**
 * Restarts a pending timer's full delay from now, where the runtime's timers can (Node's `Timeout.refresh`):
 * true when it did; false where a timer is a number (a browser's), to be cleared and set again instead.
 */
function restart(timer: ReturnType<typeof setTimeout>): boolean {
  const refresh = (timer as { refresh?: unknown }).refresh;
  if (typeof refresh !== 'function') return false;
  refresh.call(timer);
  return true;
}

/**
 * Stops a run where it is: its source, its watch of the stop mark and the renewals of its lease. `silent`: nothing
 * more is written for it (the log refused an entry, the turn is another runner's, or it is handed over).
 */
function halt(record: Run, silent: boolean): void {
  record.ended = true;
  if (silent) record.failed = true;
  record.source?.unsubscribe();
  record.watch?.unsubscribe();
  if (record.renewing !== undefined) clearInterval(record.renewing);
  record.renewing = undefined;
}

/**
 * Stops a run whose turn goes on elsewhere (handed over, or taken over): nothing more is written for it, and its
 * signal aborts with {@link HANDED_OVER} first, so that a background response it reads is left generating for the
 * runner that goes on with it, not cancelled.
 */
function handOver(record: Run): void {
  if (!record.ended) {
    record.failed = true;
    record.stopping.abort(HANDED_OVER);
  }
  halt(record, true);
}

/** A turn this server runs: its next seq, and the chain of its entries being written. */
interface Run {
  /** Aborts the run's signal. */
  readonly stopping: AbortController;
  seq: number;
  /** Its end was written, or is on the way. */
  ended: boolean;
  /** The log refused an entry: nothing more is written. */
  failed: boolean;
  /** Settles when every entry so far was written (or refused). */
  written: Promise<void>;
  source: Subscription | undefined;
  /** The watch of the log's stop mark, while the turn runs. */
  watch: Subscription | undefined;
  /** The timer that renews the run's lease, on a log with leases. */
  renewing: ReturnType<typeof setInterval> | undefined;
  /** Stops the run with `reason`: its signal aborts, and a run that goes on is unsubscribed. */
  stop: (reason: string) => void;
}

/**
 * Writes a message as the text of one server-sent event (`id:`, `event:`, `data:` lines and a blank line), for a
 * server that writes the response itself. Line breaks in `data` become data lines of the same event (a reader joins
 * them with LF); the messages of {@link TurnServer.serve} have none, nor any in `id` and `type`.
 *
 * @param message A message of {@link TurnServer.serve}.
 * @returns The event's text.
 * @throws {TransportError} `sse-field` when `id` or `type` holds CR, LF or NUL, or `data` holds NUL: written as it is, it would
 *   end its line and write other fields or events.
 */
export function toSSE(message: TurnMessage): string {
  if (UNSAFE_IN_FIELD.test(message.id)) throw sseFieldError('id');
  if (UNSAFE_IN_FIELD.test(message.type)) throw sseFieldError('event');
  if (message.data.includes('\0')) throw sseFieldError('data');
  // One data line (the messages of serve are one line of JSON), else one per line of `data`.
  const data = LINE_BREAK.test(message.data)
    ? message.data
        .split(/\r\n|\r|\n/)
        .map((line) => `data: ${line}\n`)
        .join('')
    : `data: ${message.data}\n`;
  return `id: ${message.id}\nevent: ${message.type}\n${data}\n`;
}

/** A line break of an event stream: CR, LF or CRLF. */
const LINE_BREAK = /[\r\n]/;

/** What no SSE field but `data` may hold: CR and LF end its line, and a reader drops an `id` with NUL. */
const UNSAFE_IN_FIELD = /[\r\n\0]/;

/** The start of a turn's message ids: the turn id, percent-encoded (printable ASCII, no `:`). */
function idPrefixOf(turnId: string): string {
  return encodeURIComponent(turnId);
}

/** A seq as a message id writes it: canonical decimal, at most 16 digits (checked against the safe range). */
const SEQ = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The seq after which a client with this `Last-Event-ID` reads the turn whose ids start with `prefix` (-1: from
 * the start), or undefined when the id does not name the turn: a first connection.
 *
 * @throws {TransportError} `last-event-id` when it names the turn with a position that no message had.
 */
function positionOf(
  lastEventId: string | null | undefined,
  prefix: string,
  turnId: string,
): number | undefined {
  if (typeof lastEventId !== 'string') return undefined;
  const colon = lastEventId.lastIndexOf(':');
  if (colon < 0 || lastEventId.slice(0, colon) !== prefix) return undefined;
  const position = lastEventId.slice(colon + 1);
  if (position === '-1') return -1;
  const seq = SEQ.test(position) ? Number(position) : Number.NaN;
  if (!Number.isSafeInteger(seq)) throw lastEventIdError(turnId, lastEventId);
  return seq;
}

function messageOf<E>(prefix: string, entry: TurnLogEntry<E>): TurnMessage {
  const id = `${prefix}:${entry.seq}`;
  if ('event' in entry) return { id, type: 'turn', data: JSON.stringify(entry.event) };
  if (entry.end === 'completed') return { id, type: 'end', data: '{"outcome":"completed"}' };
  return { id, type: 'failed', data: JSON.stringify(entry.error) };
}

/** What a client is told of an error that ended a turn. */
function failureOf(error: unknown): TurnFailure {
  const name = isInstance(error, Error) ? errorName(error) : 'Error';
  const code = isInstance(error, CleanturnError) ? readString(error, 'code') : undefined;
  return code === undefined
    ? { name, message: describeError(error), retryable: isRetryable(error) }
    : { name, code, message: describeError(error), retryable: isRetryable(error) };
}
