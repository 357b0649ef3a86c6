// The TurnLog contract, checked against both logs: memoryTurnLog (an injected clock) and redisTurnLog (a real
// redis-server started for this file; short ttlMs for expiry). Then what only the Redis log has: its keys, the
// reader's own connection for blocking reads, expiry while read, and its command timeout.
import { UsageError } from 'cleanturn';
import { memoryTurnLog, TransportError, type TurnLog, type TurnLogEntry } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import { Redis } from 'ioredis';
import { lastValueFrom, type Observable, type Subscription, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RedisServer, redisTests, startRedisServer } from '../effects/redisServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { freePort } from '../support/serverProcess.js';

/** What a log takes in these tests. */
interface LogOptions {
  maxEntries?: number;
  ttlMs?: number;
}

/** A log under test, and what the contract tests need around it. */
interface Harness {
  log: TurnLog<string>;
  /** Another log on the same store, as another server process would have. */
  other(): TurnLog<string>;
  /** Lets `ms` pass, as the log sees time. */
  elapse(ms: number): Promise<void>;
  /** How many connections the store has open now (Redis); `undefined` for a log that has none. */
  connections(): Promise<number | undefined>;
}

let turns = 0;
/** A turn id no other test uses. */
const freshTurn = () => `turn-${++turns}`;

const event = (seq: number): TurnLogEntry<string> => ({ seq, event: `e${seq}` });
const end = (seq: number): TurnLogEntry<string> => ({ seq, end: 'completed' });

const all = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));

/** Appends `e0`…`e<count-1>` (and the end, when asked) to a claimed turn. */
async function fill(log: TurnLog<string>, turnId: string, count: number, ended = false): Promise<void> {
  for (let seq = 0; seq < count; seq++) await log.append(turnId, event(seq));
  if (ended) await log.append(turnId, end(count));
}

