// SQLite's write lock held by another process (a backup, a migration, another program on the same file): the
// ledger waits for it asynchronously, so that the event loop keeps running (streams, timers, stall checks), and
// gives up with a typed, retryable error at its deadline. The lock is held by a real second process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanTurn, effectKey } from 'cleanturn';
import { EffectError, executeTools } from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { call, finish } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { until } from './conformance.js';
import { type Child, startFixture, stopFixtures } from './processes.js';

/** How long the second process holds the lock in the waiting cases. */
const HOLD_MS = 1500;
/**
 * The bound on the event loop's delay: half the hold. A blocking wait shows the whole hold; a loaded machine (a CI
 * runner with other suites on both cores) can show a few hundred milliseconds without any blocking.
 */
const MAX_LOOP_DELAY_MS = HOLD_MS / 2;

/**
 * Measures how late the event loop runs a 5 ms interval: the longest gap between two ticks. A synchronous wait
 * for the lock shows as one gap as long as the wait.
 */
function loopProbe() {
  let last = performance.now();
  let longest = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
  }, 5);
  return {
    /** The longest gap so far, in milliseconds, once the loop has ticked twice more (a gap shows on the tick after it). */
    async longest(): Promise<number> {
      const seen = ticks;
      await until(() => ticks >= seen + 2);
      return longest;
    },
    stop: () => clearInterval(timer),
  };
}

