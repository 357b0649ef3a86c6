import { randomUUID } from 'node:crypto';
import {
  checkTurnId,
  type TurnFailure,
  type TurnLog,
  type TurnLogEntry,
  TurnNotFoundError,
  TurnTakenOverError,
} from 'cleanturn/transport';
import type { Cluster, Redis } from 'ioredis';
import { Observable } from 'rxjs';
import { isReplyError, runRedisScript, withinTime } from '../../internal/redisScripts.js';
import { checkReadAfter } from '../../internal/turnLogRules.js';
import { MAX_TIMER_DELAY } from '../../internal/wait.js';
import { type RedisTurnLogOperation, TurnLogTimeoutError } from './errors.js';

/** Options of {@link redisTurnLog}. */
export interface RedisTurnLogOptions {
  /** An ioredis client (or cluster). The log never closes it: it is yours. Readers that wait use duplicates of it. */
  client: Redis | Cluster;
  /** The prefix of the log's keys. Default: `cleanturn:turn`. */
  prefix?: string;
  /**
   * About how many entries are kept per turn (`XADD … MAXLEN ~`: Redis trims whole blocks, so a few more may stay);
   * a reader that asks for trimmed entries errors with `TurnNotFoundError` (`reason: 'trimmed'`). Default 100 000.
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
   * once, it fails with {@link TurnLogTimeoutError} (retryable). A blocking read waits `blockMs` longer.
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

/** The entries read in one command, at most. */
const PAGE = 1_000;

/** How many times a claim or an append is sent, in all, while Redis gives no answer within the timeout. */
const WRITE_TRIES = 4;

// The owner key holds `running:<token>` from the claim, then `ended:<token>` with the end entry: the token is the
// claimer's (or the taker-over's), and only its appends are taken. What is before the colon is the turn's state.
// The lease key holds the runner's token for `leaseMs`, renewed while it runs; the meta key holds
// `<claimedAt>:<takeovers>`.
//
// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV 'claim' or 'release', the claimer's token,
// ttlMs, leaseMs, the claimer's clock in ms.
// claim: 1 for the first claim of the turn, and for a try again of this very claim (Redis applied an earlier
// send, whose answer was lost or late); 0 while the turn is another claimer's (or ran).
// release: undoes this claim while the turn has no entry (a claim given up on, applied late); 1 if it did.
// A release sent after a claim runs after it on the same connection: scripts are sent whole (runRedisScript).
const OWNER = `
local owner = redis.call('GET', KEYS[2])
local mine = owner == 'running:' .. ARGV[2]
if ARGV[1] == 'release' then
  if mine and redis.call('XLEN', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
    return 1
  end
  return 0
end
if mine then return 1 end
if owner then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 'running:' .. ARGV[2], 'PX', ARGV[3])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[4])
redis.call('SET', KEYS[4], ARGV[5] .. ':0', 'PX', ARGV[3])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV the runner's token, leaseMs, ttlMs. Extends the
// lease of a running turn that is still this token's (a lease that lapsed unseen is taken again), and keeps the
// turn for ttlMs more (a quiet runner is not forgotten): 1, else 0.
const RENEW = `
if redis.call('GET', KEYS[2]) ~= 'running:' .. ARGV[1] then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV the new token, leaseMs, ttlMs. Takes over a running
// turn whose lease lapsed: false when there is nothing to take over, else {takeovers, claimedAt, last entry id or
// ''}. A try again of a takeover Redis applied answers the same.
const TAKE_OVER = `
local owner = redis.call('GET', KEYS[2])
local meta = redis.call('GET', KEYS[4])
-- A turn claimed by a log without leases (an older version of it, during a rolling upgrade) is never taken over.
if not owner or not meta then return false end
local colon = string.find(meta, ':', 1, true)
local claimed = string.sub(meta, 1, colon - 1)
local count = tonumber(string.sub(meta, colon + 1))
if owner ~= 'running:' .. ARGV[1] then
  if string.match(owner, '^%a+') ~= 'running' or redis.call('EXISTS', KEYS[3]) == 1 then return false end
  count = count + 1
  redis.call('SET', KEYS[2], 'running:' .. ARGV[1], 'PX', ARGV[3])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[4], claimed .. ':' .. count, 'PX', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local lastId = ''
if last[1] then lastId = last[1][1] end
return {count, claimed, lastId}
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] lease, KEYS[4] meta; ARGV id, entry JSON, maxEntries, ttlMs, '1' for the end ('0' otherwise), the
// claimer's token, the id after ARGV[1].
// Answers {'ok'} | {'unknown'} | {'not-owner'} | {'ended'} | {'refused', why}.
// A try again of a write Redis applied (the same entry at the same id) answers ok and writes nothing. An end whose
// id holds another entry (the runner's last write, given up on and then applied late) goes right after it, so
// that the turn still ends for its readers.
const APPEND = `
local owner = redis.call('GET', KEYS[2])
if not owner then return {'unknown'} end
local colon = string.find(owner, ':', 1, true)
local state = owner
local token = ''
if colon then
  state = string.sub(owner, 1, colon - 1)
  token = string.sub(owner, colon + 1)
end
if token ~= ARGV[6] then
  if state == 'ended' then return {'ended'} end
  return {'not-owner'}
end
local id = ARGV[1]
local there = redis.call('XRANGE', KEYS[1], id, id)
if there[1] and there[1][2][2] ~= ARGV[2] and ARGV[5] == '1' then
  id = ARGV[7]
  there = redis.call('XRANGE', KEYS[1], id, id)
end
if there[1] then
  if there[1][2][2] == ARGV[2] then return {'ok'} end
  return {'refused', 'entry ' .. id .. ' holds another entry'}
end
if state == 'ended' then return {'ended'} end
local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], id, 'entry', ARGV[2])
if type(added) == 'table' and added.err then return {'refused', added.err} end
if ARGV[5] == '1' then
  redis.call('SET', KEYS[2], 'ended:' .. ARGV[6], 'PX', ARGV[4])
  redis.call('DEL', KEYS[3])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
