/**
 * The most bytes a SQLite ledger stores in one value is the limit better-sqlite3 sets on every connection (the
 * longest string V8 holds, below SQLite's own 10^9): a result past it is refused before anything is bound.
 */
import { constants } from 'node:buffer';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EffectError } from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { afterAll, describe, expect, it } from 'vitest';

describe("SqliteEffectLedger: better-sqlite3's length limit", () => {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-length-limit-'));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('a result past it (yet within 10^9 bytes) is refused before binding, naming that limit; the claim stays', async () => {
    const limit = Math.min(constants.MAX_LENGTH, constants.MAX_STRING_LENGTH);
    const ledger = new SqliteEffectLedger({ database: join(dir, 'effects.db') });
    try {
      const claim = await ledger.claim('turn-1', 'k-big', { leaseMs: 60_000 });
      if (claim.status !== 'claimed') throw new Error('expected a claim');
      // 300,000,000 × 'é' and two quotes: 600,000,002 bytes of UTF-8.
      const result = 'é'.repeat(300_000_000);
      let error: unknown;
      try {
        await ledger.complete('turn-1', 'k-big', claim.token, result);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({ code: 'unstorable-result' });
      expect((error as Error).message).toContain(
        `(600000002 bytes of UTF-8) is too big for the SQLite ledger, which takes at most ${limit} bytes`,
      );
      // Refused by the ledger's own check: better-sqlite3 never saw it.
      expect((error as { cause?: unknown }).cause).toBeUndefined();
      expect(ledger.get('turn-1', 'k-big')).toMatchObject({ status: 'claimed' });
    } finally {
      ledger.close();
    }
  }, 120_000);
});
