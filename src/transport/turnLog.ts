import { CleanturnError } from 'cleanturn';
import { Observable } from 'rxjs';
import { checkReadAfter } from '../internal/turnLogRules.js';
import { isWellFormed } from '../internal/wellFormed.js';

/** Why a turn that ran failed, as its log keeps it: what its readers' clients are told. */
export interface TurnFailure {
  /** The error's class name (`RetriesExhaustedError`…). */
  name: string;
  message: string;
  /** Whether a new turn could succeed. */
  retryable: boolean;
}

/**
 * One entry of a turn's log, numbered from 0 in the order the turn produced it: an event of the clean turn, or the
 * turn's end (the last entry).
 */
export type TurnLogEntry<E = unknown> =
  | { seq: number; event: E }
  | { seq: number; end: 'completed' }
  | { seq: number; end: 'failed'; error: TurnFailure };

/**
 * Where a running turn's events are kept for the clients that reconnect: `memoryTurnLog()` for one process,
 * `redisTurnLog()` of `cleanturn/transport/redis` for many (a reconnect that reaches another instance resumes
 * the same turn). `turnServer` writes and reads it. Every method refuses a turn id that {@link checkTurnId}
 * refuses, with its {@link TurnIdError}.
 */
export interface TurnLog<E = unknown> {
  /**
   * Claims turn `turnId` for the caller, who then runs it and appends its entries: true for the first claim of a
   * turn id, false while the log knows the turn (it runs, or ran, elsewhere: read it instead).
   */
  claim(turnId: string): Promise<boolean>;
  /**
   * Appends the next entry of a claimed turn. Its runner appends in order, one entry at a time. A log with leases
   * refuses the entries of a runner whose turn was taken over with {@link TurnTakenOverError}.
   */
  append(turnId: string, entry: TurnLogEntry<E>): Promise<void>;
  /**
   * The turn's entries after `after` (-1: from the first), then each new one as it is appended, up to and with
   * its end; then it completes. A reader after the end of an ended turn gets the end again, at once (a reader that
   * had the end itself gets nothing). Errors with {@link TurnNotFoundError} when the log does not know the turn
   * (never claimed, or expired), no longer has the entries asked for (`trimmed`), or `after` is past the last entry
   * of a turn that has not ended (`ahead`: no reader can have had it). `after` must be a safe integer >= -1
   * (a `RangeError` otherwise).
   */
  read(turnId: string, after: number): Observable<TurnLogEntry<E>>;
  /**
   * Marks turn `turnId` as asked to stop, for its runner to see wherever it runs (see {@link TurnLog.watchStop}):
   * true when the log knows the turn and it has not ended, false otherwise (there is nothing to stop). Optional: on a
   * log without it, a `turnServer` stops only the turns it runs itself.
   */
  requestStop?(turnId: string, reason: string): Promise<boolean>;
  /**
   * The stop request of turn `turnId`: emits its reason once a stop is requested (at once when it was already), then
   * completes; completes without a value when the turn ends or the log does not know it. Its runner watches it while
   * the turn runs.
   */
  watchStop?(turnId: string): Observable<string>;
  /**
   * How long a runner's lease on a turn lasts, in milliseconds, when the log keeps leases: a claim takes one, and
   * {@link TurnLog.renew} extends it. A turn whose lease lapsed (its runner died) may be taken over
   * ({@link TurnLog.takeOver}). Absent on a log without leases: there a turn runs where it was claimed, or not at all.
   */
  readonly leaseMs?: number;
  /**
   * Extends this log's lease on turn `turnId` by `leaseMs` from now: true while the turn is still this log's and
   * has not ended; false when it is not (another runner took it over, it ended, or the log forgot it): its runner
   * then stops, and writes nothing more.
   */
  renew?(turnId: string): Promise<boolean>;
  /**
   * Takes over turn `turnId` when its lease lapsed: the turn becomes this log's, with a new lease, and only this
   * log's appends are taken from then on (the lost runner's are refused with {@link TurnTakenOverError}). Undefined
   * when there is nothing to take over: the lease is alive, the turn ended, or the log does not know it. Of many
   * callers at once, one gets the turn.
   */
  takeOver?(turnId: string): Promise<Takeover | undefined>;
}

