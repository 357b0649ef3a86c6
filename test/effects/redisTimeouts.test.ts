// The Redis ledger when Redis stalls mid-write (SIGSTOP, then SIGCONT): the ledger stops waiting after
// commandTimeoutMs, but the command is still in the server's socket and runs once the server goes on. Every
// write is resolved: asked again under the caller's token, and a claim nobody will run is withdrawn, so that no
// claim is left standing without a runner (which would hold the effect until its lease expires).

import { EffectError } from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { describe, expect, it } from 'vitest';
import { delay, redisFixtures, rejection, runTurn, turnId } from './redisLedgerKit.js';
import { redisTests } from './redisServer.js';

const { server, patientClient } = redisFixtures();

/** A server and a ledger on it that has already checked the server (so the next command is the write itself). */
async function stalledSetup(commandTimeoutMs: number) {
  const redis = await server();
  const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs });
  await ledger.get(turnId, 'warm-up');
  return { redis, ledger };
}

describe.skipIf(redisTests.skip)('RedisEffectLedger: a write that outlives its timeout', () => {
  it('a claim still unanswered after two timeouts fails with EffectError ledger-timeout and is withdrawn once Redis goes on', async () => {
    const { redis, ledger } = await stalledSetup(500);
    redis.pause();
    const resumed = delay(3000).then(() => redis.resume());
    const error = await rejection(ledger.claim(turnId, 'k', { leaseMs: 60_000 }));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-timeout' });
    expect(error).toMatchObject({ operation: 'claim', timeoutMs: 500, retryable: true });
    await resumed;
    // The stalled claim has run by now, and so has its withdrawal: the key is free, not held for 60 s.
    expect(await ledger.get(turnId, 'k')).toBeUndefined();
    expect(await ledger.claim(turnId, 'k', { leaseMs: 60_000 })).toMatchObject({
      status: 'claimed',
      reclaimed: false,
    });
  }, 30_000);

  it('a take-over of an expired claim that gets no answer is withdrawn with its lease ended: the effect stays in doubt', async () => {
    const { redis, ledger } = await stalledSetup(500);
    const crashed = await ledger.claim(turnId, 'k', { leaseMs: 100 });
    expect(crashed.status).toBe('claimed');
    await delay(300); // its holder crashed: the lease has expired
    redis.pause();
    const resumed = delay(3000).then(() => redis.resume());
    const unanswered = await rejection(ledger.claim(turnId, 'k', { leaseMs: 60_000 }));
    expect(unanswered).toBeInstanceOf(EffectError);
    expect(unanswered).toMatchObject({ code: 'ledger-timeout' });
    await resumed;
    // Not held for 60 s by the take-over nobody runs, and not a first claim either: the crashed holder's effect
    // may have happened.
    expect(await ledger.claim(turnId, 'k', { leaseMs: 60_000 })).toMatchObject({
      status: 'claimed',
      reclaimed: true,
    });
  }, 30_000);

  it('a claim answered after its timeout is read back under its token: the turn runs the refund once', async () => {
    const { redis, ledger } = await stalledSetup(2000);
    let runs = 0;
    redis.pause();
    const resumed = delay(3000).then(() => redis.resume());
    const { results, error } = await runTurn(ledger, () => ({ refund_id: `re_${++runs}` }));
    await resumed;
    expect(error).toBeUndefined();
    expect(results?.map((r) => [r.outcome, 'reclaimed' in r ? r.reclaimed : undefined])).toEqual([
      ['executed', false],
    ]);
    expect(runs).toBe(1);
  }, 30_000);

  it('a completion answered after its timeout is confirmed: the turn succeeds and later runs replay it', async () => {
    const { redis, ledger } = await stalledSetup(2000);
    let runs = 0;
    let resumed: Promise<void> = Promise.resolve();
    const first = await runTurn(ledger, () => {
      redis.pause();
      resumed = delay(3000).then(() => redis.resume());
      return { refund_id: `re_${++runs}` };
    });
    await resumed;
    expect(first.error).toBeUndefined();
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);
    const second = await runTurn(ledger, () => ({ refund_id: `re_${++runs}` }));
    expect(second.results?.map((r) => r.outcome)).toEqual(['replayed']);
    expect(runs).toBe(1);
  }, 30_000);

  it('a release answered after its timeout is confirmed: the failure is reported and the next run tries again at once', async () => {
    const { redis, ledger } = await stalledSetup(2000);
    let runs = 0;
    let resumed: Promise<void> = Promise.resolve();
    const first = await runTurn(ledger, () => {
      runs++;
      redis.pause();
      resumed = delay(3000).then(() => redis.resume());
      throw Object.assign(new Error('payments API: 503'), { retryable: true });
    });
    await resumed;
    expect(first.error).toBeUndefined();
    expect(first.results?.map((r) => r.outcome)).toEqual(['failed']);
    // Not held by a claim nobody runs: the next run gets the key at once (not `in-progress` until the lease ends).
    const second = await runTurn(ledger, () => ({ refund_id: `re_${++runs}` }), { inProgress: 'report' });
    expect(second.results?.map((r) => r.outcome)).toEqual(['executed']);
    expect(runs).toBe(2);
  }, 30_000);

  it('a renewal answered after its timeout says whether the lease is still held', async () => {
    const { redis, ledger } = await stalledSetup(2000);
    const claim = await ledger.claim(turnId, 'k', { leaseMs: 60_000 });
    if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`);
    redis.pause();
    const resumed = delay(3000).then(() => redis.resume());
    expect(await ledger.renew(turnId, 'k', claim.token, 60_000)).toBe(true);
    await resumed;
  }, 30_000);

  it('a completion still unanswered after two timeouts fails with EffectError ledger-timeout, and lands once Redis goes on', async () => {
    const { redis, ledger } = await stalledSetup(500);
    const claim = await ledger.claim(turnId, 'k', { leaseMs: 60_000 });
    if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`);
    redis.pause();
    const resumed = delay(3000).then(() => redis.resume());
    const error = await rejection(ledger.complete(turnId, 'k', claim.token, { refund_id: 're_1' }));
    expect(error).toMatchObject({
      name: 'EffectError',
      code: 'ledger-timeout',
      operation: 'complete',
      retryable: true,
    });
    await resumed;
    // Recording what ran is never withdrawn: it lands, and a later claim replays it.
    expect(await ledger.claim(turnId, 'k', { leaseMs: 60_000 })).toEqual({
      status: 'completed',
      result: { refund_id: 're_1' },
    });
  }, 30_000);

  it('a claim whose caller gives up (signal aborted) while Redis stalls rejects at once and is withdrawn', async () => {
    const { redis, ledger } = await stalledSetup(20_000);
    const controller = new AbortController();
    redis.pause();
    const claim = ledger.claim(turnId, 'k', { leaseMs: 60_000, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('the turn was unsubscribed')), 200);
    setTimeout(() => redis.resume(), 1000);
    const error = await rejection(claim);
    expect((error as Error).message).toBe('the turn was unsubscribed');
    await delay(1000);
    expect(await ledger.claim(turnId, 'k', { leaseMs: 60_000 })).toMatchObject({
      status: 'claimed',
      reclaimed: false,
    });
  }, 30_000);
});
