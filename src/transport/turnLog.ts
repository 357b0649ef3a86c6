import { Observable } from 'rxjs';
import { checkInteger, checkNumber, checkOption } from '../internal/options.js';
import { checkReadAfter, entryAfterEndError } from '../internal/turnLogRules.js';
import { isWellFormed } from '../internal/wellFormed.js';
import {
  MAX_TURN_ID_LENGTH,
  type TransportError,
  turnIdError,
  turnNotFoundError,
  turnTakenOverError,
} from './errors.js';

/** Why a turn that ran failed, as its log keeps it: what its readers' clients are told. */
export interface TurnFailure {
  /** The error's class name (`TurnError`, `TransportError`…). */
  name: string;
  /**
   * The error's `code`, when it is one of cleanturn's (`retries-exhausted`, `turn-stopped`…): with `name`, what a
   * client rebuilds the case from. Absent in the entries of earlier versions, and for other errors.
   */
  code?: string;
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
 * the same turn). `turnServer` writes and reads it. Every method refuses a turn id that is not a well-formed string of
 * 1 to 256 UTF-16 code units, with a `TransportError` `turn-id-*`.
 */
export interface TurnLog<E = unknown> {
  /**
   * Claims turn `turnId` for the caller, who then runs it and appends its entries: true for the first claim of a
   * turn id, false while the log knows the turn (it runs, or ran, elsewhere: read it instead).
   */
  claim(turnId: string): Promise<boolean>;
  /**
   * Appends the next entry of a claimed turn. Its runner appends in order, one entry at a time. A log with leases
   * refuses the entries of a runner whose turn was taken over with a `TransportError` `turn-taken-over`.
   */
  append(turnId: string, entry: TurnLogEntry<E>): Promise<void>;
  /**
   * The turn's entries after `after` (-1: from the first), then each new one as it is appended, up to and with
   * its end; then it completes. A reader after the end of an ended turn gets the end again, at once (a reader that
   * had the end itself gets nothing). Errors with a `TransportError` `turn-not-found` when the log does not know the
   * turn (never claimed, or expired), `turn-trimmed` when it no longer has the entries asked for, or `turn-ahead`
   * when `after` is past the last entry of a turn that has not ended (no reader can have had it). `after` must be a safe integer >= -1
   * (a `UsageError` otherwise).
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
   * log's appends are taken from then on (the lost runner's are refused with `turn-taken-over`). Undefined
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
 * Checks a turn id as every turn log and `turnServer` do: a well-formed string of 1 to 256 UTF-16 code units.
 *
 * @param turnId The turn id, as the request gave it.
 * @throws {TransportError} `turn-id-*` when it is not one.
 * @internal
 */
export function checkTurnId(turnId: unknown): asserts turnId is string {
  if (typeof turnId !== 'string') throw turnIdError(turnId, 'not-a-string');
  if (turnId === '') throw turnIdError(turnId, 'empty');
  if (turnId.length > MAX_TURN_ID_LENGTH) throw turnIdError(turnId, 'too-long');
  if (!isWellFormed(turnId)) throw turnIdError(turnId, 'not-well-formed');
}

/**
 * Options of {@link memoryTurnLog}.
 *
 * @inline
 */
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
  /**
   * The events of its entries, without their seq (the seq of `events[i]` is `first + i`): the log holds each event
   * once, not in an entry object of its own.
   */
  events: E[];
  /** Its end, once appended: the last entry. */
  end: EndEntry | undefined;
  /** The seq of `events[0]` (older entries were trimmed). */
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
  checkInteger('memoryTurnLog', 'maxEntries', maxEntries, 1);
  checkOption(ttlMs > 0, 'memoryTurnLog', 'ttlMs', 'a number > 0', ttlMs);
  checkNumber('memoryTurnLog', 'leaseMs', leaseMs, 'positive');
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
  checkOption(store !== undefined, 'memoryTurnLogView', 'log', 'a memory turn log', log);
  if (store === undefined) return log;
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
      events: [],
      end: undefined,
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
    if (turn === undefined) throw turnNotFoundError(turnId);
    if (turn.ended) throw entryAfterEndError('memoryTurnLog', turnId);
    if (this.#held(turnId) === undefined) {
      this.#tokens.delete(turnId);
      throw turnTakenOverError(turnId);
    }
    if ('end' in entry) turn.end = entry;
    else turn.events.push(entry.event);
    if (entryCount(turn) > this.store.maxEntries && turn.events.length > 0) {
      turn.events.shift();
      turn.first++;
    }
    turn.ended = 'end' in entry;
    turn.touched = this.store.now();
    if (turn.ended) this.#tokens.delete(turnId);
    deliverTo(turn.readers, entry);
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
    return { count: turn.takeovers, next: turn.first + entryCount(turn), claimedAt: turn.claimedAt };
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
      const refusal = turn === undefined ? turnNotFoundError(turnId) : readRefusal(turnId, turn, after);
      if (refusal !== undefined || turn === undefined) {
        if (refusal === 'end') {
          subscriber.next(turn?.end as EndEntry);
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
      const count = entryCount(turn);
      for (let i = Math.max(0, after + 1 - turn.first); i < count; i++) {
        if (subscriber.closed) return;
        deliver(entryAt(turn, i));
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

/** The end of a turn, as its log keeps it. */
type EndEntry = Exclude<TurnLogEntry, { event: unknown }>;

/** How many entries a memory turn holds: its events, and its end once appended. */
function entryCount<E>(turn: MemoryTurn<E>): number {
  return turn.events.length + (turn.end === undefined ? 0 : 1);
}

/** The entry at index `i` of the entries a memory turn holds (its end last). */
function entryAt<E>(turn: MemoryTurn<E>, i: number): TurnLogEntry<E> {
  return i < turn.events.length
    ? { seq: turn.first + i, event: turn.events[i] as E }
    : (turn.end as EndEntry);
}

/**
 * Gives an entry to the readers there are now (one that starts reading meanwhile has it already); the one reader of
 * most turns without a copy of the set.
 */
function deliverTo<E>(readers: Set<(entry: TurnLogEntry<E>) => void>, entry: TurnLogEntry<E>): void {
  if (readers.size === 1) {
    for (const reader of readers) {
      reader(entry);
      return;
    }
  }
  for (const reader of [...readers]) reader(entry);
}

/**
 * Why a read after `after` cannot follow the turn: past its last entry (the end again, `'end'`, for an ended turn; a
 * running turn never had what the reader names), or before its first kept one. Undefined when it can.
 */
function readRefusal<E>(
  turnId: string,
  turn: MemoryTurn<E>,
  after: number,
): TransportError | 'end' | undefined {
  const last = turn.first + entryCount(turn) - 1;
  if (after > last) {
    return turn.ended && turn.end !== undefined ? 'end' : turnNotFoundError(turnId, 'ahead');
  }
  if (after + 1 < turn.first) return turnNotFoundError(turnId, 'trimmed');
  return undefined;
}