/** What {@link TurnLog.takeOver} gives the new runner of a turn whose runner was lost. */
export interface Takeover {
  /** How many times the turn was taken over, this time included (1 for the first takeover). */
  readonly count: number;
  /** The seq of the next entry: how many entries the turn has (the new runner appends from here). */
  readonly next: number;
  /** When the turn was first claimed, in the log's clock (milliseconds since the epoch). */
  readonly claimedAt: number;
}

/**
 * The longest turn id, in UTF-16 code units (a JavaScript string's `length`): 256. Percent-encoded in a message id
 * it takes at most 2 304 characters, so that the `Last-Event-ID` header of a reconnect stays far below the 8 KB
 * header limits of common servers and proxies.
 */
const MAX_TURN_ID_LENGTH = 256;

/** What is wrong with a turn id (see {@link TurnIdError}). */
export type TurnIdProblem = 'not-a-string' | 'empty' | 'too-long' | 'not-well-formed';

/**
 * A turn id that no turn log or turn server takes: not a string, empty, longer than 256 UTF-16 code units, or not
 * well-formed UTF-16 (a lone surrogate, which has no UTF-8 form and so cannot travel in a message id or a Redis
 * key). Any other string is a turn id, line breaks, NUL, `:` and `%` included. Not retryable: nothing was done.
 */
export class TurnIdError extends CleanturnError {
  /** What is wrong with it. */
  readonly problem: TurnIdProblem;
  /** Its length in UTF-16 code units (0 for a value that is not a string). */
  readonly length: number;
  /** The longest turn id taken: 256. */
  readonly limit: number;

  constructor(turnId: unknown, problem: TurnIdProblem) {
    const length = typeof turnId === 'string' ? turnId.length : 0;
    const shown =
      typeof turnId !== 'string'
        ? typeof turnId
        : length > 40
          ? `${JSON.stringify(turnId.slice(0, 40))}… (${length} code units)`
          : JSON.stringify(turnId);
    const why =
      problem === 'not-a-string'
        ? 'is not a string'
        : problem === 'empty'
          ? 'is empty'
          : problem === 'too-long'
            ? `is longer than ${MAX_TURN_ID_LENGTH} UTF-16 code units`
            : 'is not well-formed UTF-16 (it has a lone surrogate)';
    super(`turn id ${shown} ${why}`, { retryable: false });
    this.problem = problem;
    this.length = length;
    this.limit = MAX_TURN_ID_LENGTH;
  }
}

/**
 * Checks a turn id as every turn log and `turnServer` do: a well-formed string of 1 to 256 UTF-16 code units.
 * A server can call it before it answers, to answer a bad id with a 400 of its own; a {@link TurnLog} of your own
 * calls it too, so that it takes what the others take.
 *
 * @param turnId The turn id, as the request gave it.
 * @throws {TurnIdError} When it is not one.
 */
export function checkTurnId(turnId: unknown): asserts turnId is string {
  if (typeof turnId !== 'string') throw new TurnIdError(turnId, 'not-a-string');
  if (turnId === '') throw new TurnIdError(turnId, 'empty');
  if (turnId.length > MAX_TURN_ID_LENGTH) throw new TurnIdError(turnId, 'too-long');
  if (!isWellFormed(turnId)) throw new TurnIdError(turnId, 'not-well-formed');
}

/**
 * The log cannot give a reader the turn's entries: it does not know the turn (never started, or expired), the
 * entries the reader asks for were trimmed (`maxEntries`), or the reader asks for what follows an entry the running
 * turn never had (`ahead`: a `Last-Event-ID` that no server issued). Not retryable: the turn must start anew.
 */
export class TurnNotFoundError extends CleanturnError {
  readonly turnId: string;
  /**
   * `unknown`: the log does not know the turn; `trimmed`: it no longer has the entries asked for; `ahead`: the
   * reader asks to read after an entry the running turn does not have.
   */
  readonly reason: 'unknown' | 'trimmed' | 'ahead';

