import type { EffectKeyLookup } from '../dedupeByEffectKey.js';
import { DEFAULT_RETENTION_MS } from './defaults.js';
import { leaseLostError } from './errors.js';
import { encodeResult } from './json.js';
import {
  checkDuration,
  type Decision,
  decide,
  isSettled,
  isUnexpired,
  type LedgerAnswers,
  type LedgerOperation,
  type SettleAnswer,
  type StoredRecord,
} from './ledgerRules.js';
import type { ClaimOptions, ClaimResult, EffectRecord, SerializedError, SyncEffectLedger } from './types.js';

/**
 * Options of {@link MemoryEffectLedger}.
 * @inline
 */
export interface MemoryEffectLedgerOptions {
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
}

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
 * Synchronous, so it also serves as `seen` of `dedupeByEffectKey`. The rules are those of every ledger, in one
 * place (`decide` of the ledger rules); this class only keeps the records, in a map per scope.
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
  /** Records by scope, then key: results and errors as JSON text, as a durable ledger keeps them. */
  readonly #scopes = new Map<string, Map<string, StoredRecord>>();
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** When the last sweep of expired records ran. */
  #sweptAt = Date.now();

  constructor(options: MemoryEffectLedgerOptions = {}) {
    this.#retentionMs = checkDuration(
      'MemoryEffectLedger',
      'retentionMs',
      options.retentionMs ?? DEFAULT_RETENTION_MS,
    );
  }

  /**
   * Claims the key for the caller, for `leaseMs`: `claimed` with a token when nobody holds it (or a lease ran out),
   * else the record as it stands (`completed`, `failed`, or `in-progress` with when its lease ends).
   */
  claim(scope: string, key: string, options: ClaimOptions): ClaimResult {
    const leaseMs = checkDuration('MemoryEffectLedger', 'leaseMs', options.leaseMs);
    const now = Date.now();
    if (now - this.#sweptAt >= SWEEP_EVERY_MS) this.#sweep(now);
    const token = globalThis.crypto.randomUUID();
    return this.#apply(scope, key, now, { type: 'claim', token, leaseMs, retentionMs: this.#retentionMs });
  }

  /** Records the effect's result under the caller's claim; throws a `lease-lost` `EffectError` if it lost the claim. */
  complete(scope: string, key: string, token: string, result: unknown): void {
    const payload = encodeResult(result);
    const retentionMs = this.#retentionMs;
    settled(
      this.#apply(scope, key, Date.now(), { type: 'complete', token, payload, retentionMs }),
      scope,
      key,
    );
  }

  /** Records the effect's failure under the caller's claim; throws a `lease-lost` `EffectError` if it lost the claim. */
  fail(scope: string, key: string, token: string, error: SerializedError): void {
    const retentionMs = this.#retentionMs;
    settled(this.#apply(scope, key, Date.now(), { type: 'fail', token, error, retentionMs }), scope, key);
  }

  /** Gives the caller's claim back unsettled, so that the next claim runs the effect; `lease-lost` if it lost it. */
  release(scope: string, key: string, token: string): void {
    settled(this.#apply(scope, key, Date.now(), { type: 'release', token }), scope, key);
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now (for a handler that runs longer than it
   * thought). A holder whose lease has ended may still renew while nobody has claimed the key since.
   *
   * @returns `true` when the caller still holds the claim and it was extended; `false` when the claim is lost
   *   (another holder claimed, the key was settled or released, or its record is gone), and nothing changed.
   * @throws {UsageError} when `leaseMs` is not a positive number of milliseconds.
   */
  renew(scope: string, key: string, token: string, leaseMs: number): boolean {
    checkDuration('MemoryEffectLedger', 'leaseMs', leaseMs);
    return this.#apply(scope, key, Date.now(), {
      type: 'renew',
      token,
      leaseMs,
      retentionMs: this.#retentionMs,
    });
  }

  /** The key's record as it stands, or `undefined` when there is none (never claimed, released, or expired). */
  get(scope: string, key: string): EffectRecord | undefined {
    return decide(this.#scopes.get(scope)?.get(key), Date.now(), { type: 'get' }).answer;
  }

  seen(scope: string): EffectKeyLookup {
    return { has: (key) => isSettled(this.#scopes.get(scope)?.get(key), Date.now()) };
  }

  /** Decides `operation` on the key's record and applies the write. */
  #apply<O extends LedgerOperation>(
    scope: string,
    key: string,
    now: number,
    operation: O,
  ): LedgerAnswers[O['type']] {
    const { answer, write }: Decision<LedgerAnswers[O['type']]> = decide(
      this.#scopes.get(scope)?.get(key),
      now,
      operation,
    );
    if (write.type === 'put') this.#put(scope, key, write.record);
    else if (write.type === 'delete') this.#delete(scope, key);
    return answer;
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
      for (const [key, record] of records) if (!isUnexpired(record, now)) records.delete(key);
      if (records.size === 0) this.#scopes.delete(scope);
    }
  }
}

/** Throws an `EffectError` `lease-lost` when a settling operation was fenced off. */
function settled(answer: SettleAnswer, scope: string, key: string): void {
  if (answer === 'lease-lost') throw leaseLostError(scope, key);
}