return {'ok'}
`;

// KEYS[1] stream, KEYS[2] owner; ARGV first id, count. Answers false for an unknown turn, else
// {'running'|'ended', entries from the first id on, the last entry (none for a turn without entries)}.
const PAGE_OF = `
local owner = redis.call('GET', KEYS[2])
if not owner then return false end
local state = string.match(owner, '^%a+')
return {
  state,
  redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2]),
  redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1),
}
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] stop mark; ARGV reason, ttlMs. Marks a running turn as asked to stop (the
// first reason stays): 1, or 0 for a turn that is unknown or ended.
const STOP = `
local owner = redis.call('GET', KEYS[2])
if not owner or string.match(owner, '^%a+') ~= 'running' then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2])
return 1
`;

// KEYS[1] stream, KEYS[2] owner, KEYS[3] stop mark. Answers {'stop', reason} for a running turn asked to stop,
// {'running'}, {'ended'}, or {'unknown'}.
const STOP_STATE = `
local owner = redis.call('GET', KEYS[2])
if not owner then return {'unknown'} end
local state = string.match(owner, '^%a+')
if state ~= 'running' then return {state} end
local reason = redis.call('GET', KEYS[3])
if reason then return {'stop', reason} end
return {'running'}
`;

const scripts = {
  owner: OWNER,
  renew: RENEW,
  takeOver: TAKE_OVER,
  append: APPEND,
  page: PAGE_OF,
  stop: STOP,
  stopState: STOP_STATE,
};

/** A stream entry as Redis answers it: its id and its fields (`['entry', json]`). */
type StreamEntry = [id: string, fields: string[]];

/** The keys of one turn: the turn id is the hash tag, so both share a Redis Cluster slot. */
interface TurnKeys {
  stream: string;
  owner: string;
  /** The stop mark: the reason of a stop asked for while the turn runs. */
  stop: string;
  /** The runner's lease: its token, for `leaseMs`. */
  lease: string;
  /** `<claimedAt>:<takeovers>`. */
  meta: string;
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
 * end, or by a log that did not claim it, is refused. Turn ids are checked with `checkTurnId` (a
 * `TurnIdError` for an empty one, one over 256 UTF-16 code units, or one with a lone surrogate).
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
 * the turn; a turn that expired, even while read, errors its readers with `TurnNotFoundError`.
 *
 * A read gives up after `commandTimeoutMs`, a claim or an append after 4 sends of it, with
 * {@link TurnLogTimeoutError}.
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
  const { client, prefix = 'cleanturn:turn' } = options;
  const maxEntries = options.maxEntries ?? 100_000;
  if (!Number.isInteger(maxEntries) || maxEntries < 1)
    throw new RangeError('redisTurnLog: maxEntries must be an integer >= 1');
  const ttlMs = Math.ceil(duration(options.ttlMs ?? 600_000, 'ttlMs'));
  const blockMs = Math.ceil(duration(options.blockMs ?? 5_000, 'blockMs'));
  const timeoutMs = Math.min(
    duration(options.commandTimeoutMs ?? 5_000, 'commandTimeoutMs'),
    MAX_TIMER_DELAY,
  );
  // Capped at what a timer holds: past it, setTimeout would fire at once and poll Redis in a busy loop.
  const leaseMs = Math.ceil(Math.min(duration(options.leaseMs ?? 10_000, 'leaseMs'), MAX_TIMER_DELAY));
  const stopCheckMs = Math.min(duration(options.stopCheckMs ?? 500, 'stopCheckMs'), MAX_TIMER_DELAY);

  // The token of each turn this log claimed and has not ended: its appends carry it.
  const tokens = new Map<string, string>();

  /** The keys of a turn; the turn id is checked first (a lone surrogate has no URI encoding). */
  const keysOf = (turnId: string): TurnKeys => {
    checkTurnId(turnId);
    const stream = `${prefix}:{${encodeURIComponent(turnId)}}`;
    return {
      stream,
      owner: `${stream}:owner`,
      stop: `${stream}:stop`,
      lease: `${stream}:lease`,
      meta: `${stream}:meta`,
    };
  };

  const run = (s: string, keys: TurnKeys, args: (string | number)[]): Promise<unknown> =>
    runRedisScript(client, s, [keys.stream, keys.owner, keys.lease, keys.meta], args);

  /**
   * Sends a write (idempotent under its token) until one send gets Redis's answer: each waits `timeoutMs`, at most
   * {@link WRITE_TRIES} sends. Redis runs a connection's commands in order, so the answer of a later send also tells
   * what became of every earlier one. Fails with the last send's error: an answer of Redis that is an error, or
   * what left the outcome unknown ({@link TurnLogTimeoutError}, a connection that closed).
   */
  const write = async (
    operation: 'claim' | 'append' | 'takeOver',
    command: () => Promise<unknown>,
  ): Promise<unknown> => {
    for (let tries = 1; ; tries++) {
      try {
        return await within(operation, timeoutMs, command, undefined, tries);
      } catch (error) {
        if (isReplyError(error) || tries >= WRITE_TRIES) throw error;
      }
    }
  };

  return {
    leaseMs,

    async renew(turnId) {
      const keys = keysOf(turnId);
      const token = tokens.get(turnId);
      if (token === undefined) return false;
      const answer = await within('renew', timeoutMs, () =>
        run(scripts.renew, keys, [token, leaseMs, ttlMs]),
      );
      if (answer !== 1) tokens.delete(turnId);
      return answer === 1;
    },

    async takeOver(turnId) {
      const keys = keysOf(turnId);
      const token = randomUUID();
      const answer = (await write('takeOver', () => run(scripts.takeOver, keys, [token, leaseMs, ttlMs]))) as
        | [number, string, string]
        | null;
      if (answer === null) return undefined;
      const [count, claimedAt, lastId] = answer;
      tokens.set(turnId, token);
      return { count, claimedAt: Number(claimedAt), next: lastId === '' ? 0 : seqOf(turnId, lastId) + 1 };
    },

    async claim(turnId) {
      const keys = keysOf(turnId);
      const token = randomUUID();
      let answer: unknown;
      try {
        answer = await write('claim', () =>
          run(scripts.owner, keys, ['claim', token, ttlMs, leaseMs, Date.now()]),
        );
      } catch (error) {
        // Given up with the outcome unknown: a send may still reach Redis, and claim a turn nobody runs. A release
        // sent behind it, on the same connection, runs after it and undoes it.
        if (!isReplyError(error))
          run(scripts.owner, keys, ['release', token, ttlMs, leaseMs, 0]).catch(() => {});
        throw error;
      }
      if (answer !== 1) return false;
      tokens.set(turnId, token);
      return true;
    },

    async append(turnId, entry) {
      const { seq, ...rest } = entry;
      if (!Number.isSafeInteger(seq) || seq < 0)
        throw new RangeError(`redisTurnLog: seq must be a safe integer >= 0`);
      const keys = keysOf(turnId);
      const json = JSON.stringify(rest);
      const end = 'end' in entry;
      const token = tokens.get(turnId) ?? '';
      let status: string;
      let detail: string | undefined;
      try {
        [status, detail] = (await write('append', () =>
          run(scripts.append, keys, [
            idOf(seq),
            json,
            maxEntries,
            ttlMs,
            end ? '1' : '0',
            token,
            idOf(seq + 1),
          ]),
        )) as [string, string | undefined];
      } finally {
        // After its end (written or not), the turn takes nothing more from this log.
        if (end) tokens.delete(turnId);
      }
      // A turn this log no longer runs: the log forgot it, it ended, or it is another claimer's.
      if (status === 'unknown' || status === 'ended' || status === 'not-owner') tokens.delete(turnId);
      if (status === 'unknown') throw new TurnNotFoundError(turnId);
      if (status === 'ended') throw new RangeError(`turn ${turnId} has ended: nothing may follow its end`);
      if (status === 'not-owner') throw new TurnTakenOverError(turnId);
      if (status !== 'ok') throw new RangeError(`turn ${turnId}: entry ${seq} refused: ${detail ?? status}`);
    },

    read(turnId, after) {
      return new Observable<TurnLogEntry<E>>((subscriber) => {
        let keys: TurnKeys;
        try {
          keys = keysOf(turnId);
          checkReadAfter(after, 'redisTurnLog');
        } catch (error) {
          subscriber.error(error);
          return;
        }
        // Aborted when the reader goes away: the pending command's wait ends and its timer is cleared.
        const stop = new AbortController();
        // The reader's own connection for blocking reads, opened once it has to wait.
        let connection: Redis | Cluster | undefined;
        // The seq of the next entry the reader must get.
        let next = after + 1;

        // Emits entries in order; true once the end went out. A gap means Redis trimmed what the reader needs.
        const deliver = (entries: StreamEntry[]): boolean => {
          for (const [id, fields] of entries) {
            if (seqOf(turnId, id) !== next) throw new TurnNotFoundError(turnId, 'trimmed');
            const entry = decode<E>(turnId, next, fields);
            next++;
            subscriber.next(entry);
            if ('end' in entry || subscriber.closed) return true;
          }
          return false;
        };

        const follow = async (): Promise<void> => {
          for (;;) {
            // What is there now (and whether the log still knows the turn), one page at a time.
            const page = (await within(
              'read',
              timeoutMs,
              () => run(scripts.page, keys, [idOf(next), PAGE]),
              stop.signal,
            )) as [string, StreamEntry[], StreamEntry[]] | null;
            if (page === null) throw new TurnNotFoundError(turnId);
            const [state, entries, [last]] = page;
            // Past the last entry: the end again for an ended turn; a running turn never had what the reader names.
            const lastSeq = last === undefined ? -1 : seqOf(turnId, last[0]);
            if (next - 1 > lastSeq) {
              if (state !== 'ended' || last === undefined) throw new TurnNotFoundError(turnId, 'ahead');
              subscriber.next(decode<E>(turnId, lastSeq, last[1]));
              return;
            }
            if (deliver(entries)) return;
            if (entries.length === PAGE) continue;
            // The turn has ended and the reader already had its end.
            if (state === 'ended') return;
            // Then each new entry as it comes, until a quiet round sends the reader back to the check above.
            connection ??= duplicate(client);
            const reader = connection;
            for (;;) {
              const reply = await within(
                'read',
                blockMs + timeoutMs,
                () => reader.xread('COUNT', PAGE, 'BLOCK', blockMs, 'STREAMS', keys.stream, idOf(next - 1)),
                stop.signal,
              );
              const arrived = entriesOf(reply);
              if (arrived.length === 0) break;
              if (deliver(arrived)) return;
            }
          }
        };

        follow().then(
          () => subscriber.complete(),
          (error: unknown) => subscriber.error(error),
        );
        return () => {
          stop.abort();
          connection?.disconnect();
          connection = undefined;
        };
      });
    },

    async requestStop(turnId, reason) {
      const keys = keysOf(turnId);
      const answer = await within('stop', timeoutMs, () =>
        runRedisScript(client, scripts.stop, [keys.stream, keys.owner, keys.stop], [reason, ttlMs]),
      );
      return answer === 1;
    },

    watchStop(turnId) {
      return new Observable<string>((subscriber) => {
        let keys: TurnKeys;
        try {
          keys = keysOf(turnId);
        } catch (error) {
          subscriber.error(error);
          return;
        }
        // Aborted when the runner stops watching: the pending check's wait ends and its timer is cleared.
        const gone = new AbortController();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const check = async (): Promise<void> => {
          timer = undefined;
          let answer: unknown;
          try {
            answer = await within(
              'stop',
              timeoutMs,
              () => runRedisScript(client, scripts.stopState, [keys.stream, keys.owner, keys.stop], []),
              gone.signal,
            );
          } catch (error) {
            if (gone.signal.aborted) return;
            // An answer that is an error is for good; a timeout may pass: the next check tries again.
            if (isReplyError(error)) {
              subscriber.error(error);
              return;
            }
            answer = ['running'];
          }
          if (subscriber.closed) return;
          const [state, reason] = answer as [string, string | undefined];
          if (state === 'stop' && typeof reason === 'string') {
            subscriber.next(reason);
            subscriber.complete();
          } else if (state === 'running') timer = setTimeout(() => void check(), stopCheckMs);
          else subscriber.complete();
        };
        void check();
        return () => {
          gone.abort();
          if (timer !== undefined) clearTimeout(timer);
          timer = undefined;
        };
      });
    },
  };
}

/** A reader's connection: a duplicate of the shared client, whose failures reach the reader through its commands. */
function duplicate(client: Redis | Cluster): Redis | Cluster {
  const connection = client.isCluster ? (client as Cluster).duplicate() : (client as Redis).duplicate();
  connection.on('error', () => {});
  return connection;
}

/**
 * The stream entry id of a seq, `0-<seq + 1>`, computed exactly (past 2^53 a number would round: the id is what
 * Redis compares, as two integers).
 */
function idOf(seq: number): string {
  return `0-${BigInt(seq) + 1n}`;
}

/**
 * The seq of a stream entry id `0-<seq + 1>`. Read as the two integers Redis compares (`ms-seq`), never as text:
 * an id of another shape is not an entry of this log.
 */
function seqOf(turnId: string, id: string): number {
  const match = /^0-([1-9][0-9]*)$/.exec(id);
  const seq = match === null ? Number.NaN : Number(match[1]) - 1;
  if (!Number.isSafeInteger(seq))
    throw new TypeError(`redisTurnLog: stream entry ${id} of turn ${turnId} is not a turn log entry`);
  return seq;
}

/** The log entry of a stream entry's fields. */
function decode<E>(turnId: string, seq: number, fields: string[]): TurnLogEntry<E> {
  const json = fields[fields.indexOf('entry') + 1];
  let body: { event?: E; end?: 'completed' | 'failed'; error?: TurnFailure } | undefined;
  try {
    body = typeof json === 'string' ? JSON.parse(json) : undefined;
  } catch {
    body = undefined;
  }
  if (typeof body !== 'object' || body === null)
    throw new TypeError(`redisTurnLog: entry ${seq} of turn ${turnId} is not a turn log entry`);
  if (body.end === 'completed') return { seq, end: 'completed' };
  if (body.end === 'failed') return { seq, end: 'failed', error: body.error as TurnFailure };
  return { seq, event: body.event as E };
}

/** The entries of an `XREAD` reply on one stream, in either reply shape (RESP2 arrays, or a RESP3 map). */
function entriesOf(reply: unknown): StreamEntry[] {
  if (reply === null || reply === undefined) return [];
  if (Array.isArray(reply)) return (reply[0]?.[1] ?? []) as StreamEntry[];
  return (Object.values(reply as Record<string, StreamEntry[]>)[0] ?? []) as StreamEntry[];
}

/** Checks a duration option: a finite number of milliseconds > 0. */
function duration(value: number, name: string): number {
  if (!(value > 0 && Number.isFinite(value)))
    throw new RangeError(`redisTurnLog: ${name} must be a finite number > 0`);
  return value;
}

/**
 * Runs `command`, or fails with {@link TurnLogTimeoutError} once `timeoutMs` has passed, or (silently, for a
 * reader that went away) once `signal` aborts, even after the answer; the timer is always cleared.
 */
function within<T>(
  operation: RedisTurnLogOperation,
  timeoutMs: number,
  command: () => Promise<T>,
  signal?: AbortSignal,
  tries = 1,
): Promise<T> {
  // A reader that went away meanwhile goes no further (it opens no connection).
  return withinTime(timeoutMs, () => new TurnLogTimeoutError(operation, timeoutMs, tries), command, signal);
}