  constructor(turnId: string, reason: 'unknown' | 'trimmed' | 'ahead' = 'unknown') {
    super(
      reason === 'unknown'
        ? `the turn log does not know turn ${turnId}: it never started, or it expired`
        : reason === 'trimmed'
          ? `the turn log no longer has the entries of turn ${turnId} that were asked for: they were trimmed`
          : `turn ${turnId} has no such entry: the reader asks to read after an entry the running turn never had`,
      { retryable: false },
    );
    this.turnId = turnId;
    this.reason = reason;
  }
}

/**
 * This runner's lease on a turn lapsed and another runner took the turn over: the log refuses this runner's
 * entries, so that the turn's readers get one runner's events. Not retryable: the turn goes on elsewhere.
 */
export class TurnTakenOverError extends CleanturnError {
  readonly turnId: string;

  constructor(turnId: string) {
    super(`turn ${turnId} was taken over by another runner: its lease here lapsed`, { retryable: false });
    this.turnId = turnId;
  }
}

/** Options of {@link memoryTurnLog}. */
export interface MemoryTurnLogOptions {
  /**
   * How long a runner's lease on a turn lasts unless renewed, in milliseconds (see {@link TurnLog.leaseMs}).
   * Default 10 000.
   */
  leaseMs?: number;
  /** The most entries kept per turn; a turn that grows past it keeps its newest ones. Default 100 000. */
  maxEntries?: number;
  /** How long an ended turn is kept after its end, in milliseconds. Default 10 minutes. */
  ttlMs?: number;
  /** The clock, in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** One turn in memory. */
interface MemoryTurn<E> {
  entries: TurnLogEntry<E>[];
  /** The seq of `entries[0]` (older entries were trimmed). */
  first: number;
  ended: boolean;
  /** When its last entry (or its claim) was written. */
  touched: number;
  readers: Set<(entry: TurnLogEntry<E>) => void>;
  /** The reason of the stop asked for, once one was. */
  stop: string | undefined;
  /** The runner's watch of a stop request. */
  stopWatchers: Set<(reason: string | undefined) => void>;
  /** The token of the claim (or takeover) whose appends are taken. */
  owner: symbol;
  /** When the owner's lease lapses. */
  leaseUntil: number;
  /** How many times the turn was taken over. */
  takeovers: number;
  /** When it was first claimed. */
  claimedAt: number;
}

/** The turns of a memory log, which several views (runners) may share; see {@link memoryTurnLogView}. */
interface MemoryStore<E> {
  turns: Map<string, MemoryTurn<E>>;
  maxEntries: number;
  ttlMs: number;
  leaseMs: number;
  now: () => number;
}

/**
 * A turn log in this process's memory: a reconnect must reach the process that runs the turn. Memory is bounded:
 * `maxEntries` per turn, and an ended turn is forgotten `ttlMs` after its end (checked when the log is used: no
 * timer). A turn that has not ended is kept: its run is in this process, and ends with the run. Its runner holds a
 * lease (`leaseMs`), renewed while it runs; a turn whose lease lapsed may be taken over ({@link TurnLog.takeOver}).
 *
 * ## Example
 * ```ts
 * import { memoryTurnLog, turnServer } from 'cleanturn/transport';
 *
 * const turns = turnServer({ log: memoryTurnLog() });
 * ```
 *
 * @param options Bounds and clock.
 * @returns The log.
 */
export function memoryTurnLog<E = unknown>(options: MemoryTurnLogOptions = {}): TurnLog<E> {
  const { maxEntries = 100_000, ttlMs = 600_000, leaseMs = 10_000, now = Date.now } = options;
  if (!Number.isInteger(maxEntries) || maxEntries < 1)
    throw new RangeError('memoryTurnLog: maxEntries must be an integer >= 1');
  if (!(ttlMs > 0)) throw new RangeError('memoryTurnLog: ttlMs must be > 0');
  if (!(leaseMs > 0 && Number.isFinite(leaseMs)))
    throw new RangeError('memoryTurnLog: leaseMs must be a finite number > 0');
  return viewOf<E>({ turns: new Map(), maxEntries, ttlMs, leaseMs, now });
}

/** The store behind each memory log: several views of one store are several runners sharing one log. */
const stores = new WeakMap<object, MemoryStore<unknown>>();

/**
 * Another runner's view of the same memory log: its turns and entries, with claims and leases of its own (as a
 * second process sees a shared Redis log). For tests of takeovers within one process.
 *
 * @internal
 */
export function memoryTurnLogView<E>(log: TurnLog<E>): TurnLog<E> {
  const store = stores.get(log) as MemoryStore<E> | undefined;
  if (store === undefined) throw new TypeError('memoryTurnLogView: not a memory turn log');
  return viewOf(store);
}

/** A view as a plain object of functions: one that a caller may spread (`{ ...log, append }`) and still use. */
function viewOf<E>(store: MemoryStore<E>): TurnLog<E> {
  const view = new MemoryLogView(store);
  const log: TurnLog<E> = {
    leaseMs: view.leaseMs,
    claim: (turnId) => view.claim(turnId),
    append: (turnId, entry) => view.append(turnId, entry),
    renew: (turnId) => view.renew(turnId),
    takeOver: (turnId) => view.takeOver(turnId),
    requestStop: (turnId, reason) => view.requestStop(turnId, reason),
    watchStop: (turnId) => view.watchStop(turnId),
    read: (turnId, after) => view.read(turnId, after),
  };
  stores.set(log, store as MemoryStore<unknown>);
  return log;
}

/** One runner's view of a memory log: the store's turns, with the claim tokens of the turns this view holds. */
class MemoryLogView<E> implements Required<Omit<TurnLog<E>, 'leaseMs'>> {
  readonly leaseMs: number;
  /** The token of each turn this view claimed (or took over): its appends carry it. */
  readonly #tokens = new Map<string, symbol>();

