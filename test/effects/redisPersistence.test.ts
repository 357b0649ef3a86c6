// The Redis ledger on a server that changes under it: restarted without its data, replaced by one without AOF,
// switched to an evicting policy while a cache fills memory, and full under noeviction. A ledger that checked
// the server once, at first use, would run the refund a second time in each; real redis-servers, wiped,
// replaced and reconfigured with CONFIG SET.

import { EffectError } from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { delay, recordKey, redisFixtures, rejection, runTurn, turnId } from './redisLedgerKit.js';
import { redisTests } from './redisServer.js';

const { server, patientClient } = redisFixtures();

/** A refund handler that counts its runs. */
function refunds(): { handler: () => { refund_id: string }; runs: () => number } {
  let runs = 0;
  return { handler: () => ({ refund_id: `re_${++runs}` }), runs: () => runs };
}

/** The `used_memory` of the server, in bytes. */
async function usedMemory(admin: Redis): Promise<number> {
  const match = /\nused_memory:(\d+)/.exec(await admin.info('memory'));
  if (match?.[1] === undefined) throw new Error('INFO memory without used_memory');
  return Number(match[1]);
}

describe.skipIf(redisTests.skip)('RedisEffectLedger: the server forgets after the first check', () => {
  it('restarted without its data (AOF on, the volume lost): the next claim is refused with EffectError ledger-data-lost, not run again', async () => {
    const redis = await server({ appendfsync: 'always' });
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port) });
    const refund = refunds();
    const first = await runTurn(ledger, refund.handler);
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);

    await redis.restart({ wipe: true });
    const second = await runTurn(ledger, refund.handler);
    expect(refund.runs()).toBe(1);
    expect(second.error).toBeInstanceOf(EffectError);
    expect(second.error).toMatchObject({ code: 'ledger-data-lost' });
    expect(second.error).toMatchObject({ retryable: false, markerKey: 'cleanturn:effect:marker' });
    expect((second.error as Error).message).toMatch(/cleanturn:effect:marker/);

    // It stays refused: the forgotten claims do not come back by asking again.
    const again = await rejection(ledger.claim(turnId, 'other', { leaseMs: 1000 }));
    expect(again).toBeInstanceOf(EffectError);
    expect(again).toMatchObject({ code: 'ledger-data-lost' });
    expect(await redis.client().exists(recordKey(turnId, 'other'))).toBe(0);

    // Whoever has checked the affected effects decides by making a new ledger, which takes the server as it is.
    const fresh = new RedisEffectLedger({ client: patientClient(redis.port) });
    expect((await fresh.claim(turnId, 'other', { leaseMs: 1000 })).status).toBe('claimed');
  }, 30_000);

  it('a claim sent just before the server died is sent again by the client to the empty server: refused by the script itself', async () => {
    const redis = await server();
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs: 20_000 });
    const refund = refunds();
    const first = await runTurn(ledger, refund.handler);
    const key = first.results?.[0]?.effectKey ?? '';
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);

    // The claim reaches the socket of a stalled server; the server dies and comes back empty; ioredis sends the
    // unanswered command again on the new connection before anything else.
    redis.pause();
    const claim = ledger.claim(turnId, key, { leaseMs: 60_000 });
    await delay(100);
    await redis.restart({ wipe: true });
    const error = await rejection(claim);
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-data-lost' });
    expect(await redis.client().exists(recordKey(turnId, key))).toBe(0);
  }, 30_000);

  it('replaced at the same address by a server with appendonly no: refused at the reconnect, not used silently', async () => {
    const redis = await server();
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port) });
    const refund = refunds();
    expect((await runTurn(ledger, refund.handler)).results?.map((r) => r.outcome)).toEqual(['executed']);

    await redis.restart({ persistence: 'none' });
    const other = refunds();
    const second = await runTurn(ledger, other.handler, { turnId: 'turn-43' });
    expect(other.runs()).toBe(0);
    expect(second.error).toBeInstanceOf(EffectError);
    expect(second.error).toMatchObject({ code: 'ledger-persistence' });
    expect((second.error as EffectError).problems?.join('\n')).toMatch(/appendonly is no/);
    expect(await redis.client().dbsize()).toBe(0);
  }, 30_000);

  it('volatile-lru switched on after the check while a cache fills memory: the evicted refund is refused, not run again', async () => {
    const redis = await server({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction'] });
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port) });
    const refund = refunds();
    const first = await runTurn(ledger, refund.handler);
    const key = first.results?.[0]?.effectKey ?? '';
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);

    // Someone makes the server a cache too: an evicting policy, a memory limit, and keys with TTLs.
    const admin = redis.client();
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    await admin.config('SET', 'maxmemory', String((await usedMemory(admin)) + 1024 * 1024));
    const value = 'x'.repeat(10_000);
    for (let batch = 0; batch < 200 && (await admin.exists(recordKey(turnId, key))) === 1; batch++) {
      const fill = admin.pipeline();
      for (let i = 0; i < 100; i++) fill.set(`cache:${batch}:${i}`, value, 'EX', 3600);
      await fill.exec();
    }
    expect(await admin.exists(recordKey(turnId, key))).toBe(0); // evicted: the ledger cannot know it ran

    const second = await runTurn(ledger, refund.handler);
    expect(refund.runs()).toBe(1);
    expect(second.error).toBeInstanceOf(EffectError);
    expect(second.error).toMatchObject({ code: 'ledger-persistence' });
    expect((second.error as EffectError).problems?.join('\n')).toMatch(/maxmemory-policy volatile-lru/);
  }, 60_000);

  it('with CONFIG renamed (managed services), a policy switched later is still seen by the claim, through INFO', async () => {
    const redis = await server({
      args: ['--maxmemory', '64mb', '--rename-command', 'CONFIG', 'cleanturn-test-config'],
    });
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port) });
    expect((await ledger.claim(turnId, 'a', { leaseMs: 1000 })).status).toBe('claimed');
    await redis.client().call('cleanturn-test-config', 'SET', 'maxmemory-policy', 'allkeys-lru');
    const error = await rejection(ledger.claim(turnId, 'b', { leaseMs: 1000 }));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-persistence' });
    expect((error as EffectError).problems?.join('\n')).toMatch(/maxmemory-policy allkeys-lru/);
    expect(await redis.client().exists(recordKey(turnId, 'b'))).toBe(0);
  }, 30_000);

  it("persistence: 'warn' warns about the lost data once and goes on; 'ignore' does not look", async () => {
    const redis = await server();
    // Captured, not printed: the test output stays clean.
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    let calls: (typeof emitted.mock.calls)[number][] = [];
    try {
      const ledger = new RedisEffectLedger({ client: patientClient(redis.port), persistence: 'warn' });
      await ledger.claim(turnId, 'a', { leaseMs: 1000 });
      await redis.restart({ wipe: true });
      expect((await ledger.claim(turnId, 'b', { leaseMs: 1000 })).status).toBe('claimed');
      expect((await ledger.claim(turnId, 'c', { leaseMs: 1000 })).status).toBe('claimed');
    } finally {
      calls = [...emitted.mock.calls];
      emitted.mockRestore();
    }
    const ours = calls.filter(
      ([, options]) => (options as { code?: string } | undefined)?.code === 'CLEANTURN_REDIS_PERSISTENCE',
    );
    expect(ours).toHaveLength(1);
    expect(String(ours[0]?.[0])).toMatch(/cleanturn:effect:marker/);

    const ignoring = new RedisEffectLedger({ client: patientClient(redis.port), persistence: 'ignore' });
    await ignoring.claim(turnId, 'd', { leaseMs: 1000 });
    await redis.restart({ wipe: true });
    expect((await ignoring.claim(turnId, 'e', { leaseMs: 1000 })).status).toBe('claimed');
    expect(await redis.client().exists('cleanturn:effect:marker')).toBe(0);
  }, 30_000);
});

