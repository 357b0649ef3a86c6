import { checkOption, checkOptionalFunction } from '../../internal/options.js';
import { withinTime } from '../../internal/wait.js';
import { isWellFormed } from '../../internal/wellFormed.js';
import { DEFAULT_RETENTION_MS } from '../defaults.js';
import type { EffectError } from '../errors.js';
import { leaseLostError } from '../errors.js';
import { decodeError, decodeResult, encodeResult } from '../json.js';
import { checkDuration, toEffectRecord } from '../ledgerRules.js';
import type { ClaimOptions, ClaimResult, EffectLedger, EffectRecord, SerializedError } from '../types.js';
import {
  isOutcomeUnknown,
  type PostgresLedgerOperation,
  postgresLedgerError,
  postgresOutcomeUnknownError,
} from './errors.js';

/**
 * What the ledger needs of a PostgreSQL connection: node-postgres's `query(text, values)`. A `pg.Pool` is the
 * usual choice (each operation is one statement, so any pooled connection will do); a `pg.Client` works too.
 * @inline
 */
export interface PostgresQueryable {
  /** Runs one statement with its parameters (`$1`, `$2`…), as `pg`'s `Pool.query` does. */
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
   * `EffectError` (code `ledger-timeout`, `driverCode` `ETIMEDOUT`), whatever the pool's own settings: an unreachable server, or a
   * record row locked by a transaction that does not end. A claim that gets no answer in time, or whose connection
   * breaks mid-query, then takes up to as long again to find out whether it was applied (see
   * {@link PostgresEffectLedger}). Default: 5 000.
   */
  queryTimeoutMs?: number;
  /**
   * The clock of leases and retention, in epoch milliseconds. Default: the database server's clock
   * (`statement_timestamp()`), so that machines with skewed clocks agree. Give one to run the ledger on a clock of
   * your own: a fake clock in tests (`now: () => Date.now()` under fake timers), or the clock another ledger runs
   * on. Every ledger that shares the table must then use the same clock.
   */
  now?: () => number;
}

/** A record as the queries read it: times relative to the statement's clock, in milliseconds. */
interface Row {
  status: 'claimed' | 'completed' | 'failed';
  token: string;
  /** Lease end minus the statement's now (bigint, as text). */
  lease_left: string;
  payload: string | null;
  /** Retention end minus the statement's now (bigint, as text). */
  ttl: string;
}

/** A connection checked out of a `pg.Pool`. */
interface PoolClient extends PostgresQueryable {
  /** Gives the connection back; with an error (or `true`), the pool closes it instead. */
  release(error?: Error | boolean): void;
  /** The server process id the driver was told at start-up (node-postgres's `Client`). */
  processID?: unknown;
}

/** A `pg.Pool`: it hands out connections, so a claim can run on one whose server session it knows. */
interface Pool extends PostgresQueryable {
  connect(): Promise<PoolClient>;
  totalCount: number;
}

/** The server session of a pooled connection, as `pg_stat_activity` names it. */
interface Session {
  pid: number;
  /** `backend_start` in epoch microseconds, as text: with the pid, it names one session even if the pid is used again later. */
  started: string;
}

/** How often a claim deletes expired rows. */
const PURGE_EVERY_MS = 60_000;
/** How often a claim tries again when the record changed between its two statements (it never should twice). */
const CLAIM_TRIES = 100;
/**
 * The clock of a statement, in epoch milliseconds: the parameter `$n` when the ledger has a `now` option, else the
 * server's clock, fixed for the whole statement.
 */
const clock = (n: number) =>
  `COALESCE($${n}::bigint, (extract(epoch FROM statement_timestamp()) * 1000)::bigint)`;
/** When a session started, in epoch microseconds as text: the same whatever the session's time zone. */
const STARTED = '(extract(epoch FROM backend_start) * 1000000)::bigint::text';
/** A plain identifier, optionally schema-qualified. */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

/**
 * The statements, for one table. Each one's last parameter is its clock (see {@link clock}). It stays whole,
 * past 60 lines: it is the ledger's SQL, one statement per rule, side by side so that a reader checks each claim,
 * complete and release against the others at once; it holds no logic to split.
 */