  constructor(private readonly store: MemoryStore<E>) {
    this.leaseMs = store.leaseMs;
  }

  async claim(turnId: string): Promise<boolean> {
    checkTurnId(turnId);
    this.#expire();
    const { turns, now, leaseMs } = this.store;
    if (turns.has(turnId)) return false;
    const owner = Symbol(turnId);
    const at = now();
    turns.set(turnId, {
      entries: [],
      first: 0,
      ended: false,
      touched: at,
      readers: new Set(),
      stop: undefined,
      stopWatchers: new Set(),
      owner,
      leaseUntil: at + leaseMs,
      takeovers: 0,
      claimedAt: at,
    });
    this.#tokens.set(turnId, owner);
    return true;
  }

  async append(turnId: string, entry: TurnLogEntry<E>): Promise<void> {
    checkTurnId(turnId);
    const turn = this.store.turns.get(turnId);
    if (turn === undefined) throw new TurnNotFoundError(turnId);
    if (turn.ended) throw new RangeError(`turn ${turnId} has ended: nothing may follow its end`);
    if (this.#held(turnId) === undefined) {
      this.#tokens.delete(turnId);
      throw new TurnTakenOverError(turnId);
    }
    turn.entries.push(entry);
    if (turn.entries.length > this.store.maxEntries) {
      turn.entries.shift();
      turn.first++;
    }
    turn.ended = 'end' in entry;
    turn.touched = this.store.now();
    if (turn.ended) this.#tokens.delete(turnId);
    for (const reader of [...turn.readers]) reader(entry);
    if (turn.ended) for (const watcher of [...turn.stopWatchers]) watcher(undefined);
  }

  async renew(turnId: string): Promise<boolean> {
    checkTurnId(turnId);
    const turn = this.#held(turnId);
    if (turn === undefined || turn.ended) return false;
    turn.leaseUntil = this.store.now() + this.leaseMs;
    return true;
  }

  async takeOver(turnId: string): Promise<Takeover | undefined> {
    checkTurnId(turnId);
    this.#expire();
    const turn = this.store.turns.get(turnId);
    const at = this.store.now();
    if (turn === undefined || turn.ended || turn.leaseUntil > at) return undefined;
    turn.owner = Symbol(turnId);
    turn.leaseUntil = at + this.leaseMs;
    turn.takeovers++;
    this.#tokens.set(turnId, turn.owner);
    return { count: turn.takeovers, next: turn.first + turn.entries.length, claimedAt: turn.claimedAt };
  }

