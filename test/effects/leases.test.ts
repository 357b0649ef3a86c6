// Leases while a handler runs: executeTools renews the claim of a running handler (ledger.renew), so that a handler
// slower than its lease is not taken over and run a second time; a lost lease aborts the handler's signal and is
// reported (`leaseLost: true`), a fenced-off completion too; `handlerTimeoutMs` bounds a handler; a claim taken
// over from an expired holder (`reclaimed`) is in doubt, run again (default) or reported (`inDoubt: 'report'`).
// Run against a small in-test ledger with `renew`, the Redis ledger and the PostgreSQL ledger (real servers).

import { UsageError } from 'cleanturn';
import {
  type ClaimResult,
  EffectError,
  type EffectLedger,
  type EffectRecord,
  executeTools,
  MemoryEffectLedger,
  type ToolHandlers,
  type ToolResultEvent,
} from 'cleanturn/effects';
import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { call, helpDesk, keyed } from 'cleanturn/testing';
import { firstValueFrom, of } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { leaseLostError } from '../../src/effects/errors.js';
import type { ExecuteToolsOptions } from '../../src/effects/executeTools.js';
import { decodeError, decodeResult, encodeResult } from '../../src/effects/json.js';
import type { ClaimOptions, SerializedError } from '../../src/effects/types.js';
import { type PostgresServer, postgresTests, startPostgresServer } from './postgresServer.js';
import { type RedisServer, redisTests, startRedisServer } from './redisServer.js';

const turnId = 'turn-leases';
let calls = 0;
/** A refund call with a key of its own, so that tests sharing a server never meet. */
const freshRefund = () =>
  keyed(turnId, 1, call(`c${++calls}`, 'issue_refund', { ...helpDesk.refundArgs, n: calls }));

