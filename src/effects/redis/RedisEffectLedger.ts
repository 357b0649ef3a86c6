import type { Cluster, Redis } from 'ioredis';
import { checkOneOf, checkOption, checkOptionalFunction } from '../../internal/options.js';
import { isReplyError, runRedisScript } from '../../internal/redisScripts.js';
import { withinTime } from '../../internal/wait.js';
import { DEFAULT_RETENTION_MS } from '../defaults.js';
import { EffectError, leaseLostError } from '../errors.js';
import { checkResultSize, decodeError, decodeResult, encodeResult } from '../json.js';
import { checkDuration } from '../ledgerRules.js';
import type {
  ClaimOptions,
  ClaimResult,
  EffectLedger,
  EffectRecord,
  LedgerCallOptions,
  SerializedError,
} from '../types.js';
import {
  ledgerDataLostError,
  ledgerMemoryFullError,
  ledgerPersistenceError,
  ledgerTimeoutError,
  type RedisLedgerOperation,
} from './errors.js';
import {
  currentSettings,
  markerValue,
  persistenceProblems,
  SETTINGS_CHANGED,
  SETTINGS_LUA,
} from './persistence.js';

/**
 * What the ledger does when the server can lose records, or has lost them (see {@link RedisEffectLedger}):
 * `'require'` refuses with an `EffectError` of code `ledger-persistence` (or `ledger-data-lost`), `'warn'` emits a
 * process warning (`CLEANTURN_REDIS_PERSISTENCE`) once per problem and goes on, `'ignore'` does not ask and writes
 * no marker.
 * @inline
 */
export type RedisPersistenceCheck = 'require' | 'warn' | 'ignore';

/** Options of {@link RedisEffectLedger}. */
export interface RedisEffectLedgerOptions {
  /** An ioredis client (or cluster). The ledger never closes it: it is yours. */
  client: Redis | Cluster;
  /** The prefix of the ledger's keys. Default: `cleanturn:effect`. */
  prefix?: string;
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
  /**
   * How long an operation waits for Redis, in milliseconds, whatever the client's own settings (ioredis retries a
   * command for about a minute by default, and forever with `maxRetriesPerRequest: null`). A write that gets no
   * answer is asked again once, within another `commandTimeoutMs`; then it fails with `EffectError` `ledger-timeout`
   * (retryable). Default: 5 000.
   */
  commandTimeoutMs?: number;
  /**
   * Whether to check that the server keeps records through a restart and under memory pressure, and that it
   * still holds what the ledger wrote, and what to do if not. Checked at first use and on every reconnect; the
   * AOF and eviction settings also by every claim. Default: `'require'`: a server that forgets claims runs
   * effects twice, silently, so the ledger refuses it unless told otherwise.
   */
  persistence?: RedisPersistenceCheck;
  /**
   * The clock of leases and retention, in epoch milliseconds. Default: the Redis server's clock (`TIME`), so that
   * machines with skewed clocks agree. Give one to run the ledger on a clock of your own: a fake clock in tests
   * (`now: () => Date.now()` under fake timers), or the clock another ledger runs on. Every ledger that shares the
   * keys must then use the same clock. Redis frees a record's memory once its time is up on Redis's own clock too.
   */
  now?: () => number;
}

/** Default `commandTimeoutMs`. */
const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;
/** The name the ledger's usage errors give as their operator. */
const LEDGER = 'RedisEffectLedger';

/** The smallest `proto-max-bulk-len` a Redis server accepts (1 MB): a value no longer than it is always taken. */
const MIN_BULK_LEN = 1024 * 1024;
/** Redis's default `proto-max-bulk-len` (512 MB), assumed where the server will not say (CONFIG disabled). */
const DEFAULT_BULK_LEN = 512 * 1024 * 1024;

/**
 * A record script to run: the operation it serves, its source, the record's Redis key, its arguments (read at each
 * send), the caller's signal, and `sent.script`, set once the script went out.
 */
