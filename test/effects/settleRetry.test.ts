// A handler ran, and the ledger write that records its outcome (complete, fail) got no answer or was refused for a
// while: a Redis server stalled (SIGSTOP) across the completion, a SQLite file whose write lock a second process
// holds. Every write is safe to send twice under its claim token, so executeTools sends it again, after a growing
// pause, keeping the lease renewed, until it lands; it errors the stream only once the lease would end (or after
// its last attempt), and it never runs the handler a second time. Unsubscribing stops the retries and their timers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanTurn } from 'cleanturn';
import {
  EffectError,
  type EffectLedger,
  executeTools,
  MemoryEffectLedger,
  type ToolHandlers,
  type ToolResultEvent,
} from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { until } from './conformance.js';
import { type Child, startFixture, stopFixtures } from './processes.js';
import { delay, redisFixtures, refundTurn, runTurn, turnId } from './redisLedgerKit.js';
import { redisTests } from './redisServer.js';

const { server, patientClient } = redisFixtures();

/** What a ledger was asked, and how each write ended. */
interface Calls {
  complete: ('ok' | unknown)[];
  fail: ('ok' | unknown)[];
  renew: number;
}

/** The same ledger, counting its calls and how the writes ended (an observer: every answer is the ledger's own). */
function observed(inner: SqliteEffectLedger): { ledger: EffectLedger; calls: Calls } {
  const calls: Calls = { complete: [], fail: [], renew: 0 };
  const watch = (list: unknown[], answer: unknown) => {
    if (!(answer instanceof Promise)) {
      list.push('ok');
      return answer;
    }
    return answer.then(
      () => {
        list.push('ok');
      },
      (error: unknown) => {
        list.push(error);
        throw error;
      },
    );
  };
  const ledger: EffectLedger = {
    claim: (...args) => inner.claim(...args),
    complete: (...args) => {
      try {
        return watch(calls.complete, inner.complete(...args)) as void | Promise<void>;
      } catch (error) {
        calls.complete.push(error);
        throw error;
      }
    },
    fail: (...args) => {
      try {
        return watch(calls.fail, inner.fail(...args)) as void | Promise<void>;
      } catch (error) {
        calls.fail.push(error);
        throw error;
      }
    },
    release: (...args) => inner.release(...args),
    get: (...args) => inner.get(...args),
    renew: (...args) => {
      calls.renew++;
      return inner.renew(...args);
    },
  };
  return { ledger, calls };
}

/** How many timers are pending in this process. */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe.skipIf(redisTests.skip)('executeTools: a completion that Redis does not answer for a while', () => {
  it('is sent again until Redis answers: the turn succeeds, the handler ran once, a rerun replays it', async () => {
    const redis = await server();
    // 300 ms per try, asked twice: one write takes up to 600 ms; a beat (1 000 ms) is longer than that.
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs: 300 });
    await ledger.get(turnId, 'warm-up');
    let runs = 0;
    let resumed: Promise<void> = Promise.resolve();
    const first = await runTurn(
      ledger,
      () => {
        runs++;
        // Stalled across the completion: the first completion (both its tries) gets no answer.
        redis.pause();
        resumed = delay(1_500).then(() => redis.resume());
        return { refund_id: 're_1' };
      },
      { leaseMs: 3_000 },
    );
    await resumed;
    expect(first.error).toBeUndefined();
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);
    const second = await runTurn(ledger, () => ({ refund_id: `re_${++runs}` }), { leaseMs: 3_000 });
    expect(second.results?.map((r) => [r.outcome, 'result' in r ? r.result : undefined])).toEqual([
      ['replayed', { refund_id: 're_1' }],
    ]);
    expect(runs).toBe(1);
  }, 30_000);
});

