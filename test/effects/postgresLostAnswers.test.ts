// PostgreSQL claims whose answer is lost, against a real server started for this file: the claim committed but
// its answer never came back (a proxy holds the server's replies), the server cancelled it (statement_timeout),
// and the whole server paused with SIGSTOP while the claim was out. A claim may commit after the ledger has stopped waiting for it, or may have committed already;
// the ledger must find out (end the claim's session, read the record back under the claim's token) or say that
// it cannot, with a typed, retryable error, and never let the effect run twice.
// The claim stuck behind a row lock past queryTimeoutMs, and the connection killed mid-claim, are in
// postgres.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TurnEvent } from 'cleanturn';
import { EffectError, executeTools, type ToolResultEvent } from 'cleanturn/effects';
import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
import { call, helpDesk, keyed } from 'cleanturn/testing';
import pg from 'pg';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { startTcpProxy } from '../support/tcpProxy.js';
import { rejection, until } from './conformance.js';
import { postgresTests, usePostgresServer } from './postgresServer.js';

const LONG = { leaseMs: 60_000 };

/** The pids of the server's sessions of one application, and of the postmaster. */
async function serverProcesses(observer: pg.Pool, application: string) {
  const { rows } = await observer.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
    application,
  ]);
  const sessions = rows.map((row) => row.pid as number);
  const { rows: settings } = await observer.query('SHOW data_directory');
  const postmaster = Number(
    readFileSync(join(settings[0].data_directory, 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  return { sessions, postmaster };
}

describe.skipIf(postgresTests.skip)(
  'PostgresEffectLedger: claims whose answer is lost',
  { timeout: 60_000 },
  () => {
    const server = usePostgresServer();

    it('a claim that committed but whose answer never came is read back under its token: claimed', async () => {
      const table = server.freshTable('held');
      const proxy = await startTcpProxy(server.port);
      const pool = new pg.Pool({
        connectionString: `postgresql://postgres@127.0.0.1:${proxy.port}/postgres`,
        max: 2,
      });
      pool.on('error', () => {});
      const other = new PostgresEffectLedger({ pool: server.pool(), table });
      try {
        const ledger = new PostgresEffectLedger({ pool, table, queryTimeoutMs: 500 });
        // A first claim: the table exists, and the pool has one connection, whose server session the ledger knows.
        expect(await ledger.claim('turn-1', 'first', LONG)).toMatchObject({ status: 'claimed' });
        expect(proxy.holdReplies()).toBe(1);

        const claim = await ledger.claim('turn-1', 'k', LONG);
        expect(claim).toEqual({ status: 'claimed', token: expect.any(String), reclaimed: false });
        const { token } = claim as { token: string };
        // It is the one claim of the key: another ledger finds it in progress, and its holder completes it.
        expect(await other.get('turn-1', 'k')).toMatchObject({ status: 'claimed', token });
        expect(await other.claim('turn-1', 'k', LONG)).toMatchObject({ status: 'in-progress' });
        await ledger.complete('turn-1', 'k', token, { refund: 're_1' });
        expect(await other.claim('turn-1', 'k', LONG)).toEqual({
          status: 'completed',
          result: { refund: 're_1' },
        });
      } finally {
        // The proxy first: it ends the connection whose replies it holds, which a failed claim may still wait on.
        await proxy.close();
        await pool.end();
      }
    });

    it('a claim that the server cancels (statement_timeout) was rolled back: an ordinary retryable error', async () => {
      const table = server.freshTable('cancelled');
      const pool = server.pool({ max: 2, statement_timeout: 200 });
      const ledger = new PostgresEffectLedger({ pool, table, queryTimeoutMs: 10_000 });
      const first = await ledger.claim('turn-1', 'k', { leaseMs: 1 });
      if (first.status !== 'claimed') throw new Error('expected a claim');
      const holder = await server.pool({ max: 1 }).connect();
      let error: unknown;
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM ${table} WHERE key = 'k' FOR UPDATE`);
        error = await rejection(() => ledger.claim('turn-1', 'k', LONG));
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({
        retryable: true,
        code: 'ledger-failed',
        driverCode: '57014',
        operation: 'claim',
      });
      expect(await ledger.get('turn-1', 'k')).toMatchObject({ status: 'claimed', token: first.token });
    });

    it('a paused server: a typed, retryable "outcome unknown"; once it is back, the effect runs once, not in doubt', async () => {
      const table = server.freshTable('paused');
      const application = 'paused-ledger';
      const pool = server.pool({ max: 2, application_name: application });
      // Its connection is opened now, so that its session is not paused with the others.
      const observer = server.pool({ max: 1 });
      await observer.query('SELECT 1');
      const ledger = new PostgresEffectLedger({ pool, table, queryTimeoutMs: 400 });
      const turnId = 'turn-9';
      const refund = keyed(turnId, 1, call('c1', 'issue_refund', helpDesk.refundArgs));
      let runs = 0;
      const turn = (on: PostgresEffectLedger) =>
        lastValueFrom(
          from([refund as TurnEvent]).pipe(
            executeTools(
              { issue_refund: () => ({ refund: `re_${++runs}` }) },
              { turnId, ledger: on, leaseMs: 60_000 },
            ),
            toArray(),
          ),
        );

      // A first claim of another key: the table exists, and the ledger knows the session of the pool's connection.
      expect(await ledger.claim(turnId, 'first', LONG)).toMatchObject({ status: 'claimed' });
      const { sessions, postmaster } = await serverProcesses(observer, application);
      expect(sessions).toHaveLength(1);
      const pause = (signal: NodeJS.Signals, pids: number[]) => {
        for (const pid of pids) {
          try {
            process.kill(pid, signal);
          } catch (error) {
            // A session that went on has ended since (it read the client's goodbye).
            if (!(signal === 'SIGCONT' && (error as NodeJS.ErrnoException).code === 'ESRCH')) throw error;
          }
        }
      };
      pause('SIGSTOP', [postmaster, ...sessions]);
      let error: unknown;
      try {
        // The claim reaches the paused session; no new connection can be had to end it or to read the record.
        error = await rejection(() => turn(ledger));
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({ code: 'outcome-unknown' });
        expect(error).toMatchObject({
          retryable: true,
          operation: 'claim',
          scope: turnId,
          key: refund.effectKey,
          token: expect.any(String),
        });
        expect(runs).toBe(0);
        // The session goes on and commits the claim; the postmaster, still paused, lets nobody end it first.
        pause('SIGCONT', sessions);
        const { token } = error as EffectError;
        await until(
          async () =>
            (await observer.query(`SELECT token FROM ${table} WHERE key = $1`, [refund.effectKey])).rows[0]
              ?.token === token,
        );
      } finally {
        pause('SIGCONT', [postmaster, ...sessions]);
      }

      // The turn again, through the same ledger: it takes up its own claim and runs the handler, not in doubt and
      // without waiting for the lease.
      const [executed] = (await turn(ledger)) as ToolResultEvent[];
      expect(executed).toMatchObject({ outcome: 'executed', reclaimed: false, result: { refund: 're_1' } });
      // Anywhere else, it is replayed.
      const other = new PostgresEffectLedger({ pool: server.pool(), table });
      expect(await turn(other)).toMatchObject([{ outcome: 'replayed', result: { refund: 're_1' } }]);
      expect(runs).toBe(1);
    });
  },
);
