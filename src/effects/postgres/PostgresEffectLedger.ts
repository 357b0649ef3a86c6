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
import { DEFAULT_RETENTION_MS } from '../defaults.js';
import { PostgresLedgerError, type PostgresLedgerOperation, PostgresLedgerUsageError } from './errors.js';

/**
 * What the ledger needs of a PostgreSQL connection: node-postgres's `query(text, values)`. A `pg.Pool` is the
 * usual choice (each operation is one statement, so any pooled connection will do); a `pg.Client` works too.
 */
export interface PostgresQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** Options of {@link PostgresEffectLedger}. */
export interface PostgresEffectLedgerOptions {
  /** A `pg.Pool` (or anything with its `query`). The ledger never ends it: it is yours. */
  pool: PostgresQueryable;
  /**
   * The table of the records: a plain identifier, optionally schema-qualified (`agent.effects`). Default:
   * `cleanturn_effects`.
   */
  table?: string;
  /** How long completed and failed records are kept, in milliseconds. Default: 24 hours. */
  retentionMs?: number;
  /**
   * Whether the first operation creates the table and its index when missing (`CREATE … IF NOT EXISTS`, under an
   * advisory lock so that processes starting together do not collide). Turn it off when migrations own the
   * schema and the database user may not create tables. Default: true.
   */
  createTable?: boolean;
  /**
   * How long an operation waits for the database, in milliseconds, before it rejects with a retryable
   * {@link PostgresLedgerError} (code `ETIMEDOUT`), whatever the pool's own settings: an unreachable server, or a
   * record row locked by a transaction that does not end. Whether the statement was applied is then unknown; a
   * claim taken that way expires after its lease, as a crashed holder's does. Default: 5 000.
   */
  queryTimeoutMs?: number;
}

/** A record as the queries read it: times relative to the server's clock, in milliseconds. */
interface Row {
  status: 'claimed' | 'completed' | 'failed';
  token: string;
  /** Lease end minus the server's now (bigint, as text). */
  lease_left: string;
  payload: string | null;
  /** Retention end minus the server's now (bigint, as text). */
  ttl: string;
}

/** How often a claim deletes expired rows. */
const PURGE_EVERY_MS = 60_000;
/** How often a claim tries again when the record changed between its two statements (it never should twice). */
const CLAIM_TRIES = 100;
/** The server's clock in epoch milliseconds, fixed for the whole statement. */
const NOW = '(extract(epoch FROM statement_timestamp()) * 1000)::bigint';
/** A plain identifier, optionally schema-qualified. */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;
/** What PostgreSQL `text` cannot hold or would change: NUL, and lone surrogates (sent as U+FFFD). */
const NOT_STORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The statements, for one table. */
function statements(table: string) {
  const index = `${table.split('.').pop()}_expires_at`;
  const record = `status, token, lease_until - ${NOW} AS lease_left, payload, expires_at - ${NOW} AS ttl`;
  return {
    // One simple-protocol query, so one implicit transaction: the advisory lock holds until the DDL commits.
    create: `SELECT pg_advisory_xact_lock(hashtext('cleanturn_effects:${table}'));
      CREATE TABLE IF NOT EXISTS ${table} (
        scope text NOT NULL,
        key text NOT NULL,
        status text NOT NULL CHECK (status IN ('claimed', 'completed', 'failed')),
        token text NOT NULL,
        lease_until bigint NOT NULL,
        payload text,
        expires_at bigint NOT NULL,
        claims integer NOT NULL DEFAULT 1,
        PRIMARY KEY (scope, key)
      );
      CREATE INDEX IF NOT EXISTS ${index} ON ${table} (expires_at);`,
    // $1 scope, $2 key, $3 token, $4 lease ms, $5 retention ms. Inserts a claim, or takes over a record past its
    // retention (claims = 1) or a claim past its lease (claims + 1); answers nothing when the record stands.
    claim: `INSERT INTO ${table} AS r (scope, key, status, token, lease_until, payload, expires_at, claims)
      VALUES ($1, $2, 'claimed', $3, ${NOW} + $4::bigint, NULL, ${NOW} + $4::bigint + $5::bigint, 1)
      ON CONFLICT (scope, key) DO UPDATE SET
        status = 'claimed', token = excluded.token, lease_until = excluded.lease_until, payload = NULL,
        expires_at = excluded.expires_at,
        claims = CASE WHEN r.expires_at <= ${NOW} THEN 1 ELSE r.claims + 1 END
      WHERE r.expires_at <= ${NOW} OR (r.status = 'claimed' AND r.lease_until <= ${NOW})
      RETURNING claims`,
    // $1 scope, $2 key.
    get: `SELECT ${record} FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > ${NOW}`,
    // $1 scope, $2 key, $3 token, $4 status, $5 payload, $6 retention ms. Writes unless another holder's token
    // is on a live record; answers one row when it wrote.
    settle: `INSERT INTO ${table} AS r (scope, key, status, token, lease_until, payload, expires_at, claims)
      VALUES ($1, $2, $4, $3, 0, $5, ${NOW} + $6::bigint, 1)
      ON CONFLICT (scope, key) DO UPDATE SET
        status = excluded.status, token = excluded.token, lease_until = 0, payload = excluded.payload,
        expires_at = excluded.expires_at,
        claims = CASE WHEN r.expires_at <= ${NOW} THEN 1 ELSE r.claims END
      WHERE r.token = excluded.token OR r.expires_at <= ${NOW}
      RETURNING 1`,
    // $1 scope, $2 key, $3 token. Every part of one statement sees the same snapshot: `live` is the record
    // before the delete.
    release: `WITH gone AS (
        DELETE FROM ${table}
        WHERE scope = $1 AND key = $2 AND token = $3 AND status = 'claimed' AND expires_at > ${NOW}
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM gone) AS released,
        EXISTS (SELECT 1 FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > ${NOW}) AS live`,
    // $1 scope, $2 key, $3 token, $4 lease ms, $5 retention ms. Extends the caller's claim, expired or not (nobody
    // has claimed since); answers one row when it did.
    renew: `UPDATE ${table} SET lease_until = ${NOW} + $4::bigint, expires_at = ${NOW} + $4::bigint + $5::bigint
      WHERE scope = $1 AND key = $2 AND token = $3 AND status = 'claimed' AND expires_at > ${NOW}
      RETURNING 1`,
    // Skips rows another statement holds (a claim taking one over), so purges never wait or deadlock.
    purge: `DELETE FROM ${table} WHERE (scope, key) IN (
        SELECT scope, key FROM ${table} WHERE expires_at <= ${NOW} FOR UPDATE SKIP LOCKED
      )`,
  };
}