/** Waits for `condition`, asking every 10 ms; fails after `deadlineMs`. */
async function until(condition: () => boolean | Promise<boolean>, deadlineMs = 5_000): Promise<void> {
  const limit = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > limit) throw new Error(`condition not met within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A subscribed reader: what it got so far, and how it ended. */
function subscribe(source: Observable<TurnLogEntry<string>>) {
  const state = {
    got: [] as TurnLogEntry<string>[],
    completed: false,
    error: undefined as unknown,
    subscription: undefined as unknown as Subscription,
  };
  state.subscription = source.subscribe({
    next: (entry) => state.got.push(entry),
    complete: () => {
      state.completed = true;
    },
    error: (error: unknown) => {
      state.error = error;
    },
  });
  return state;
}

/** Turn ids every log keeps as they are: what each holds, and the id. */
const hostileTurnIds: [string, string][] = [
  ['CJK and an emoji', 'turn-日本-🙂'],
  ['LF', 'turn\nid'],
  ['CRLF', 'turn\r\nid'],
  ['NUL', 'turn\u0000id'],
  ['colons', 'turn:42:7'],
  ['spaces', 'turn 42'],
  ['a percent sign', '100%'],
  ['text that reads as percent-encoding', '%41%3A1'],
  ['braces', '{turn}:owner'],
  ['256 characters', 'a'.repeat(256)],
  ['128 emoji', '🙂'.repeat(128)],
];

/** Turn ids every log refuses: what is wrong, the id, and the error's code without its `turn-id-` prefix. */
const badTurnIds: [string, string, string][] = [
  ['a lone high surrogate', 'turn-\uD83D', 'not-well-formed'],
  ['a lone low surrogate', '\uDE42-turn', 'not-well-formed'],
  ['257 characters', 'a'.repeat(257), 'too-long'],
  ['empty', '', 'empty'],
];

/** The TurnLog contract, for a log made by `make`. */
function turnLogContract(make: (options?: LogOptions) => Harness): void {
  it('claims a turn once, whichever log of the store asks', async () => {
    const { log, other } = make();
    const turnId = freshTurn();
    expect(await log.claim(turnId)).toBe(true);
    expect(await log.claim(turnId)).toBe(false);
    expect(await other().claim(turnId)).toBe(false);
    expect(await other().claim(freshTurn())).toBe(true);
  });

  it('reads the entries in order, up to and with the end, then completes', async () => {
    const { log } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    await log.append(turnId, event(0));
    await log.append(turnId, event(1));
    await log.append(turnId, { seq: 2, end: 'failed', error: { name: 'E', message: 'm', retryable: true } });
    expect(await all(log.read(turnId, -1))).toEqual([
      event(0),
      event(1),
      { seq: 2, end: 'failed', error: { name: 'E', message: 'm', retryable: true } },
    ]);
  });

  it('reads the entries after seq N', async () => {
    const { log } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    await fill(log, turnId, 5, true);
    expect(await all(log.read(turnId, 2))).toEqual([event(3), event(4), end(5)]);
  });

  it('follows a running turn: each new entry as it is appended, on another log of the store too', async () => {
    const { log, other } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    const here = subscribe(log.read(turnId, -1));
    const there = subscribe(other().read(turnId, -1));
    await log.append(turnId, event(0));
    await until(() => here.got.length === 1 && there.got.length === 1);
    await log.append(turnId, event(1));
    await until(() => here.got.length === 2 && there.got.length === 2);
    expect(here.completed || there.completed).toBe(false);
    await log.append(turnId, end(2));
    await until(() => here.completed && there.completed);
    expect(here.got).toEqual([event(0), event(1), end(2)]);
    expect(there.got).toEqual(here.got);
  });

  it('serves a reader that joins after the end, and one that already had the end', async () => {
    const { log } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    await fill(log, turnId, 3, true);
    expect(await all(log.read(turnId, -1))).toEqual([event(0), event(1), event(2), end(3)]);
    expect(await all(log.read(turnId, 2))).toEqual([end(3)]);
    expect(await all(log.read(turnId, 3))).toEqual([]);
  });

  it('errors with TransportError turn-not-found for a turn it does not know', async () => {
    const { log } = make();
    const turnId = freshTurn();
    const error = await all(log.read(turnId, -1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ turnId, code: 'turn-not-found', retryable: false });
    await expect(log.append(turnId, event(0))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-not-found',
    });
  });

  it('refuses an entry after the end', async () => {
    const { log } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    await fill(log, turnId, 1, true);
    await expect(log.append(turnId, event(2))).rejects.toThrow(/must not follow the end of turn/);
  });

  it('errors with TransportError turn-trimmed when the entries asked for were trimmed', async () => {
    const { log } = make({ maxEntries: 10 });
    const turnId = freshTurn();
    await log.claim(turnId);
    await fill(log, turnId, 300, true);
    const error = await all(log.read(turnId, -1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ turnId, code: 'turn-trimmed' });
    expect(await all(log.read(turnId, 296))).toEqual([event(297), event(298), event(299), end(300)]);
  });

  it('forgets a turn ttlMs after its last entry: it is unknown, and can be claimed anew', async () => {
    // Margins of a second: Redis keeps real time, and a busy machine oversleeps.
    const { log, elapse } = make({ ttlMs: 1_500 });
    const turnId = freshTurn();
    await log.claim(turnId);
    await fill(log, turnId, 2);
    await elapse(1_000);
    await log.append(turnId, event(2));
    await log.append(turnId, end(3));
    await elapse(700);
    // 1.7 s after the claim, 0.7 s after the last entry: still known.
    expect(await all(log.read(turnId, 1).pipe(take(1)))).toEqual([event(2)]);
    await elapse(2_000);
    await expect(all(log.read(turnId, -1))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-not-found',
    });
    expect(await log.claim(turnId)).toBe(true);
  });

  describe('turn ids', () => {
    it.each(hostileTurnIds)('keeps a turn id with %s, whole and apart from others', async (_, turnId) => {
      const { log, other } = make();
      expect(await log.claim(turnId)).toBe(true);
      expect(await other().claim(turnId)).toBe(false);
      // A neighbour that a careless key or id scheme would confuse with it.
      expect(await log.claim(`${turnId.slice(0, 254)}:0`)).toBe(true);
      await fill(log, turnId, 2, true);
      expect(await all(other().read(turnId, -1))).toEqual([event(0), event(1), end(2)]);
      expect(await all(log.read(turnId, 0))).toEqual([event(1), end(2)]);
    });

    it.each(badTurnIds)(
      'refuses a turn id that is %s with TransportError turn-id-*, and touches nothing',
      async (_, turnId, problem) => {
        const { log } = make();
        const expected = { name: 'TransportError', code: `turn-id-${problem}`, retryable: false };
        await expect(log.claim(turnId)).rejects.toMatchObject(expected);
        await expect(log.append(turnId, event(0))).rejects.toMatchObject(expected);
        await expect(all(log.read(turnId, -1))).rejects.toMatchObject(expected);
      },
    );
  });

  describe('reading past the end', () => {
    // A turn of e0, e1, e2 and, when it has ended, its end at seq 3.
    it.each([
      ['an ended turn, after -1: everything', true, -1, [event(0), event(1), event(2), end(3)]],
      ['an ended turn, after its last event: the end', true, 2, [end(3)]],
      ['an ended turn, after its end: nothing more', true, 3, []],
      ['an ended turn, after seq 4: the end again, at once', true, 4, [end(3)]],
      ['an ended turn, after seq 999 999: the end again, at once', true, 999_999, [end(3)]],
      [
        'an ended turn, after the largest safe integer: the end again, at once',
        true,
        Number.MAX_SAFE_INTEGER,
        [end(3)],
      ],
      ['a running turn, after seq 3, which it never had', false, 3, 'ahead'],
      ['a running turn, after seq 999 999', false, 999_999, 'ahead'],
    ] as const)('%s', async (_, ended, after, expected) => {
      const { log, other } = make();
      const turnId = freshTurn();
      await log.claim(turnId);
      await fill(log, turnId, 3, ended);
      for (const reader of [log, other()]) {
        if (typeof expected === 'string') {
          const error = await all(reader.read(turnId, after)).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(TransportError);
          expect(error).toMatchObject({
            turnId,
            code: `turn-${expected}`,
            retryable: false,
          });
        } else {
          expect(await all(reader.read(turnId, after))).toEqual(expected);
        }
      }
    });

    it('a claimed turn without entries, after seq 0: TransportError turn-ahead', async () => {
      const { log } = make();
      const turnId = freshTurn();
      await log.claim(turnId);
      await expect(all(log.read(turnId, 0))).rejects.toMatchObject({
        name: 'TransportError',
        code: 'turn-ahead',
      });
    });

    it.each([1e21, 2 ** 53, Number.NaN, 1.5, -2, Number.POSITIVE_INFINITY])(
      'refuses to read after %s with a UsageError: not a seq',
      async (after) => {
        const { log } = make();
        const turnId = freshTurn();
        await log.claim(turnId);
        await fill(log, turnId, 1, true);
        await expect(all(log.read(turnId, after))).rejects.toBeInstanceOf(UsageError);
      },
    );
  });

  it('a reader that unsubscribes gets nothing more, and its connection closes', async () => {
    const { log, connections } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    await log.append(turnId, event(0));
    const before = await connections();
    const reader = subscribe(log.read(turnId, -1));
    await until(() => reader.got.length === 1);
    // The reader waits for the next entry (Redis: on a connection of its own).
    if (before !== undefined) await until(async () => (await connections()) === before + 1);
    reader.subscription.unsubscribe();
    if (before !== undefined) await until(async () => (await connections()) === before);
    await log.append(turnId, event(1));
    await log.append(turnId, end(2));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reader.got).toEqual([event(0)]);
    expect(reader.completed).toBe(false);
  });

  it('a reader that reads the end closes its connection', async () => {
    const { log, connections } = make();
    const turnId = freshTurn();
    await log.claim(turnId);
    const before = await connections();
    const reader = subscribe(log.read(turnId, -1));
    if (before !== undefined) await until(async () => (await connections()) === before + 1);
    await fill(log, turnId, 2, true);
    await until(() => reader.completed);
    if (before !== undefined) await until(async () => (await connections()) === before);
    expect(reader.got).toEqual([event(0), event(1), end(2)]);
  });
}

describe('memoryTurnLog', () => {
  expectNoLeftoverHandles(() => {});
  turnLogContract((options = {}) => {
    let now = 1_000_000;
    const log = memoryTurnLog<string>({ ...options, now: () => now });
    return {
      log,
      other: () => log,
      elapse: async (ms) => {
        now += ms;
      },
      connections: async () => undefined,
    };
  });

  it('keeps a turn that has not ended, however quiet: its run is alive in this process, and must not run twice', async () => {
    let now = 0;
    const log = memoryTurnLog<string>({ ttlMs: 100, now: () => now });
    expect(await log.claim('quiet')).toBe(true);
    await log.append('quiet', event(0));
    now += 10_000;
    expect(await log.claim('quiet')).toBe(false);
    expect(await all(log.read('quiet', -1).pipe(take(1)))).toEqual([event(0)]);
  });

  it('keeps exactly maxEntries per turn, its end among them, each with its seq', async () => {
    const log = memoryTurnLog<string>({ maxEntries: 1 });
    await log.claim('short');
    await fill(log, 'short', 3);
    expect(await all(log.read('short', 1).pipe(take(1)))).toEqual([event(2)]);
    await expect(all(log.read('short', 0))).rejects.toMatchObject({ code: 'turn-trimmed' });
    await log.append('short', end(3));
    // Only the end is left: a reader of the last event gets it, one that had it gets nothing more.
    expect(await all(log.read('short', 2))).toEqual([end(3)]);
    expect(await all(log.read('short', 3))).toEqual([]);
    await expect(all(log.read('short', 1))).rejects.toMatchObject({ code: 'turn-trimmed' });

    const three = memoryTurnLog<string>({ maxEntries: 3 });
    await three.claim('t');
    await fill(three, 't', 5, true);
    expect(await all(three.read('t', 2))).toEqual([event(3), event(4), end(5)]);
    await expect(all(three.read('t', 1))).rejects.toMatchObject({ code: 'turn-trimmed' });
  });

  it('a reader of a running turn gets the events the log holds, then each appended one, once', async () => {
    const log = memoryTurnLog<string>();
    await log.claim('live');
    await fill(log, 'live', 2);
    const got: TurnLogEntry<string>[] = [];
    const reading = log.read('live', 0).subscribe((entry) => {
      got.push(entry);
      // A second reader that starts while an entry is delivered has that entry from what the log holds.
      if (entry.seq === 2)
        log.read('live', 1).subscribe((second) => got.push({ ...second, seq: -second.seq }));
    });
    await log.append('live', event(2));
    await log.append('live', end(3));
    reading.unsubscribe();
    expect(got).toEqual([
      event(1),
      event(2),
      { seq: -2, event: 'e2' },
      end(3),
      { seq: -3, end: 'completed' },
    ]);
  });
});

describe.skipIf(redisTests.skip)('redisTurnLog', { timeout: 20_000 }, () => {
  let server: RedisServer;
  let client: Redis;
  let admin: Redis;
  /** The clients a test opened beyond the shared ones: closed after it. */
  const opened: Redis[] = [];
  let prefixes = 0;

  beforeAll(async () => {
    server = await startRedisServer({ persistence: 'none' });
    client = server.client();
    admin = server.client();
  });
  afterAll(async () => {
    await server?.stop();
  });
  expectNoLeftoverHandles(async () => {
    await Promise.all(opened.splice(0).map((c) => c.quit()));
  });

  const connections = async () =>
    String(await admin.client('LIST'))
      .trim()
      .split('\n').length;

  const make = (options: LogOptions = {}): Harness => {
    const prefix = `test-${++prefixes}`;
    return {
      log: redisTurnLog<string>({ client, prefix, ...options }),
      other: () => {
        const c = server.client();
        opened.push(c);
        return redisTurnLog<string>({ client: c, prefix, ...options });
      },
      elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      connections,
    };
  };

  turnLogContract(make);

  describe('on Redis Streams', () => {
    it('keeps a turn as a stream of JSON entries with ids 0-<seq+1>, and its claim, both expiring', async () => {
      const log = redisTurnLog<string>({ client, prefix: 'layout', ttlMs: 60_000 });
      await log.claim('turn:1');
      const stream = 'layout:{turn%3A1}';
      // The state, and the claimer's token.
      const owner = await client.get(`${stream}:owner`);
      expect(owner).toMatch(/^running:[0-9a-f-]{36}$/);
      await fill(log, 'turn:1', 2, true);
      expect(await client.xrange(stream, '-', '+')).toEqual([
        ['0-1', ['entry', '{"event":"e0"}']],
        ['0-2', ['entry', '{"event":"e1"}']],
        ['0-3', ['entry', '{"end":"completed"}']],
      ]);
      expect(await client.get(`${stream}:owner`)).toBe(owner?.replace('running', 'ended'));
      for (const key of [stream, `${stream}:owner`]) {
        const ttl = await client.pttl(key);
        expect(ttl).toBeGreaterThan(50_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
    });

    it('keeps about maxEntries per turn (MAXLEN ~)', async () => {
      const log = redisTurnLog<string>({ client, prefix: 'trim', maxEntries: 100 });
      await log.claim('t');
      await fill(log, 't', 1_000);
      const length = await client.xlen('trim:{t}');
      expect(length).toBeGreaterThanOrEqual(100);
      expect(length).toBeLessThan(300);
    });

    it('tells apart turn ids that would meet in a key', async () => {
      const log = redisTurnLog<string>({ client, prefix: 'ids' });
      expect(await log.claim('a')).toBe(true);
      expect(await log.claim('a}:owner')).toBe(true);
      expect(await log.claim('a:owner')).toBe(true);
      expect(await log.claim('a')).toBe(false);
    });

    it('blocking readers never block the shared client, and a reader after the end opens no connection', async () => {
      const log = redisTurnLog<string>({ client, prefix: 'shared' });
      const duplicates = vi.spyOn(client, 'duplicate');
      try {
        await log.claim('t');
        const readers = Array.from({ length: 5 }, () => subscribe(log.read('t', -1)));
        await until(() => duplicates.mock.calls.length === 5);
        const started = Date.now();
        await client.ping();
        await log.append('t', event(0));
        expect(Date.now() - started).toBeLessThan(1_000);
        await log.append('t', end(1));
        await until(() => readers.every((r) => r.completed));
        for (const r of readers) expect(r.got).toEqual([event(0), end(1)]);
        expect(await all(log.read('t', -1))).toEqual([event(0), end(1)]);
        expect(duplicates).toHaveBeenCalledTimes(5);
      } finally {
        duplicates.mockRestore();
      }
    });

    it('errors its readers with TransportError turn-not-found when the turn expires while they wait', async () => {
      const log = redisTurnLog<string>({ client, prefix: 'expiring', ttlMs: 300, blockMs: 100 });
      await log.claim('t');
      await log.append('t', event(0));
      const before = await connections();
      const reader = subscribe(log.read('t', -1));
      await until(() => reader.error !== undefined);
      expect(reader.got).toEqual([event(0)]);
      expect(reader.error).toBeInstanceOf(TransportError);
      expect(reader.error).toMatchObject({ code: 'turn-not-found' });
      await until(async () => (await connections()) === before);
    });

    it('gives up after commandTimeoutMs with TransportError turn-log-timeout, and never closes the client', async () => {
      const dead = new Redis({ port: await freePort(), lazyConnect: true, retryStrategy: () => 50 });
      dead.on('error', () => {});
      try {
        const log = redisTurnLog<string>({ client: dead, commandTimeoutMs: 200 });
        const started = Date.now();
        const error = await log.claim('t').catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TransportError);
        expect(error).toMatchObject({ code: 'turn-log-timeout' });
        expect(error).toMatchObject({ operation: 'claim', timeoutMs: 200, retryable: true });
        expect(Date.now() - started).toBeLessThan(2_000);
        await expect(all(log.read('t', -1))).rejects.toMatchObject({
          name: 'TransportError',
          code: 'turn-log-timeout',
          operation: 'read',
        });
        await expect(log.append('t', event(0))).rejects.toMatchObject({ operation: 'append' });
      } finally {
        dead.disconnect();
      }
      expect(client.status).toBe('ready');
    });

    it('validates its options', () => {
      expect(() => redisTurnLog({ client, maxEntries: 0 })).toThrow(UsageError);
      expect(() => redisTurnLog({ client, ttlMs: 0 })).toThrow(UsageError);
      expect(() => redisTurnLog({ client, blockMs: Number.POSITIVE_INFINITY })).toThrow(UsageError);
      expect(() => redisTurnLog({ client, commandTimeoutMs: -1 })).toThrow(UsageError);
    });
  });
});