describe('executeTools: a completion that SQLite refuses while another process holds the write lock', () => {
  let dir: string;
  let files = 0;
  const ledgers: SqliteEffectLedger[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-settle-retry-'));
  });
  afterEach(async () => {
    await stopFixtures();
    for (const l of ledgers.splice(0)) l.close();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A ledger on a new file that gives up on the lock after 100 ms, and a way to lock the file from a second process. */
  function lockable() {
    const file = join(dir, `effects-${++files}.db`);
    const sqlite = new SqliteEffectLedger({ database: file, busyTimeoutMs: 100 });
    ledgers.push(sqlite);
    let holder: Child | undefined;
    return {
      sqlite,
      ...observed(sqlite),
      /** Locks the file (BEGIN EXCLUSIVE in another process) until `unlock()`. */
      async lock() {
        holder = startFixture('sqliteHolder.ts', [file, '0']);
        await holder.line((line) => line === 'HELD');
      },
      async unlock() {
        holder?.process.stdin?.write('go\n');
        await holder?.line((line) => line === 'RELEASED');
      },
    };
  }

  /** The refund turn through executeTools over `ledger`. */
  const turn = (ledger: EffectLedger, handler: ToolHandlers[string], leaseMs = 60_000) =>
    from(refundTurn).pipe(
      cleanTurn({ turnId }),
      executeTools({ issue_refund: handler }, { turnId, ledger, leaseMs }),
    );

  it('is sent again once the lock is released: the turn succeeds and the handler ran once', async () => {
    const { sqlite, ledger, calls, lock, unlock } = lockable();
    let runs = 0;
    const done = lastValueFrom(
      turn(ledger, async () => {
        runs++;
        await lock();
        return { refund_id: 're_1' };
      }).pipe(toArray()),
    );
    // The first completion gave up on the lock (EffectError ledger-busy, retryable); then the other process lets go.
    await until(() => calls.complete.length >= 1);
    expect(calls.complete[0]).toBeInstanceOf(EffectError);
    expect(calls.complete[0]).toMatchObject({ code: 'ledger-busy' });
    await unlock();
    const results: ToolResultEvent[] = await done;
    expect(results.map((r) => r.outcome)).toEqual(['executed']);
    expect(runs).toBe(1);
    expect(calls.complete.at(-1)).toBe('ok');
    const key = results[0]?.effectKey ?? '';
    expect(sqlite.get(turnId, key)).toMatchObject({ status: 'completed', result: { refund_id: 're_1' } });
  }, 30_000);

  it('a failure to record is sent again the same way', async () => {
    const { sqlite, ledger, calls, lock, unlock } = lockable();
    let runs = 0;
    const done = lastValueFrom(
      turn(ledger, async () => {
        runs++;
        await lock();
        throw Object.assign(new Error('card declined'), { retryable: false });
      }).pipe(toArray()),
    );
    await until(() => calls.fail.length >= 1);
    expect(calls.fail[0]).toBeInstanceOf(EffectError);
    expect(calls.fail[0]).toMatchObject({ code: 'ledger-busy' });
    await unlock();
    const results = await done;
    expect(results.map((r) => r.outcome)).toEqual(['failed']);
    expect(runs).toBe(1);
    expect(sqlite.get(turnId, results[0]?.effectKey ?? '')).toMatchObject({
      status: 'failed',
      error: { message: 'card declined' },
    });
  }, 30_000);

  it('a lock never released: the stream errors with EffectError ledger-busy after a few attempts within the lease, the handler ran once', async () => {
    const { ledger, calls, lock } = lockable();
    let runs = 0;
    const error = await lastValueFrom(
      turn(
        ledger,
        async () => {
          runs++;
          await lock();
          return { refund_id: 're_1' };
        },
        3_000,
      ),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-busy' });
    expect(error).toMatchObject({ operation: 'complete', retryable: true });
    expect(runs).toBe(1);
    expect(calls.complete.length).toBeGreaterThan(1);
    expect(calls.complete.every((c) => c instanceof EffectError && c.code === 'ledger-busy')).toBe(true);
  }, 30_000);

  it('unsubscribed while it waits to send the completion again: no further write, and no timer left', async () => {
    const { sqlite, ledger, calls, lock, unlock } = lockable();
    const before = timers();
    let runs = 0;
    let key = '';
    let failed: unknown;
    const subscription = turn(ledger, async (_args: unknown, context: { effectKey: string }) => {
      runs++;
      key = context.effectKey;
      await lock();
      return { refund_id: 're_1' };
    }).subscribe({ error: (e: unknown) => (failed = e) });
    await until(() => calls.complete.length >= 1);
    // The executor now waits before its next attempt.
    await new Promise((resolve) => setImmediate(resolve));
    expect(failed).toBeUndefined();
    subscription.unsubscribe();
    expect(timers()).toBeLessThanOrEqual(before);
    const attempts = calls.complete.length;
    const renewals = calls.renew;
    await unlock();
    // Well past every pause the retries could have taken: an attempt that outlived the turn would show by now.
    await delay(1_500);
    expect(calls.complete.length).toBe(attempts);
    expect(calls.renew).toBe(renewals);
    expect(runs).toBe(1);
    // Nothing written after the turn was gone: the claim stands and expires after its lease, as a crashed holder's.
    expect(sqlite.get(turnId, key)).toMatchObject({ status: 'claimed' });
  }, 30_000);
});

describe('what the retries rely on: complete, fail and release are safe to send twice under one token', () => {
  const stores: [string, () => Promise<EffectLedger>][] = [
    ['MemoryEffectLedger', async () => new MemoryEffectLedger()],
    ['SqliteEffectLedger', async () => new SqliteEffectLedger({ database: ':memory:' })],
  ];
  if (!redisTests.skip) {
    stores.push([
      'RedisEffectLedger',
      async () => new RedisEffectLedger({ client: patientClient((await server()).port) }),
    ]);
  }
  for (const [name, make] of stores) {
    it(`${name}: the second answers as the first and leaves the same record`, async () => {
      const ledger = await make();
      const claimed = async (key: string) => {
        const claim = await ledger.claim(turnId, key, { leaseMs: 60_000 });
        if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`);
        return claim.token;
      };
      const a = await claimed('a');
      await ledger.complete(turnId, 'a', a, { refund_id: 're_1' });
      await ledger.complete(turnId, 'a', a, { refund_id: 're_1' });
      expect(await ledger.get(turnId, 'a')).toMatchObject({
        status: 'completed',
        token: a,
        result: { refund_id: 're_1' },
      });
      const b = await claimed('b');
      const declined = { name: 'CardDeclinedError', message: 'card declined', retryable: false };
      await ledger.fail(turnId, 'b', b, declined);
      await ledger.fail(turnId, 'b', b, declined);
      expect(await ledger.get(turnId, 'b')).toMatchObject({ status: 'failed', token: b, error: declined });
      const c = await claimed('c');
      await ledger.release(turnId, 'c', c);
      await ledger.release(turnId, 'c', c);
      expect(await ledger.get(turnId, 'c')).toBeUndefined();
    }, 20_000);
  }
});