/**
 * An effect ledger in a PostgreSQL table: exactly once across processes and machines, in the database most
 * teams already run.
 *
 * Every operation is one statement. A claim is an `INSERT … ON CONFLICT DO UPDATE … WHERE`: it inserts the
 * record, or takes over one whose lease (or retention) has run out, under the row lock PostgreSQL takes for the
 * conflict, so that of any number of concurrent claims exactly one wins; when the record stands, a second
 * statement reads it (`in-progress`, or the stored result or error to replay). `complete` and `fail` write only
 * while the record is absent or carries the caller's fencing token; `release` deletes only the caller's own
 * claim. Leases and retention are measured on the database server's clock, so machines with skewed clocks
 * agree on them; times in answers are converted to this machine's clock.
 *
 * Asynchronous, so it cannot serve as `seen` of `dedupeByEffectKey`; the executor replays settled keys instead.
 * Expired rows are ignored at once and deleted by `purge()`, which claims also run once a minute.
 *
 * The table (created on first use unless `createTable: false`):
 * ```sql
 * CREATE TABLE cleanturn_effects (
 *   scope text NOT NULL, key text NOT NULL,
 *   status text NOT NULL CHECK (status IN ('claimed', 'completed', 'failed')),
 *   token text NOT NULL,                -- fencing token of the holder
 *   lease_until bigint NOT NULL,        -- epoch ms, server clock (claimed)
 *   payload text,                       -- result JSON (completed) or error JSON (failed)
 *   expires_at bigint NOT NULL,         -- epoch ms, server clock: when the record is forgotten
 *   claims integer NOT NULL DEFAULT 1,  -- holders so far; above 1 means a lease ran out and was taken over
 *   PRIMARY KEY (scope, key)
 * );
 * CREATE INDEX cleanturn_effects_expires_at ON cleanturn_effects (expires_at);
 * ```
 *
 * Errors: a failed query rejects with {@link PostgresLedgerError}, `retryable` for connection failures; a bad
 * option or a scope that `text` cannot hold throws {@link PostgresLedgerUsageError}; a fenced-off write rejects
 * with `LeaseLostError`.
 *
 * ## Example
 * ```ts
 * import pg from 'pg';
 * import { executeTools } from 'cleanturn/effects';
 * import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const ledger = new PostgresEffectLedger({ pool });
 * turn$.pipe(executeTools(handlers, { turnId, ledger }));
 * // on shutdown
 * await pool.end();
 * ```
 */
