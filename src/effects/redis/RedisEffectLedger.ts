import {
  type ClaimOptions,
  type ClaimResult,
  checkDuration,
  decodeError,
  decodeResult,
  type EffectLedger,
  type EffectRecord,
  encodeResult,
  LeaseLostError,
  type SerializedError,
} from 'cleanturn/effects';
import type { Cluster, Redis } from 'ioredis';
import { type RedisScript, redisScript, runRedisScript, withinTime } from '../../internal/redisScripts.js';
import { DEFAULT_RETENTION_MS } from '../defaults.js';
import { LedgerPersistenceError, LedgerTimeoutError, type RedisLedgerOperation } from './errors.js';
import { persistenceProblems } from './persistence.js';

/**
 * What the ledger does when the server can lose records (see {@link RedisEffectLedger}): `'require'` refuses with
 * {@link LedgerPersistenceError}, `'warn'` emits a process warning (`CLEANTURN_REDIS_PERSISTENCE`) once and goes
 * on, `'ignore'` does not ask.
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
   * command for about a minute by default, and forever with `maxRetriesPerRequest: null`); then it fails with
   * {@link LedgerTimeoutError} (retryable). Default: 5 000.
   */
  commandTimeoutMs?: number;
  /**
   * Whether to check, at first use, that the server keeps records through a restart and under memory pressure,
   * and what to do if not. Default: `'require'`: a server that forgets claims runs effects twice, silently, so
   * the ledger refuses it unless told otherwise.
   */
  persistence?: RedisPersistenceCheck;
}

/** Default `commandTimeoutMs`. */
const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

// Every script reads the server's clock, so leases mean the same to every machine whatever their clocks say.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(x) return string.format('%.0f', x) end
`;

// KEYS[1] record; ARGV token, leaseMs, retentionMs.
// Answers {'claimed', reclaimed '0'|'1'} | {'in-progress', remaining ms} | {'completed', result|false} |
// {'failed', error}.
const CLAIM = `${NOW}
local r = redis.call('HMGET', KEYS[1], 'status', 'until', 'payload')
local lease = tonumber(ARGV[2])
local status = r[1]
local reclaimed = '0'
if status == 'claimed' then
  local remaining = tonumber(r[2]) - now
  if remaining > 0 then return {'in-progress', ms(remaining)} end
  reclaimed = '1'
elseif status then
  return {status, r[3]}
