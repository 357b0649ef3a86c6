// turnServer.stop across instances that share a real redis-server through redisTurnLog: the stop request reaches
// one instance, the turn runs on the other, and the stop mark in Redis (checked by the runner every stopCheckMs)
// stops it there. Over real loopback HTTP: a provider server that trickles its answer, two turn servers' HTTP
// servers, and fetch clients.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TurnEvent } from 'cleanturn';
import { UsageError } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import {
  fromTurnSSE,
  stopTurn,
  streamTurn,
  TransportError,
  type TurnServer,
  toSSE,
  turnServer,
} from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { startHttpServer } from '../support/turnHttpServer.js';

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** `GET /turns/<id>` streams the turn, `POST /turns/<id>/stop` stops it (202, or 404). */
function handler(turns: TurnServer<TurnEvent>, providerUrl: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const stop = /^\/turns\/([^/]+)\/stop$/.exec(path);
    if (stop !== null && req.method === 'POST') {
      turns.stop(decodeURIComponent(stop[1] ?? ''), 'stopped by the user').then(
        (stopped) => res.writeHead(stopped ? 202 : 404).end(),
        () => res.writeHead(500).end(),
      );
      return;
    }
    const turnId = decodeURIComponent(path.slice('/turns/'.length));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const subscription = turns
      .serve({
        turnId,
        run: ({ signal }) =>
          streamTurn({
            turnId,
            adapter: openaiChat(),
            retry: 0,
            signal,
            request: ({ signal: attempt }) => ({
              url: providerUrl,
              init: { method: 'POST', body: '{}', signal: attempt },
            }),
          }),
      })
      .subscribe({ next: (m) => res.write(toSSE(m)), complete: () => res.end(), error: () => res.destroy() });
    res.on('close', () => subscription.unsubscribe());
  };
}

async function until(check: () => boolean, limitMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error('the condition never held');
    await sleep(5);
  }
}

describe.skipIf(redisTests.skip)('turnServer.stop with redisTurnLog', { timeout: 20_000 }, () => {
  let redis: RedisServer;
  let cleanup: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    redis = await startRedisServer({ persistence: 'none' });
  });
  afterAll(async () => {
    await redis?.stop();
  });
  expectNoLeftoverHandles(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup = [];
  });

  it('a stop sent to another instance stops the run where it runs, through the stop mark in Redis', async () => {
    const llm: TestServer = await startServer([
      {
        body: '',
        stream: async function* () {
          for (let i = 0; i < 500; i++) {
            yield chunk({ content: `${i} ` });
            await sleep(20);
          }
        },
      },
    ]);
    cleanup.push(() => llm.close());
    const clients: Redis[] = [redis.client(), redis.client()];
    const [runner, other] = clients.map((client) =>
      turnServer<TurnEvent>({ log: redisTurnLog<TurnEvent>({ client, prefix: 'stop', stopCheckMs: 50 }) }),
    ) as [TurnServer<TurnEvent>, TurnServer<TurnEvent>];
    const a = await startHttpServer(handler(runner, llm.url));
    const b = await startHttpServer(handler(other, llm.url));
    cleanup.push(
      () => a.close(),
      () => b.close(),
      () => runner.close(),
      () => other.close(),
    );
    const seen: TurnEvent[] = [];
    const reading = new Promise<unknown>((resolve) => {
      const subscription = fromTurnSSE(() => `${a.url}/turns/turn-r1`).subscribe({
        next: (e) => seen.push(e),
        error: resolve,
        complete: () => resolve('completed'),
      });
      cleanup.push(async () => subscription.unsubscribe());
    });
    await until(() => seen.length >= 2);
    expect(runner.running).toBe(1);
    expect(other.running).toBe(0);
    const stoppedAt = performance.now();
    expect(await stopTurn(`${b.url}/turns/turn-r1/stop`)).toBe(true);
    const error = await reading;
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'turn-stopped' });
    expect((error as TransportError).message).toContain('stopped by the user');
    // Checked every 50 ms: well within a second.
    expect(performance.now() - stoppedAt).toBeLessThan(2_000);
    await until(() => llm.aborted === 1);
    await until(() => runner.running === 0);
    // Ended: nothing to stop, here or there; nor a turn that never ran.
    expect(await stopTurn(`${b.url}/turns/turn-r1/stop`)).toBe(false);
    expect(await stopTurn(`${a.url}/turns/turn-r1/stop`)).toBe(false);
    expect(await stopTurn(`${b.url}/turns/never-ran/stop`)).toBe(false);
    expect(llm.requests).toHaveLength(1);
  });

  it('refuses a stopCheckMs that is not a duration', () => {
    const client = redis.client();
    for (const stopCheckMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => redisTurnLog({ client, stopCheckMs })).toThrow(UsageError);
    }
  });
});