type ScriptCall = [
  operation: RedisLedgerOperation,
  script: string,
  record: string,
  args: () => string[],
  signal?: AbortSignal,
  sent?: { script: boolean },
];

/** The error a script answers with when the marker is not the one the ledger knows: `FORGOTTEN <value|->`. */
const FORGOTTEN = 'CLEANTURN_FORGOTTEN';

// A script's clock, ARGV[i]: the ledger's `now` option, or empty for the server's clock (TIME), so that leases
// mean the same to every machine whatever their clocks say. A record lives until its `expires` field on that
// clock (one written before the field, until its TTL): `gone` says it is past. `keep` sets the field, and the TTL
// that frees the memory on the server's clock; PEXPIRE first, which takes no memory (see RENEW).
const clock = (i: number) => `local now
if ARGV[${i}] ~= '' then
  now = tonumber(ARGV[${i}])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ms(x) return string.format('%.0f', x) end
local function gone(expires) return expires and tonumber(expires) <= now end
local function keep(expires)
  redis.call('PEXPIRE', KEYS[1], ms(math.max(1, expires - now)))
  redis.call('HSET', KEYS[1], 'expires', ms(expires))
end
`;
/** The clock of the record scripts: ARGV[2], after the marker value. */
const NOW = clock(2);

// Every record script but WITHDRAW starts with it. KEYS[2] the marker (a single server); ARGV[1] the marker value
// the ledger knows, '' for none (persistence 'ignore', or a Cluster, whose scripts can touch one slot only).
// A server that no longer holds it forgot what the ledger wrote: refuse before reading or writing, also for a
// command the client sends again to a new server after a reconnect, before any check could run.
const GUARD = `if ARGV[1] ~= '' then
  local marker = redis.call('GET', KEYS[2])
  if marker ~= ARGV[1] then return redis.error_reply('${FORGOTTEN} ' .. (marker or '-')) end
end
`;

// KEYS record, marker; ARGV marker value, now, settings ('' : not compared), token, leaseMs, retentionMs.
// Answers {'claimed', reclaimed '0'|'1'} | {'in-progress', remaining ms} | {'completed', result|false} |
// {'failed', error}. A claim already carrying the token is the caller's own, sent again after a timeout: it
// answers as it did, writing nothing. Errors with SETTINGS_CHANGED, writing nothing, when AOF or the memory
// settings are not those the ledger checked.
const CLAIM = `${NOW}${GUARD}${SETTINGS_LUA}
if ARGV[3] ~= '' and cleanturnSettings() ~= ARGV[3] then
  return redis.error_reply('${SETTINGS_CHANGED} ' .. cleanturnSettings())
end
local r = redis.call('HMGET', KEYS[1], 'status', 'until', 'payload', 'token', 'reclaimed', 'expires')
local lease = tonumber(ARGV[5])
local status = r[1]
if gone(r[6]) then status = nil end
local reclaimed = '0'
if status == 'claimed' then
  if r[4] == ARGV[4] then return {'claimed', r[5] or '0'} end
  local remaining = tonumber(r[2]) - now
  if remaining > 0 then return {'in-progress', ms(remaining)} end
  reclaimed = '1'
elseif status then
  return {status, r[3]}
end
redis.call('HSET', KEYS[1], 'status', 'claimed', 'token', ARGV[4], 'until', ms(now + lease), 'reclaimed', reclaimed)
redis.call('HDEL', KEYS[1], 'payload')
keep(now + lease + tonumber(ARGV[6]))
return {'claimed', reclaimed}
`;

// KEYS record, marker; ARGV marker value, now, token, retentionMs, status 'completed'|'failed', payload (absent:
// no result). Answers 1, or 0 when another holder has the key. The DEL comes first: once a script has written,
// Redis lets it finish even when memory is full, so recording what ran is never refused while its claim exists.
const SETTLE = `${NOW}${GUARD}
local r = redis.call('HMGET', KEYS[1], 'token', 'expires')
if r[1] and r[1] ~= ARGV[3] and not gone(r[2]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'token', ARGV[3])
if ARGV[6] then redis.call('HSET', KEYS[1], 'payload', ARGV[6]) end
keep(now + tonumber(ARGV[4]))
return 1
`;

