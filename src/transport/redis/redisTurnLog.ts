import { type TurnFailure, type TurnLog, type TurnLogEntry, TurnNotFoundError } from 'cleanturn/transport';
import type { Cluster, Redis } from 'ioredis';
import { Observable } from 'rxjs';
import { type RedisScript, redisScript, runRedisScript, withinTime } from '../../internal/redisScripts.js';
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
   * command for about a minute by default, and forever with `maxRetriesPerRequest: null`); then it fails with
   * {@link TurnLogTimeoutError} (retryable). A blocking read waits `blockMs` longer. Default: 5 000.
   */
  commandTimeoutMs?: number;
}

/** The entries read in one command, at most. */
const PAGE = 1_000;

// KEYS[1] stream, KEYS[2] owner; ARGV ttlMs. Answers 1 for the first claim, 0 while the turn is known.
const CLAIM = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 'running', 'PX', ARGV[1])
return 1
`;

// KEYS[1] stream, KEYS[2] owner; ARGV id, entry JSON, maxEntries, ttlMs, '1' for the end ('0' otherwise).
// Answers {'ok'} | {'unknown'} | {'ended'} | {'refused', Redis's error} (an id not above the last one).
const APPEND = `
local state = redis.call('GET', KEYS[2])
if not state then return {'unknown'} end
if state == 'ended' then return {'ended'} end
local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[1], 'entry', ARGV[2])
if type(added) == 'table' and added.err then return {'refused', added.err} end
if ARGV[5] == '1' then
  redis.call('SET', KEYS[2], 'ended', 'PX', ARGV[4])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'ok'}
`;

// KEYS[1] stream, KEYS[2] owner; ARGV first id, count. Answers false for an unknown turn, else
// {'running'|'ended', entries from the first id on}.
const PAGE_OF = `
local state = redis.call('GET', KEYS[2])
if not state then return false end
return {state, redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])}
`;

const scripts = { claim: redisScript(CLAIM), append: redisScript(APPEND), page: redisScript(PAGE_OF) };

/** A stream entry as Redis answers it: its id and its fields (`['entry', json]`). */
type StreamEntry = [id: string, fields: string[]];

/** The keys of one turn: the turn id is the hash tag, so both share a Redis Cluster slot. */
interface TurnKeys {
  stream: string;
  owner: string;
}

/**
 * A turn log in Redis, for many server instances: a client that reconnects to another instance resumes the same
 * turn, and the turn runs once whichever instance the client reaches first.
 *
 * Each turn is a Redis Stream at `prefix:{turnId}` (the turn id URI-encoded; in braces, the hash tag), one entry
 * per log entry with the id `0-<seq + 1>` and the entry as JSON in one field, so reading after seq `n` is
 * `XREAD … STREAMS key 0-<n + 1>`; `XADD … MAXLEN ~ maxEntries` trims it. The claim is the key
 * `prefix:{turnId}:owner`, set only when absent (`running`, then `ended` with the end entry). Both keys expire
 * `ttlMs` after the claim and after each entry (`PEXPIRE`), so a finished turn is kept for its late readers
 * and then forgotten. Claim and append are one Lua script each: an append to a turn the log forgot, or after its
 * end, is refused.
 *
 * A reader reads what is there with `XRANGE` on the shared client and, when the turn is still running, follows it
 * with `XREAD BLOCK` on a connection of its own (`client.duplicate()`: a blocking command would block every other
 * command of the shared client), closed when the reader unsubscribes or reads the end. A reader that joins after
 * the end opens no connection. Between two blocking reads (`blockMs`) the reader checks that the log still knows
 * the turn; a turn that expired, even while read, errors its readers with `TurnNotFoundError`.
 *
 * Every operation gives up after `commandTimeoutMs` with {@link TurnLogTimeoutError}.
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
  const timeoutMs = duration(options.commandTimeoutMs ?? 5_000, 'commandTimeoutMs');

  const keysOf = (turnId: string): TurnKeys => {
    const stream = `${prefix}:{${encodeURIComponent(turnId)}}`;
    return { stream, owner: `${stream}:owner` };
  };

  const run = (s: RedisScript, keys: TurnKeys, args: (string | number)[]): Promise<unknown> =>
    runRedisScript(client, s, [keys.stream, keys.owner], args);

  return {
    async claim(turnId) {
      const keys = keysOf(turnId);
      return (await within('claim', timeoutMs, () => run(scripts.claim, keys, [ttlMs]))) === 1;
    },

    async append(turnId, entry) {
      const { seq, ...rest } = entry;
      if (!Number.isInteger(seq) || seq < 0)
        throw new RangeError(`redisTurnLog: seq must be an integer >= 0`);
      const json = JSON.stringify(rest);
      const last = 'end' in entry ? '1' : '0';
      const keys = keysOf(turnId);
      const [status, detail] = (await within('append', timeoutMs, () =>
        run(scripts.append, keys, [`0-${seq + 1}`, json, maxEntries, ttlMs, last]),
      )) as [string, string | undefined];
      if (status === 'unknown') throw new TurnNotFoundError(turnId);
      if (status === 'ended') throw new RangeError(`turn ${turnId} has ended: nothing may follow its end`);
      if (status !== 'ok') throw new RangeError(`turn ${turnId}: entry ${seq} refused: ${detail ?? status}`);
    },

    read(turnId, after) {
      return new Observable<TurnLogEntry<E>>((subscriber) => {
        if (!Number.isInteger(after) || after < -1) {
          subscriber.error(new RangeError('redisTurnLog: read after must be an integer >= -1'));
          return;
        }
        const keys = keysOf(turnId);
        // Aborted when the reader goes away: the pending command's wait ends and its timer is cleared.
        const stop = new AbortController();
        // The reader's own connection for blocking reads, opened once it has to wait.
        let connection: Redis | Cluster | undefined;
        // The seq of the next entry the reader must get.
        let next = after + 1;

        // Emits entries in order; true once the end went out. A gap means Redis trimmed what the reader needs.
        const deliver = (entries: StreamEntry[]): boolean => {
          for (const [id, fields] of entries) {
            if (seqOf(id) !== next) throw new TurnNotFoundError(turnId, 'trimmed');
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
              () => run(scripts.page, keys, [`0-${next + 1}`, PAGE]),
              stop.signal,
            )) as [string, StreamEntry[]] | null;
            if (page === null) throw new TurnNotFoundError(turnId);
            const [state, entries] = page;
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
                () => reader.xread('COUNT', PAGE, 'BLOCK', blockMs, 'STREAMS', keys.stream, `0-${next}`),
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
  };
}

/** A reader's connection: a duplicate of the shared client, whose failures reach the reader through its commands. */
function duplicate(client: Redis | Cluster): Redis | Cluster {
  const connection = client.isCluster ? (client as Cluster).duplicate() : (client as Redis).duplicate();
  connection.on('error', () => {});
  return connection;
}

/** The seq of a stream entry id `0-<seq + 1>`. */
function seqOf(id: string): number {
  return Number(id.slice(id.indexOf('-') + 1)) - 1;
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
): Promise<T> {
  // A reader that went away meanwhile goes no further (it opens no connection).
  return withinTime(timeoutMs, () => new TurnLogTimeoutError(operation, timeoutMs), command, signal);
}
