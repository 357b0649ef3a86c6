import { CleanturnError } from 'cleanturn';
import { Observable } from 'rxjs';

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
 * the same turn). `turnServer` writes and reads it.
 */
export interface TurnLog<E = unknown> {
  /**
   * Claims turn `turnId` for the caller, who then runs it and appends its entries: true for the first claim of a
   * turn id, false while the log knows the turn (it runs, or ran, elsewhere: read it instead).
   */
  claim(turnId: string): Promise<boolean>;
  /** Appends the next entry of a claimed turn. Its runner appends in order, one entry at a time. */
  append(turnId: string, entry: TurnLogEntry<E>): Promise<void>;
  /**
   * The turn's entries after `after` (-1: from the first), then each new one as it is appended, up to and with
   * its end; then it completes. Errors with {@link TurnNotFoundError} when the log does not know the turn (never
   * claimed, or expired).
   */
  read(turnId: string, after: number): Observable<TurnLogEntry<E>>;
}

/**
 * The log cannot give a reader the turn's entries: it does not know the turn (never started, or expired), or the
 * entries the reader asks for were trimmed (`maxEntries`). Not retryable: the turn must start anew.
 */
export class TurnNotFoundError extends CleanturnError {
  readonly turnId: string;
  /** `unknown`: the log does not know the turn; `trimmed`: it no longer has the entries asked for. */
  readonly reason: 'unknown' | 'trimmed';

  constructor(turnId: string, reason: 'unknown' | 'trimmed' = 'unknown') {
    super(
      reason === 'unknown'
        ? `the turn log does not know turn ${turnId}: it never started, or it expired`
        : `the turn log no longer has the entries of turn ${turnId} that were asked for: they were trimmed`,
      { retryable: false },
    );
    this.turnId = turnId;
    this.reason = reason;
  }
}

/** Options of {@link memoryTurnLog}. */
export interface MemoryTurnLogOptions {
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
}

/**
 * A turn log in this process's memory: a reconnect must reach the process that runs the turn. Memory is bounded:
 * `maxEntries` per turn, and an ended turn is forgotten `ttlMs` after its end (checked when the log is used: no
 * timer). A turn that has not ended is kept: its run is in this process, and ends with the run.
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
  const { maxEntries = 100_000, ttlMs = 600_000, now = Date.now } = options;
  if (!Number.isInteger(maxEntries) || maxEntries < 1)
    throw new RangeError('memoryTurnLog: maxEntries must be an integer >= 1');
  if (!(ttlMs > 0)) throw new RangeError('memoryTurnLog: ttlMs must be > 0');
  const turns = new Map<string, MemoryTurn<E>>();

  // Forgets the ended turns past their time; a turn with readers is kept while they read. A turn that has not
  // ended is kept however quiet: its run is alive in this process, and a second claim would run it twice.
  const expire = () => {
    const limit = now() - ttlMs;
    for (const [id, turn] of turns) {
      if (turn.ended && turn.touched < limit && turn.readers.size === 0) turns.delete(id);
    }
  };

  return {
    async claim(turnId) {
      expire();
      if (turns.has(turnId)) return false;
      turns.set(turnId, { entries: [], first: 0, ended: false, touched: now(), readers: new Set() });
      return true;
    },
    async append(turnId, entry) {
      const turn = turns.get(turnId);
      if (turn === undefined) throw new TurnNotFoundError(turnId);
      if (turn.ended) throw new RangeError(`turn ${turnId} has ended: nothing may follow its end`);
      turn.entries.push(entry);
      if (turn.entries.length > maxEntries) {
        turn.entries.shift();
        turn.first++;
      }
      turn.ended = 'end' in entry;
      turn.touched = now();
      for (const reader of [...turn.readers]) reader(entry);
    },
    read(turnId, after) {
      return new Observable<TurnLogEntry<E>>((subscriber) => {
        expire();
        const turn = turns.get(turnId);
        if (turn === undefined) {
          subscriber.error(new TurnNotFoundError(turnId));
          return;
        }
        if (after + 1 < turn.first) {
          subscriber.error(new TurnNotFoundError(turnId, 'trimmed'));
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
    },
  };
}
