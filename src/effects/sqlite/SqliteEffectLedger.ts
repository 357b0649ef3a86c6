import { constants } from 'node:buffer';
import Database from 'better-sqlite3';
import type { EffectKeyLookup } from '../../dedupeByEffectKey.js';
import { checkOption } from '../../internal/options.js';
import { DEFAULT_RETENTION_MS } from '../defaults.js';
import { leaseLostError, unstorableResultError } from '../errors.js';
import { checkResultSize, encodeResult } from '../json.js';
import {
  checkDuration,
  decide,
  isSettled,
  type LedgerAnswers,
  type LedgerOperation,
  type SettleAnswer,
  type StoredRecord,
} from '../ledgerRules.js';
import type {
  Awaitable,
  ClaimOptions,
  ClaimResult,
  EffectLedger,
  EffectRecord,
  LedgerCallOptions,
  SerializedError,
} from '../types.js';
import {
  ledgerBusyError,
  ledgerClosedError,
  ledgerReadOnlyError,
  type SqliteLedgerOperation,
} from './errors.js';

/** Options of {@link SqliteEffectLedger}. */
export interface SqliteEffectLedgerOptions {
  /**
   * A better-sqlite3 database, or the path of a database file to open (the ledger then owns it, turns on WAL
   * and closes it in `close()`). Several processes on one machine may share the file. A database passed in
   * should be in WAL mode too (`db.pragma('journal_mode = WAL')`); its own busy timeout is left as it is for its
   * other statements.
   */
  database: string | Database.Database;
  /** The table of the records, created if missing. Default: `cleanturn_effects`. */
  table?: string;
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
  /**
   * How long a write waits for the database's lock while another connection holds it, in milliseconds; then it
   * fails with an `EffectError` of code `ledger-busy` (retryable). The wait is asynchronous (short timers), never a blocking
   * one: the event loop keeps running. 0: never wait. Default: 5 000.
   */
  busyTimeoutMs?: number;
}

/** The name the ledger's usage errors give as their operator. */
const LEDGER = 'SqliteEffectLedger';
/** Default `busyTimeoutMs`. */
const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
/** The first pause before trying the lock again, in milliseconds; it doubles up to `MAX_BACKOFF_MS`. */
const FIRST_BACKOFF_MS = 2;
/** The longest pause between two tries of the lock, in milliseconds. */
const MAX_BACKOFF_MS = 50;
/** How often a claim deletes expired rows. */
const PURGE_EVERY_MS = 60_000;
/**
 * The most bytes the ledger stores in one value or row: the length limit better-sqlite3 sets on each connection,
 * the longest string or `Buffer` Node holds (536,870,888 bytes on 64-bit Node), below SQLite's own 10^9.
 */
const MAX_VALUE_BYTES = Math.min(constants.MAX_LENGTH, constants.MAX_STRING_LENGTH);

/** A row of the records table. */
interface Row {
  status: 'claimed' | 'completed' | 'failed';
  token: string;
  lease_until: number;
  payload: string | null;
  expires_at: number;
}

/** The prepared statements, once the table exists. */
interface Statements {
  select: Database.Statement<[string, string], Row>;
  upsert: Database.Statement<[string, string, string, string, number, string | null, number]>;
  delete: Database.Statement<[string, string]>;
  purge: Database.Statement<[number]>;
}

/** An operation waiting for the lock: its timer, and how to end it when the ledger closes. */
interface Wait {
  timer: ReturnType<typeof setTimeout> | undefined;
  operation: SqliteLedgerOperation;
  reject: (error: unknown) => void;
}

/** Whether SQLite refused because another connection holds a lock (`SQLITE_BUSY*`, `SQLITE_LOCKED*`). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

/**
 * SQLite's code when it refused to write (`SQLITE_READONLY*`) or to open the file or the WAL's files beside it
 * (`SQLITE_CANTOPEN*`), else `undefined`.
 */
function readOnlyCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(READONLY|CANTOPEN)/.test(code) ? code : undefined;
}

/** An `EffectError` of code `ledger-read-only` for an error of {@link readOnlyCode}, else the error as it is. */
function readOnly(operation: SqliteLedgerOperation, error: unknown): unknown {
  const code = readOnlyCode(error);
  return code === undefined ? error : ledgerReadOnlyError(operation, code, error);
}

/** Whether SQLite (or better-sqlite3, binding it) refused a value or a row as too big ({@link MAX_VALUE_BYTES}). */
function isTooBig(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_TOOBIG' || (error instanceof RangeError && /too big/i.test(error.message));
}

