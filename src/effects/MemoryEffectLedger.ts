import type { EffectKeyLookup } from 'cleanturn';
import { LeaseLostError } from './errors.js';
import { decodeError, decodeResult, encodeResult } from './json.js';
import type { ClaimOptions, ClaimResult, EffectRecord, SerializedError, SyncEffectLedger } from './types.js';

/** Options of {@link MemoryEffectLedger}. */
export interface MemoryEffectLedgerOptions {
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
}

/** A record as this ledger keeps it: results and errors as JSON text, as a durable ledger would. */
interface StoredRecord {
  status: 'claimed' | 'completed' | 'failed';
  token: string;
  /** Lease end (claimed records). */
  leaseUntil: number;
  /** JSON of the result (completed) or of the error (failed). */
  payload: string | undefined;
  expiresAt: number;
}

/** 24 hours, as Stripe keeps idempotency keys. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How often a claim sweeps expired records out of memory. */
const SWEEP_EVERY_MS = 60_000;

/**
 * An effect ledger in this process's memory: the default of {@link executeTools}.
 *
 * It keeps every promise of {@link EffectLedger} within one process and forgets everything when the process
 * ends, so it protects against retries and duplicate deliveries inside one process, not against crashes. Use
 * `SqliteEffectLedger` (one machine) or `RedisEffectLedger` (many machines) for that. Results are stored as
 * JSON text, exactly as the durable ledgers store them, so a test against this ledger sees what production
 * will.
 *
 * Synchronous, so it also serves as `seen` of `dedupeByEffectKey`.
 *
 * ## Example
 * ```ts
 * import { cleanTurn } from 'cleanturn';
 * import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
 *
 * const ledger = new MemoryEffectLedger({ retentionMs: 60 * 60 * 1000 });
 * providerEvents$.pipe(cleanTurn({ turnId }), executeTools(handlers, { turnId, ledger }));
 * ```
 */
export class MemoryEffectLedger implements SyncEffectLedger {
  /** Records by scope, then key. */
  readonly #scopes = new Map<string, Map<string, StoredRecord>>();
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** When the last sweep of expired records ran. */
  #sweptAt = Date.now();

  constructor(options: MemoryEffectLedgerOptions = {}) {
    this.#retentionMs = checkDuration(options.retentionMs ?? DEFAULT_RETENTION_MS, 'retentionMs');
  }

  claim(scope: string, key: string, options: ClaimOptions): ClaimResult {
    const leaseMs = checkDuration(options.leaseMs, 'leaseMs');
    const now = Date.now();
    if (now - this.#sweptAt >= SWEEP_EVERY_MS) this.#sweep(now);
    const record = this.#live(scope, key, now);
    if (record === undefined || record.status === 'claimed') {
      if (record !== undefined && record.leaseUntil > now) {
        return { status: 'in-progress', until: record.leaseUntil };
      }
      const token = globalThis.crypto.randomUUID();
      const leaseUntil = now + leaseMs;
      this.#put(scope, key, {
        status: 'claimed',
        token,
        leaseUntil,
        payload: undefined,
        expiresAt: leaseUntil + this.#retentionMs,
      });
      return { status: 'claimed', token, reclaimed: record !== undefined };
    }
    return record.status === 'completed'
      ? { status: 'completed', result: decodeResult(record.payload) }
      : { status: 'failed', error: decodeError(record.payload as string) };
  }

  complete(scope: string, key: string, token: string, result: unknown): void {
    const payload = encodeResult(result);
    this.#settle(scope, key, token, 'completed', payload);
  }

  fail(scope: string, key: string, token: string, error: SerializedError): void {
    this.#settle(scope, key, token, 'failed', JSON.stringify(error));
  }

  release(scope: string, key: string, token: string): void {
    const record = this.#live(scope, key, Date.now());
    if (record === undefined) return;
    if (record.token !== token || record.status !== 'claimed') throw new LeaseLostError(scope, key);
    this.#delete(scope, key);
  }

  get(scope: string, key: string): EffectRecord | undefined {
    const record = this.#live(scope, key, Date.now());
    if (record === undefined) return undefined;
    const { token, expiresAt } = record;
    switch (record.status) {
      case 'claimed':
        return { status: 'claimed', token, leaseUntil: record.leaseUntil, expiresAt };
      case 'completed':
        return { status: 'completed', token, result: decodeResult(record.payload), expiresAt };
      case 'failed':
        return { status: 'failed', token, error: decodeError(record.payload as string), expiresAt };
    }
  }

  seen(scope: string): EffectKeyLookup {
    return {
      has: (key) => {
        const status = this.#live(scope, key, Date.now())?.status;
        return status === 'completed' || status === 'failed';
      },
    };
  }

  /** Writes a settled record if the key is absent or still carries `token`. */
  #settle(
    scope: string,
    key: string,
    token: string,
    status: 'completed' | 'failed',
    payload: string | undefined,
  ): void {
    const now = Date.now();
    const record = this.#live(scope, key, now);
    if (record !== undefined && record.token !== token) throw new LeaseLostError(scope, key);
    this.#put(scope, key, { status, token, leaseUntil: 0, payload, expiresAt: now + this.#retentionMs });
  }

  /** The record of a key unless its retention has run out (then it is dropped). */
  #live(scope: string, key: string, now: number): StoredRecord | undefined {
    const record = this.#scopes.get(scope)?.get(key);
    if (record === undefined || record.expiresAt > now) return record;
    this.#delete(scope, key);
    return undefined;
  }

  #put(scope: string, key: string, record: StoredRecord): void {
    let records = this.#scopes.get(scope);
    if (records === undefined) {
      records = new Map();
      this.#scopes.set(scope, records);
    }
    records.set(key, record);
  }

  #delete(scope: string, key: string): void {
    const records = this.#scopes.get(scope);
    records?.delete(key);
    if (records?.size === 0) this.#scopes.delete(scope);
  }

  /** Drops every record whose retention has run out. */
  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [scope, records] of this.#scopes) {
      for (const [key, record] of records) if (record.expiresAt <= now) records.delete(key);
      if (records.size === 0) this.#scopes.delete(scope);
    }
  }
}

/** Checks a duration option: a positive, finite number of milliseconds. */
export function checkDuration(value: number, name: string): number {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${name} must be a positive number of milliseconds, got ${value}`);
  }
  return value;
}
