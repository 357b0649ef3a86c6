// The conformance suite against the three ledgers: in memory, a real SQLite file (several connections, as
// several processes would have), and a real redis-server started for this file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dedupeByEffectKey, effectKey, UsageError } from 'cleanturn';
import { MemoryEffectLedger } from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { call, helpDesk } from 'cleanturn/testing';
import type { Redis } from 'ioredis';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLedgerConformance } from './conformance.js';
import { type RedisServer, redisTests, startRedisServer } from './redisServer.js';

describeLedgerConformance('MemoryEffectLedger', ({ retentionMs }) => {
  const ledger = new MemoryEffectLedger({ retentionMs });
  return { open: () => ledger, close: () => {} };
});

describeLedgerConformance('SqliteEffectLedger', ({ retentionMs }) => {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-sqlite-'));
  const file = join(dir, 'effects.db');
  const handles: SqliteEffectLedger[] = [];
  return {
    open: () => {
      const ledger = new SqliteEffectLedger({ database: file, retentionMs });
      handles.push(ledger);
      return ledger;
    },
    close: () => {
      for (const h of handles) h.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

let redis: RedisServer;
let prefixes = 0;
beforeAll(async () => {
  if (!redisTests.skip) redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(redisTests.skip)('with redis-server', () => {
  describeLedgerConformance('RedisEffectLedger', ({ retentionMs }) => {
    const prefix = `conformance-${++prefixes}`;
    const clients: Redis[] = [];
    return {
      open: () => {
        const client = redis.client();
        clients.push(client);
        return new RedisEffectLedger({ client, prefix, retentionMs });
      },
      close: async () => {
        await Promise.all(clients.map((c) => c.quit()));
      },
    };
  });
});

describe('SqliteEffectLedger specifics', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-sqlite-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('works on a database passed in, in a table of your choice, and leaves the database open', async () => {
    const db = new Database(join(dir, 'app.db'));
    const ledger = new SqliteEffectLedger({ database: db, table: 'agent_effects' });
    const claim = await ledger.claim('turn-1', 'k', { leaseMs: 1000 });
    expect(claim.status).toBe('claimed');
    ledger.close();
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT scope, key, status FROM agent_effects').all()).toEqual([
      { scope: 'turn-1', key: 'k', status: 'claimed' },
    ]);
    db.close();
  });

  it('refuses a table name that is not a plain identifier', () => {
    expect(() => new SqliteEffectLedger({ database: ':memory:', table: 'x; DROP TABLE y' })).toThrow(
      UsageError,
    );
  });

  it('purge() deletes the records past their retention', async () => {
    const ledger = new SqliteEffectLedger({ database: join(dir, 'purge.db'), retentionMs: 50 });
    const claim = await ledger.claim('turn-1', 'k', { leaseMs: 1 });
    if (claim.status !== 'claimed') throw new Error('expected a claim');
    await ledger.complete('turn-1', 'k', claim.token, 1);
    while (ledger.get('turn-1', 'k') !== undefined) await new Promise((r) => setTimeout(r, 20));
    expect(await ledger.purge()).toBe(1);
    expect(await ledger.purge()).toBe(0);
    ledger.close();
  });
});

describe('a synchronous ledger as seen of dedupeByEffectKey', () => {
  const turnId = 'turn-42';
  const refund = call('c7', 'issue_refund', helpDesk.refundArgs);
  const lookup = call('c8', 'lookup_order', { order_id: 'ORD-7781' });

  for (const [name, make] of [
    ['MemoryEffectLedger', () => new MemoryEffectLedger()],
    ['SqliteEffectLedger', () => new SqliteEffectLedger({ database: ':memory:' })],
  ] as const) {
    it(`${name}: marks the calls whose keys are settled as repeats, not those claimed or absent`, async () => {
      const ledger = make();
      const settled = await ledger.claim(turnId, effectKey(turnId, refund), { leaseMs: 1000 });
      if (settled.status !== 'claimed') throw new Error('expected a claim');
      await ledger.complete(turnId, effectKey(turnId, refund), settled.token, { refund_id: 're_1' });
      await ledger.claim(turnId, effectKey(turnId, lookup), { leaseMs: 1000 }); // claimed, not settled

      const out = await lastValueFrom(
        from([refund, lookup]).pipe(dedupeByEffectKey({ turnId, seen: ledger.seen(turnId) }), toArray()),
      );
      // Every call is delivered (each call id needs an answer); the settled refund only as a repeat.
      expect(out.map((e) => [e.id, e.type === 'tool-call-repeat'])).toEqual([
        ['c7', true],
        ['c8', false],
      ]);
      // Another turn's record does not count.
      expect(ledger.seen('turn-43').has(effectKey(turnId, refund))).toBe(false);
    });
  }
});
