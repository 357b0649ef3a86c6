// Writes of the Redis turn log whose answer comes late, or never: a real redis-server paused with DEBUG SLEEP. The
// pause is sent on the log's own connection just before the write, so Redis runs the write after the pause, as a
// stalled server would, and the log's commandTimeoutMs runs out first. A timed-out claim or append is resolved (the
// same write asked again, under the claimer's token), or undone; a turn is never left claimed with no runner.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TurnEvent } from 'cleanturn';
import { at, finish, text } from 'cleanturn/testing';
import { fromTurnSSE, TransportError, type TurnLogEntry, toSSE, turnServer } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import type { Redis } from 'ioredis';
import { lastValueFrom, Observable, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const event = (seq: number): TurnLogEntry<string> => ({ seq, event: `e${seq}` });
const all = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));

describe.skipIf(redisTests.skip)('redisTurnLog: writes whose answer is late', { timeout: 30_000 }, () => {
  let server: RedisServer;
  /** The connection the logs under test write on: the pause goes on it, ahead of their writes. */
  let client: Redis;
  /** Another process's connection. */
  let elsewhere: Redis;
  let prefixes = 0;
  let cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ persistence: 'none', args: ['--enable-debug-command', 'yes'] });
    client = server.client();
    elsewhere = server.client();
  });
  afterAll(async () => {
    await server?.stop();
  });
  expectNoLeftoverHandles(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup = [];
  });

  /** Redis sleeps `seconds`, starting before whatever `client` sends next; settles when it wakes. */
  const pause = (seconds: number) => client.call('DEBUG', 'SLEEP', String(seconds));
  const fresh = () => `late-${++prefixes}`;

  it('a claim answered after commandTimeoutMs is resolved: it is the claimer’s, and nobody else’s', async () => {
    const prefix = fresh();
    const log = redisTurnLog<string>({ client, prefix, commandTimeoutMs: 1_000 });
    const other = redisTurnLog<string>({ client: elsewhere, prefix });
    const sleeping = pause(3);
    const claimed = await log.claim('t').catch((error: unknown) => error);
    await sleeping;
    expect(claimed).toBe(true);
    expect(await other.claim('t')).toBe(false);
    await log.append('t', event(0));
    await log.append('t', { seq: 1, end: 'completed' });
    expect(await all(other.read('t', -1))).toEqual([event(0), { seq: 1, end: 'completed' }]);
  });

  it('an append answered after commandTimeoutMs is resolved: the entry is there once, and the turn goes on', async () => {
    const prefix = fresh();
    const log = redisTurnLog<string>({ client, prefix, commandTimeoutMs: 1_000 });
    await log.claim('t');
    await log.append('t', event(0));
    const sleeping = pause(3);
    const appended = await log.append('t', event(1)).catch((error: unknown) => error);
    await sleeping;
    expect(appended).toBeUndefined();
    await log.append('t', event(2));
    await log.append('t', { seq: 3, end: 'completed' });
    expect(await all(redisTurnLog<string>({ client: elsewhere, prefix }).read('t', -1))).toEqual([
      event(0),
      event(1),
      event(2),
      { seq: 3, end: 'completed' },
    ]);
    expect(await elsewhere.xlen(`${prefix}:{t}`)).toBe(4);
  });

  it('a claim that gets no answer is given up and undone: the late claim does not stay, and the turn can run', async () => {
    const prefix = fresh();
    const log = redisTurnLog<string>({ client, prefix, commandTimeoutMs: 200 });
    const sleeping = pause(3);
    const error = await log.claim('t').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'turn-log-timeout' });
    expect(error).toMatchObject({ operation: 'claim', retryable: true });
    await sleeping;
    // Whatever the log sent went to Redis before this.
    await client.ping();
    expect(await elsewhere.exists(`${prefix}:{t}:owner`)).toBe(0);
    expect(await redisTurnLog<string>({ client: elsewhere, prefix }).claim('t')).toBe(true);
  });

  it('an append that gets no answer is given up; the failed end written after it still ends the turn', async () => {
    const prefix = fresh();
    const log = redisTurnLog<string>({ client, prefix, commandTimeoutMs: 200 });
    await log.claim('t');
    await log.append('t', event(0));
    const sleeping = pause(3);
    await expect(log.append('t', event(1))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-log-timeout',
    });
    // What turnServer does after a refused entry: the turn's end, as failed, at that entry's seq.
    const failed = { name: 'TransportError', code: 'turn-log-timeout', message: 'late', retryable: true };
    await log.append('t', { seq: 1, end: 'failed', error: failed }).catch(() => undefined);
    await sleeping;
    await client.ping();
    expect(await elsewhere.get(`${prefix}:{t}:owner`)).toMatch(/^ended/);
    expect(await all(redisTurnLog<string>({ client: elsewhere, prefix }).read('t', -1))).toEqual([
      event(0),
      event(1),
      { seq: 2, end: 'failed', error: failed },
    ]);
  });

  it('turnServer over a Redis that pauses during the claim: the first client reads the turn, which runs once', async () => {
    const prefix = fresh();
    const turns = turnServer<TurnEvent>({ log: redisTurnLog({ client, prefix, commandTimeoutMs: 1_000 }) });
    const events: TurnEvent[] = [at(1, text('Refund issued.')), at(1, finish())];
    let runs = 0;
    const http: Server = createServer((req, res) => {
      const header = req.headers['last-event-id'];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const subscription = turns
        .serve({
          turnId: 'turn-paused',
          lastEventId: typeof header === 'string' ? header : undefined,
          run: () => {
            runs++;
            return new Observable<TurnEvent>((subscriber) => {
              for (const e of events) subscriber.next(e);
              subscriber.complete();
            });
          },
        })
        .subscribe({
          next: (message) => res.write(toSSE(message)),
          complete: () => res.end(),
          error: () => res.destroy(),
        });
      res.on('close', () => subscription.unsubscribe());
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          http.closeAllConnections();
          http.close(() => resolve());
        }),
      () => turns.close(),
    );
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/turns/turn-paused`;
    const sleeping = pause(3);
    const received = await lastValueFrom(fromTurnSSE(() => url).pipe(toArray())).catch((e: unknown) => e);
    await sleeping;
    expect(received).toEqual(events);
    expect(runs).toBe(1);
  });
});