// KEYS record, marker; ARGV marker value, now, token. Answers 1, or 0 when another holder has the key or it is
// settled.
const RELEASE = `${NOW}${GUARD}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'expires')
if not r[1] or gone(r[3]) then return 1 end
if r[1] ~= 'claimed' or r[2] ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

// KEYS record, marker; ARGV marker value, now, token, leaseMs, retentionMs. Extends the lease only while the
// record is a claim carrying the token, expired or not (nobody has claimed since). Answers 1, or 0 when lost.
// PEXPIRE first (in keep), on the existing key: then the HSETs, which take no memory, are allowed when it is full.
const RENEW = `${NOW}${GUARD}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'expires')
if r[1] ~= 'claimed' or r[2] ~= ARGV[3] or gone(r[3]) then return 0 end
local lease = tonumber(ARGV[4])
keep(now + lease + tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], 'until', ms(now + lease))
return 1
`;

// KEYS record, marker; ARGV marker value, now. Answers false, or {status, token, lease remaining ms,
// payload|false, ttl ms}.
const GET = `${NOW}${GUARD}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'until', 'payload', 'expires')
if not r[1] or gone(r[5]) then return false end
local remaining = '0'
if r[3] then remaining = ms(tonumber(r[3]) - now) end
local ttl = redis.call('PTTL', KEYS[1])
if r[5] then ttl = tonumber(r[5]) - now end
return {r[1], r[2], remaining, r[4], ms(ttl)}
`;

// KEYS record; ARGV token, retentionMs, now. Withdraws a claim nobody will run (its caller gave up on it): a new claim
// is deleted, so the next claim is a first one; a take-over of an expired claim has its lease ended instead, so
// the next claim still learns that the earlier holder's effect is in doubt. Answers 1, or 0 when the record does
// not carry the token (the claim never landed, or it is settled).
const WITHDRAW = `${clock(3)}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'reclaimed', 'expires')
if r[1] ~= 'claimed' or r[2] ~= ARGV[1] or gone(r[4]) then return 0 end
if r[3] == '1' then
  keep(now + tonumber(ARGV[2]))
  redis.call('HSET', KEYS[1], 'until', ms(now))
else
  redis.call('DEL', KEYS[1])