function statements(table: string) {
  const index = `${table.split('.').pop()}_expires_at`;
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
    // $1 scope, $2 key, $3 token, $4 lease ms, $5 retention ms, $6 now. Inserts a claim, or takes over a record
    // past its retention (claims = 1) or a claim past its lease (claims + 1); answers nothing when the record stands.
    claim: `INSERT INTO ${table} AS r (scope, key, status, token, lease_until, payload, expires_at, claims)
      VALUES ($1, $2, 'claimed', $3, ${clock(6)} + $4::bigint, NULL, ${clock(6)} + $4::bigint + $5::bigint, 1)
      ON CONFLICT (scope, key) DO UPDATE SET
        status = 'claimed', token = excluded.token, lease_until = excluded.lease_until, payload = NULL,
        expires_at = excluded.expires_at,
        claims = CASE WHEN r.expires_at <= ${clock(6)} THEN 1 ELSE r.claims + 1 END
      WHERE r.expires_at <= ${clock(6)} OR (r.status = 'claimed' AND r.lease_until <= ${clock(6)})
      RETURNING claims`,
    // $1 scope, $2 key, $3 now. Times relative to the statement's clock.
    get: `SELECT status, token, lease_until - ${clock(3)} AS lease_left, payload, expires_at - ${clock(3)} AS ttl
      FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > ${clock(3)}`,
    // $1 scope, $2 key, $3 token, $4 now. The caller's own claim, if it stands: how a claim whose answer was lost
    // learns that it was applied.
    mine: `SELECT claims FROM ${table}
      WHERE scope = $1 AND key = $2 AND token = $3 AND status = 'claimed' AND expires_at > ${clock(4)}`,
    // $1 scope, $2 key, $3 token, $4 status, $5 payload, $6 retention ms, $7 now. Writes unless another holder's
    // token is on a live record; answers one row when it wrote.
    settle: `INSERT INTO ${table} AS r (scope, key, status, token, lease_until, payload, expires_at, claims)
      VALUES ($1, $2, $4, $3, 0, $5, ${clock(7)} + $6::bigint, 1)
      ON CONFLICT (scope, key) DO UPDATE SET
        status = excluded.status, token = excluded.token, lease_until = 0, payload = excluded.payload,
        expires_at = excluded.expires_at,
        claims = CASE WHEN r.expires_at <= ${clock(7)} THEN 1 ELSE r.claims END
      WHERE r.token = excluded.token OR r.expires_at <= ${clock(7)}
      RETURNING 1`,
    // $1 scope, $2 key, $3 token, $4 now. Every part of one statement sees the same snapshot: `live` is the
    // record before the delete.
    release: `WITH gone AS (
        DELETE FROM ${table}
        WHERE scope = $1 AND key = $2 AND token = $3 AND status = 'claimed' AND expires_at > ${clock(4)}
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM gone) AS released,
        EXISTS (SELECT 1 FROM ${table} WHERE scope = $1 AND key = $2 AND expires_at > ${clock(4)}) AS live`,
    // $1 scope, $2 key, $3 token, $4 lease ms, $5 retention ms, $6 now. Extends the caller's claim, expired or not
    // (nobody has claimed since); answers its claims count when it did.
    renew: `UPDATE ${table}
      SET lease_until = ${clock(6)} + $4::bigint, expires_at = ${clock(6)} + $4::bigint + $5::bigint
      WHERE scope = $1 AND key = $2 AND token = $3 AND status = 'claimed' AND expires_at > ${clock(6)}
      RETURNING claims`,
    // $1 now. Skips rows another statement holds (a claim taking one over), so purges never wait or deadlock.
    purge: `DELETE FROM ${table} WHERE (scope, key) IN (
        SELECT scope, key FROM ${table} WHERE expires_at <= ${clock(1)} FOR UPDATE SKIP LOCKED
      )`,
    // $1 pid, $2 start. Ends the session that ran a claim whose answer was lost, so that the claim cannot commit
    // later; the start time makes sure that it is still that session, not a new one that was given its pid.
    terminate: `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1::int AND ${STARTED} = $2`,
    // $1 pid, $2 start. Whether that session still exists: once it does not, its transaction is over.
    session: `SELECT 1 FROM pg_stat_activity WHERE pid = $1::int AND ${STARTED} = $2`,
    // The session of the connection that runs it.
    sessionOf: `SELECT pid, ${STARTED} AS started FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
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
 * claim. Leases and retention are measured on the database server's clock (or on the `now` option's), so
 * machines with skewed clocks agree on them; times in answers are converted to this machine's clock.
 *
 * **A claim whose answer is lost** (no answer within `queryTimeoutMs`, or its connection broke mid-query) may
 * still commit, or may have committed. With a `pg.Pool`, the ledger finds out before it answers: it ends the
 * claim's server session (`pg_terminate_backend`, from another connection of the pool), waits until that session
 * is gone, so that the claim can no longer commit, and reads the record back under the claim's token. Applied: the
 * claim answers `claimed`, as if the answer had come. Not applied: it rejects with a retryable
 * `EffectError` (`ledger-failed` or `ledger-timeout`), and nothing holds the key. When it cannot find out within another `queryTimeoutMs`
 * (the server is unreachable or paused, the database user may not end its own sessions, the connection goes
 * through a pooler such as PgBouncer, or `pool` is not a `pg.Pool`), it rejects with the retryable
 * `EffectError` of code `outcome-unknown`: nobody was told `claimed`, so the effect is not run; the next claim of
 * the key through this ledger takes up that token if the claim was applied, and elsewhere it expires after its lease,
 * as a crashed holder's does.
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
 * Errors: a failed query rejects with an `EffectError` of code `ledger-failed` (`ledger-timeout` when it got no
 * answer in time), `retryable` for connection failures; a claim whose outcome could not be found out with code
 * `outcome-unknown`; a fenced-off write with code `lease-lost`. A bad option or a scope that `text` cannot hold
 * throws a `UsageError`.
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
  /** The clock of leases and retention; `undefined`: the server's. */
  readonly #now: (() => number) | undefined;
  /** The server session of each pooled connection, once asked; `null` when the driver's process id is not it. */
  readonly #sessions = new WeakMap<object, Session | null>();
  /**
   * Claims whose outcome could not be found out, by scope and key (joined by NUL, which neither can hold): the
   * token each may hold the key under, for the next claim of the key to take up. Oldest first.
   */
  readonly #unknown = new Map<string, string>();
  /** The table creation, once started; cleared when it fails, so that the next operation tries again. */
  #created: Promise<void> | undefined;
  /** When claims last purged expired rows. */
  #purgedAt = 0;

  constructor(options: PostgresEffectLedgerOptions) {
    checkOption(
      typeof options?.pool?.query === 'function',
      LEDGER,
      'pool',
      'a pg.Pool (an object with a query method)',
      options?.pool,
    );
    const table = options.table ?? 'cleanturn_effects';
    checkOption(
      typeof table === 'string' && TABLE_NAME.test(table),
      LEDGER,
      'table',
      'a plain SQL identifier (letters, digits, _; optionally schema.table)',
      table,
    );
    checkOptionalFunction(LEDGER, 'now', options.now, 'a function answering epoch ms');
    this.#pool = options.pool;
    this.#retentionMs = duration('retentionMs', options.retentionMs ?? DEFAULT_RETENTION_MS);
    this.#createTable = options.createTable ?? true;
    this.#timeoutMs = duration('queryTimeoutMs', options.queryTimeoutMs ?? 5_000);
    this.#now = options.now;
    this.#sql = statements(table);
  }

  async claim(scope: string, key: string, options: ClaimOptions): Promise<ClaimResult> {
    checkText(scope, key);
    const leaseMs = duration('leaseMs', options.leaseMs);
    const started = Date.now();
    if (started - this.#purgedAt >= PURGE_EVERY_MS) {
      this.#purgedAt = started;
      await this.#run('claim', this.#sql.purge, [this.#clock()]);
    }
    const takenUp = await this.#takeUp(scope, key, leaseMs);
    if (takenUp !== undefined) return takenUp;
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const token = globalThis.crypto.randomUUID();
      const now = this.#clock();
      const claims = await this.#claimOnce(scope, key, token, [
        scope,
        key,
        token,
        leaseMs,
        this.#retentionMs,
        now,
      ]);
      if (claims !== undefined) return { status: 'claimed', token, reclaimed: claims > 1 };
      // The record stands: read it. Should it have been released or expired since, claim again.
      const [row] = await this.#query<Row>('claim', this.#sql.get, [scope, key, now]);
      if (row === undefined) continue;
      switch (row.status) {
        case 'claimed':
          if (Number(row.lease_left) > 0) return { status: 'in-progress', until: local(now, row.lease_left) };
          continue;
        case 'completed':
          return { status: 'completed', result: decodeResult(row.payload) };
        case 'failed':
          return { status: 'failed', error: decodeError(row.payload) };
      }
    }
    throw postgresLedgerError(
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
      this.#clock(),
    ]);
    if (answer !== undefined && !answer.released && answer.live) throw leaseLostError(scope, key);
  }

  /**
   * Extends the caller's claim: its lease ends `leaseMs` from now on the database server's clock (or the `now`
   * option's), in one `UPDATE … WHERE token = … RETURNING`. A holder whose lease has ended may still renew while
   * nobody has claimed the key since.
   *
   * @returns `true` when the caller still holds the claim; `false` when it is lost (another holder claimed, the
   *   key was settled or released, or its record is past retention), and nothing changed.
   * @throws {UsageError} when `leaseMs` is not a positive number of milliseconds.
   * @throws {EffectError} `ledger-failed` when the query fails, `ledger-timeout` when it gets no answer within
   *   `queryTimeoutMs`.
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
      this.#clock(),
    ]);
    return renewed.length > 0;
  }

  async get(scope: string, key: string): Promise<EffectRecord | undefined> {
    checkText(scope, key);
    const now = this.#clock();
    const [row] = await this.#query<Row>('get', this.#sql.get, [scope, key, now]);
    if (row === undefined) return undefined;
    return toEffectRecord({
      status: row.status,
      token: row.token,
      leaseUntil: row.status === 'claimed' ? local(now, row.lease_left) : 0,
      payload: row.payload ?? undefined,
      expiresAt: local(now, row.ttl),
    });
  }

  /**
   * Deletes the records whose retention has run out (rows another statement holds are left for the next purge).
   *
   * @returns How many were deleted.
   */
  async purge(): Promise<number> {
    const result = await this.#run('purge', this.#sql.purge, [this.#clock()]);
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
        throw postgresLedgerError('create table', error);
      },
    );
    await this.#created;
  }

  /** The clock of a statement: the `now` option's time, or `null` for the server's. */
  #clock(): number | null {
    if (this.#now === undefined) return null;
    const now = this.#now();
    checkOption(Number.isFinite(now), LEDGER, 'now()', 'a finite number of epoch milliseconds', now);
    return Math.floor(now);
  }

  /**
   * Takes up a claim of this ledger whose outcome was unknown, if it was applied after all: its lease runs
   * `leaseMs` from now, and the claim answers `claimed` with its token. The token is taken out of the list first,
   * so that two claims of the key at once cannot both take it up.
   */
  async #takeUp(scope: string, key: string, leaseMs: number): Promise<ClaimResult | undefined> {
    const id = `${scope}\0${key}`;
    const token = this.#unknown.get(id);
    if (token === undefined) return undefined;
    this.#unknown.delete(id);
    let renewed: { claims: number }[];
    try {
      renewed = await this.#query('claim', this.#sql.renew, [
        scope,
        key,
        token,
        leaseMs,
        this.#retentionMs,
        this.#clock(),
      ]);
    } catch (error) {
      if (!this.#unknown.has(id)) this.#unknown.set(id, token);
      throw error;
    }
    const [row] = renewed;
    return row === undefined ? undefined : { status: 'claimed', token, reclaimed: row.claims > 1 };
  }

  /**
   * Runs the claim statement: the claims count when it claimed, `undefined` when the record stands. When its
   * answer is lost, finds out whether it was applied (see the class comment).
   */
  async #claimOnce(
    scope: string,
    key: string,
    token: string,
    values: unknown[],
  ): Promise<number | undefined> {
    await this.ensureTable();
    const claimed = (rows: unknown[]) => (rows[0] as { claims: number } | undefined)?.claims;
    const pool = this.#pool;
    if (!isPool(pool)) {
      try {
        return claimed((await this.#withTimeout(pool.query(this.#sql.claim, values))).rows);
      } catch (error) {
        if (isOutcomeUnknown(error)) throw this.#unknownOutcome(scope, key, token, error);
        throw postgresLedgerError('claim', error);
      }
    }
    // Nothing has been sent until the claim's own query: a failure before it is an ordinary one.
    const client = await this.#checkOut(pool);
    let session: Session | null;
    try {
      session = await this.#sessionOf(client);
    } catch (error) {
      client.release(true);
      throw postgresLedgerError('claim', error);
    }
    try {
      const { rows } = await this.#withTimeout(client.query(this.#sql.claim, values));
      client.release();
      return claimed(rows);
    } catch (error) {
      if (!isOutcomeUnknown(error)) {
        client.release();
        throw postgresLedgerError('claim', error);
      }
      // The pool closes the connection; its session may still run the claim, until it is ended.
      client.release(true);
      if (session === null) throw this.#unknownOutcome(scope, key, token, error);
      return await this.#resolve(pool, session, scope, key, token, values[5] as number | null, error);
    }
  }

  /**
   * Finds out whether a claim whose answer was lost was applied: ends its session and waits until it is gone (so
   * that the claim can no longer commit), then looks for the claim's token on the record, all within
   * `queryTimeoutMs`. Answers the claims count when it was applied; rejects with a retryable
   * `EffectError` (`ledger-failed`) when it was not, or with code `outcome-unknown` when that cannot be
   * found out.
   */
  async #resolve(
    pool: Pool,
    session: Session,
    scope: string,
    key: string,
    token: string,
    now: number | null,
    cause: unknown,
  ): Promise<number> {
    const deadline = performance.now() + this.#timeoutMs;
    const within = <T>(query: Promise<T>) => this.#withTimeout(query, deadline - performance.now());
    const ids = [session.pid, session.started];
    let mine: unknown[];
    try {
      await within(pool.query(this.#sql.terminate, ids));
      while ((await within(pool.query(this.#sql.session, ids))).rows.length > 0) {
        if (performance.now() >= deadline) throw new Error('the session did not end in time');
        await new Promise((resolve) => setTimeout(resolve, SESSION_POLL_MS));
      }
      mine = (await within(pool.query(this.#sql.mine, [scope, key, token, now]))).rows;
    } catch {
      throw this.#unknownOutcome(scope, key, token, cause);
    }
    const [row] = mine as { claims: number }[];
    if (row !== undefined) return row.claims;
    throw postgresLedgerError(
      'claim',
      cause,
      'checked: the claim was not applied (its session was ended before it could commit)',
    );
  }

  /** The error of a claim whose outcome is unknown; its token is kept for the next claim of the key to take up. */
  #unknownOutcome(scope: string, key: string, token: string, cause: unknown): EffectError {
    const id = `${scope}\0${key}`;
    this.#unknown.delete(id);
    this.#unknown.set(id, token);
    if (this.#unknown.size > UNKNOWN_KEPT) this.#unknown.delete(this.#unknown.keys().next().value as string);
    return postgresOutcomeUnknownError(scope, key, token, cause);
  }

  /**
   * A connection of the pool, within `queryTimeoutMs`. One that comes too late is given back at once: nothing
   * is ever sent on it.
   */
  async #checkOut(pool: Pool): Promise<PoolClient> {
    const connecting = pool.connect();
    try {
      return await this.#withTimeout(connecting);
    } catch (error) {
      connecting.then(
        (late) => late.release(),
        () => {},
      );
      const note = error instanceof QueryTimeoutError ? 'no connection of the pool came in time' : undefined;
      throw postgresLedgerError('claim', error, note);
    }
  }

  /**
   * The server session of a pooled connection (asked once per connection), or `null` when the driver's process
   * id is not the session's: a pooler (PgBouncer) stands between, and the session cannot be ended by its pid.
   */
  async #sessionOf(client: PoolClient): Promise<Session | null> {
    const known = this.#sessions.get(client);
    if (known !== undefined) return known;
    const { rows } = await this.#withTimeout(client.query(this.#sql.sessionOf));
    const [row] = rows as Session[];
    const session = row !== undefined && row.pid === client.processID ? row : null;
    this.#sessions.set(client, session);
    return session;
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
      this.#clock(),
    ]);
    if (written.length === 0) throw leaseLostError(scope, key);
  }

  async #query<R>(operation: PostgresLedgerOperation, text: string, values: unknown[]): Promise<R[]> {
    return (await this.#run(operation, text, values)).rows as R[];
  }

  /** Runs one statement once the table exists; a failure becomes an `EffectError` (`ledger-failed`, `ledger-timeout`). */
  async #run(
    operation: PostgresLedgerOperation,
    text: string,
    values: unknown[],
  ): Promise<{ rows: unknown[]; rowCount: number | null }> {
    await this.ensureTable();
    try {
      return await this.#withTimeout(this.#pool.query(text, values));
    } catch (error) {
      const write = operation !== 'get' && operation !== 'purge';
      throw postgresLedgerError(
        operation,
        error,
        write && isOutcomeUnknown(error)
          ? 'whether it was applied is unknown; trying again with the same token is safe'
          : undefined,
      );
    }
  }

  /**
   * Settles as `query` does, or rejects (code `ETIMEDOUT`) once `timeoutMs` (default `queryTimeoutMs`) has
   * passed; the timer is always cleared.
   */
  #withTimeout<T>(query: Promise<T>, timeoutMs = this.#timeoutMs): Promise<T> {
    return withinTime(
      Math.max(0, timeoutMs),
      () => new QueryTimeoutError(this.#timeoutMs),
      () => query,
    );
  }
}

/** The name the ledger's usage errors give as their operator. */
const LEDGER = 'PostgresEffectLedger';
/** How often a claim whose answer was lost asks whether its ended session is gone. */
const SESSION_POLL_MS = 10;
/** How many claims of unknown outcome a ledger keeps the tokens of. */
const UNKNOWN_KEPT = 1_000;

/** No answer within `queryTimeoutMs`: the query may still be running, or be waiting to be sent. */
class QueryTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  /** The timeout that ran out, in milliseconds. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms (queryTimeoutMs)`);
    this.timeoutMs = timeoutMs;
  }
}

