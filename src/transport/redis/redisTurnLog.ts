import type { Cluster, Redis } from 'ioredis';
import { checkInteger, checkNumber } from '../../internal/options.js';
import { MAX_TIMER_DELAY } from '../../internal/wait.js';
import type { TurnLog } from '../turnLog.js';
import { appendEntry, claimTurn } from './claimAndAppend.js';
// For the links of the doc comments.
import { renewLease, takeOverTurn } from './lease.js';
import { readTurn } from './readTurn.js';
import { requestStop, watchStop } from './stopMarks.js';
import type { TurnLogContext } from './turnLogContext.js';

/** Options of {@link redisTurnLog}. */
export interface RedisTurnLogOptions {
  /** An ioredis client (or cluster). The log never closes it: it is yours. Readers that wait use duplicates of it. */
  client: Redis | Cluster;
  /** The prefix of the log's keys. Default: `cleanturn:turn`. */
  prefix?: string;
  /**
   * About how many entries are kept per turn (`XADD … MAXLEN ~`: Redis trims whole blocks, so a few more may stay);
   * a reader that asks for trimmed entries errors with a `TransportError` `turn-trimmed`. Default 100 000.
   */
  maxEntries?: number;
  /** How long a turn is kept after its claim and after each entry, in milliseconds. Default: 10 minutes. */
  ttlMs?: number;
  /**
   * How long one blocking read of a waiting reader lasts (`XREAD BLOCK`), in milliseconds; between two, the reader
   * checks that the turn is still known. Default 5 000.
   */
  blockMs?: number;
  /**
   * How long an operation waits for Redis, in milliseconds, whatever the client's own settings (ioredis retries a
   * command for about a minute by default, and forever with `maxRetriesPerRequest: null`). A claim or an append
   * with no answer by then is sent again, the same write under the same claim token (Redis applies it once, and
   * the answer of a try says whether an earlier one was applied), up to 4 sends in all; then, and for a read at
   * once, it fails with a `TransportError` `turn-log-timeout` (retryable). A blocking read waits `blockMs` longer.
   * Default: 5 000.
   */
  commandTimeoutMs?: number;
  /**
   * How often the runner of a turn checks its stop mark (`turnServer`'s `stop`, sent to any instance), in
   * milliseconds: a stop reaches the run within about this long, for one `EVAL` per running turn per check.
   * Default 500.
   */
  stopCheckMs?: number;
  /**
   * How long a runner's lease on a turn lasts unless renewed, in milliseconds (the key `prefix:{turnId}:lease`,
   * set with `PX`): a turn whose runner died is taken over by a reader once it lapses. Default 10 000.
   */
  leaseMs?: number;
}