end
return 1
`;

/** Whether an operation's failure says nothing of whether the server applied it: no answer came. */
function isUnanswered(error: unknown): boolean {
  return (
    !isReplyError(error) &&
    !(
      error instanceof EffectError &&
      (error.code === 'ledger-persistence' ||
        error.code === 'ledger-data-lost' ||
        error.code === 'ledger-memory-full')
    )
  );
}

/** Whether two lists of connections are the same ones. */
function sameConnections(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((connection, i) => connection === b[i]);
}

/**
 * An effect ledger in Redis: exactly once across processes and machines.
 *
 * Each record is a hash at `prefix:{scope}:key` (scope and key URI-encoded; the scope in braces is the hash tag,
 * so one turn's records share a Redis Cluster slot). The claim is one Lua script that does what `SET NX PX`
 * does and more: it creates the record with a lease unless one exists, takes over a claim whose lease has
 * expired (answering `reclaimed: true`), and otherwise reports the record, atomically. Completion is a script
 * that writes only while the record is absent or carries the caller's fencing token. Leases and retention are
 * measured on the Redis server's clock (`TIME`), so machines with skewed clocks agree on them, or on the `now`
 * option's. Each record carries its end (`expires`, on that clock): a claim lives for its lease plus the
 * retention, a settled record for the retention; past it the record counts as absent, and `PEXPIRE` frees it.
 *
 * **What exactly-once needs from Redis.** A record Redis forgets is a claim nobody holds: the next executor claims
 * the key again and the effect runs twice. So the server must keep the ledger's keys:
 * - through a restart: AOF on (`appendonly yes`). RDB snapshots alone lose everything since the last one.
 * - through a crash of the machine: `appendfsync always` (nothing lost; every write waits for the disk) or
 *   `everysec` (Redis's default: a power loss or kernel crash can lose about the last second — up to two — of
 *   claims and results; a crash of redis-server alone loses nothing, the write has reached the OS). `appendfsync
 *   no` leaves it to the OS, about 30 s on Linux.
 * - under memory pressure: `maxmemory-policy noeviction` (or no `maxmemory`). Every ledger key has a TTL, so the
 *   `volatile-*` policies evict them as readily as the `allkeys-*` ones. A full server refuses new claims with
 *   `EffectError` `ledger-memory-full` (retryable); completions, renewals and releases still go through.
 * - through a failover: replication is asynchronous, so a promoted replica can miss the last writes of the old
 *   master; where that matters, run the ledger on a primary without automatic failover or accept that window.
 *
 * At first use and on every reconnect (a new connection of the client; on a Cluster, a new connection to any
 * master) the ledger reads these settings with `CONFIG GET` (on every master of a Cluster), or from `INFO` where
 * CONFIG is disabled, as on managed services (INFO does not show the fsync policy; it is then taken on trust).
 * Every claim also compares, inside its script, AOF and the memory settings (read with `INFO`) with the ones
 * checked, so a server switched to an evicting policy or to no AOF later is checked again before the claim
 * writes. On a single server the ledger also keeps a marker, the key `prefix:marker` without TTL, written at
 * first use; every script refuses to run when the server no longer holds the marker this ledger saw, as after a
 * restart without its data or when another server answers at the address: `EffectError` `ledger-data-lost`, also for
 * a command the client sends again after a reconnect. (A process started after the loss cannot know what was
 * lost: it takes the server as it finds it. A Cluster keeps no marker: its scripts can touch one slot only.)
 * With `persistence: 'require'` (default) a server that can forget records is refused with
 * `EffectError` `ledger-persistence` before anything is written, and one that forgot with
 * `EffectError` `ledger-data-lost` from then on; `'warn'` warns once per problem and goes on (taking the server as it
 * now is); `'ignore'` does not ask and writes no marker (for a server you have checked yourself, or where CONFIG
 * and INFO are both refused). A handler always gets the effect key: a service idempotent on it (a payment API)
 * closes these windows too.
 *
 * **Timeouts.** Every operation waits at most `commandTimeoutMs` for an answer, whatever the client's retry
 * settings, so a turn never waits on a dead server for longer. A command that got no answer may still run: the
 * client sends it again after a reconnect, and a stalled server runs what is in its socket once it goes on. So
 * a write that got no answer, or whose connection failed, is asked again once under the same fencing token
 * (every write is idempotent under its token; a claim is generated with its token by the ledger, so a claim that
 * landed is recognised as the caller's own), within another `commandTimeoutMs`, and its answer is the answer.
 * When that one gets none either, the operation fails with `EffectError` `ledger-timeout`, and a claim is withdrawn
 * by a command sent behind it, which deletes it (or ends the lease of a take-over) once the server takes commands
 * again: no claim is left standing that nobody runs. The same withdrawal follows a claim whose `signal` aborts.
 * Scripts are sent with `EVAL` (Redis caches them by their SHA-1): an `EVALSHA` that misses the cache is sent
 * again later, and could then run after the commands sent behind it.
 *
 * Asynchronous, so it cannot serve as `seen` of `dedupeByEffectKey` (which needs a synchronous `has`); the
 * executor replays settled keys instead, which also gives the consumer their results.
 *
 * ## Example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { executeTools } from 'cleanturn/effects';
 * import { RedisEffectLedger } from 'cleanturn/effects/redis';
 *
 * // redis-server --appendonly yes --appendfsync everysec --maxmemory-policy noeviction
 * const ledger = new RedisEffectLedger({ client: new Redis(process.env.REDIS_URL) });
 * turn$.pipe(executeTools(handlers, { turnId, ledger }));
 * ```
 */
