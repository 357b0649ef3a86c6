// The help-desk refund, exactly once through a crash.
//
//   npx tsx examples/refund-exactly-once.ts
//
// Run 1 of the turn is killed with SIGKILL after the payment API has made the refund and before the effect
// ledger has recorded it: the worst moment. Run 2 restarts the turn. It finds run 1's claim, waits for its lease
// to expire, and runs the handler again with the same effect key; the payment API is idempotent on that key
// (as Stripe is on its Idempotency-Key header) and answers with the refund it already made. One refund.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cleanTurn } from 'cleanturn';
import { executeTools } from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { helpDesk } from 'cleanturn/testing';
import { from, lastValueFrom, tap } from 'rxjs';

const turnId = 'turn-42';

/** A stand-in for the payment provider: its own database, idempotent on the key. */
function paymentApi(file: string) {
  const db = new Database(file);
  db.exec(
    'CREATE TABLE IF NOT EXISTS refunds (idempotency_key TEXT PRIMARY KEY, refund_id TEXT, order_id TEXT)',
  );
  return {
    refund(idempotencyKey: string, orderId: string) {
      const found = db
        .prepare<[string], { refund_id: string }>('SELECT refund_id FROM refunds WHERE idempotency_key = ?')
        .get(idempotencyKey);
      if (found !== undefined) return { refund_id: found.refund_id, replayed: true };
      const refundId = `re_${Math.random().toString(36).slice(2, 10)}`;
      db.prepare('INSERT INTO refunds VALUES (?, ?, ?)').run(idempotencyKey, refundId, orderId);
      return { refund_id: refundId, replayed: false };
    },
    count: () => db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM refunds').get()?.n ?? 0,
    close: () => db.close(),
  };
}

/** One run of the turn, in its own process. CRASH=1 kills it right after the refund. */
async function runTurn(dir: string): Promise<void> {
  const ledger = new SqliteEffectLedger({ database: join(dir, 'effects.db') });
  const payments = paymentApi(join(dir, 'payments.db'));
  await lastValueFrom(
    from(helpDesk.turn).pipe(
      cleanTurn({ turnId }),
      executeTools(
        {
          issue_refund: async (args, { effectKey, reclaimed }) => {
            const { order_id } = args as { order_id: string };
            if (reclaimed)
              console.log('  the earlier claim expired unrecorded: running again with the same key');
            const refund = payments.refund(effectKey, order_id);
            console.log(
              `  payment API: ${refund.replayed ? 'already refunded' : 'refunded'} ${order_id} ` +
                `as ${refund.refund_id} (idempotency key ${effectKey})`,
            );
            if (process.env.CRASH === '1') {
              console.log('  SIGKILL: the process dies before the ledger records the refund');
              process.kill(process.pid, 'SIGKILL');
            }
            return { refund_id: refund.refund_id };
          },
        },
        { turnId, ledger, leaseMs: 1000 },
      ),
      tap((r) => {
        const detail = 'result' in r ? JSON.stringify(r.result) : JSON.stringify(r);
        console.log(`  tool-result: ${r.call.name} ${r.outcome} ${detail}`);
      }),
    ),
    { defaultValue: undefined },
  );
  ledger.close();
  payments.close();
}

/** Runs the turn twice in child processes, the first one crashing, and counts the refunds. */
function main(): void {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-refund-'));
  try {
    const run = (title: string, env: Record<string, string>) => {
      console.log(title);
      const child = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, 'turn', dir], {
        env: { ...process.env, ...env },
        stdio: 'inherit',
      });
      console.log(`  (process ended: ${child.signal ?? `exit code ${child.status}`})\n`);
    };
    run('Run 1: the turn runs, the refund is made, the process is killed.', { CRASH: '1' });
    run('Run 2: the turn is restarted.', {});
    run('Run 3: and once more, after the refund was recorded.', {});
    const payments = paymentApi(join(dir, 'payments.db'));
    console.log(`Refunds held by the payment API: ${payments.count()}`);
    payments.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'turn') await runTurn(process.argv[3] as string);
else main();