describe('SqliteEffectLedger: the write lock held by another process', () => {
  let dir: string;
  let files = 0;
  const ledgers: SqliteEffectLedger[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-sqlite-busy-'));
  });
  afterEach(async () => {
    await stopFixtures();
    for (const l of ledgers.splice(0)) l.close();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A ledger on a new file (created, in WAL), and a second process that holds the file's write lock. */
  async function lockedLedger(holdMs: number, options: { busyTimeoutMs?: number } = {}) {
    const file = join(dir, `effects-${++files}.db`);
    const ledger = new SqliteEffectLedger({ database: file, ...options });
    ledgers.push(ledger);
    const holder: Child = startFixture('sqliteHolder.ts', [file, String(holdMs)]);
    await holder.line((line) => line === 'HELD');
    return { ledger, holder };
  }

  it('a claim waits for the lock without blocking the event loop, and succeeds once it is released', async () => {
    const { ledger, holder } = await lockedLedger(HOLD_MS);
    const probe = loopProbe();
    try {
      let released = false;
      holder
        .line((line) => line === 'RELEASED')
        .then(() => {
          released = true;
        });
      const claim = await ledger.claim('turn-1', 'k', { leaseMs: 60_000 });
      expect(claim).toMatchObject({ status: 'claimed', reclaimed: false });
      // The claim could only be taken after the other process let go.
      await until(() => released);
      const longest = await probe.longest();
      expect(longest).toBeLessThan(MAX_LOOP_DELAY_MS);
    } finally {
      probe.stop();
    }
  });

  it('complete, fail and release wait the same way; get and seen read at once (WAL: readers never wait)', async () => {
    const file = join(dir, `effects-${++files}.db`);
    const ledger = new SqliteEffectLedger({ database: file });
    ledgers.push(ledger);
    const claims = await Promise.all(
      ['a', 'b', 'c'].map((k) => ledger.claim('turn-1', k, { leaseMs: 60_000 })),
    );
    const [a, b, c] = claims.map((x) => (x.status === 'claimed' ? x.token : ''));
    const holder = startFixture('sqliteHolder.ts', [file, String(HOLD_MS)]);
    await holder.line((line) => line === 'HELD');
    const probe = loopProbe();
    try {
      expect(ledger.get('turn-1', 'a')).toMatchObject({ status: 'claimed', token: a });
      expect(ledger.seen('turn-1').has('a')).toBe(false);
      await Promise.all([
        ledger.complete('turn-1', 'a', a ?? '', { refund_id: 're_1' }),
        ledger.fail('turn-1', 'b', b ?? '', { name: 'Error', message: 'declined', retryable: false }),
        ledger.release('turn-1', 'c', c ?? ''),
      ]);
      expect(ledger.get('turn-1', 'a')).toMatchObject({ status: 'completed', result: { refund_id: 're_1' } });
      expect(ledger.get('turn-1', 'b')).toMatchObject({ status: 'failed' });
      expect(ledger.get('turn-1', 'c')).toBeUndefined();
      expect(await probe.longest()).toBeLessThan(MAX_LOOP_DELAY_MS);
    } finally {
      probe.stop();
    }
  });

  it('gives up at busyTimeoutMs with EffectError ledger-busy (retryable), and the event loop never stopped', async () => {
    const { ledger } = await lockedLedger(0, { busyTimeoutMs: 300 }); // held until the process is killed
    const probe = loopProbe();
    try {
      const error = await Promise.resolve(ledger.claim('turn-1', 'k', { leaseMs: 60_000 })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({ code: 'ledger-busy' });
      expect(error).toMatchObject({ retryable: true, operation: 'claim', busyTimeoutMs: 300 });
      expect((error as Error).message).toMatch(/300 ms/);
      expect(await probe.longest()).toBeLessThan(MAX_LOOP_DELAY_MS);
    } finally {
      probe.stop();
    }
    // Nothing was written.
    await stopFixtures();
    expect(ledger.get('turn-1', 'k')).toBeUndefined();
  });

  it('executeTools runs the turn once the lock is released; the stream never stalls the process', async () => {
    const { ledger } = await lockedLedger(HOLD_MS);
    const probe = loopProbe();
    let runs = 0;
    try {
      const results = await lastValueFrom(
        from([call('c1', 'issue_refund', { order_id: 'ORD-1' }), finish('tool-calls')]).pipe(
          cleanTurn({ turnId: 'turn-9' }),
          executeTools({ issue_refund: () => ({ refund_id: `re_${++runs}` }) }, { turnId: 'turn-9', ledger }),
          toArray(),
        ),
      );
      expect(results.map((r) => r.outcome)).toEqual(['executed']);
      expect(runs).toBe(1);
      expect(await probe.longest()).toBeLessThan(MAX_LOOP_DELAY_MS);
    } finally {
      probe.stop();
    }
  });

  it('close() ends the waits at once with EffectError ledger-closed and leaves no timer behind', async () => {
    const { ledger } = await lockedLedger(0);
    const pending = Promise.resolve(ledger.claim('turn-1', 'k', { leaseMs: 60_000 })).then(
      () => undefined,
      (e: unknown) => e,
    );
    ledger.close();
    const error = await pending;
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-closed' });
    expect(error).toMatchObject({ retryable: true, operation: 'claim' });
  });

  it('a claim whose signal is aborted stops waiting at once, claims nothing and leaves no timer behind', async () => {
    const { ledger } = await lockedLedger(HOLD_MS);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const controller = new AbortController();
    const pending = Promise.resolve(
      ledger.claim('turn-1', 'k', { leaseMs: 60_000, signal: controller.signal }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    const reason = new Error('turn unsubscribed');
    controller.abort(reason);
    expect(await pending).toBe(reason);
    expect(timers()).toBeLessThanOrEqual(before);
    // The lock is released later: the abandoned claim never lands.
    await stopFixtures();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ledger.get('turn-1', 'k')).toBeUndefined();
  });

  it('executeTools unsubscribed while its claim waits for the lock: the claim never lands', async () => {
    const { ledger } = await lockedLedger(300);
    let runs = 0;
    const subscription = from([call('c1', 'issue_refund', { order_id: 'ORD-1' }), finish('tool-calls')])
      .pipe(
        cleanTurn({ turnId: 'turn-9' }),
        executeTools({ issue_refund: () => ({ refund_id: `re_${++runs}` }) }, { turnId: 'turn-9', ledger }),
      )
      .subscribe();
    await new Promise((resolve) => setTimeout(resolve, 50));
    subscription.unsubscribe();
    // Well after the holder let go: a wait that outlived the turn would have claimed the key by now.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(runs).toBe(0);
    const key = effectKey('turn-9', { name: 'issue_refund', args: { order_id: 'ORD-1' } });
    expect(ledger.get('turn-9', key)).toBeUndefined();
  });

  it('a database passed in keeps its own busy timeout for its other statements', async () => {
    const Database = (await import('better-sqlite3')).default;
    const file = join(dir, `effects-${++files}.db`);
    const db = new Database(file, { timeout: 1234 });
    db.pragma('journal_mode = WAL');
    const ledger = new SqliteEffectLedger({ database: db });
    expect((await ledger.claim('turn-1', 'k', { leaseMs: 1000 })).status).toBe('claimed');
    expect(db.pragma('busy_timeout', { simple: true })).toBe(1234);
    ledger.close();
    db.close();
  });
});