export class RedisEffectLedger implements EffectLedger {
  /** The client. */
  readonly #client: Redis | Cluster;
  /** The key prefix. */
  readonly #prefix: string;
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** How long an operation waits for Redis. */
  readonly #timeoutMs: number;
  /** What to do with a server that can lose records. */
  readonly #persistence: RedisPersistenceCheck;
  /** The marker key; `undefined` on a Cluster and with `persistence: 'ignore'`. */
  readonly #marker: string | undefined;
  /** The connections the last check passed on; `undefined` before, and after a refusal or a change. */
  #checkedOn: readonly unknown[] | undefined;
  /** The check under way, shared by the operations that wait for it. */
  #checking: Promise<void> | undefined;
  /** The marker's value this ledger has seen; `undefined` before the first check. */
  #markerValue: string | undefined;
  /** The settings the last check passed with, as claims compare them; `''` for none. */
  #settings = '';
  /** Set once the server forgot (with `persistence: 'require'`): every operation fails with it. */
  #forgotten: EffectError | undefined;
  /** The warnings emitted, so that each is emitted once. */
  readonly #warned = new Set<string>();
  /** The clock of leases and retention; `undefined`: the server's. */
  readonly #now: (() => number) | undefined;

  constructor(options: RedisEffectLedgerOptions) {
    this.#client = options.client;
    this.#timeoutMs = checkDuration(
      LEDGER,
      'commandTimeoutMs',
      options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    );
    const persistence = options.persistence ?? 'require';
    checkOneOf(LEDGER, 'persistence', persistence, ['require', 'warn', 'ignore']);
    this.#persistence = persistence;
    this.#prefix = options.prefix ?? 'cleanturn:effect';
    this.#retentionMs = Math.ceil(
      checkDuration(LEDGER, 'retentionMs', options.retentionMs ?? DEFAULT_RETENTION_MS),
    );
    this.#marker =
      this.#persistence === 'ignore' || this.#client.isCluster ? undefined : `${this.#prefix}:marker`;
    checkOptionalFunction(LEDGER, 'now', options.now, 'a function answering epoch milliseconds');
    this.#now = options.now;
  }

  async claim(scope: string, key: string, options: ClaimOptions): Promise<ClaimResult> {
    const leaseMs = Math.ceil(checkDuration(LEDGER, 'leaseMs', options.leaseMs));
    const token = globalThis.crypto.randomUUID();
    const record = this.#key(scope, key);
    const now = this.#clock();
    const sent = { script: false };
    let reply: [string, string | null];
    try {
      reply = (await this.#write(
        'claim',
        CLAIM,
        record,
        () => [clockArg(now), this.#settings, token, String(leaseMs), String(this.#retentionMs)],
        options.signal,
        sent,
      )) as [string, string | null];
    } catch (error) {
      // The claim may still land (the caller gave up, or no answer came): withdraw it behind itself.
      if (sent.script) this.#withdraw(record, token);
      throw error;
    }
    const [status, value] = reply;
    switch (status) {
      case 'claimed':
        return { status: 'claimed', token, reclaimed: value === '1' };
      case 'in-progress':
        return { status: 'in-progress', until: (now ?? Date.now()) + Number(value) };
      case 'completed':
        return { status: 'completed', result: decodeResult(value) };
      default:
        return { status: 'failed', error: decodeError(value ?? '{}') };
    }
  }

  /**
   * Records the result. A result that is not JSON data, or whose JSON text is longer than the server takes in one
   * value (its `proto-max-bulk-len`, 512 MB by default, read from the server for a text past 1 MB), is refused
   * with code `unstorable-result` before anything is sent: the claim stands, and its holder records the failure
   * (`executeTools` does). A server sent too long a value would drop the connection instead.
   */
  async complete(scope: string, key: string, token: string, result: unknown): Promise<void> {
    const payload = encodeResult(result);
    if (payload !== undefined && payload.length * 3 > MIN_BULK_LEN) {
      checkResultSize(payload, await this.#bulkLimit(), 'the Redis server (proto-max-bulk-len)');
    }
    await this.#settle(scope, key, token, 'completed', payload);
  }

  async fail(scope: string, key: string, token: string, error: SerializedError): Promise<void> {
    await this.#settle(scope, key, token, 'failed', JSON.stringify(error));
  }

  async release(scope: string, key: string, token: string): Promise<void> {
    const now = clockArg(this.#clock());
    const ok = await this.#write('release', RELEASE, this.#key(scope, key), () => [now, token]);
    if (ok !== 1) throw leaseLostError(scope, key);
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now on the Redis server's clock (one Lua script,
   * within `commandTimeoutMs`, asked again once when no answer comes). A holder whose lease has ended may still
   * renew while nobody has claimed the key since.
   *
   * @returns `true` when the caller still holds the claim; `false` when it is lost (another holder claimed,
   *   the key was settled or released, or Redis forgot the record), and nothing changed.
   * @throws {UsageError} when `leaseMs` is not a positive number of milliseconds.
   * @throws {EffectError} `ledger-timeout` when Redis does not answer, twice, within `commandTimeoutMs`.
   * @throws The reason of `options.signal` once it aborts (the renewal may still land; that is harmless).
   */
  async renew(
    scope: string,
    key: string,
    token: string,
    leaseMs: number,
    options?: LedgerCallOptions,
  ): Promise<boolean> {
    const lease = Math.ceil(checkDuration(LEDGER, 'leaseMs', leaseMs));
    const now = clockArg(this.#clock());
    const ok = await this.#write(
      'renew',
      RENEW,
      this.#key(scope, key),
      () => [now, token, String(lease), String(this.#retentionMs)],
      options?.signal,
    );
    return ok === 1;
  }

  async get(scope: string, key: string): Promise<EffectRecord | undefined> {
    const clock = this.#clock();
    const reply = (await this.#send('get', GET, this.#key(scope, key), () => [clockArg(clock)])) as
      | [string, string, string, string | null, string]
      | null;
    if (reply === null) return undefined;
    const [status, token, leaseRemaining, payload, ttl] = reply;
    const now = clock ?? Date.now();
    const expiresAt = now + Number(ttl);
    switch (status) {
      case 'claimed':
        return { status: 'claimed', token, leaseUntil: now + Number(leaseRemaining), expiresAt };
      case 'completed':
        return { status: 'completed', token, result: decodeResult(payload), expiresAt };
      default:
        return { status: 'failed', token, error: decodeError(payload ?? '{}'), expiresAt };
    }
  }

  async #settle(
    scope: string,
    key: string,
    token: string,
    status: 'completed' | 'failed',
    payload: string | undefined,
  ): Promise<void> {
    const args = [clockArg(this.#clock()), token, String(this.#retentionMs), status];
    if (payload !== undefined) args.push(payload);
    const ok = await this.#write(
      status === 'completed' ? 'complete' : 'fail',
      SETTLE,
      this.#key(scope, key),
      () => args,
    );
    if (ok !== 1) throw leaseLostError(scope, key);
  }

  /**
   * The longest value the server takes (`proto-max-bulk-len`; the smallest of the masters of a Cluster), asked
   * within `commandTimeoutMs`; Redis's default where CONFIG is refused (managed services). Asked each time, since
   * `CONFIG SET` changes it: only for a result past 1 MB, whose sending costs far more.
   */
  async #bulkLimit(): Promise<number> {
    const client = this.#client;
    const nodes: Redis[] = client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
    const limits = await withinTime(
      this.#timeoutMs,
      () => ledgerTimeoutError('complete', this.#timeoutMs),
      () =>
        Promise.all(
          nodes.map(async (node) => {
            try {
              const reply = (await node.config('GET', 'proto-max-bulk-len')) as unknown;
              const value = Array.isArray(reply) ? Number(reply[1]) : Number.NaN;
              return Number.isFinite(value) && value > 0 ? value : DEFAULT_BULK_LEN;
            } catch (error) {
              if (isReplyError(error)) return DEFAULT_BULK_LEN;
              throw error;
            }
          }),
        ),
    );
    return limits.length === 0 ? DEFAULT_BULK_LEN : Math.min(...limits);
  }

  /** The clock of a script: the `now` option's time, or `undefined` for the server's. */
  #clock(): number | undefined {
    if (this.#now === undefined) return undefined;
    const now = this.#now();
    checkOption(Number.isFinite(now), LEDGER, 'now()', 'a finite number of epoch milliseconds', now);
    return Math.floor(now);
  }

  /** The Redis key of a record: the scope is the hash tag; both parts are encoded so that no two pairs meet. */
  #key(scope: string, key: string): string {
    return `${this.#prefix}:{${encodeURIComponent(scope)}}:${encodeURIComponent(key)}`;
  }

  /**
   * Runs a write; when it gets no answer (a timeout, a failed connection), runs it once more with the same
   * arguments: every write is idempotent under its token, so the second answer says what holds, whatever became
   * of the first. `sent.script` tells the caller whether the script went out.
   */
  async #write(...call: ScriptCall): Promise<unknown> {
    try {
      return await this.#send(...call);
    } catch (error) {
      const signal = call[4];
      if (signal?.aborted || !isUnanswered(error)) throw error;
      return await this.#send(...call);
    }
  }

  /**
   * Runs a record script after the checks of the connection (see the class comment), within `commandTimeoutMs`
   * and until `signal` aborts. Nothing is sent once the call has given up. A script that finds the settings
   * changed is run again after a new check; one that finds the marker gone refuses (or, with `'warn'`, runs
   * again once the ledger has taken the server as it is).
   */
  async #send(
    ...[operation, script, record, args, signal, sent = { script: false }]: ScriptCall
  ): Promise<unknown> {
    // Aborted, synchronously, when the call gives up: what is still waiting then sends nothing.
    const stop = new AbortController();
    const give = () => stop.abort();
    signal?.addEventListener('abort', give, { once: true });
    const timeout = () => {
      stop.abort();
      return ledgerTimeoutError(operation, this.#timeoutMs);
    };
    const keys = this.#marker === undefined ? [record] : [record, this.#marker];
    const send = async () => {
      for (;;) {
        await this.#ready(stop.signal);
        if (stop.signal.aborted) return undefined;
        sent.script = true;
        try {
          return await runRedisScript(this.#client, script, keys, [
            this.#marker === undefined ? '' : (this.#markerValue ?? ''),
            ...args(),
          ]);
        } catch (error) {
          if (!this.#recover(error)) throw error;
        }
      }
    };
    try {
      return await withinTime(this.#timeoutMs, timeout, send, signal);
    } catch (error) {
      if (isReplyError(error) && error.message.startsWith('OOM')) {
        throw ledgerMemoryFullError(operation, error.message);
      }
      throw error;
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', give);
    }
  }

  /**
   * What a script's refusal asks for: `true` to run it again (the settings changed: check them again; with
   * `'warn'`, the marker is gone: warn, and take the server as it is). Throws `EffectError` `ledger-data-lost` when the
   * marker is gone with `'require'`; `false` for any other error.
   */
  #recover(error: unknown): boolean {
    if (!isReplyError(error)) return false;
    if (error.message.startsWith(SETTINGS_CHANGED)) {
      this.#checkedOn = undefined;
      return true;
    }
    if (!error.message.startsWith(FORGOTTEN) || this.#marker === undefined) return false;
    const found = error.message.slice(FORGOTTEN.length + 1);
    this.#lost(found === '-' ? undefined : found);
    this.#markerValue = undefined;
    this.#checkedOn = undefined;
    return true;
  }

  /**
   * The server no longer holds the marker this ledger saw: with `'require'` refuses from now on, with `'warn'`
   * warns (and the caller takes the server as it is).
   */
  #lost(found: string | undefined): void {
    const lost = ledgerDataLostError(this.#marker ?? '', this.#markerValue ?? '', found);
    if (this.#persistence === 'require') {
      this.#forgotten = lost;
      throw lost;
    }
    this.#warn(lost.message);
  }

  /** The client's connections now (each master's on a Cluster), or `undefined` while it is not ready. */
  #connections(): readonly unknown[] | undefined {
    const client = this.#client;
    if (client.status !== 'ready') return undefined;
    return client.isCluster
      ? (client as Cluster).nodes('master').map((node) => node.stream)
      : [(client as Redis).stream];
  }

  /**
   * Resolves once the current connection has been checked (see the class comment), checking it if not; nothing
   * to do with `persistence: 'ignore'`.
   */
  async #ready(stop: AbortSignal): Promise<void> {
    if (this.#persistence === 'ignore') return;
    for (;;) {
      if (this.#forgotten !== undefined) throw this.#forgotten;
      if (stop.aborted) return;
      const now = this.#connections();
      if (this.#checkedOn !== undefined && now !== undefined && sameConnections(now, this.#checkedOn)) return;
      this.#checking ??= this.#check().finally(() => {
        this.#checking = undefined;
      });
      await this.#checking;
    }
  }

  /**
   * Checks the server: its settings; on a single server, also the settings as claims compare them and the
   * marker (written at first use). Marks the connections checked when they did not change meanwhile.
   */
  async #check(): Promise<void> {
    // A client still connecting answers once it is ready: check that connection, not the one before it.
    if (this.#connections() === undefined) await this.#client.ping();
    const before = this.#connections();
    const single = this.#marker !== undefined ? (this.#client as Redis) : undefined;
    const settings = single === undefined ? '' : await currentSettings(single);
    const problems = await persistenceProblems(this.#client);
    if (problems.length > 0) {
      if (this.#persistence === 'require') throw ledgerPersistenceError(problems);
      this.#warn(ledgerPersistenceError(problems).message);
    }
    if (single !== undefined && this.#marker !== undefined) {
      const marker = await markerValue(single, this.#marker, settings, globalThis.crypto.randomUUID());
      // The settings changed between the reads: check again.
      if (marker === undefined) return;
      if (this.#markerValue !== undefined && marker.value !== this.#markerValue) {
        this.#lost(marker.written ? undefined : marker.value);
      }
      this.#markerValue = marker.value;
      this.#settings = settings;
    }
    const after = this.#connections();
    if (before !== undefined && after !== undefined && sameConnections(before, after))
      this.#checkedOn = after;
  }

  /** Emits a process warning (`CLEANTURN_REDIS_PERSISTENCE`), once per message. */
  #warn(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    process.emitWarning(message, { type: 'CleanturnWarning', code: 'CLEANTURN_REDIS_PERSISTENCE' });
  }

  /**
   * Withdraws a claim the caller will not run, without waiting: sent behind the claim on the same connection, it
   * runs after it, whenever the server takes commands again.
   */
  #withdraw(record: string, token: string): void {
    let now: number | undefined;
    try {
      now = this.#clock();
    } catch {
      // A `now` that answers no time: the claim's own call has said so already; take the server's clock.
    }
    runRedisScript(this.#client, WITHDRAW, [record], [token, String(this.#retentionMs), clockArg(now)]).catch(
      () => {
        // The client gave up on it too: then it gave up on the claim before it, or the claim was answered.
      },
    );
  }
}

/** The clock argument of a script: the time, or empty for the server's clock. */
function clockArg(now: number | undefined): string {
  return now === undefined ? '' : String(now);
}
