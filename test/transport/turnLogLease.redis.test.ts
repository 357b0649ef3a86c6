// Runner leases of redisTurnLog on a real redis-server: two redisTurnLog instances on two clients are two runners.
// A claim sets the lease key `prefix:{turnId}:lease` for leaseMs (Redis expires it on its own), renew extends it,
// and once it lapsed another runner takes the turn over: a new token, whose appends are the only ones taken.

import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from 'cleanturn';
import type { TurnLog, TurnLogEntry } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import type { Redis } from 'ioredis';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const LEASE = 150;
/** Long enough for a lease of LEASE to lapse in Redis. */
const LAPSE = LEASE + 100;
const event = (seq: number, by = 'a'): TurnLogEntry<string> => ({ seq, event: `${by}${seq}` });
const all = <T>(log: TurnLog<T>, turnId: string, after = -1) =>
  lastValueFrom(log.read(turnId, after).pipe(toArray()));

describe.skipIf(redisTests.skip)('redisTurnLog leases', { timeout: 20_000 }, () => {
  let server: RedisServer;
  let clients: Redis[] = [];
  let prefixes = 0;

  beforeAll(async () => {
    server = await startRedisServer({ persistence: 'none', args: ['--enable-debug-command', 'yes'] });
    clients = Array.from({ length: 11 }, () => server.client());
    // Connected before the first test takes its baseline of open handles.
    await Promise.all(clients.map((c) => c.ping()));
  });
  afterAll(async () => {
    await server?.stop();
  });
  expectNoLeftoverHandles(() => {});

  const client = (i: number) => clients[i] as Redis;
  /** Two runners on two clients, under a prefix of their own. */
  const runners = (options: { leaseMs?: number; commandTimeoutMs?: number; ttlMs?: number } = {}) => {
    const prefix = `lease-${++prefixes}`;
    const make = (i: number) =>
      redisTurnLog<string>({ client: client(i), prefix, leaseMs: LEASE, ...options });
    return { prefix, a: make(0), b: make(1), make };
  };
  const leaseKey = (prefix: string, turnId: string) => `${prefix}:{${encodeURIComponent(turnId)}}:lease`;

  it('leaseMs is the option, 10 000 by default', () => {
    expect(redisTurnLog({ client: client(0) }).leaseMs).toBe(10_000);
    expect(redisTurnLog({ client: client(0), leaseMs: 150 }).leaseMs).toBe(150);
  });

  it('while the lease is alive: renew is true, and nobody can take the turn over', async () => {
    const { a, b } = runners();
    expect(await a.claim('t')).toBe(true);
    expect(await b.claim('t')).toBe(false);
    expect(await b.takeOver?.('t')).toBeUndefined();
    expect(await a.takeOver?.('t')).toBeUndefined();
    // Renewed every 50 ms for well over two leases: it never lapses.
    for (let i = 0; i < 8; i++) {
      await sleep(50);
      expect(await a.renew?.('t')).toBe(true);
      expect(await b.takeOver?.('t')).toBeUndefined();
    }
    // A runner that never claimed the turn has no lease to renew.
    expect(await b.renew?.('t')).toBe(false);
    await a.append('t', { seq: 0, end: 'completed' });
  });

  it('a turn claimed by a log without leases (no meta key: an older version, mid-upgrade) is never taken over', async () => {
    const { prefix, a, b } = runners();
    expect(await a.claim('old')).toBe(true);
    await client(0).del(`${prefix}:{old}:meta`, `${prefix}:{old}:lease`);
    await sleep(LEASE + 100);
    expect(await b.takeOver?.('old')).toBeUndefined();
    await a.append('old', { seq: 0, end: 'completed' });
  });

  it('a runner that renews but appends nothing for longer than ttlMs keeps its turn', async () => {
    const { a, b } = runners({ ttlMs: 300 });
    expect(await a.claim('quiet')).toBe(true);
    await a.append('quiet', { seq: 0, event: 'thinking' });
    for (let i = 0; i < 12; i++) {
      await sleep(50);
      expect(await a.renew?.('quiet')).toBe(true);
    }
    // 600 ms after its last entry, twice ttlMs: the turn is still known, still the runner's.
    await a.append('quiet', { seq: 1, end: 'completed' });
    const entries = await lastValueFrom(b.read('quiet', -1).pipe(toArray()));
    expect(entries).toEqual([
      { seq: 0, event: 'thinking' },
      { seq: 1, end: 'completed' },
    ]);
  });

  it('the lease key expires on its own: PTTL within leaseMs after the claim and a renew, gone after the end', async () => {
    const turnId = 'a turn/with:odd%chars';
    const { prefix, a } = runners();
    const key = leaseKey(prefix, turnId);
    const redis = client(2);
    expect(await redis.pttl(key)).toBe(-2);
    await a.claim(turnId);
    const afterClaim = await redis.pttl(key);
    expect(afterClaim).toBeGreaterThan(0);
    expect(afterClaim).toBeLessThanOrEqual(LEASE);
    await sleep(100);
    const older = await redis.pttl(key);
    expect(older).toBeLessThanOrEqual(LEASE - 90);
    expect(await a.renew?.(turnId)).toBe(true);
    const extended = await redis.pttl(key);
    expect(extended).toBeGreaterThan(older);
    expect(extended).toBeLessThanOrEqual(LEASE);
    // Not renewed: Redis deletes it by itself.
    await sleep(LAPSE);
    expect(await redis.pttl(key)).toBe(-2);
    expect(await a.renew?.(turnId)).toBe(true);
    const renewed = await redis.pttl(key);
    expect(renewed).toBeGreaterThan(0);
    expect(renewed).toBeLessThanOrEqual(LEASE);
    await a.append(turnId, event(0));
    await a.append(turnId, { seq: 1, end: 'completed' });
    expect(await redis.pttl(key)).toBe(-2);
    expect(await redis.exists(key)).toBe(0);
  });

  it('a lapsed lease: the other runner takes over at the next seq, the old one is refused, readers see both', async () => {
    const { prefix, a, b } = runners();
    const before = Date.now();
    await a.claim('t');
    const after = Date.now();
    await a.append('t', event(0));
    await a.append('t', event(1));
    await a.append('t', event(2));
    const live = all(a, 't');
    // Alive: not yet.
    expect(await b.takeOver?.('t')).toBeUndefined();
    await sleep(LAPSE);
    const takeover = await b.takeOver?.('t');
    expect(takeover).toMatchObject({ count: 1, next: 3 });
    expect(takeover?.claimedAt).toBeGreaterThanOrEqual(before);
    expect(takeover?.claimedAt).toBeLessThanOrEqual(after);
    // The new owner's lease is set.
    const pttl = await client(2).pttl(leaseKey(prefix, 't'));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(LEASE);
    await expect(a.append('t', event(3))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-taken-over',
    });
    await expect(a.append('t', event(3))).rejects.toMatchObject({ turnId: 't' });
    expect(await a.renew?.('t')).toBe(false);
    expect(await a.takeOver?.('t')).toBeUndefined();
    expect(await b.renew?.('t')).toBe(true);
    await b.append('t', event(3, 'b'));
    await b.append('t', { seq: 4, end: 'completed' });
    const expected = [event(0), event(1), event(2), event(3, 'b'), { seq: 4, end: 'completed' }];
    expect(await live).toEqual(expected);
    expect(await all(a, 't')).toEqual(expected);
    expect(await all(b, 't', 1)).toEqual(expected.slice(2));
    expect(await client(2).exists(leaseKey(prefix, 't'))).toBe(0);
  });

  it('a takeover of a turn with no entries starts at seq 0', async () => {
    const { a, b } = runners();
    const before = Date.now();
    await a.claim('t');
    await sleep(LAPSE);
    const takeover = await b.takeOver?.('t');
    expect(takeover).toMatchObject({ count: 1, next: 0 });
    expect(takeover?.claimedAt).toBeGreaterThanOrEqual(before);
    await b.append('t', event(0, 'b'));
    await b.append('t', { seq: 1, end: 'completed' });
    expect(await all(a, 't')).toEqual([event(0, 'b'), { seq: 1, end: 'completed' }]);
  });

  it('a renew after the lapse but before any takeover takes the lease again', async () => {
    const { a, b } = runners();
    await a.claim('t');
    await a.append('t', event(0));
    await sleep(LAPSE);
    expect(await a.renew?.('t')).toBe(true);
    expect(await b.takeOver?.('t')).toBeUndefined();
    await a.append('t', event(1));
    await a.append('t', { seq: 2, end: 'completed' });
    expect(await all(b, 't')).toEqual([event(0), event(1), { seq: 2, end: 'completed' }]);
  });

  it('of ten runners that take over at once, exactly one gets the turn', async () => {
    const { a, make } = runners();
    const views = Array.from({ length: 10 }, (_, i) => make(i + 1));
    const before = Date.now();
    await a.claim('t');
    await a.append('t', event(0));
    await sleep(LAPSE);
    const answers = await Promise.all(views.map((view) => view.takeOver?.('t')));
    const won = answers.filter((answer) => answer !== undefined);
    expect(won).toHaveLength(1);
    expect(won[0]).toMatchObject({ count: 1, next: 1 });
    expect(won[0]?.claimedAt).toBeGreaterThanOrEqual(before);
    const winner = views[answers.findIndex((answer) => answer !== undefined)] as TurnLog<string>;
    const losers = [a, ...views.filter((view) => view !== winner)];
    const refused = await Promise.allSettled(losers.map((view) => view.append('t', event(1, 'x'))));
    expect(refused.map((r) => r.status)).toEqual(Array(10).fill('rejected'));
    for (const r of refused)
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        name: 'TransportError',
        code: 'turn-taken-over',
      });
    expect(await Promise.all(losers.map((view) => view.renew?.('t')))).toEqual(Array(10).fill(false));
    expect(await winner.renew?.('t')).toBe(true);
    await winner.append('t', event(1, 'w'));
    await winner.append('t', { seq: 2, end: 'completed' });
    expect(await all(a, 't')).toEqual([event(0), event(1, 'w'), { seq: 2, end: 'completed' }]);
  });

  it('a second lapse: the turn is taken over again, count 2, claimedAt unchanged', async () => {
    const { a, b, make } = runners();
    const c = make(2);
    await a.claim('t');
    await a.append('t', event(0));
    await sleep(LAPSE);
    const first = await b.takeOver?.('t');
    expect(first).toMatchObject({ count: 1, next: 1 });
    await b.append('t', event(1, 'b'));
    expect(await c.takeOver?.('t')).toBeUndefined();
    await sleep(LAPSE);
    const second = await c.takeOver?.('t');
    expect(second).toEqual({ count: 2, next: 2, claimedAt: first?.claimedAt });
    await expect(b.append('t', event(2, 'b'))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-taken-over',
    });
    expect(await b.renew?.('t')).toBe(false);
    await c.append('t', { seq: 2, end: 'completed' });
    expect(await all(a, 't')).toEqual([event(0), event(1, 'b'), { seq: 2, end: 'completed' }]);
  });

  it('an ended turn is not taken over, nor renewed, even after its lease', async () => {
    const { a, b } = runners();
    await a.claim('t');
    await a.append('t', event(0));
    await a.append('t', { seq: 1, end: 'completed' });
    expect(await a.renew?.('t')).toBe(false);
    expect(await b.takeOver?.('t')).toBeUndefined();
    await sleep(LAPSE);
    expect(await b.takeOver?.('t')).toBeUndefined();
    expect(await a.takeOver?.('t')).toBeUndefined();
    expect(await a.renew?.('t')).toBe(false);
    expect(await b.renew?.('t')).toBe(false);
    expect(await all(b, 't')).toEqual([event(0), { seq: 1, end: 'completed' }]);
  });

  it('an unknown turn: takeOver is undefined and renew false', async () => {
    const { prefix, a, b } = runners();
    expect(await a.takeOver?.('nope')).toBeUndefined();
    expect(await a.renew?.('nope')).toBe(false);
    expect(await b.takeOver?.('nope')).toBeUndefined();
    expect(await b.renew?.('nope')).toBe(false);
    // Nothing was written for it.
    expect(await client(2).keys(`${prefix}:*`)).toEqual([]);
  });

  it('a takeover sent again (its answer late) is applied once: count 1, and the turn is the taker’s', async () => {
    const { prefix, a, b } = runners();
    // The taker's sends wait 300 ms each; Redis sleeps 700 ms first, then runs the three sends in order.
    const slow = redisTurnLog<string>({ client: client(4), prefix, leaseMs: LEASE, commandTimeoutMs: 300 });
    await a.claim('t');
    await a.append('t', event(0));
    await sleep(LAPSE);
    const sleeping = client(4).call('DEBUG', 'SLEEP', '0.7');
    const takeover = await slow.takeOver?.('t');
    await sleeping;
    expect(takeover).toMatchObject({ count: 1, next: 1 });
    expect(await slow.renew?.('t')).toBe(true);
    await expect(a.append('t', event(1))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-taken-over',
    });
    await slow.append('t', event(1, 's'));
    // The count in Redis is 1: the next takeover is the second.
    await sleep(LAPSE);
    expect(await b.takeOver?.('t')).toMatchObject({ count: 2, next: 2 });
    await b.append('t', { seq: 2, end: 'completed' });
    expect(await all(a, 't')).toEqual([event(0), event(1, 's'), { seq: 2, end: 'completed' }]);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses leaseMs %s with a UsageError',
    (leaseMs) => {
      expect(() => redisTurnLog({ client: client(0), leaseMs })).toThrow(UsageError);
      expect(() => redisTurnLog({ client: client(0), leaseMs })).toThrow(
        'redisTurnLog: leaseMs must be a finite number > 0',
      );
    },
  );
});