/** Whether the queryable is a `pg.Pool` (it hands out connections), not a single `pg.Client` or a wrapper. */
function isPool(pool: PostgresQueryable): pool is Pool {
  const candidate = pool as Partial<Pool>;
  return typeof candidate.connect === 'function' && typeof candidate.totalCount === 'number';
}

/** An epoch-ms time on this machine's clock (or the `now` option's) from a time relative to a statement's clock. */
function local(now: number | null, relative: string): number {
  return (now ?? Date.now()) + Number(relative);
}

/** Checks a duration by the ledgers' one rule (`checkDuration`), rounded up to a whole millisecond. */
function duration(name: string, value: number): number {
  return Math.ceil(checkDuration(LEDGER, name, value));
}

/** Checks that PostgreSQL `text` holds a scope and a key unchanged. */
function checkText(scope: string, key: string): void {
  for (const [name, value] of [
    ['scope', scope],
    ['key', key],
  ] as const) {
    checkOption(typeof value === 'string', LEDGER, name, 'a string', value);
    // PostgreSQL `text` cannot hold NUL, and would get a lone surrogate as U+FFFD.
    checkOption(
      !value.includes('\0') && isWellFormed(value),
      LEDGER,
      name,
      'a string without a NUL character or a lone surrogate, which PostgreSQL text cannot hold',
      value,
    );
  }
}
