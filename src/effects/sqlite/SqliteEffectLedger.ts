import Database from 'better-sqlite3';
import type { EffectKeyLookup } from 'cleanturn';
import {
  type ClaimOptions,
  type ClaimResult,
  DEFAULT_RETENTION_MS,
  decodeError,
  decodeResult,
  type EffectRecord,
  encodeResult,
  LeaseLostError,
  type SerializedError,
  type SyncEffectLedger,
} from 'cleanturn/effects';

/** Options of {@link SqliteEffectLedger}. */
export interface SqliteEffectLedgerOptions {
  /**
   * A better-sqlite3 database, or the path of a database file to open (the ledger then owns it, turns on WAL
   * and closes it in `close()`). Several processes on one machine may share the file.
   */
  database: string | Database.Database;
  /** The table of the records, created if missing. Default: `cleanturn_effects`. */
  table?: string;
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
}

/** A row of the records table. */
interface Row {
  status: 'claimed' | 'completed' | 'failed';
  token: string;
  lease_until: number;
  payload: string | null;
  expires_at: number;
}

/** How often a claim deletes expired rows. */
const PURGE_EVERY_MS = 60_000;

/**
 * An effect ledger in a SQLite file: exactly once across restarts and across the processes of one machine.
 *
 * Records are keyed by scope (the turn id) and effect key. Every read-check-write runs in an `IMMEDIATE`
 * transaction, so concurrent processes on one file serialise on SQLite's write lock and exactly one claim wins.
 * Times come from this machine's clock, which all its processes share. For several machines, use
 * `RedisEffectLedger`.
 *
 * Synchronous (better-sqlite3 is), so it also serves as `seen` of `dedupeByEffectKey`. Expired rows are deleted
 * by `purge()`, which claims also run once a minute.
 *
 * Table (created if missing):
 * ```sql
 * CREATE TABLE cleanturn_effects (
 *   scope TEXT NOT NULL, key TEXT NOT NULL,
 *   status TEXT NOT NULL,            -- claimed | completed | failed
 *   token TEXT NOT NULL,             -- fencing token of the holder
 *   lease_until INTEGER NOT NULL,    -- epoch ms (claimed)
 *   payload TEXT,                    -- result JSON (completed) or error JSON (failed)
 *   expires_at INTEGER NOT NULL,     -- epoch ms when the record is forgotten
 *   PRIMARY KEY (scope, key)
 * ) WITHOUT ROWID;
 * ```
 *
 * ## Example
 * ```ts
 * import { executeTools } from 'cleanturn/effects';
 * import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
 *
 * const ledger = new SqliteEffectLedger({ database: '/var/lib/agent/effects.db' });
 * turn$.pipe(executeTools(handlers, { turnId, ledger }));
 * // on shutdown
 * ledger.close();
 * ```
 */