  async requestStop(turnId: string, reason: string): Promise<boolean> {
    checkTurnId(turnId);
    this.#expire();
    const turn = this.store.turns.get(turnId);
    if (turn === undefined || turn.ended) return false;
    if (turn.stop === undefined) {
      turn.stop = reason;
      for (const watcher of [...turn.stopWatchers]) watcher(reason);
    }
    return true;
  }

  watchStop(turnId: string): Observable<string> {
    return new Observable<string>((subscriber) => {
      try {
        checkTurnId(turnId);
      } catch (error) {
        subscriber.error(error);
        return;
      }
      const turn = this.store.turns.get(turnId);
      if (turn === undefined || turn.ended) {
        subscriber.complete();
        return;
      }
      const watcher = (reason: string | undefined) => {
        if (reason !== undefined) subscriber.next(reason);
        subscriber.complete();
      };
      if (turn.stop !== undefined) {
        watcher(turn.stop);
        return;
      }
      turn.stopWatchers.add(watcher);
      return () => {
        turn.stopWatchers.delete(watcher);
      };
    });
  }

  read(turnId: string, after: number): Observable<TurnLogEntry<E>> {
    return new Observable<TurnLogEntry<E>>((subscriber) => {
      try {
        checkTurnId(turnId);
        checkReadAfter(after, 'memoryTurnLog');
      } catch (error) {
        subscriber.error(error);
        return;
      }
      this.#expire();
      const turn = this.store.turns.get(turnId);
      const refusal = turn === undefined ? new TurnNotFoundError(turnId) : readRefusal(turnId, turn, after);
      if (refusal !== undefined || turn === undefined) {
        if (refusal === 'end') {
          subscriber.next(turn?.entries[turn.entries.length - 1] as TurnLogEntry<E>);
          subscriber.complete();
        } else subscriber.error(refusal);
        return;
      }
      const deliver = (entry: TurnLogEntry<E>) => {
        if (entry.seq <= after) return;
        subscriber.next(entry);
        if ('end' in entry) subscriber.complete();
      };
      // What is there now, then what comes.
      for (const entry of turn.entries.slice(Math.max(0, after + 1 - turn.first))) {
        if (subscriber.closed) return;
        deliver(entry);
      }
      if (subscriber.closed) return;
      // A reader that already had the end.
      if (turn.ended) {
        subscriber.complete();
        return;
      }
      turn.readers.add(deliver);
      return () => {
        turn.readers.delete(deliver);
      };
    });
  }

  /**
   * Forgets the ended turns past their time; a turn with readers is kept while they read. A turn that has not
   * ended is kept however quiet: its run is alive in this process, and a second claim would run it twice.
   */
  #expire(): void {
    const { turns, ttlMs, now } = this.store;
    const limit = now() - ttlMs;
    for (const [id, turn] of turns) {
      if (turn.ended && turn.touched < limit && turn.readers.size === 0) turns.delete(id);
    }
  }

  /** The turn, when this view holds it. */
  #held(turnId: string): MemoryTurn<E> | undefined {
    const turn = this.store.turns.get(turnId);
    const token = this.#tokens.get(turnId);
    return turn !== undefined && token !== undefined && turn.owner === token ? turn : undefined;
  }
}

/**
 * Why a read after `after` cannot follow the turn: past its last entry (the end again, `'end'`, for an ended turn; a
 * running turn never had what the reader names), or before its first kept one. Undefined when it can.
 */
function readRefusal<E>(
  turnId: string,
  turn: MemoryTurn<E>,
  after: number,
): TurnNotFoundError | 'end' | undefined {
  const last = turn.first + turn.entries.length - 1;
  if (after > last) {
    const end = turn.entries[turn.entries.length - 1];
    return turn.ended && end !== undefined ? 'end' : new TurnNotFoundError(turnId, 'ahead');
  }
  if (after + 1 < turn.first) return new TurnNotFoundError(turnId, 'trimmed');
  return undefined;
}
