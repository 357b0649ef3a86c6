// Many processes: several workers receive the same turns (duplicate delivery) and race on one effect ledger,
// Redis (a real redis-server started for this file), a SQLite file shared on one machine, or PostgreSQL (a real
// server started for this file). Every effect runs once, and every worker reports the same result for it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakePayments } from './fixtures/payments.js';
import { type PostgresServer, postgresTests, startPostgresServer } from './postgresServer.js';
import { jsonLines, startFixture, stopFixtures } from './processes.js';
import { type RedisServer, redisTests, startRedisServer } from './redisServer.js';

const WORKERS = 4;
const TURNS = 20;
const CALLS_PER_TURN = 2;

interface ResultLine {
  turnId: string;
  order: string;
  effectKey: string;
  outcome: string;
  result?: unknown;
}

let redis: RedisServer | undefined;
let postgres: PostgresServer | undefined;
beforeAll(async () => {
  [redis, postgres] = await Promise.all([
    redisTests.skip ? undefined : startRedisServer(),
    postgresTests.skip ? undefined : startPostgresServer(),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()]);
}, 60_000);

describe.each(['redis', 'sqlite', 'postgres'] as const)(
  '%s ledger: duplicate delivery to many worker processes',
  (kind) => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), `cleanturn-race-${kind}-`));
    });
    afterEach(async () => {
      await stopFixtures();
    });
    afterAll(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it(`${WORKERS} workers × ${TURNS} turns × ${CALLS_PER_TURN} refunds: each refund runs once`, {
      timeout: 60_000,
      skip: (kind === 'postgres' && postgresTests.skip) || (kind === 'redis' && redisTests.skip),
    }, async () => {
      const workers = Array.from({ length: WORKERS }, () =>
        startFixture('raceWorker.ts', [dir, kind, String(TURNS)], {
          REDIS_PORT: String(redis?.port ?? ''),
          PG_URL: postgres?.url ?? '',
        }),
      );
      await Promise.all(workers.map((w) => w.line((line) => line === 'READY')));
      for (const w of workers) w.process.stdin?.write('go\n');
      const exits = await Promise.all(workers.map((w) => w.exit));
      for (const e of exits) expect(e.code, e.stderr).toBe(0);

      const byKey = new Map<string, { worker: number; line: ResultLine }[]>();
      exits.forEach((e, worker) => {
        for (const line of jsonLines<ResultLine>(e.stdout)) {
          const id = `${line.turnId}:${line.effectKey}`;
          byKey.set(id, [...(byKey.get(id) ?? []), { worker, line }]);
        }
      });
      expect(byKey.size).toBe(TURNS * CALLS_PER_TURN);

      const payments = new FakePayments(join(dir, 'payments.db'));
      const requests = payments.requests();
      const refunds = payments.refunds();
      payments.close();
      expect(refunds).toHaveLength(TURNS * CALLS_PER_TURN);

      for (const [id, seen] of byKey) {
        // Every worker got a result for every effect…
        expect(seen.map((s) => s.worker).sort()).toEqual(Array.from({ length: WORKERS }, (_, i) => i));
        // …exactly one of them ran it, the others replayed it…
        const outcomes = seen.map((s) => s.line.outcome).sort();
        expect(outcomes).toEqual(['executed', ...Array<string>(WORKERS - 1).fill('replayed')]);
        // …the payment service was asked once…
        expect(requests[id]).toBe(1);
        // …and all of them report the same result: the refund the service made.
        const refund = refunds.find((r) => r.idempotency_key === id);
        for (const s of seen) expect(s.line.result).toEqual(refund);
        expect(refund?.order_id).toBe(seen[0]?.line.order);
      }
    });
  },
);
