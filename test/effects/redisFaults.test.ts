// The Redis ledger when Redis fails: a server killed mid-handler (the turn gets a typed error within the
// ledger's command timeout, whatever the client's retry settings), and servers that would forget claims on a
// restart (refused by default, since a restarted empty server lets the effect run twice). Real redis-servers,
// killed and restarted.

import { EffectError } from 'cleanturn/effects';
import { RedisEffectLedger, type RedisEffectLedgerOptions } from 'cleanturn/effects/redis';
import { describe, expect, it, vi } from 'vitest';
import { redisFixtures, rejection, runTurn, turnId } from './redisLedgerKit.js';
import { type RedisServer, type RedisServerOptions, redisTests } from './redisServer.js';

const { server, patientClient } = redisFixtures();

describe.skipIf(redisTests.skip)('RedisEffectLedger: the server goes away', () => {
  it('killed mid-handler: the turn ends with EffectError ledger-timeout once the completion, asked twice, got no answer within commandTimeoutMs, even with maxRetriesPerRequest: null', async () => {
    const redis = await server();
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs: 500 });
    let runs = 0;
    const { results, error } = await runTurn(ledger, async () => {
      runs++;
      await redis.kill();
      return { refund_id: 're_1' };
    });
    expect(results).toBeUndefined();
    expect(runs).toBe(1);
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-timeout' });
    expect(error).toMatchObject({ retryable: true, operation: 'complete', timeoutMs: 500 });
    expect((error as Error).message).toMatch(/500 ms/);
  }, 20_000);

  it('a claim against a server that is down ends with EffectError ledger-timeout too', async () => {
    const redis = await server();
    const ledger = new RedisEffectLedger({ client: patientClient(redis.port), commandTimeoutMs: 300 });
    await ledger.get(turnId, 'k'); // connected, persistence checked
    await redis.kill();
    const error = await rejection(ledger.claim(turnId, 'k', { leaseMs: 1000 }));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-timeout' });
    expect(error).toMatchObject({ operation: 'claim', timeoutMs: 300, retryable: true });
  }, 20_000);

  it('with AOF, a killed and restarted server still holds the record: the second executor replays it', async () => {
    const redis = await server({ appendfsync: 'always' });
    let runs = 0;
    const handler = () => ({ refund_id: `re_${++runs}` });
    const first = await runTurn(new RedisEffectLedger({ client: patientClient(redis.port) }), handler);
    expect(first.results?.map((r) => r.outcome)).toEqual(['executed']);
    await redis.restart();
    const second = await runTurn(new RedisEffectLedger({ client: patientClient(redis.port) }), handler);
    expect(second.results?.map((r) => [r.outcome, 'result' in r ? r.result : undefined])).toEqual([
      ['replayed', { refund_id: 're_1' }],
    ]);
    expect(runs).toBe(1);
  }, 30_000);
});

describe.skipIf(redisTests.skip)('RedisEffectLedger: servers that can forget claims', () => {
  /** A ledger on a new server started with `options`. */
  async function ledgerOn(
    serverOptions: RedisServerOptions,
    options: Omit<RedisEffectLedgerOptions, 'client'> = {},
  ): Promise<{ redis: RedisServer; ledger: RedisEffectLedger }> {
    const redis = await server(serverOptions);
    return { redis, ledger: new RedisEffectLedger({ client: patientClient(redis.port), ...options }) };
  }

  it('refuses a server without AOF by default, before it writes anything', async () => {
    const { redis, ledger } = await ledgerOn({ persistence: 'none' });
    let runs = 0;
    const { error } = await runTurn(ledger, () => ++runs);
    expect(runs).toBe(0);
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-persistence' });
    expect(error).toMatchObject({ retryable: false });
    expect((error as EffectError).problems?.join('\n')).toMatch(/appendonly/);
    expect(await redis.client().dbsize()).toBe(0);
  }, 20_000);

  it("why: with persistence: 'ignore', a server restarted empty lets a second executor run the effect again", async () => {
    const { redis, ledger } = await ledgerOn({ persistence: 'none' }, { persistence: 'ignore' });
    let runs = 0;
    await runTurn(ledger, () => ({ refund_id: `re_${++runs}` }));
    await redis.restart();
    await runTurn(
      new RedisEffectLedger({ client: patientClient(redis.port), persistence: 'ignore' }),
      () => ({
        refund_id: `re_${++runs}`,
      }),
    );
    expect(runs).toBe(2);
  }, 30_000);

  it("with persistence: 'warn', warns once (a process warning) and runs", async () => {
    const { ledger } = await ledgerOn({ persistence: 'none' }, { persistence: 'warn' });
    // Captured, not printed: the test output stays clean.
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const { results } = await runTurn(ledger, () => 1);
      expect(results?.map((r) => r.outcome)).toEqual(['executed']);
      await ledger.get(turnId, 'other');
      const ours = emitted.mock.calls.filter(
        ([, options]) => (options as { code?: string } | undefined)?.code === 'CLEANTURN_REDIS_PERSISTENCE',
      );
      expect(ours).toHaveLength(1);
      expect(String(ours[0]?.[0])).toMatch(/appendonly is no/);
    } finally {
      emitted.mockRestore();
    }
  }, 20_000);

  it('refuses appendfsync no and an evicting maxmemory-policy', async () => {
    const { ledger: noFsync } = await ledgerOn({ appendfsync: 'no' });
    const e1 = await rejection(noFsync.claim(turnId, 'k', { leaseMs: 1000 }));
    expect(e1).toBeInstanceOf(EffectError);
    expect(e1).toMatchObject({ code: 'ledger-persistence' });
    expect((e1 as EffectError).problems?.join('\n')).toMatch(/appendfsync/);

    const { ledger: evicting } = await ledgerOn({
      args: ['--maxmemory', '100mb', '--maxmemory-policy', 'volatile-lru'],
    });
    const e2 = await rejection(evicting.claim(turnId, 'k', { leaseMs: 1000 }));
    expect(e2).toBeInstanceOf(EffectError);
    expect(e2).toMatchObject({ code: 'ledger-persistence' });
    expect((e2 as EffectError).problems?.join('\n')).toMatch(/maxmemory-policy volatile-lru/);
  }, 30_000);

  it('where CONFIG is disabled (managed services), reads INFO instead', async () => {
    const disabled = ['--rename-command', 'CONFIG', ''];
    const { ledger: durable } = await ledgerOn({ args: disabled });
    expect((await durable.claim(turnId, 'k', { leaseMs: 1000 })).status).toBe('claimed');

    const { ledger: volatile } = await ledgerOn({ persistence: 'none', args: disabled });
    const error = await rejection(volatile.claim(turnId, 'k', { leaseMs: 1000 }));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'ledger-persistence' });
    expect((error as EffectError).problems?.join('\n')).toMatch(/appendonly/);
  }, 30_000);
});