export class PostgresEffectLedger implements EffectLedger {
  /** The connection pool (the user's). */
  readonly #pool: PostgresQueryable;
  /** How long settled records are kept. */
  readonly #retentionMs: number;
  /** Whether the first operation creates the table. */
  readonly #createTable: boolean;
  /** The statements for the table. */
  readonly #sql: ReturnType<typeof statements>;
  /** How long an operation waits for the database. */
  readonly #timeoutMs: number;
  /** The table creation, once started; cleared when it fails, so that the next operation tries again. */
  #created: Promise<void> | undefined;
  /** When claims last purged expired rows. */
  #purgedAt = 0;

  constructor(options: PostgresEffectLedgerOptions) {
    if (typeof options?.pool?.query !== 'function') {
      throw new PostgresLedgerUsageError('pool', 'expected a pg.Pool (an object with a query method)');
    }
    const table = options.table ?? 'cleanturn_effects';
    if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
      throw new PostgresLedgerUsageError(
        'table',
        `not a plain SQL identifier (letters, digits, _; optionally schema.table): ${JSON.stringify(table)}`,
      );
    }
    this.#pool = options.pool;
    this.#retentionMs = duration('retentionMs', options.retentionMs ?? DEFAULT_RETENTION_MS);
    this.#createTable = options.createTable ?? true;
    this.#timeoutMs = duration('queryTimeoutMs', options.queryTimeoutMs ?? 5_000);
    this.#sql = statements(table);
  }

  async claim(scope: string, key: string, options: ClaimOptions): Promise<ClaimResult> {
    checkText(scope, key);
    const leaseMs = duration('leaseMs', options.leaseMs);
    const now = Date.now();
    if (now - this.#purgedAt >= PURGE_EVERY_MS) {
      this.#purgedAt = now;
      await this.#run('claim', this.#sql.purge, []);
    }
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const token = globalThis.crypto.randomUUID();
      const taken = await this.#query<{ claims: number }>('claim', this.#sql.claim, [
        scope,
        key,
        token,
        leaseMs,
        this.#retentionMs,
      ]);
      if (taken[0] !== undefined) return { status: 'claimed', token, reclaimed: taken[0].claims > 1 };
      // The record stands: read it. Should it have been released or expired since, claim again.
      const [row] = await this.#query<Row>('claim', this.#sql.get, [scope, key]);
      if (row === undefined) continue;
      switch (row.status) {
        case 'claimed':
          if (Number(row.lease_left) > 0)
            return { status: 'in-progress', until: Date.now() + Number(row.lease_left) };
          continue;
        case 'completed':
          return { status: 'completed', result: decodeResult(row.payload) };
        case 'failed':
          return { status: 'failed', error: decodeError(row.payload ?? '{}') };
      }
    }
    throw new PostgresLedgerError(
      'claim',
      new Error(`the record of ${key} kept changing (${CLAIM_TRIES} tries)`),
    );
  }

  async complete(scope: string, key: string, token: string, result: unknown): Promise<void> {
    const payload = encodeResult(result);
    await this.#settle('complete', scope, key, token, 'completed', payload ?? null);
  }

  async fail(scope: string, key: string, token: string, error: SerializedError): Promise<void> {
    await this.#settle('fail', scope, key, token, 'failed', JSON.stringify(error));
  }

  async release(scope: string, key: string, token: string): Promise<void> {
    checkText(scope, key);
    const [answer] = await this.#query<{ released: boolean; live: boolean }>('release', this.#sql.release, [
      scope,
      key,
      token,
    ]);
    if (answer !== undefined && !answer.released && answer.live) throw new LeaseLostError(scope, key);
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now on the database server's clock (one
   * `UPDATE … WHERE token = … RETURNING`). A holder whose lease has ended may still renew while nobody has
   * claimed the key since.
   *
   * @returns `true` when the caller still holds the claim; `false` when it is lost (another holder claimed, the
   *   key was settled or released, or its record is past retention), and nothing changed.
   * @throws {PostgresLedgerUsageError} when `leaseMs` is not a positive number of milliseconds.
   * @throws {PostgresLedgerError} when the query fails or gets no answer within `queryTimeoutMs`.
   */
  async renew(scope: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    checkText(scope, key);
    const lease = duration('leaseMs', leaseMs);
    const renewed = await this.#query('renew', this.#sql.renew, [
      scope,
      key,
      token,
      lease,
      this.#retentionMs,
    ]);
    return renewed.length > 0;
  }

  async get(scope: string, key: string): Promise<EffectRecord | undefined> {
    checkText(scope, key);
    const [row] = await this.#query<Row>('get', this.#sql.get, [scope, key]);
    if (row === undefined) return undefined;
    const now = Date.now();
    const { token } = row;
    const expiresAt = now + Number(row.ttl);
    switch (row.status) {
      case 'claimed':
        return { status: 'claimed', token, leaseUntil: now + Number(row.lease_left), expiresAt };
      case 'completed':
        return { status: 'completed', token, result: decodeResult(row.payload), expiresAt };
      case 'failed':
        return { status: 'failed', token, error: decodeError(row.payload ?? '{}'), expiresAt };
    }
  }

  /**
   * Deletes the records whose retention has run out (rows another statement holds are left for the next purge).
   *
   * @returns How many were deleted.
   */
  async purge(): Promise<number> {
    const result = await this.#run('purge', this.#sql.purge, []);
    return result.rowCount ?? 0;
  }

  /**
   * Creates the table and its index if missing; every operation does this first, once. Call it at start-up to
   * learn of a missing privilege or an unreachable database before the first turn. A no-op with
   * `createTable: false`.
   */
  async ensureTable(): Promise<void> {
    if (!this.#createTable) return;
    this.#created ??= this.#withTimeout(this.#pool.query(this.#sql.create)).then(
      () => undefined,
      (error: unknown) => {
        this.#created = undefined;
        throw new PostgresLedgerError('create table', error);
      },
    );
    await this.#created;
  }

  async #settle(
    operation: 'complete' | 'fail',
    scope: string,
    key: string,
    token: string,
    status: 'completed' | 'failed',
    payload: string | null,
  ): Promise<void> {
    checkText(scope, key);
    const written = await this.#query(operation, this.#sql.settle, [
      scope,
      key,
      token,
      status,
      payload,
      this.#retentionMs,
    ]);
    if (written.length === 0) throw new LeaseLostError(scope, key);
  }

  async #query<R>(operation: PostgresLedgerOperation, text: string, values: unknown[]): Promise<R[]> {
    return (await this.#run(operation, text, values)).rows as R[];
  }

  /** Runs one statement once the table exists; a failure becomes a {@link PostgresLedgerError}. */
  async #run(
    operation: PostgresLedgerOperation,
    text: string,
    values: unknown[],
  ): Promise<{ rows: unknown[]; rowCount: number | null }> {
    await this.ensureTable();
    try {
      return await this.#withTimeout(this.#pool.query(text, values));
    } catch (error) {
      throw new PostgresLedgerError(operation, error);
    }
  }

  /** Settles as `query` does, or rejects (code `ETIMEDOUT`) once `queryTimeoutMs` has passed; the timer is always cleared. */
  async #withTimeout<T>(query: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(
          `no answer within ${this.#timeoutMs} ms (queryTimeoutMs); whether the statement was applied is unknown`,
        );
        reject(Object.assign(error, { code: 'ETIMEDOUT' }));
      }, this.#timeoutMs);
    });
    try {
      return await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Checks a duration by the ledgers' one rule (`checkDuration`), rounded up to a whole millisecond; a bad one is
 * this ledger's typed usage error.
 */
function duration(name: string, value: number): number {
  try {
    return Math.ceil(checkDuration(value, name));
  } catch {
    throw new PostgresLedgerUsageError(name, `must be a positive number of milliseconds, got ${value}`);
  }
}

/** Checks that PostgreSQL `text` holds a scope and a key unchanged. */
function checkText(scope: string, key: string): void {
  for (const [name, value] of [
    ['scope', scope],
    ['key', key],
  ] as const) {
    if (typeof value !== 'string')
      throw new PostgresLedgerUsageError(name, `expected a string, got ${typeof value}`);
    if (NOT_STORABLE.test(value)) {
      throw new PostgresLedgerUsageError(
        name,
        `${JSON.stringify(value)} has a NUL character or a lone surrogate, which PostgreSQL text cannot hold`,
      );
    }
  }
}
