// Crash and restart with real processes: a child runs the help-desk turn against a SQLite effect ledger and a
// fake payment service (its own SQLite file, idempotent on the key as Stripe is). The child is killed with
// SIGKILL at three points; then the turn is restarted. In every case the payment service holds one refund.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { effectKey } from 'cleanturn';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { helpDesk } from 'cleanturn/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakePayments } from './fixtures/payments.js';
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

describe('crash and restart (SIGKILL, SQLite ledger, idempotent payment service)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-crash-'));
  });
  afterEach(async () => {
    await stopFixtures();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens the files the child left, reads what `read` wants, and closes them again. */
  function inspect<T>(read: (ledger: SqliteEffectLedger, payments: FakePayments) => T): T {
    const ledger = new SqliteEffectLedger({ database: join(dir, 'effects.db') });
    const payments = new FakePayments(join(dir, 'payments.db'));
    try {
      return read(ledger, payments);
    } finally {
      ledger.close();
      payments.close();
    }
  }

  for (const c of cases) {
    it(`killed ${c.crashAt.replace('-', ' ')}: one refund after the restart`, {
      timeout: 30_000,
    }, async () => {
      const crashed = await runFixture('crashTurn.ts', [dir], { CRASH_AT: c.crashAt, LEASE_MS: '300' });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      inspect((ledger, payments) => {
        expect(ledger.get(turnId, key)?.status).toBe(c.ledgerAfterCrash);
        expect(payments.refunds()).toHaveLength(c.refundsAfterCrash);
      });

      const restarted = await runFixture('crashTurn.ts', [dir], { LEASE_MS: '300' });
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

      inspect((ledger, payments) => {
        const refunds = payments.refunds();
        expect(refunds).toHaveLength(1);
        expect(refunds[0]).toMatchObject({ idempotency_key: key, order_id: 'ORD-7781', amount: 'full' });
        expect(payments.requests()).toEqual({ [key]: c.paymentRequests });
        // The turn reports the refund the service holds, and the ledger has it for every later run.
        expect(results[0]?.result).toEqual(refunds[0]);
        expect(ledger.get(turnId, key)).toMatchObject({ status: 'completed', result: refunds[0] });
      });
    });
  }
});
