import { createHash } from 'node:crypto';
import {
  type ClaimOptions,
  type ClaimResult,
  DEFAULT_RETENTION_MS,
  decodeError,
  decodeResult,
  type EffectLedger,
  type EffectRecord,
  encodeResult,
  LeaseLostError,
  type SerializedError,
} from 'cleanturn/effects';
import type { Cluster, Redis } from 'ioredis';

/** Options of {@link RedisEffectLedger}. */
export interface RedisEffectLedgerOptions {
  /** An ioredis client (or cluster). The ledger never closes it: it is yours. */
  client: Redis | Cluster;
  /** The prefix of the ledger's keys. Default: `cleanturn:effect`. */
  prefix?: string;
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
}

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

// KEYS[1] record. Answers false, or {status, token, lease remaining ms, payload|false, ttl ms}.
const GET = `${NOW}
local r = redis.call('HMGET', KEYS[1], 'status', 'token', 'until', 'payload')
if not r[1] then return false end
local remaining = '0'
if r[3] then remaining = ms(tonumber(r[3]) - now) end
return {r[1], r[2], remaining, r[4], ms(redis.call('PTTL', KEYS[1]))}
`;

/** A Lua script and its SHA-1, for EVALSHA with a fallback to EVAL. */
interface Script {
  source: string;
  sha: string;
}

const script = (source: string): Script => ({
  source,
  sha: createHash('sha1').update(source).digest('hex'),
});
const scripts = {
  claim: script(CLAIM),
  settle: script(SETTLE),
  release: script(RELEASE),
  get: script(GET),
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
 * Asynchronous, so it cannot serve as `seen` of `dedupeByEffectKey` (which needs a synchronous `has`); the
 * executor replays settled keys instead, which also gives the consumer their results.
 *
 * ## Example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { executeTools } from 'cleanturn/effects';
 * import { RedisEffectLedger } from 'cleanturn/effects/redis';
 *
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

  constructor(options: RedisEffectLedgerOptions) {
    this.#client = options.client;
    this.#prefix = options.prefix ?? 'cleanturn:effect';
    this.#retentionMs = Math.ceil(options.retentionMs ?? DEFAULT_RETENTION_MS);
    if (!(Number.isFinite(this.#retentionMs) && this.#retentionMs > 0)) {
      throw new RangeError(
        `retentionMs must be a positive number of milliseconds, got ${options.retentionMs}`,
      );
    }
  }

  async claim(scope: string, key: string, options: ClaimOptions): Promise<ClaimResult> {
    const leaseMs = Math.ceil(options.leaseMs);
    if (!(Number.isFinite(leaseMs) && leaseMs > 0)) {
      throw new RangeError(`leaseMs must be a positive number of milliseconds, got ${options.leaseMs}`);
    }
    const token = globalThis.crypto.randomUUID();
    const [status, value] = (await this.#run(scripts.claim, this.#key(scope, key), [
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
    const ok = await this.#run(scripts.release, this.#key(scope, key), [token]);
    if (ok !== 1) throw new LeaseLostError(scope, key);
  }

  async get(scope: string, key: string): Promise<EffectRecord | undefined> {
    const reply = (await this.#run(scripts.get, this.#key(scope, key), [])) as
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
    const ok = await this.#run(scripts.settle, this.#key(scope, key), args);
    if (ok !== 1) throw new LeaseLostError(scope, key);
  }

  /** The Redis key of a record: the scope is the hash tag; both parts are encoded so that no two pairs meet. */
  #key(scope: string, key: string): string {
    return `${this.#prefix}:{${encodeURIComponent(scope)}}:${encodeURIComponent(key)}`;
  }

  /** Runs a script by its SHA-1, loading it on first use (or after the server lost its script cache). */
  async #run(s: Script, key: string, args: string[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(s.sha, 1, key, ...args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return await this.#client.eval(s.source, 1, key, ...args);
    }
  }
}
