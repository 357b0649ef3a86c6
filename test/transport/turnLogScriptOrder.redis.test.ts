// Lua scripts run in the order they were sent on a connection, whatever the server's script cache holds: a real
// redis-server whose cache has one script and not another (another instance loaded it, or SCRIPT FLUSH, or a
// restart emptied it). The turn log counts on that order: a claim given up on is undone by a release sent behind
// it on the same connection.
import { createHash } from 'node:crypto';
import { TransportError } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { runRedisScript } from '../../src/internal/redisScripts.js';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';

/** Appends ARGV[1] to the list KEYS[1]. */
const PUSH = `return redis.call('RPUSH', KEYS[1], ARGV[1])`;
/** Appends 'second' to the list KEYS[1]: another script. */
const PUSH_SECOND = `return redis.call('RPUSH', KEYS[1], 'second')`;
/** The SHA-1 a script is cached by. */
const sha = (script: string) => createHash('sha1').update(script).digest('hex');

describe.skipIf(redisTests.skip)('Redis scripts run in the order sent', { timeout: 30_000 }, () => {
  let server: RedisServer;
  /** The connection the scripts under test are sent on. */
  let client: Redis;
  /** Another process's connection. */
  let elsewhere: Redis;
  let keys = 0;
  let cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ persistence: 'none' });
    client = server.client();
    elsewhere = server.client();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(async () => {
    await elsewhere.script('FLUSH');
  });
  expectNoLeftoverHandles(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup = [];
  });
  const fresh = () => `order-${++keys}`;

  it('a script the server has not cached, then one it has (another client loaded it), run in that order', async () => {
    const key = fresh();
    await elsewhere.script('LOAD', PUSH_SECOND);
    expect(await elsewhere.script('EXISTS', sha(PUSH), sha(PUSH_SECOND))).toEqual([0, 1]);
    await Promise.all([
      runRedisScript(client, PUSH, [key], ['first']),
      runRedisScript(client, PUSH_SECOND, [key], []),
    ]);
    expect(await elsewhere.lrange(key, 0, -1)).toEqual(['first', 'second']);
  });

  it('a script sent after SCRIPT FLUSH, then the same script once it is loaded again, run in that order', async () => {
    const key = fresh();
    await runRedisScript(client, PUSH, [key], ['zero']);
    // Back to back on one connection: the flush, a send, a load (as another instance would), a second send.
    await Promise.all([
      client.script('FLUSH'),
      runRedisScript(client, PUSH, [key], ['first']),
      client.script('LOAD', PUSH),
      runRedisScript(client, PUSH, [key], ['second']),
    ]);
    expect(await elsewhere.lrange(key, 0, -1)).toEqual(['zero', 'first', 'second']);
  });

  it('a claim given up on is undone by its release, even when another instance loads the script in between', async () => {
    const prefix = fresh();
    // The log's connection goes through a proxy that holds the server's answers (the claim runs, its answer is
    // late) and, from the release on, what the log sends.
    const proxy: TcpProxy = await startTcpProxy(server.port);
    const connection = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 1 });
    cleanup.push(
      () => proxy.close(),
      async () => connection.disconnect(),
    );
    await connection.ping();
    const log = redisTurnLog<string>({ client: connection, prefix, commandTimeoutMs: 200 });
    proxy.holdReplies();
    // The release: the command whose argument is `release` (the script's text names it too, in quotes).
    proxy.holdRequestsFrom((chunk) => chunk.includes('\r\nrelease\r\n'));
    const claimed = await log.claim('t').catch((error: unknown) => error);
    expect(claimed).toBeInstanceOf(TransportError);
    expect(claimed).toMatchObject({ code: 'turn-log-timeout' });
    expect(claimed).toMatchObject({ operation: 'claim', tries: 4 });
    // Redis answered the 4 sends of the claim; the release has not reached it yet.
    await proxy.until(() => proxy.requestsHeld && proxy.heldReplyLines >= 4);
    // Another instance runs another turn: the server now holds the script.
    expect(await redisTurnLog<string>({ client: elsewhere, prefix }).claim('other')).toBe(true);
    proxy.releaseRequests();
    await proxy.until(() => proxy.heldReplyLines >= 5);
    proxy.releaseReplies();
    // The answers are in (and whatever the log sends on hearing them is on its way), then all of it ran.
    await connection.ping();
    await new Promise((resolve) => setImmediate(resolve));
    await connection.ping();
    expect(await elsewhere.get(`${prefix}:{t}:owner`)).toBeNull();
    expect(await redisTurnLog<string>({ client: elsewhere, prefix }).claim('t')).toBe(true);
  });

  it("an append is sent by its script's SHA-1 once the server holds it, whole again when it lacks it", async () => {
    const prefix = fresh();
    const connection = server.client();
    cleanup.push(async () => connection.disconnect());
    const sent = vi.spyOn(connection, 'sendCommand');
    const log = redisTurnLog<string>({ client: connection, prefix });
    expect(await log.claim('t')).toBe(true);
    /** The commands the connection sent for one append. */
    const append = async (seq: number) => {
      sent.mockClear();
      await log.append('t', { seq, event: `e${seq}` });
      return sent.mock.calls.map(([command]) => command.name);
    };
    // The cache is empty (beforeEach): the SHA-1 misses, and the script goes whole, once.
    expect(await append(0)).toEqual(['evalsha', 'eval']);
    expect(await append(1)).toEqual(['evalsha']);
    await elsewhere.script('FLUSH');
    expect(await append(2)).toEqual(['evalsha', 'eval']);
    await log.append('t', { seq: 3, end: 'completed' });
    const entries: unknown[] = [];
    await new Promise<void>((resolve, reject) =>
      log.read('t', -1).subscribe({ next: (entry) => entries.push(entry), error: reject, complete: resolve }),
    );
    expect(entries).toEqual([
      { seq: 0, event: 'e0' },
      { seq: 1, event: 'e1' },
      { seq: 2, event: 'e2' },
      { seq: 3, end: 'completed' },
    ]);
  });
});