/** Waits for `condition`, asking every 10 ms; fails after `deadlineMs`. */
async function until(condition: () => boolean | Promise<boolean>, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`condition not met within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves when `signal` aborts, or after `fallbackMs` (so that code that never aborts fails, not hangs). */
function aborted(signal: AbortSignal, fallbackMs = 5_000): Promise<'aborted' | 'not aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve('aborted');
    const timer = setTimeout(() => resolve('not aborted'), fallbackMs);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve('aborted');
    });
  });
}

/**
 * A minimal in-memory ledger with `renew`, as the contract describes it, with a way for a test to play another
 * holder that takes the key over.
 */
class LeasingLedger implements EffectLedger {
  readonly records = new Map<
    string,
    { status: 'claimed' | 'completed' | 'failed'; token: string; until: number; payload?: string }
  >();
  renewals = 0;

  claim(scope: string, key: string, { leaseMs }: ClaimOptions): ClaimResult {
    const id = `${scope}\u0000${key}`;
    const record = this.records.get(id);
    const now = Date.now();
    if (record?.status === 'completed') return { status: 'completed', result: decodeResult(record.payload) };
    if (record?.status === 'failed')
      return { status: 'failed', error: decodeError(record.payload as string) };
    if (record !== undefined && record.until > now) return { status: 'in-progress', until: record.until };
    const token = globalThis.crypto.randomUUID();
    this.records.set(id, { status: 'claimed', token, until: now + leaseMs });
    return { status: 'claimed', token, reclaimed: record !== undefined };
  }

  complete(scope: string, key: string, token: string, result: unknown): void {
    this.#settle(scope, key, token, 'completed', encodeResult(result));
  }

  fail(scope: string, key: string, token: string, error: SerializedError): void {
    this.#settle(scope, key, token, 'failed', JSON.stringify(error));
  }

  release(scope: string, key: string, token: string): void {
    const record = this.records.get(`${scope}\u0000${key}`);
    if (record === undefined) return;
    if (record.status !== 'claimed' || record.token !== token) throw leaseLostError(scope, key);
    this.records.delete(`${scope}\u0000${key}`);
  }

  get(scope: string, key: string): EffectRecord | undefined {
    const record = this.records.get(`${scope}\u0000${key}`);
    if (record === undefined) return undefined;
    const expiresAt = Number.MAX_SAFE_INTEGER;
    if (record.status === 'claimed')
      return { status: 'claimed', token: record.token, leaseUntil: record.until, expiresAt };
    if (record.status === 'completed')
      return { status: 'completed', token: record.token, result: decodeResult(record.payload), expiresAt };
    return { status: 'failed', token: record.token, error: decodeError(record.payload as string), expiresAt };
  }

  renew(scope: string, key: string, token: string, leaseMs: number): boolean {
    this.renewals++;
    const record = this.records.get(`${scope}\u0000${key}`);
    if (record === undefined || record.status !== 'claimed' || record.token !== token) return false;
    record.until = Date.now() + leaseMs;
    return true;
  }

  /** Another holder takes the key over (as after a stalled renewal): the running holder's token is fenced off. */
  takeOver(scope: string, key: string): string {
    const token = globalThis.crypto.randomUUID();
    this.records.set(`${scope}\u0000${key}`, { status: 'claimed', token, until: Date.now() + 60_000 });
    return token;
  }

  #settle(scope: string, key: string, token: string, status: 'completed' | 'failed', payload?: string) {
    const id = `${scope}\u0000${key}`;
    const record = this.records.get(id);
    if (record !== undefined && record.token !== token) throw leaseLostError(scope, key);
    this.records.set(id, { status, token, until: 0, ...(payload === undefined ? {} : { payload }) });
  }
}

/** The same ledger behind promises and without `renew`: a user's own ledger written before `renew` existed. */
function withoutRenew(inner: EffectLedger): EffectLedger {
  return {
    claim: async (...args) => inner.claim(...args),
    complete: async (...args) => inner.complete(...args),
    fail: async (...args) => inner.fail(...args),
    release: async (...args) => inner.release(...args),
    get: async (...args) => inner.get(...args),
  };
}

/** Runs one call through executeTools and resolves with its result. */
function runOne(
  refund: ReturnType<typeof freshRefund>,
  handlers: ToolHandlers,
  options: ExecuteToolsOptions,
): Promise<ToolResultEvent> {
  return firstValueFrom(of(refund).pipe(executeTools(handlers, options)));
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

const ledgers: [string, () => EffectLedger][] = [
  ['test ledger', () => new LeasingLedger()],
  [
    'redis',
    () => {
      if (redis === undefined) throw new Error('no redis');
      return new RedisEffectLedger({ client: redis.client() });
    },
  ],
  [
    'postgres',
    () => {
      if (postgres === undefined) throw new Error('no postgres');
      return new PostgresEffectLedger({ pool: postgres.pool({ max: 3 }), table: 'lease_tests' });
    },
  ],
];
// Once the in-memory ledger renews (it is being given `renew`), it runs the race too.
if (typeof (MemoryEffectLedger.prototype as Partial<EffectLedger>).renew === 'function') {
  ledgers.push(['memory', () => new MemoryEffectLedger()]);
}

describe.each(ledgers)('%s: renew', { timeout: 30_000 }, (kind, make) => {
  const skip = (kind === 'postgres' && postgresTests.skip) || (kind === 'redis' && redisTests.skip);

  it.skipIf(skip)('extends the holder’s lease, and only the holder’s', async () => {
    const ledger = make();
    const { effectKey } = freshRefund();
    const claim = await ledger.claim(turnId, effectKey, { leaseMs: 1_000 });
    if (claim.status !== 'claimed') throw new Error('expected a claim');
    const before = await ledger.get(turnId, effectKey);
    if (before?.status !== 'claimed') throw new Error('expected a claimed record');
    expect(await ledger.renew?.(turnId, effectKey, 'not-the-token', 60_000)).toBe(false);
    expect(await ledger.renew?.(turnId, effectKey, claim.token, 60_000)).toBe(true);
    const after = await ledger.get(turnId, effectKey);
    if (after?.status !== 'claimed') throw new Error('expected a claimed record');
    // 59 s more at least (clocks of the two answers may differ by a few ms).
    expect(after.leaseUntil - before.leaseUntil).toBeGreaterThan(55_000);
    expect(after.token).toBe(claim.token);
    // A renewed lease is live: another claim answers in-progress until its new end.
    expect(await ledger.claim(turnId, effectKey, { leaseMs: 1_000 })).toMatchObject({
      status: 'in-progress',
    });
    await ledger.complete(turnId, effectKey, claim.token, { ok: true });
    // A settled record is no claim to renew.
    expect(await ledger.renew?.(turnId, effectKey, claim.token, 60_000)).toBe(false);
    // Nor is an absent one.
    expect(await ledger.renew?.(turnId, freshRefund().effectKey, claim.token, 60_000)).toBe(false);
  });

  it.skipIf(skip)('fences off a holder whose expired claim was taken over', async () => {
    const ledger = make();
    const { effectKey } = freshRefund();
    const first = await ledger.claim(turnId, effectKey, { leaseMs: 50 });
    if (first.status !== 'claimed') throw new Error('expected a claim');
    let second: ClaimResult | undefined;
    await until(async () => {
      second = await ledger.claim(turnId, effectKey, { leaseMs: 60_000 });
      return second.status === 'claimed';
    });
    expect(second).toMatchObject({ status: 'claimed', reclaimed: true });
    expect(await ledger.renew?.(turnId, effectKey, first.token, 60_000)).toBe(false);
  });

  it.skipIf(skip)(
    'a handler slower than its lease, raced by a second executor on the same ledger, runs once',
    async () => {
      const ledger = make();
      const refund = freshRefund();
      // Generous against a loaded machine: a renewal every 400 ms keeps a 1.2 s lease.
      const leaseMs = 1_200;
      const runs: string[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handler =
        (who: string): ToolHandlers['issue_refund'] =>
        async () => {
          runs.push(who);
          if (who === 'first') await gate;
          return { by: who };
        };
      const started = Date.now();
      const first = runOne(refund, { issue_refund: handler('first') }, { turnId, ledger, leaseMs });
      await until(() => runs.length === 1);
      // A second executor (another process, another subscription): it waits for the first holder.
      const second = runOne(
        refund,
        { issue_refund: handler('second') },
        { turnId, ledger, leaseMs, pollMs: 20 },
      );
      // Well past the first claim's original lease: without renewal, the second executor has taken it over by now.
      await until(() => runs.length > 1 || Date.now() - started > 2.5 * leaseMs);
      expect(runs).toEqual(['first']);
      release();
      const [a, b] = await Promise.all([first, second]);
      expect(a).toMatchObject({ outcome: 'executed', result: { by: 'first' }, reclaimed: false });
      expect(a).not.toHaveProperty('leaseLost');
      expect(b).toMatchObject({ outcome: 'replayed', result: { by: 'first' } });
      expect(runs).toEqual(['first']);
    },
  );
});

describe('executeTools with leases (test ledger)', { timeout: 30_000 }, () => {
  it('a lost lease aborts the handler’s signal (reason: EffectError lease-lost) and is reported as lost', async () => {
    const ledger = new LeasingLedger();
    const refund = freshRefund();
    let signal: AbortSignal | undefined;
    const result = runOne(
      refund,
      {
        issue_refund: async (_args, context) => {
          signal = context.signal;
          await aborted(context.signal);
          context.signal.throwIfAborted();
          return { by: 'first' };
        },
      },
      { turnId, ledger, leaseMs: 300 },
    );
    await until(() => signal !== undefined);
    const other = ledger.takeOver(turnId, refund.effectKey);
    const event = await result;
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(EffectError);
    expect(signal?.reason).toMatchObject({ code: 'lease-lost' });
    expect(event).toMatchObject({
      outcome: 'failed',
      leaseLost: true,
      replayed: false,
      error: { name: 'EffectError', code: 'lease-lost', retryable: false },
    });
    // The other holder's claim stands: nothing was written over it.
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'claimed', token: other });
  });

  it('a result whose completion was fenced off is reported with leaseLost, not as a plain executed', async () => {
    const ledger = new LeasingLedger();
    const refund = freshRefund();
    let started = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const result = runOne(
      refund,
      {
        // A handler that does not listen to its signal: it finishes after the lease was lost.
        issue_refund: async () => {
          started = true;
          await gate;
          return { by: 'first' };
        },
      },
      { turnId, ledger, leaseMs: 300 },
    );
    await until(() => started);
    const other = ledger.takeOver(turnId, refund.effectKey);
    ledger.complete(turnId, refund.effectKey, other, { by: 'other' });
    release();
    expect(await result).toMatchObject({ outcome: 'executed', result: { by: 'first' }, leaseLost: true });
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({
      status: 'completed',
      result: { by: 'other' },
    });
  });

  it('a ledger without renew: no heartbeat, and a fenced-off completion is reported with leaseLost', async () => {
    const ledger = withoutRenew(new MemoryEffectLedger());
    const refund = freshRefund();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = runOne(
      refund,
      {
        issue_refund: async () => {
          await gate;
          return { by: 'slow' };
        },
      },
      { turnId, ledger, leaseMs: 50 },
    );
    // Another executor takes the key over once the slow holder's lease has run out.
    const fast = await runOne(
      refund,
      { issue_refund: () => ({ by: 'fast' }) },
      { turnId, ledger, pollMs: 10 },
    );
    expect(fast).toMatchObject({ outcome: 'executed', reclaimed: true, result: { by: 'fast' } });
    expect(fast).not.toHaveProperty('leaseLost');
    release();
    expect(await slow).toMatchObject({ outcome: 'executed', result: { by: 'slow' }, leaseLost: true });
  });

  it('renewals that keep failing past the lease count as a lost lease', async () => {
    const inner = new LeasingLedger();
    let failing = false;
    const ledger: EffectLedger = {
      claim: (...a) => inner.claim(...a),
      complete: (...a) => inner.complete(...a),
      fail: (...a) => inner.fail(...a),
      release: (...a) => inner.release(...a),
      get: (...a) => inner.get(...a),
      renew: async (scope, key, token, leaseMs) => {
        if (failing) throw new Error('ECONNRESET');
        return inner.renew(scope, key, token, leaseMs);
      },
    };
    const refund = freshRefund();
    let signal: AbortSignal | undefined;
    const result = runOne(
      refund,
      {
        issue_refund: async (_args, context) => {
          signal = context.signal;
          await aborted(context.signal);
          context.signal.throwIfAborted();
          return 1;
        },
      },
      { turnId, ledger, leaseMs: 300 },
    );
    await until(() => signal !== undefined && inner.renewals > 0);
    failing = true;
    expect(await result).toMatchObject({
      outcome: 'failed',
      leaseLost: true,
      error: { name: 'EffectError', code: 'lease-lost' },
    });
    expect(signal?.reason).toBeInstanceOf(EffectError);
    expect(signal?.reason).toMatchObject({ code: 'lease-lost' });
  });

  it('handlerTimeoutMs aborts the signal and reports EffectError handler-timeout; the claim is left to expire', async () => {
    const ledger = new LeasingLedger();
    const refund = freshRefund();
    let signal: AbortSignal | undefined;
    const event = await runOne(
      refund,
      {
        issue_refund: async (_args, context) => {
          signal = context.signal;
          await aborted(context.signal);
          return { late: true };
        },
      },
      { turnId, ledger, leaseMs: 10_000, handlerTimeoutMs: 200 },
    );
    expect(event).toMatchObject({
      outcome: 'failed',
      replayed: false,
      error: { name: 'EffectError', code: 'handler-timeout', retryable: true },
    });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(EffectError);
    expect(signal?.reason).toMatchObject({ code: 'handler-timeout' });
    // The handler may still be running: its claim is neither released nor recorded.
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'claimed' });
  });

  it('a handler that settles in time is not timed out', async () => {
    const event = await runOne(
      freshRefund(),
      { issue_refund: async () => ({ ok: true }) },
      { turnId, ledger: new LeasingLedger(), handlerTimeoutMs: 5_000 },
    );
    expect(event).toMatchObject({ outcome: 'executed', result: { ok: true } });
  });

  it('refuses a handlerTimeoutMs that is not a positive duration, and an unknown inDoubt', () => {
    expect(() => executeTools({}, { turnId, handlerTimeoutMs: 0 })).toThrow(UsageError);
    expect(() => executeTools({}, { turnId, inDoubt: 'maybe' as 'run' })).toThrow(UsageError);
  });

  it('a reclaimed claim is run again by default, in doubt: the handler and the result say reclaimed', async () => {
    const ledger = new LeasingLedger();
    const refund = freshRefund();
    ledger.claim(turnId, refund.effectKey, { leaseMs: 30 }); // a holder that crashed
    const reclaimed: boolean[] = [];
    const event = await runOne(
      refund,
      {
        issue_refund: (_args, context) => {
          reclaimed.push(context.reclaimed);
          return { ok: true };
        },
      },
      { turnId, ledger, pollMs: 10 },
    );
    expect(reclaimed).toEqual([true]);
    expect(event).toMatchObject({ outcome: 'executed', reclaimed: true, result: { ok: true } });
  });

  it("inDoubt: 'report' runs nothing for a reclaimed claim, records it as EffectError in-doubt, replays that", async () => {
    const ledger = new LeasingLedger();
    const refund = freshRefund();
    ledger.claim(turnId, refund.effectKey, { leaseMs: 30 }); // a holder that crashed
    let runs = 0;
    const handlers = { issue_refund: () => ++runs };
    const event = await runOne(refund, handlers, { turnId, ledger, pollMs: 10, inDoubt: 'report' });
    expect(event).toMatchObject({
      outcome: 'failed',
      replayed: false,
      error: { name: 'EffectError', code: 'in-doubt', retryable: false },
    });
    expect(runs).toBe(0);
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({
      status: 'failed',
      error: { name: 'EffectError', code: 'in-doubt' },
    });
    // A later run (a retry, a restart) replays the report and still runs nothing.
    const again = await runOne(refund, handlers, { turnId, ledger, inDoubt: 'report' });
    expect(again).toMatchObject({
      outcome: 'failed',
      replayed: true,
      error: { name: 'EffectError', code: 'in-doubt' },
    });
    expect(runs).toBe(0);
  });

  it('no timer outlives the turn: after completion, after a timeout, and after unsubscribing', async () => {
    vi.useFakeTimers();
    try {
      const ledger = new LeasingLedger();
      // Completion after several renewals, with a handler timeout armed: a heartbeat and a deadline meanwhile.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const results: ToolResultEvent[] = [];
      of(freshRefund())
        .pipe(
          executeTools(
            { issue_refund: () => gate.then(() => 1) },
            { turnId, ledger, leaseMs: 60, handlerTimeoutMs: 60_000 },
          ),
        )
        .subscribe((r) => results.push(r));
      await vi.advanceTimersByTimeAsync(200);
      expect(ledger.renewals).toBeGreaterThanOrEqual(3);
      expect(vi.getTimerCount()).toBe(2);
      release();
      await vi.waitFor(() => expect(results).toHaveLength(1));
      expect(results[0]).toMatchObject({ outcome: 'executed' });
      expect(vi.getTimerCount()).toBe(0);

      // A handler timeout.
      results.length = 0;
      of(freshRefund())
        .pipe(
          executeTools(
            { issue_refund: (_args, context) => aborted(context.signal) },
            { turnId, ledger, leaseMs: 60, handlerTimeoutMs: 100 },
          ),
        )
        .subscribe((r) => results.push(r));
      await vi.advanceTimersByTimeAsync(150);
      expect(results).toMatchObject([
        { outcome: 'failed', error: { name: 'EffectError', code: 'handler-timeout' } },
      ]);
      expect(vi.getTimerCount()).toBe(0);

      // Unsubscribing while the handler runs.
      let signal: AbortSignal | undefined;
      const renewals = ledger.renewals;
      const subscription = of(freshRefund())
        .pipe(
          executeTools(
            {
              issue_refund: (_args, context) => {
                signal = context.signal;
                return new Promise(() => {});
              },
            },
            { turnId, ledger, leaseMs: 60, handlerTimeoutMs: 60_000 },
          ),
        )
        .subscribe();
      await vi.advanceTimersByTimeAsync(100);
      expect(ledger.renewals).toBeGreaterThan(renewals);
      subscription.unsubscribe();
      expect(signal?.aborted).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
