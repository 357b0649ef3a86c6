// Crash and restart with real processes: a child runs the help-desk turn against an effect ledger (a SQLite file;
// a PostgreSQL server started for this file) and a fake payment service (its own SQLite file, idempotent on the
// key as Stripe is). The child is killed with SIGKILL at three points; then the turn is restarted. In every case
// the payment service holds one refund.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { effectKey } from 'cleanturn';
import type { EffectLedger } from 'cleanturn/effects';
import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { helpDesk } from 'cleanturn/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakePayments } from './fixtures/payments.js';
import { type PostgresServer, postgresTests, startPostgresServer } from './postgresServer.js';
import { jsonLines, runFixture, stopFixtures } from './processes.js';

const turnId = 'turn-42';
const key = effectKey(turnId, helpDesk.k);

/** A result line of the child (the tool-result without its call). */
interface ResultLine {
  outcome: string;
  effectKey: string;
  result?: { refund_id: string; idempotency_key: string };
  reclaimed?: boolean;
}

interface Case {
  crashAt: 'before-effect' | 'after-effect' | 'after-complete';
  /** The ledger's status of the key right after the crash. */
  ledgerAfterCrash: 'claimed' | 'completed';
  /** Refunds the payment service holds right after the crash. */
  refundsAfterCrash: number;
  /** The `reclaimed` flag of each handler invocation, over both runs. */
  invocations: boolean[];
  /** Requests that reached the payment service, over both runs. */
  paymentRequests: number;
  /** What the restart reports. */
  restart: Partial<ResultLine>;
}

const cases: Case[] = [
  {
    crashAt: 'before-effect',
    ledgerAfterCrash: 'claimed',
    refundsAfterCrash: 0,
    invocations: [false, true],
    paymentRequests: 1,
    restart: { outcome: 'executed', reclaimed: true },
  },
  {
    // The interesting one: the refund happened, the ledger still says claimed. The restart waits for the lease
    // to expire and runs the handler again with the same key; the payment service answers with the refund it
    // already made. Two invocations, two requests, one refund.
    crashAt: 'after-effect',
    ledgerAfterCrash: 'claimed',
    refundsAfterCrash: 1,
    invocations: [false, true],
    paymentRequests: 2,
    restart: { outcome: 'executed', reclaimed: true },
  },
  {
    crashAt: 'after-complete',
    ledgerAfterCrash: 'completed',
    refundsAfterCrash: 1,
    invocations: [false],
    paymentRequests: 1,
    restart: { outcome: 'replayed' },
  },
];

/** A ledger the matrix runs against. */
interface LedgerKind {
  name: string;
  skip: boolean;
  /** Starts what the ledger needs; answers the child's extra environment. */
  start(): Promise<Record<string, string>>;
  /** Empties the ledger before a case. */
  reset(): Promise<void>;
  /** Opens the ledger the child left in `dir`, and a function that closes it. */
  open(dir: string): [EffectLedger, () => Promise<void> | void];
  stop(): Promise<void>;
}

let postgres: PostgresServer | undefined;
const ledgers: LedgerKind[] = [
  {
    name: 'SQLite',
    skip: false,
    start: async () => ({}),
    reset: async () => {},
    open: (dir) => {
      const ledger = new SqliteEffectLedger({ database: join(dir, 'effects.db') });
      return [ledger, () => ledger.close()];
    },
    stop: async () => {},
  },
  {
    name: 'PostgreSQL',
    skip: postgresTests.skip,
    start: async () => {
      postgres = await startPostgresServer();
      return { PG_URL: postgres.url };
    },
    reset: async () => {
      const pool = postgres?.pool({ max: 1 });
      await pool?.query('DROP TABLE IF EXISTS cleanturn_effects');
      await pool?.end();
    },
    open: () => {
      const pool = postgres?.pool({ max: 1 });
      if (pool === undefined) throw new Error('the PostgreSQL server is not running');
      return [new PostgresEffectLedger({ pool }), () => pool.end()];
    },
    stop: async () => {
      await postgres?.stop();
    },
  },
];

describe.each(ledgers)('crash and restart (SIGKILL, $name ledger, idempotent payment service)', (kind) => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    if (!kind.skip) env = await kind.start();
  }, 60_000);
  afterAll(async () => {
    await kind.stop();
  }, 60_000);
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-crash-'));
    if (!kind.skip) await kind.reset();
  });
  afterEach(async () => {
    await stopFixtures();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens the ledger and the payment file the child left, reads what `read` wants, and closes them again. */
  async function inspect<T>(read: (ledger: EffectLedger, payments: FakePayments) => Promise<T>): Promise<T> {
    const [ledger, close] = kind.open(dir);
    const payments = new FakePayments(join(dir, 'payments.db'));
    try {
      return await read(ledger, payments);
    } finally {
      await close();
      payments.close();
    }
  }

  for (const c of cases) {
    it(`killed ${c.crashAt.replace('-', ' ')}: one refund after the restart`, {
      timeout: 30_000,
      skip: kind.skip,
    }, async () => {
      const crashed = await runFixture('crashTurn.ts', [dir], {
        ...env,
        CRASH_AT: c.crashAt,
        LEASE_MS: '300',
      });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      await inspect(async (ledger, payments) => {
        expect((await ledger.get(turnId, key))?.status).toBe(c.ledgerAfterCrash);
        expect(payments.refunds()).toHaveLength(c.refundsAfterCrash);
      });

      const restarted = await runFixture('crashTurn.ts', [dir], { ...env, LEASE_MS: '300' });
      expect(restarted.code, restarted.stderr).toBe(0);
      const results = jsonLines<ResultLine>(restarted.stdout);
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ effectKey: key, ...c.restart });

      const invocations = readFileSync(join(dir, 'invocations.log'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { effectKey: string; reclaimed: boolean });
      expect(invocations.map((i) => i.effectKey)).toEqual(c.invocations.map(() => key));
      expect(invocations.map((i) => i.reclaimed)).toEqual(c.invocations);

      await inspect(async (ledger, payments) => {
        const refunds = payments.refunds();
        expect(refunds).toHaveLength(1);
        expect(refunds[0]).toMatchObject({ idempotency_key: key, order_id: 'ORD-7781', amount: 'full' });
        expect(payments.requests()).toEqual({ [key]: c.paymentRequests });
        // The turn reports the refund the service holds, and the ledger has it for every later run.
        expect(results[0]?.result).toEqual(refunds[0]);
        expect(await ledger.get(turnId, key)).toMatchObject({ status: 'completed', result: refunds[0] });
      });
    });
  }
});
