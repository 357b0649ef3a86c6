// A result too big for the Redis server (past its proto-max-bulk-len, 512 MB by default) is refused by the ledger
// before it is sent, with EffectError unstorable-result, as SQLite refuses one past its limit: executeTools records the call as
// failed once, and a rerun replays the failure. A real redis-server started with a 1 MB limit keeps the test small.

import { EffectError } from 'cleanturn/effects';
import { RedisEffectLedger } from 'cleanturn/effects/redis';
import { describe, expect, it } from 'vitest';
import { recordKey, redisFixtures, rejection, runTurn, turnId } from './redisLedgerKit.js';
import { redisTests } from './redisServer.js';

const { server, patientClient } = redisFixtures();

/** The server's smallest allowed limit: 1 MB (1,048,576 bytes). */
const LIMIT = 1024 * 1024;

async function smallServer() {
  const redis = await server({ args: ['--proto-max-bulk-len', '1mb'] });
  const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs: 2_000 });
  return { redis, ledger };
}

describe.skipIf(redisTests.skip)('RedisEffectLedger: a result past the server’s proto-max-bulk-len', () => {
  it('complete() refuses it with EffectError unstorable-result before sending it; the claim stays and the connection is fine', async () => {
    const { redis, ledger } = await smallServer();
    const claim = await ledger.claim(turnId, 'k', { leaseMs: 60_000 });
    if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`);
    const before = (await redis.client().info('stats')).match(/total_connections_received:(\d+)/)?.[1];
    const result = { blob: 'x'.repeat(LIMIT) };
    const error = await rejection(ledger.complete(turnId, 'k', claim.token, result));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'unstorable-result' });
    expect(error).toMatchObject({ path: 'result', retryable: false });
    expect((error as Error).message).toContain(`${JSON.stringify(result).length} bytes`);
    expect((error as Error).message).toContain(`${LIMIT} bytes`);
    // Still the claim, on the same connection (the server closes a connection that sends too long a value).
    expect(await ledger.get(turnId, 'k')).toMatchObject({ status: 'claimed', token: claim.token });
    const after = (await redis.client().info('stats')).match(/total_connections_received:(\d+)/)?.[1];
    expect(Number(after)).toBe(Number(before) + 1); // only the second probe client's connection
    // The holder can still record the failure.
    await ledger.fail(turnId, 'k', claim.token, {
      name: 'EffectError',
      code: 'unstorable-result',
      message: 'x',
      retryable: false,
    });
    expect(await ledger.get(turnId, 'k')).toMatchObject({ status: 'failed' });
  }, 20_000);

  it('counts bytes of UTF-8, not characters: 600,000 × é (1.2 MB) is refused, 1,000,000 ASCII characters stored', async () => {
    const { ledger } = await smallServer();
    const wide = await ledger.claim(turnId, 'wide', { leaseMs: 60_000 });
    if (wide.status !== 'claimed') throw new Error('expected a claim');
    const refused = await rejection(ledger.complete(turnId, 'wide', wide.token, 'é'.repeat(600_000)));
    expect(refused).toBeInstanceOf(EffectError);
    expect(refused).toMatchObject({ code: 'unstorable-result' });
    const narrow = await ledger.claim(turnId, 'narrow', { leaseMs: 60_000 });
    if (narrow.status !== 'claimed') throw new Error('expected a claim');
    const text = 'x'.repeat(1_000_000);
    await ledger.complete(turnId, 'narrow', narrow.token, text);
    expect(await ledger.claim(turnId, 'narrow', { leaseMs: 60_000 })).toEqual({
      status: 'completed',
      result: text,
    });
  }, 20_000);

  it('executeTools records the call as failed once; a rerun replays the failure without running the handler', async () => {
    const { redis, ledger } = await smallServer();
    let runs = 0;
    const handler = () => {
      runs++;
      return { refund_id: 're_1', receipt: 'x'.repeat(2 * LIMIT) };
    };
    const first = await runTurn(ledger, handler);
    expect(first.error).toBeUndefined();
    expect(first.results).toHaveLength(1);
    expect(first.results?.[0]).toMatchObject({
      outcome: 'failed',
      replayed: false,
      error: { name: 'EffectError', code: 'unstorable-result', retryable: false },
    });
    const second = await runTurn(new RedisEffectLedger({ client: patientClient(redis.port) }), handler);
    expect(second.results?.[0]).toMatchObject({
      outcome: 'failed',
      replayed: true,
      error: { name: 'EffectError', code: 'unstorable-result' },
    });
    expect(runs).toBe(1);
    const key = first.results?.[0]?.effectKey ?? '';
    expect(await redis.client().hget(recordKey(turnId, key), 'status')).toBe('failed');
  }, 30_000);
});