export class SqliteEffectLedger implements SyncEffectLedger {
  /** The database. */
  readonly #db: Database.Database;
  /** Whether `close()` closes the database (it was opened from a path). */
  readonly #owned: boolean;
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** The prepared statements. */
  readonly #sql: {
    select: Database.Statement<[string, string], Row>;
    upsert: Database.Statement<[string, string, string, string, number, string | null, number]>;
    delete: Database.Statement<[string, string]>;
    purge: Database.Statement<[number]>;
  };
  /** The transactions: read, check and write as one step. */
  readonly #claim: (scope: string, key: string, leaseMs: number) => ClaimResult;
  readonly #settle: (
    scope: string,
    key: string,
    token: string,
    status: 'completed' | 'failed',
    payload: string | null,
  ) => void;
  readonly #release: (scope: string, key: string, token: string) => void;
  /** When claims last purged expired rows. */
  #purgedAt = 0;

  constructor(options: SqliteEffectLedgerOptions) {
    const table = options.table ?? 'cleanturn_effects';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new RangeError(`not a plain SQL table name: ${table}`);
    this.#retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    if (!(Number.isFinite(this.#retentionMs) && this.#retentionMs > 0)) {
      throw new RangeError(`retentionMs must be a positive number of milliseconds, got ${this.#retentionMs}`);
    }
    this.#owned = typeof options.database === 'string';
    this.#db = typeof options.database === 'string' ? new Database(options.database) : options.database;
    if (this.#owned) this.#db.pragma('journal_mode = WAL');
    this.#db.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('claimed', 'completed', 'failed')),
        token TEXT NOT NULL,
        lease_until INTEGER NOT NULL,
        payload TEXT,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at);`,
    );
    this.#sql = {
      select: this.#db.prepare(
        `SELECT status, token, lease_until, payload, expires_at FROM ${table} WHERE scope = ? AND key = ?`,
      ),
      upsert: this.#db.prepare(
        `INSERT OR REPLACE INTO ${table} (scope, key, status, token, lease_until, payload, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      delete: this.#db.prepare(`DELETE FROM ${table} WHERE scope = ? AND key = ?`),
      purge: this.#db.prepare(`DELETE FROM ${table} WHERE expires_at <= ?`),
    };

    this.#claim = this.#immediate((scope: string, key: string, leaseMs: number): ClaimResult => {
      const now = Date.now();
      const row = this.#live(scope, key, now);
      if (row === undefined || row.status === 'claimed') {
        if (row !== undefined && row.lease_until > now)
          return { status: 'in-progress', until: row.lease_until };
        const token = globalThis.crypto.randomUUID();
        const leaseUntil = now + leaseMs;
        this.#sql.upsert.run(scope, key, 'claimed', token, leaseUntil, null, leaseUntil + this.#retentionMs);
        return { status: 'claimed', token, reclaimed: row !== undefined };
      }
      return row.status === 'completed'
        ? { status: 'completed', result: decodeResult(row.payload) }
        : { status: 'failed', error: decodeError(row.payload ?? '{}') };
    });
    this.#settle = this.#immediate((scope, key, token, status, payload) => {
      const now = Date.now();
      const row = this.#live(scope, key, now);
      if (row !== undefined && row.token !== token) throw new LeaseLostError(scope, key);
      this.#sql.upsert.run(scope, key, status, token, 0, payload, now + this.#retentionMs);
    });
    this.#release = this.#immediate((scope: string, key: string, token: string) => {
      const row = this.#live(scope, key, Date.now());
      if (row === undefined) return;
      if (row.token !== token || row.status !== 'claimed') throw new LeaseLostError(scope, key);
      this.#sql.delete.run(scope, key);
    });
  }

  claim(scope: string, key: string, options: ClaimOptions): ClaimResult {
    const { leaseMs } = options;
    if (!(Number.isFinite(leaseMs) && leaseMs > 0)) {
      throw new RangeError(`leaseMs must be a positive number of milliseconds, got ${leaseMs}`);
    }
    const now = Date.now();
    if (now - this.#purgedAt >= PURGE_EVERY_MS) {
      this.#purgedAt = now;
      this.purge();
    }
    return this.#claim(scope, key, leaseMs);
  }

  complete(scope: string, key: string, token: string, result: unknown): void {
    const payload = encodeResult(result);
    this.#settle(scope, key, token, 'completed', payload ?? null);
  }

  fail(scope: string, key: string, token: string, error: SerializedError): void {
    this.#settle(scope, key, token, 'failed', JSON.stringify(error));
  }

  release(scope: string, key: string, token: string): void {
    this.#release(scope, key, token);
  }

  get(scope: string, key: string): EffectRecord | undefined {
    const row = this.#live(scope, key, Date.now());
    if (row === undefined) return undefined;
    const { token, expires_at: expiresAt } = row;
    switch (row.status) {
      case 'claimed':
        return { status: 'claimed', token, leaseUntil: row.lease_until, expiresAt };
      case 'completed':
        return { status: 'completed', token, result: decodeResult(row.payload), expiresAt };
      case 'failed':
        return { status: 'failed', token, error: decodeError(row.payload ?? '{}'), expiresAt };
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

  /**
   * Deletes the records whose retention has run out.
   *
   * @returns How many were deleted.
   */
  purge(): number {
    return this.#sql.purge.run(Date.now()).changes;
  }

  /** Closes the database if the ledger opened it; a database passed in stays open. */
  close(): void {
    if (this.#owned && this.#db.open) this.#db.close();
  }

  /** The row of a key unless its retention has run out. */
  #live(scope: string, key: string, now: number): Row | undefined {
    const row = this.#sql.select.get(scope, key);
    return row === undefined || row.expires_at <= now ? undefined : row;
  }

  /** Wraps `body` in an `IMMEDIATE` transaction: the write lock is taken before the read. */
  #immediate<A extends unknown[], R>(body: (...args: A) => R): (...args: A) => R {
    const transaction = this.#db.transaction(body);
    return (...args: A) => transaction.immediate(...args);
  }
}