describe.skipIf(redisTests.skip)('RedisEffectLedger: memory full under noeviction', () => {
  /** A server (noeviction) and a ledger holding a claim on it, then filled past its limit by another user. */
  async function fullServer() {
    const redis = await server({ args: ['--maxmemory', '64mb'] });
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port) });
    const held = await ledger.claim(turnId, 'held', { leaseMs: 60_000 });
    if (held.status !== 'claimed') throw new Error(`expected a claim, got ${held.status}`);
    // The limit is set well below what is used (half of it): a server that is full stays full, whatever buffers it
    // frees between two commands (the pipeline's query buffer, freed later, is hundreds of KB). Under noeviction,
    // how far over the limit a server is does not matter: every command that may grow memory is refused.
    const admin = redis.client();
    const fill = admin.pipeline();
    for (let i = 0; i < 2000; i++) fill.set(`filler:${i}`, 'x'.repeat(1000));
    await fill.exec();
    await admin.config('SET', 'maxmemory', String(Math.floor((await usedMemory(admin)) / 2)));
    expect(await rejection(admin.set('one-more', 'x'))).toMatchObject({
      message: expect.stringMatching(/^OOM/),
    });
    return { redis, ledger, admin, token: held.token };
  }

  it('a claim is refused with the retryable ledger-memory-full error and writes nothing; so is a new ledger', async () => {
    const { redis, ledger, admin } = await fullServer();
    const error = await rejection(ledger.claim(turnId, 'new', { leaseMs: 1000 }));
    expect(error).toMatchObject({
      name: 'EffectError',
      code: 'ledger-memory-full',
      retryable: true,
      operation: 'claim',
    });
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-memory-full' });
    expect((error as Error).message).toMatch(/maxmemory/);
    expect(await admin.exists(recordKey(turnId, 'new'))).toBe(0);

    // A new ledger cannot even write its marker: the same error, before anything else.
    const fresh = new RedisEffectLedger({ client: patientClient(redis.port), prefix: 'other' });
    const refused = await rejection(fresh.claim(turnId, 'k', { leaseMs: 1000 }));
    expect(refused).toBeInstanceOf(EffectError);
    expect(refused).toMatchObject({ code: 'ledger-memory-full' });
    expect(await admin.exists('other:marker', recordKey(turnId, 'k', 'other'))).toBe(0);
  }, 30_000);

  it('what already runs still renews and completes: those writes take no new key', async () => {
    const { ledger, token } = await fullServer();
    expect(await ledger.renew(turnId, 'held', token, 60_000)).toBe(true);
    await ledger.complete(turnId, 'held', token, { refund_id: 're_1' });
    expect(await ledger.get(turnId, 'held')).toMatchObject({
      status: 'completed',
      result: { refund_id: 're_1' },
    });
  }, 30_000);
});
