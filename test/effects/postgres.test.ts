// The PostgreSQL effect ledger against a real server started for this file: the conformance suite (several
// pools, as several processes would have), then what is particular to it: tables, the server's clock, typed
// errors for a database that refuses, goes away or lacks the table, and input that `text` cannot hold.
// The crash-restart matrix and the multi-process race run it in crashRestart.test.ts and race.test.ts.

import { UsageError } from 'cleanturn';
import { EffectError } from 'cleanturn/effects';
import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
import pg from 'pg';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { describeLedgerConformance, rejection, until } from './conformance.js';
import { postgresTests, usePostgresServer } from './postgresServer.js';

describe.skipIf(postgresTests.skip)('PostgresEffectLedger', { timeout: 30_000 }, () => {
  const server = usePostgresServer();

  describeLedgerConformance('PostgresEffectLedger', ({ retentionMs }) => {
    const table = server.freshTable('conformance');
    const pools: pg.Pool[] = [];
    return {
      open: () => {
        const pool = server.pool({ max: 3 });
        pools.push(pool);
        return new PostgresEffectLedger({ pool, table, retentionMs });
      },
      close: async () => {
        await pools[0]?.query(`DROP TABLE IF EXISTS ${table}`);
        await Promise.all(pools.map((p) => p.end()));
      },
    };
  });

  describe('PostgresEffectLedger specifics', () => {
    let pool: pg.Pool;
    beforeAll(() => {
      pool = server.pool({ max: 4 });
    });
    /** How many sessions are running a claim statement on the table. */
    const claimsRunning = async (table: string) =>
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state <> 'idle' AND query LIKE $1",
          [`INSERT INTO ${table} %`],
        )
      ).rows[0].n as number;

    it('creates the table of your choice (schema-qualified too), and leaves the pool open', async () => {
      await pool.query('CREATE SCHEMA IF NOT EXISTS agent');
      const ledger = new PostgresEffectLedger({ pool, table: 'agent.effects' });
      const claim = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
      expect(claim).toMatchObject({ status: 'claimed', reclaimed: false });
      const { rows } = await pool.query('SELECT scope, key, status, claims FROM agent.effects');
      expect(rows).toEqual([{ scope: 'turn-1', key: 'k', status: 'claimed', claims: 1 }]);
      const index = await pool.query(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'agent' AND tablename = 'effects' ORDER BY 1",
      );
      expect(index.rows.map((r) => r.indexname)).toEqual(['effects_expires_at', 'effects_pkey']);
    });

    it('ledgers that start together create the table once, without colliding', async () => {
      const table = server.freshTable('together');
      const pools = Array.from({ length: 6 }, () => server.pool({ max: 1 }));
      const ledgers = pools.map((p) => new PostgresEffectLedger({ pool: p, table }));
      const answers = await Promise.all(ledgers.map((l) => l.claim('turn-1', 'k', { leaseMs: 60_000 })));
      expect(answers.filter((a) => a.status === 'claimed')).toHaveLength(1);
      expect(answers.filter((a) => a.status === 'in-progress')).toHaveLength(5);
      await Promise.all(pools.map((p) => p.end()));
    });

    it('counts takeovers in the claims column: above 1 means a lease ran out', async () => {
      const table = server.freshTable('claims');
      const ledger = new PostgresEffectLedger({ pool, table });
      await ledger.claim('turn-1', 'k', { leaseMs: 1 });
      let second: Awaited<ReturnType<typeof ledger.claim>> | undefined;
      await until(async () => {
        second = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
        return second.status === 'claimed';
      });
      expect(second).toMatchObject({ reclaimed: true });
      const { rows } = await pool.query(`SELECT claims FROM ${table}`);
      expect(rows).toEqual([{ claims: 2 }]);
    });

    it('measures leases on the server clock: a client clock an hour ahead changes nothing', async () => {
      const ledger = new PostgresEffectLedger({ pool, table: server.freshTable('clock') });
      const hour = 60 * 60 * 1000;
      const realNow = Date.now.bind(Date);
      const spy = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + hour);
      try {
        const first = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
        expect(first.status).toBe('claimed');
        const second = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
        // Still in progress (an hour-ahead clock would have expired it), and `until` is on this machine's clock.
        expect(second.status).toBe('in-progress');
        const until = (second as { until: number }).until;
        expect(until).toBeGreaterThan(Date.now());
        expect(until).toBeLessThanOrEqual(Date.now() + 60_000);
      } finally {
        spy.mockRestore();
      }
    });

    it('stores results that jsonb would refuse or change: NUL in a string, key order, big numbers', async () => {
      const ledger = new PostgresEffectLedger({ pool, table: server.freshTable('payload') });
      const claim = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
      if (claim.status !== 'claimed') throw new Error('expected a claim');
      const result = { z: 'a\u0000b', a: [1.5, 1e21, -0.000001], long: 'x'.repeat(100_000) };
      await ledger.complete('turn-1', 'k', claim.token, result);
      const replay = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
      expect(replay).toEqual({ status: 'completed', result });
      expect(Object.keys((replay as { result: object }).result)).toEqual(['z', 'a', 'long']);
    });

    it('purge() deletes the records past their retention', async () => {
      const table = server.freshTable('purge');
      const ledger = new PostgresEffectLedger({ pool, table, retentionMs: 50 });
      const claim = await ledger.claim('turn-1', 'k', { leaseMs: 1 });
      if (claim.status !== 'claimed') throw new Error('expected a claim');
      await ledger.complete('turn-1', 'k', claim.token, 1);
      await until(async () => (await ledger.get('turn-1', 'k')) === undefined);
      expect(await ledger.purge()).toBe(1);
      expect(await ledger.purge()).toBe(0);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows).toEqual([{ n: 0 }]);
    });

    it('refuses bad options and input that text cannot hold, before it sends anything', async () => {
      const query = vi.fn();
      const spy = { query } as unknown as pg.Pool;
      for (const options of [
        { pool: spy, table: 'x; DROP TABLE y' },
        { pool: spy, table: 'a.b.c' },
        { pool: spy, table: '"quoted"' },
        { pool: spy, retentionMs: 0 },
        { pool: spy, retentionMs: Number.NaN },
        { pool: spy, queryTimeoutMs: -1 },
        { pool: {} as pg.Pool },
        {} as { pool: pg.Pool },
      ]) {
        expect(() => new PostgresEffectLedger(options)).toThrow(UsageError);
      }
      const ledger = new PostgresEffectLedger({ pool: spy });
      for (const write of [
        () => ledger.claim('turn-1', 'k', { leaseMs: 0 }),
        () => ledger.claim('turn-1', 'k', { leaseMs: Number.POSITIVE_INFINITY }),
        () => ledger.claim('turn\u00001', 'k', { leaseMs: 1000 }),
        () => ledger.get('turn-1', 'k\uD800'),
        () => ledger.complete('turn\u0000', 'k', 't', 1),
        () => ledger.release('turn-1', '\uDC00', 't'),
      ]) {
        const error = await rejection(write);
        expect(error).toBeInstanceOf(UsageError);
        expect(error).toMatchObject({ code: 'usage', operator: 'PostgresEffectLedger', retryable: false });
      }
      expect(query).not.toHaveBeenCalled();
      // A pair of surrogates is a character like any other.
      expect(
        await new PostgresEffectLedger({ pool, table: server.freshTable('emoji') }).get('turn-🦀', 'k'),
      ).toBe(undefined);
    });

    it('without createTable, a missing table is a typed error that says what to do, not retryable', async () => {
      const ledger = new PostgresEffectLedger({
        pool,
        table: server.freshTable('absent'),
        createTable: false,
      });
      const error = await rejection(() => ledger.claim('turn-1', 'k', { leaseMs: 1000 }));
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({
        code: 'ledger-failed',
        driverCode: '42P01',
        operation: 'claim',
        retryable: false,
      });
      expect((error as Error).message).toMatch(/createTable/);
      await ledger.ensureTable(); // a no-op
    });

    it('a database that refuses connections is a retryable typed error; the next call tries again', async () => {
      // Port 1 of the loopback: nothing listens there.
      const refused = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'postgres' });
      refused.on('error', () => {});
      const ledger = new PostgresEffectLedger({ pool: refused });
      for (const call of [
        () => ledger.ensureTable(),
        () => ledger.claim('turn-1', 'k', { leaseMs: 1000 }),
        () => ledger.get('turn-1', 'k'),
      ]) {
        const error = await rejection(call);
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({
          retryable: true,
          code: 'ledger-failed',
          driverCode: 'ECONNREFUSED',
          operation: 'create table',
        });
      }
      await refused.end();
    });

    it('a claim stuck past queryTimeoutMs behind a row lock is ended, not applied later: retryable', async () => {
      const table = server.freshTable('stuck');
      const ledger = new PostgresEffectLedger({ pool, table, queryTimeoutMs: 300 });
      const first = await ledger.claim('turn-1', 'k', { leaseMs: 1 });
      if (first.status !== 'claimed') throw new Error('expected a claim');
      const holder = await pool.connect();
      let error: unknown;
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM ${table} WHERE key = 'k' FOR UPDATE`);
        error = await rejection(() => ledger.claim('turn-1', 'k', { leaseMs: 60_000 }));
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({
          retryable: true,
          code: 'ledger-timeout',
          driverCode: 'ETIMEDOUT',
          timeoutMs: 300,
          operation: 'claim',
        });
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      // The lock is free, and no session still runs the abandoned claim: it was ended before it could commit.
      await until(async () => (await claimsRunning(table)) === 0);
      expect(await ledger.get('turn-1', 'k')).toMatchObject({ status: 'claimed', token: first.token });
      // So the next claim takes over the first holder's expired lease at once, instead of finding a claim that
      // nobody holds in progress until its lease ends.
      expect(await ledger.claim('turn-1', 'k', { leaseMs: 60_000 })).toMatchObject({
        status: 'claimed',
        reclaimed: true,
      });
      // And the error said so: the outcome is known.
      expect(error).not.toMatchObject({ code: 'outcome-unknown' });
      expect((error as Error).message).toMatch(/queryTimeoutMs.*not applied/);
    });

    it('a connection killed in the middle of a claim is a retryable typed error, and nothing is lost', async () => {
      const table = server.freshTable('killed');
      const ledger = new PostgresEffectLedger({ pool, table, queryTimeoutMs: 60_000 });
      const first = await ledger.claim('turn-1', 'k', { leaseMs: 1 });
      if (first.status !== 'claimed') throw new Error('expected a claim');
      // Another session holds the row, so the next claim (a takeover) waits on its lock…
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM ${table} WHERE key = 'k' FOR UPDATE`);
        const blocked = rejection(() => ledger.claim('turn-1', 'k', { leaseMs: 60_000 }));
        let pid: number | undefined;
        // Asked outside the holder's transaction, which would see one snapshot of pg_stat_activity throughout.
        await until(async () => {
          const { rows } = await pool.query(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%'",
          );
          pid = rows[0]?.pid;
          return pid !== undefined;
        });
        // …and is terminated there, as a server restart or a failover would.
        await pool.query('SELECT pg_terminate_backend($1)', [pid]);
        const error = await blocked;
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({
          retryable: true,
          code: 'ledger-failed',
          driverCode: '57P01',
          operation: 'claim',
        });
        // The ledger found out that the claim was not applied before it answered.
        expect((error as Error).message).toMatch(/not applied/);
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      // The claim never happened: the first holder's record stands, and a retry takes it over.
      expect(await ledger.get('turn-1', 'k')).toMatchObject({ status: 'claimed', token: first.token });
      expect(await ledger.claim('turn-1', 'k', { leaseMs: 60_000 })).toMatchObject({
        status: 'claimed',
        reclaimed: true,
      });
      const fenced = await rejection(() => ledger.complete('turn-1', 'k', first.token, 1));
      expect(fenced).toBeInstanceOf(EffectError);
      expect(fenced).toMatchObject({ code: 'lease-lost' });
    });
  });
});