/**
 * An effect ledger in a SQLite file: exactly once across restarts and across the processes of one machine.
 *
 * Records are keyed by scope (the turn id) and effect key. Every read-check-write runs in an `IMMEDIATE`
 * transaction, so concurrent processes on one file serialise on SQLite's write lock and exactly one claim wins.
 * Inside it the ledger reads the row, asks the ledger rules shared by every ledger (`decide`) and writes what
 * they say: this class only stores.
 * Times come from this machine's clock, which all its processes share. For several machines, use
 * `RedisEffectLedger`.
 *
 * **WAL, and no blocking.** A file the ledger opens is put in WAL mode (`journal_mode = WAL`, kept in the file):
 * readers never wait for a writer, so `get` and `seen` answer at once even while another connection writes. The
 * connection's busy timeout is 0 (for a database passed in, while the ledger's own statements run): SQLite's
 * busy handler sleeps synchronously, and a lock held by another process (a backup, a migration, a long
 * transaction) would stop the whole event loop — every stream, timer and stall check — for as long as it waits.
 * Instead, a write that finds the lock taken tries again after a short timer (2 ms, doubling up to 50 ms) until
 * `busyTimeoutMs`, then fails with an `EffectError` of code `ledger-busy` (retryable; nothing written). A read that
 * finds the database locked (rare in WAL: a crash recovery, a database not in WAL) fails at once with that error.
 *
 * **Answers.** `claim`, `complete`, `fail`, `release` and `purge` answer synchronously when the lock is free,
 * which is nearly always, and with a promise while they wait for it: `await` them (or let `executeTools`, which
 * takes both). `get` and `seen` are always synchronous, so the ledger also serves as `seen` of
 * `dedupeByEffectKey`. Expired rows are deleted by `purge()`, which claims also run once a minute.
 *
 * **A database it cannot write** (a read-only file or directory: WAL mode needs to create the `-wal` and `-shm`
 * files beside the database; a database passed in that was opened `readonly` or is `query_only`) is an
 * `EffectError` of code `ledger-read-only` (not retryable) at open, when the table cannot be created or the file not opened, or
 * at the first write (a claim of a key it does not hold): nothing is written and no handler runs without its claim.
 * What it holds is still read: settled keys are still replayed. A result whose JSON text SQLite cannot hold in one
 * value (536,870,888 bytes of UTF-8 on 64-bit Node) is refused by `complete` with code `unstorable-result`, so that the
 * executor records the failure.
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
export class SqliteEffectLedger implements EffectLedger {
  /** The database. */
  readonly #db: Database.Database;
  /** Whether `close()` closes the database (it was opened from a path). */
  readonly #owned: boolean;
  /** The records table. */
  readonly #table: string;
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** How long a write waits for the lock. */
  readonly #busyTimeoutMs: number;
  /** The prepared statements; `undefined` until the table could be created (the lock may be taken at first). */
  #sql: Statements | undefined;
  /** The operations waiting for the lock. */
  readonly #waits = new Set<Wait>();
  /** When claims last purged expired rows. */
  #purgedAt = 0;

  constructor(options: SqliteEffectLedgerOptions) {
    const table = options.table ?? 'cleanturn_effects';
    checkOption(/^[A-Za-z_][A-Za-z0-9_]*$/.test(table), LEDGER, 'table', 'a plain SQL table name', table);
    this.#table = table;
    this.#retentionMs = checkDuration(LEDGER, 'retentionMs', options.retentionMs ?? DEFAULT_RETENTION_MS);
    this.#busyTimeoutMs = checkDuration(
      LEDGER,
      'busyTimeoutMs',
      options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
      true,
    );
    this.#owned = typeof options.database === 'string';
    try {
      this.#db =
        typeof options.database === 'string'
          ? new Database(options.database, { timeout: 0 })
          : options.database;
    } catch (error) {
      throw readOnly('open', error);
    }
    try {
      this.#runNow(() => undefined);
    } catch (error) {
      // The lock is taken: the table is created by the first operation that gets it.
      if (!isBusy(error)) {
        if (this.#owned) this.#db.close();
        throw readOnly('open', error);
      }
    }
  }

  claim(scope: string, key: string, options: ClaimOptions): Awaitable<ClaimResult> {
    const leaseMs = checkDuration(LEDGER, 'leaseMs', options.leaseMs);
    return this.#write('claim', options.signal, (sql) => {
      const now = Date.now();
      if (now - this.#purgedAt >= PURGE_EVERY_MS) {
        this.#purgedAt = now;
        try {
          sql.purge.run(now);
        } catch (error) {
          // Housekeeping only: a read-only database keeps its expired rows, and still answers what it holds.
          if (readOnlyCode(error) === undefined) throw error;
        }
      }
      const token = globalThis.crypto.randomUUID();
      return apply(sql, scope, key, now, { type: 'claim', token, leaseMs, retentionMs: this.#retentionMs });
    });
  }

  /**
   * Records the result. A result that is not JSON data, or whose JSON text SQLite cannot hold in one value (past
   * 536,870,888 bytes of UTF-8 on 64-bit Node), is refused with code `unstorable-result` and nothing is written: the
   * claim stands, and its holder records the failure (`executeTools` does).
   */
  complete(scope: string, key: string, token: string, result: unknown): Awaitable<void> {
    const payload = encodeResult(result);
    // Checked before binding: better-sqlite3 would first copy the text to UTF-8, only to be refused.
    checkResultSize(payload, MAX_VALUE_BYTES, 'the SQLite ledger');
    // Past that check SQLite may still refuse the row, the result with the rest of its record, as too big.
    const refused = (error: unknown) =>
      isTooBig(error)
        ? unstorableResultError(
            'result',
            `its JSON text (${payload?.length} characters) with the rest of its record is too big for the SQLite ledger, which stores at most ${MAX_VALUE_BYTES} bytes in one row`,
            error,
          )
        : error;
    let answer: Awaitable<void>;
    try {
      answer = this.#settle('complete', scope, key, {
        type: 'complete',
        token,
        payload,
        retentionMs: this.#retentionMs,
      });
    } catch (error) {
      throw refused(error);
    }
    return answer instanceof Promise
      ? answer.catch((error: unknown) => {
          throw refused(error);
        })
      : answer;
  }

  fail(scope: string, key: string, token: string, error: SerializedError): Awaitable<void> {
    return this.#settle('fail', scope, key, { type: 'fail', token, error, retentionMs: this.#retentionMs });
  }

  release(scope: string, key: string, token: string): Awaitable<void> {
    return this.#settle('release', scope, key, { type: 'release', token });
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now (for a handler that runs longer than it
   * thought). A holder whose lease has ended may still renew while nobody has claimed the key since. Synchronous
   * unless it has to wait for the lock, as `claim`.
   *
   * @returns `true` when the caller still holds the claim and it was extended; `false` when the claim is lost
   *   (another holder claimed, the key was settled or released, or its record is gone), and nothing changed.
   * @throws {UsageError} when `leaseMs` is not a positive number of milliseconds.
   */
  renew(
    scope: string,
    key: string,
    token: string,
    leaseMs: number,
    options: LedgerCallOptions = {},
  ): Awaitable<boolean> {
    checkDuration(LEDGER, 'leaseMs', leaseMs);
    return this.#write('renew', options.signal, (sql) =>
      apply(sql, scope, key, Date.now(), { type: 'renew', token, leaseMs, retentionMs: this.#retentionMs }),
    );
  }

  /**
   * The record of a key. Synchronous: in WAL mode a read never waits for a writer.
   *
   * @throws {EffectError} `ledger-busy` when the database is locked even for readers (rare: see the class comment).
   */
  get(scope: string, key: string): EffectRecord | undefined {
    return this.#read('get', (sql) => decide(select(sql, scope, key), Date.now(), { type: 'get' }).answer);
  }

  /**
   * The keys of a scope whose effects are settled (completed, or failed and recorded), as the `seen` option of
   * `dedupeByEffectKey`: `cleanTurn({ turnId, seen: ledger.seen(turnId) })`. Synchronous, as `get`.
   */
  seen(scope: string): EffectKeyLookup {
    return {
      has: (key) => {
        const record = this.#read('seen', (sql) => select(sql, scope, key));
        return isSettled(record, Date.now());
      },
    };
  }

  /**
   * Deletes the records whose retention has run out. Synchronous unless it has to wait for the lock.
   *
   * @returns How many were deleted.
   */
  purge(): Awaitable<number> {
    return this.#write('purge', undefined, (sql) => sql.purge.run(Date.now()).changes);
  }

  /**
   * Ends the operations still waiting for the lock with code `ledger-closed` (their timers are cleared),
   * and closes the database if the ledger opened it; a database passed in stays open.
   */
  close(): void {
    for (const wait of [...this.#waits]) {
      clearTimeout(wait.timer);
      wait.reject(ledgerClosedError(wait.operation));
    }
    if (this.#owned && this.#db.open) this.#db.close();
  }

  /** Runs `complete`, `fail` or `release`; a fenced-off caller gets code `lease-lost`. */
  #settle(
    operation: 'complete' | 'fail' | 'release',
    scope: string,
    key: string,
    decided: LedgerOperation & { type: typeof operation },
  ): Awaitable<void> {
    return this.#write(operation, undefined, (sql) => {
      const answer: SettleAnswer = apply(sql, scope, key, Date.now(), decided);
      if (answer === 'lease-lost') throw leaseLostError(scope, key);
    });
  }

  /**
   * Runs `body` in an `IMMEDIATE` transaction (the write lock is taken before the read), now if the lock is
   * free, else after short timers until `busyTimeoutMs` or until `signal` is aborted.
   */
  #write<R>(
    operation: SqliteLedgerOperation,
    signal: AbortSignal | undefined,
    body: (sql: Statements) => R,
  ): Awaitable<R> {
    signal?.throwIfAborted();
    const transaction = (sql: Statements) => this.#db.transaction(body).immediate(sql);
    try {
      return this.#runNow(transaction);
    } catch (error) {
      if (!isBusy(error)) throw readOnly(operation, error);
      if (this.#busyTimeoutMs === 0) throw ledgerBusyError(operation, 0, error);
    }
    return this.#retry(operation, signal, transaction);
  }

  /** Runs a read now; a locked database is an error at once. */
  #read<R>(operation: SqliteLedgerOperation, body: (sql: Statements) => R): R {
    try {
      return this.#runNow(body);
    } catch (error) {
      if (isBusy(error)) throw ledgerBusyError(operation, 0, error);
      throw readOnly(operation, error);
    }
  }

  /**
   * Tries `body` again after a growing pause until it gets the lock or `busyTimeoutMs` has passed; an aborted
   * `signal` ends the wait at once with its reason.
   */
  #retry<R>(
    operation: SqliteLedgerOperation,
    signal: AbortSignal | undefined,
    body: (sql: Statements) => R,
  ): Promise<R> {
    const deadline = Date.now() + this.#busyTimeoutMs;
    return new Promise<R>((resolve, reject) => {
      const done = () => {
        this.#waits.delete(wait);
        signal?.removeEventListener('abort', abandon);
      };
      const wait: Wait = {
        timer: undefined,
        operation,
        reject: (error) => {
          done();
          reject(error);
        },
      };
      const abandon = () => {
        clearTimeout(wait.timer);
        wait.reject(signal?.reason);
      };
      let pause = FIRST_BACKOFF_MS;
      const next = () => {
        const left = deadline - Date.now();
        // Jitter: two waiting processes do not retry in step.
        const delay = Math.max(1, Math.min(left, pause * (0.5 + Math.random() / 2)));
        pause = Math.min(pause * 2, MAX_BACKOFF_MS);
        wait.timer = setTimeout(tryAgain, delay);
      };
      const tryAgain = () => {
        try {
          const value = this.#runNow(body);
          done();
          resolve(value);
        } catch (error) {
          if (isBusy(error) && Date.now() < deadline) return next();
          wait.reject(
            isBusy(error)
              ? ledgerBusyError(operation, this.#busyTimeoutMs, error)
              : readOnly(operation, error),
          );
        }
      };
      this.#waits.add(wait);
      signal?.addEventListener('abort', abandon, { once: true });
      next();
    });
  }

  /**
   * Runs `body` with a busy timeout of 0, first creating the table and preparing the statements if that is not
   * done yet. A database passed in gets its own busy timeout back afterwards.
   */
  #runNow<R>(body: (sql: Statements) => R): R {
    const saved = this.#owned ? 0 : (this.#db.pragma('busy_timeout', { simple: true }) as number);
    if (saved !== 0) this.#db.pragma('busy_timeout = 0');
    try {
      return body(this.#sql ?? this.#prepare());
    } finally {
      if (saved !== 0) this.#db.pragma(`busy_timeout = ${saved}`);
    }
  }

  /** Turns on WAL (a file the ledger opened), creates the table if missing and prepares the statements. */
  #prepare(): Statements {
    const table = this.#table;
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
    return this.#sql;
  }
}

/** The stored record of a key, as the ledger rules take it (expired or not: the rules decide). */
function select(sql: Statements, scope: string, key: string): StoredRecord | undefined {
  const row = sql.select.get(scope, key);
  if (row === undefined) return undefined;
  return {
    status: row.status,
    token: row.token,
    leaseUntil: row.lease_until,
    payload: row.payload ?? undefined,
    expiresAt: row.expires_at,
  };
}

/** Decides `operation` on the key's row and writes what the rules say; call it inside the transaction. */
function apply<O extends LedgerOperation>(
  sql: Statements,
  scope: string,
  key: string,
  now: number,
  operation: O,
): LedgerAnswers[O['type']] {
  const { answer, write } = decide(select(sql, scope, key), now, operation);
  if (write.type === 'put') {
    const { status, token, leaseUntil, payload, expiresAt } = write.record;
    sql.upsert.run(scope, key, status, token, leaseUntil, payload ?? null, expiresAt);
  } else if (write.type === 'delete') {
    sql.delete.run(scope, key);
  }
  return answer;
}