/**
 * A turn log in Redis, for many server instances: a client that reconnects to another instance resumes the same
 * turn, and the turn runs once whichever instance the client reaches first.
 *
 * Each turn is a Redis Stream at `prefix:{turnId}` (the turn id URI-encoded; in braces, the hash tag), one entry
 * per log entry with the id `0-<seq + 1>` and the entry as JSON in one field, so reading after seq `n` is
 * `XREAD … STREAMS key 0-<n + 1>`; `XADD … MAXLEN ~ maxEntries` trims it. Ids are computed and compared as the
 * integers Redis compares, never as text. The claim is the key `prefix:{turnId}:owner`, set only when absent
 * (`running:<token>`, then `ended:<token>` with the end entry; the token is the claim's own). The runner's lease is
 * `prefix:{turnId}:lease` (its token, `PX leaseMs`, renewed by `renew`), and `prefix:{turnId}:meta` holds when the
 * turn was claimed and how often it was taken over: `takeOver` moves the claim to a new token once the lease is
 * gone, in one script. Both keys expire
 * `ttlMs` after the claim and after each entry (`PEXPIRE`), so a finished turn is kept for its late readers
 * and then forgotten. Claim and append are one Lua script each: an append to a turn the log forgot, after its
 * end, or by a log that did not claim it, is refused. Turn ids are checked as `turnServer` checks them (a
 * `TransportError` `turn-id-*` for an empty one, one over 256 UTF-16 code units, or one with a lone surrogate).
 *
 * A claim or an append whose answer is late is resolved, never left to land unseen: it is sent again, the same
 * write under the same token, which Redis applies once and answers for every earlier send (a connection's commands
 * run in order). A claim with no answer to any send is undone by a release sent behind it; the end written after
 * an append with no answer goes after that entry, should it land. The scripts are sent with `EVAL` (Redis caches
 * them by their SHA-1), so that they too run in the order sent: an `EVALSHA` that misses the cache (after a
 * restart or a `SCRIPT FLUSH`) is sent again later, and could then run after the commands sent behind it.
 *
 * A reader reads what is there with `XRANGE` on the shared client and, when the turn is still running, follows it
 * with `XREAD BLOCK` on a connection of its own (`client.duplicate()`: a blocking command would block every other
 * command of the shared client), closed when the reader unsubscribes or reads the end. A reader that joins after
 * the end opens no connection. Between two blocking reads (`blockMs`) the reader checks that the log still knows
 * the turn; a turn that expired, even while read, errors its readers with a `TransportError` `turn-not-found`.
 *
 * A read gives up after `commandTimeoutMs`, a claim or an append after 4 sends of it, with
 * `TransportError` `turn-log-timeout`.
 *
 * ## Example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { turnServer } from 'cleanturn/transport';
 * import { redisTurnLog } from 'cleanturn/transport/redis';
 *
 * const turns = turnServer({ log: redisTurnLog({ client: new Redis(process.env.REDIS_URL) }) });
 * // every instance: turns.serve({ turnId, lastEventId: req.headers['last-event-id'], run })
 * ```
 *
 * @param options The client, the key prefix, bounds and timeouts.
 * @returns The log.
 */
export function redisTurnLog<E = unknown>(options: RedisTurnLogOptions): TurnLog<E> {
  const context = contextOf(options);
  return {
    leaseMs: context.leaseMs,

    renew(turnId) {
      return renewLease(context, turnId);
    },

    takeOver(turnId) {
      return takeOverTurn(context, turnId);
    },

    claim(turnId) {
      return claimTurn(context, turnId);
    },

    append(turnId, entry) {
      return appendEntry(context, turnId, entry);
    },

    read(turnId, after) {
      return readTurn<E>(context, turnId, after);
    },

    requestStop(turnId, reason) {
      return requestStop(context, turnId, reason);
    },

    watchStop(turnId) {
      return watchStop(context, turnId);
    },
  };
}

/** The context of a new log: its options checked (a `UsageError` for one out of bounds), and no claims yet. */
function contextOf(options: RedisTurnLogOptions): TurnLogContext {
  const { client, prefix = 'cleanturn:turn' } = options;
  const maxEntries = options.maxEntries ?? 100_000;
  checkInteger('redisTurnLog', 'maxEntries', maxEntries, 1);
  const ttlMs = Math.ceil(duration(options.ttlMs ?? 600_000, 'ttlMs'));
  const blockMs = Math.ceil(duration(options.blockMs ?? 5_000, 'blockMs'));
  const timeoutMs = Math.min(
    duration(options.commandTimeoutMs ?? 5_000, 'commandTimeoutMs'),
    MAX_TIMER_DELAY,
  );
  // Capped at what a timer holds: past it, setTimeout would fire at once and poll Redis in a busy loop.
  const leaseMs = Math.ceil(Math.min(duration(options.leaseMs ?? 10_000, 'leaseMs'), MAX_TIMER_DELAY));
  const stopCheckMs = Math.min(duration(options.stopCheckMs ?? 500, 'stopCheckMs'), MAX_TIMER_DELAY);
  return {
    client,
    prefix,
    maxEntries,
    ttlMs,
    blockMs,
    timeoutMs,
    leaseMs,
    stopCheckMs,
    tokens: new Map<string, string>(),
  };
}

/** Checks a duration option: a finite number of milliseconds > 0. */
function duration(value: number, name: string): number {
  checkNumber('redisTurnLog', name, value, 'positive');
  return value;
}
