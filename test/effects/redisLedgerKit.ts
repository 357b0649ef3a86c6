// What the Redis ledger fault tests share: throwaway servers and clients closed after each test, a client that
// never gives up on a command by itself, and the refund turn run through executeTools.
import { cleanTurn } from 'cleanturn';
import { executeTools, type ToolResultEvent } from 'cleanturn/effects';
import type { RedisEffectLedger } from 'cleanturn/effects/redis';
import { call, finish } from 'cleanturn/testing';
import { Redis } from 'ioredis';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterEach } from 'vitest';
import type { ExecuteToolsOptions } from '../../src/effects/executeTools.js';
import { type RedisServer, type RedisServerOptions, startRedisServer } from './redisServer.js';

export const turnId = 'turn-42';

/** The provider events of the refund turn: one `issue_refund` call, then the end. */
export const refundTurn = [
  call('c1', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' }),
  finish('tool-calls'),
];

/**
 * Servers and clients for the tests of one file, stopped and closed after each test. Call it once, at the top
 * of the file.
 */
export function redisFixtures(): {
  server(options?: RedisServerOptions): Promise<RedisServer>;
  patientClient(port: number): Redis;
} {
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });
  return {
    async server(options = {}) {
      const s = await startRedisServer(options);
      servers.push(s);
      return s;
    },
    /** A client that retries forever (`maxRetriesPerRequest: null`): it never gives up on a command by itself. */
    patientClient(port) {
      const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });
      client.on('error', () => {}); // connection errors while the server is down
      clients.push(client);
      return client;
    },
  };
}

/** Runs the refund turn against a ledger, counting handler runs; resolves with the results or the error. */
export async function runTurn(
  ledger: RedisEffectLedger,
  handler: () => unknown,
  options: Partial<ExecuteToolsOptions> = {},
): Promise<{ results?: ToolResultEvent[]; error?: unknown }> {
  const turn = options.turnId ?? turnId;
  try {
    const results = await lastValueFrom(
      from(refundTurn).pipe(
        cleanTurn({ turnId: turn }),
        executeTools({ issue_refund: handler }, { leaseMs: 60_000, ...options, turnId: turn, ledger }),
        toArray(),
      ),
    );
    return { results };
  } catch (error) {
    return { error };
  }
}

/** What `promise` rejects with; a promise that fulfils fails the test. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The Redis key of a ledger record with the default prefix, as the ledger names it. */
export function recordKey(scope: string, key: string, prefix = 'cleanturn:effect'): string {
  return `${prefix}:{${encodeURIComponent(scope)}}:${encodeURIComponent(key)}`;
}