end
redis.call('HSET', KEYS[1], 'status', 'claimed', 'token', ARGV[1], 'until', ms(now + lease))
redis.call('PEXPIRE', KEYS[1], ms(lease + tonumber(ARGV[3])))
return {'claimed', reclaimed}
`;

// KEYS[1] record; ARGV token, retentionMs, status 'completed'|'failed', payload (absent: no result).
// Answers 1, or 0 when another holder has the key.
const SETTLE = `
local token = redis.call('HGET', KEYS[1], 'token')
if token and token ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'token', ARGV[1])
if ARGV[4] then redis.call('HSET', KEYS[1], 'payload', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

// KEYS[1] record; ARGV token. Answers 1, or 0 when another holder has the key or it is settled.
const RELEASE = `
local r = redis.call('HMGET', KEYS[1], 'status', 'token')
if not r[1] then return 1 end
if r[1] ~= 'claimed' or r[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

// KEYS[1] record; ARGV token, leaseMs, retentionMs. Extends the lease (on the server's clock) only while the
// record is a claim carrying the token, expired or not (nobody has claimed since). Answers 1, or 0 when lost.
const RENEW = `${NOW}
local r = redis.call('HMGET', KEYS[1], 'status', 'token')
if r[1] ~= 'claimed' or r[2] ~= ARGV[1] then return 0 end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'until', ms(now + lease))
redis.call('PEXPIRE', KEYS[1], ms(lease + tonumber(ARGV[3])))
return 1
`;

// KEYS[1] record. Answers false, or {status, token, lease remaining ms, payload|false, ttl ms}.
const GET = `${NOW}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'until', 'payload')
if not r[1] then return false end
local remaining = '0'
if r[3] then remaining = ms(tonumber(r[3]) - now) end
return {r[1], r[2], remaining, r[4], ms(redis.call('PTTL', KEYS[1]))}
`;

const scripts = {
  claim: redisScript(CLAIM),
  settle: redisScript(SETTLE),
  release: redisScript(RELEASE),
  renew: redisScript(RENEW),
  get: redisScript(GET),
};

/**
 * An effect ledger in Redis: exactly once across processes and machines.
 *
 * Each record is a hash at `prefix:{scope}:key` (scope and key URI-encoded; the scope in braces is the hash tag,
 * so one turn's records share a Redis Cluster slot). The claim is one Lua script that does what `SET NX PX`
 * does and more: it creates the record with a lease unless one exists, takes over a claim whose lease has
 * expired (answering `reclaimed: true`), and otherwise reports the record, atomically. Completion is a script
 * that writes only while the record is absent or carries the caller's fencing token. Leases are measured on the
 * Redis server's clock (`TIME`), so machines with skewed clocks agree on them. Records expire with `PEXPIRE`:
 * a claim after its lease plus the retention, a settled record after the retention.
 *
 * **What exactly-once needs from Redis.** A record Redis forgets is a claim nobody holds: the next executor claims
 * the key again and the effect runs twice. So the server must keep the ledger's keys:
 * - through a restart: AOF on (`appendonly yes`). RDB snapshots alone lose everything since the last one.
 * - through a crash of the machine: `appendfsync always` (nothing lost; every write waits for the disk) or
 *   `everysec` (Redis's default: a power loss or kernel crash can lose about the last second — up to two — of
 *   claims and results; a crash of redis-server alone loses nothing, the write has reached the OS). `appendfsync
 *   no` leaves it to the OS, about 30 s on Linux.
 * - under memory pressure: `maxmemory-policy noeviction` (or no `maxmemory`). Every ledger key has a TTL, so the
 *   `volatile-*` policies evict them as readily as the `allkeys-*` ones.
 * - through a failover: replication is asynchronous, so a promoted replica can miss the last writes of the old
 *   master; where that matters, run the ledger on a primary without automatic failover or accept that window.
 * At first use (and again after a refusal) the ledger reads these settings with `CONFIG GET` (on every master of
 * a Cluster), or from `INFO` where CONFIG is disabled, as on managed services (INFO does not show the fsync
 * policy; it is then taken on trust). With `persistence: 'require'` (default) a server that can forget records
 * is refused with {@link LedgerPersistenceError} before anything is written; `'warn'` warns once and goes on;
 * `'ignore'` does not ask (for a server you have checked yourself, or where CONFIG and INFO are both refused).
 * A handler always gets the effect key: a service idempotent on it (a payment API) closes these windows too.
 *
 * **Timeouts.** Every operation gives up after `commandTimeoutMs` with {@link LedgerTimeoutError}, whatever the
 * client's retry settings, so a turn never waits on a dead server for longer. The command may still be sent when
 * the client reconnects; a claim taken that way expires after its lease, like a crashed holder's.
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
  /** The persistence check once it has passed (or warned); `undefined` before, or after a refusal or a failure. */
  #checked: Promise<void> | undefined;

  constructor(options: RedisEffectLedgerOptions) {
    this.#client = options.client;
    this.#timeoutMs = checkDuration(
      options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      'commandTimeoutMs',
    );
    this.#persistence = options.persistence ?? 'require';
    if (!['require', 'warn', 'ignore'].includes(this.#persistence)) {
      throw new RangeError(
        `persistence must be 'require', 'warn' or 'ignore', got ${String(options.persistence)}`,
      );
    }
    this.#prefix = options.prefix ?? 'cleanturn:effect';
    this.#retentionMs = Math.ceil(checkDuration(options.retentionMs ?? DEFAULT_RETENTION_MS, 'retentionMs'));
  }

  async claim(scope: string, key: string, options: ClaimOptions): Promise<ClaimResult> {
    const leaseMs = Math.ceil(checkDuration(options.leaseMs, 'leaseMs'));
    const token = globalThis.crypto.randomUUID();
    const [status, value] = (await this.#run('claim', scripts.claim, this.#key(scope, key), [
      token,
      String(leaseMs),
      String(this.#retentionMs),
    ])) as [string, string | null];
    switch (status) {
      case 'claimed':
        return { status: 'claimed', token, reclaimed: value === '1' };
      case 'in-progress':
        return { status: 'in-progress', until: Date.now() + Number(value) };
      case 'completed':
        return { status: 'completed', result: decodeResult(value) };
      default:
        return { status: 'failed', error: decodeError(value ?? '{}') };
    }
  }

  async complete(scope: string, key: string, token: string, result: unknown): Promise<void> {
    const payload = encodeResult(result);
    await this.#settle(scope, key, token, 'completed', payload);
  }

  async fail(scope: string, key: string, token: string, error: SerializedError): Promise<void> {
    await this.#settle(scope, key, token, 'failed', JSON.stringify(error));
  }

  async release(scope: string, key: string, token: string): Promise<void> {
    const ok = await this.#run('release', scripts.release, this.#key(scope, key), [token]);
    if (ok !== 1) throw new LeaseLostError(scope, key);
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now on the Redis server's clock (one Lua script,
   * within `commandTimeoutMs`). A holder whose lease has ended may still renew while nobody has claimed the key
   * since.
   *
   * @returns `true` when the caller still holds the claim; `false` when it is lost (another holder claimed,
   *   the key was settled or released, or Redis forgot the record), and nothing changed.
   * @throws {RangeError} when `leaseMs` is not a positive number of milliseconds.
   * @throws {LedgerTimeoutError} when Redis does not answer within `commandTimeoutMs`.
   */
  async renew(scope: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    const lease = Math.ceil(checkDuration(leaseMs, 'leaseMs'));
    const ok = await this.#run('renew', scripts.renew, this.#key(scope, key), [
      token,
      String(lease),
      String(this.#retentionMs),
    ]);
    return ok === 1;
  }

  async get(scope: string, key: string): Promise<EffectRecord | undefined> {
    const reply = (await this.#run('get', scripts.get, this.#key(scope, key), [])) as
      | [string, string, string, string | null, string]
      | null;
    if (reply === null) return undefined;
    const [status, token, leaseRemaining, payload, ttl] = reply;
    const now = Date.now();
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
    const args = [token, String(this.#retentionMs), status];
    if (payload !== undefined) args.push(payload);
    const ok = await this.#run(
      status === 'completed' ? 'complete' : 'fail',
      scripts.settle,
      this.#key(scope, key),
      args,
    );
    if (ok !== 1) throw new LeaseLostError(scope, key);
  }

  /** The Redis key of a record: the scope is the hash tag; both parts are encoded so that no two pairs meet. */
  #key(scope: string, key: string): string {
    return `${this.#prefix}:{${encodeURIComponent(scope)}}:${encodeURIComponent(key)}`;
  }

  /**
   * Runs a script by its SHA-1, loading it on first use (or after the server lost its script cache), after the
   * persistence check; all of it within `commandTimeoutMs`.
   */
  #run(operation: RedisLedgerOperation, s: RedisScript, key: string, args: string[]): Promise<unknown> {
    return this.#withTimeout(operation, async () => {
      await this.#check();
      return runRedisScript(this.#client, s, [key], args);
    });
  }

  /** Checks the server's persistence once (see the class comment); a refusal or a failure is checked again. */
  #check(): Promise<void> {
    if (this.#persistence === 'ignore') return Promise.resolve();
    this.#checked ??= persistenceProblems(this.#client).then((problems) => {
      if (problems.length === 0) return;
      if (this.#persistence === 'require') throw new LedgerPersistenceError(problems);
      process.emitWarning(new LedgerPersistenceError(problems).message, {
        type: 'CleanturnWarning',
        code: 'CLEANTURN_REDIS_PERSISTENCE',
      });
    });
    const checked = this.#checked;
    checked.catch(() => {
      if (this.#checked === checked) this.#checked = undefined;
    });
    return checked;
  }

  /** Runs `operation`, or fails with {@link LedgerTimeoutError} once `commandTimeoutMs` has passed; the timer is always cleared. */
  #withTimeout<T>(operation: RedisLedgerOperation, run: () => Promise<T>): Promise<T> {
    return withinTime(this.#timeoutMs, () => new LedgerTimeoutError(operation, this.#timeoutMs), run);
  }
}
