// Model-based: random sequences of operations (several keys, several holders, lease expiry, holders that crash, a
// fake clock that jumps past leases and retentions and lands on their exact ends) run against the ledger rules used
// as the model, and against every ledger on its real store: MemoryEffectLedger, SqliteEffectLedger on a SQLite
// file, RedisEffectLedger on a redis-server and PostgresEffectLedger on a PostgreSQL server, started for this
// file. Every answer must be the model's. Tokens are random per ledger, so each is named by the order in which it
// was handed out (t0, t1…): the same name in every ledger, if they agree.
//
// Each holder works through a connection of its own (a SQLite handle, a Redis client, a PostgreSQL pool), as a
// process of its own would; a crash drops that connection and the tokens the holder had, and a new one takes its
// place. The durable ledgers are given the fake clock through their `now` option, so that leases and retention run
// on the same clock as the model's.
//
// A failure names the seed and the shrunk sequence; LEDGER_MODEL_SEED=<seed> replays the same runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClaimResult, EffectError, type EffectRecord, MemoryEffectLedger } from 'cleanturn/effects';
import { PostgresEffectLedger } from 'cleanturn/effects/postgres';
import { RedisEffectLedger, type RedisEffectLedgerOptions } from 'cleanturn/effects/redis';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { leaseLostError } from '../../src/effects/errors.js';
import { decide, isSettled, type LedgerOperation, type StoredRecord } from '../../src/effects/ledgerRules.js';
import type { Awaitable, SerializedError } from '../../src/effects/types.js';
import { type PostgresServer, postgresTests, startPostgresServer } from './postgresServer.js';
import { type RedisServer, redisTests, startRedisServer } from './redisServer.js';

// Durations in milliseconds of the fake clock. They are long enough (seconds) that a store's own clock, should
// it still keep one (a TTL that Redis counts in real time), cannot overtake the fake one within a run.
const RETENTION_MS = 2_000;
const LEASES = [10, 200, 1_000];
const KEYS = ['k0', 'k1'];
const HOLDERS = 3;
/** Runs per store: a few seconds each on the network stores. LEDGER_MODEL_RUNS=<n> runs more, for a soak. */
const SOAK = process.env.LEDGER_MODEL_RUNS === undefined ? undefined : Number(process.env.LEDGER_MODEL_RUNS);
const RUNS = { memory: SOAK ?? 500, sqlite: SOAK ?? 500, redis: SOAK ?? 300, postgres: SOAK ?? 200 };
/** LEDGER_MODEL_SEED=<seed> replays a failure; otherwise every run of the suite draws new sequences. */
const SEED = process.env.LEDGER_MODEL_SEED === undefined ? undefined : Number(process.env.LEDGER_MODEL_SEED);

/**
 * How the clock moves before a command: by some milliseconds, or to the end of the command's key's lease or
 * retention in the model, plus `delta` (-1, 0 or 1 ms: just before, on, just after the edge), if that is ahead.
 */
type Advance = number | { edge: 'lease' | 'retention'; delta: number };

type Command =
  | { op: 'claim'; key: number; holder: number; leaseMs: number; advance: Advance }
  | { op: 'complete'; key: number; holder: number; result: number | undefined; advance: Advance }
  | { op: 'fail' | 'release' | 'get' | 'seen'; key: number; holder: number; advance: Advance }
  | { op: 'renew'; key: number; holder: number; leaseMs: number; advance: Advance }
  /** The holder vanishes with its tokens; for the stores with connections, its connection is dropped. */
  | { op: 'crash'; key: number; holder: number; advance: Advance };

/** What a holder can ask: every ledger's surface, synchronous or not. */
interface Ledger {
  claim(scope: string, key: string, options: { leaseMs: number }): Awaitable<ClaimResult>;
  complete(scope: string, key: string, token: string, result: unknown): Awaitable<void>;
  fail(scope: string, key: string, token: string, error: SerializedError): Awaitable<void>;
  release(scope: string, key: string, token: string): Awaitable<void>;
  renew?(scope: string, key: string, token: string, leaseMs: number): Awaitable<boolean>;
  get(scope: string, key: string): Awaitable<EffectRecord | undefined>;
  /** The synchronous ledgers' `seen`; the others answer it through `get`. */
  seen?(scope: string): { has(key: string): boolean };
}

/** What one holder works through, and how it vanishes. */
interface Connection {
  ledger: Ledger;
  /** Drops the connection as a crash would: nothing is settled on the way out. */
  drop(): Awaitable<void>;
}

/** A store under test. */
interface Store {
  /** A new connection to the same records. */
  connect(): Awaitable<Connection>;
  /** Whether every answer must be synchronous (the in-memory and SQLite ledgers, with no lock contention). */
  synchronous: boolean;
}

/** The model: a map of stored records and the rules, nothing else; tokens `model-0`, `model-1`… */
function model(): { ledger: Ledger; record(key: string): StoredRecord | undefined } {
  const records = new Map<string, StoredRecord>();
  let tokens = 0;
  const run = <A>(key: string, operation: LedgerOperation): A => {
    const { answer, write } = decide(records.get(key), Date.now(), operation);
    if (write.type === 'put') records.set(key, write.record);
    if (write.type === 'delete') records.delete(key);
    return answer as A;
  };
  const settled = (key: string, operation: LedgerOperation) => {
    if (run(key, operation) === 'lease-lost') throw leaseLostError('model', key);
  };
  const retentionMs = RETENTION_MS;
  return {
    record: (key) => records.get(key),
    ledger: {
      claim: (_, key, { leaseMs }) =>
        run(key, { type: 'claim', token: `model-${tokens++}`, leaseMs, retentionMs }),
      complete: (_, key, token, result) =>
        settled(key, {
          type: 'complete',
          token,
          payload: result === undefined ? undefined : JSON.stringify(result),
          retentionMs,
        }),
      fail: (_, key, token, error) => settled(key, { type: 'fail', token, error, retentionMs }),
      release: (_, key, token) => settled(key, { type: 'release', token }),
      renew: (_, key, token, leaseMs) => run(key, { type: 'renew', token, leaseMs, retentionMs }),
      get: (_, key) => run(key, { type: 'get' }),
      seen: () => ({ has: (key) => isSettled(records.get(key), Date.now()) }),
    },
  };
}

const FAILURE: SerializedError = { name: 'DeclinedError', message: 'declined', retryable: false, code: 7 };

/** Calls the ledger for one command that is not a claim, a crash or an expiry. */
function answerOf(
  ledger: Ledger,
  scope: string,
  key: string,
  token: string,
  command: Command,
): Awaitable<unknown> {
  switch (command.op) {
    case 'complete':
      return ledger.complete(
        scope,
        key,
        token,
        command.result === undefined ? undefined : { n: command.result },
      );
    case 'fail':
      return ledger.fail(scope, key, token, { ...FAILURE, message: `no ${key}` });
    case 'release':
      return ledger.release(scope, key, token);
    case 'renew':
      if (ledger.renew === undefined) throw new Error('the ledger has no renew');
      return ledger.renew(scope, key, token, command.leaseMs);
    case 'get':
      return ledger.get(scope, key);
    case 'seen':
      if (ledger.seen !== undefined) return ledger.seen(scope).has(key);
      return thenDo(ledger.get(scope, key), (record) => record !== undefined && record.status !== 'claimed');
    default:
      throw new Error(`not a call: ${command.op}`);
  }
}

function thenDo<T, R>(value: Awaitable<T>, next: (value: T) => R): Awaitable<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/**
 * Plays the commands on a store, each at the time `clock` gives it, and answers every command's outcome, tokens
 * named by the order in which they were handed out.
 */
async function play(
  store: Store,
  connections: Connection[],
  scope: string,
  commands: Command[],
  clock: (index: number, command: Command) => number,
): Promise<unknown[]> {
  const names = new Map<string, string>();
  const holders: (string | undefined)[][] = Array.from({ length: HOLDERS }, () => []);
  const name = (token: string) => names.get(token) ?? `unknown token ${token}`;
  const answers: unknown[] = [];
  const settle = async (call: () => Awaitable<unknown>) => {
    try {
      await awaited(call());
      return 'done';
    } catch (error) {
      if (error instanceof EffectError && error.code === 'lease-lost') return 'lease-lost';
      throw error;
    }
  };
  const awaited = async (reply: Awaitable<unknown>) => {
    if (store.synchronous && reply instanceof Promise) {
      throw new Error('expected a synchronous answer: nobody else holds the lock');
    }
    return await reply;
  };
  for (const [index, command] of commands.entries()) {
    vi.setSystemTime(clock(index, command));
    const key = KEYS[command.key] as string;
    const holds = holders[command.holder] as (string | undefined)[];
    const { ledger } = connections[command.holder] as Connection;
    const token = holds[command.key] ?? 'a-token-nobody-was-given';
    switch (command.op) {
      case 'claim': {
        const answer = (await awaited(ledger.claim(scope, key, { leaseMs: command.leaseMs }))) as ClaimResult;
        if (answer.status === 'claimed') {
          names.set(answer.token, `t${names.size}`);
          holds[command.key] = answer.token;
          answers.push({ ...answer, token: name(answer.token) });
        } else answers.push(answer);
        break;
      }
      case 'crash':
        await (connections[command.holder] as Connection).drop();
        connections[command.holder] = await store.connect();
        holders[command.holder] = [];
        answers.push('crashed');
        break;
      case 'complete':
      case 'fail':
      case 'release':
        answers.push(await settle(() => answerOf(ledger, scope, key, token, command)));
        break;
      case 'get': {
        const record = (await awaited(answerOf(ledger, scope, key, token, command))) as
          | EffectRecord
          | undefined;
        answers.push(record === undefined ? undefined : { ...record, token: name(record.token) });
        break;
      }
      default:
        answers.push(await awaited(answerOf(ledger, scope, key, token, command)));
    }
  }
  return answers;
}

/**
 * Plays the commands on the model from `start`: its answers, and where each command left the clock (an edge of
 * the command's key is read from the model just before the command).
 */
async function playModel(
  commands: Command[],
  start: number,
): Promise<{ expected: unknown[]; times: number[] }> {
  const { ledger, record } = model();
  // One process: every holder shares the model, and a crash only forgets the holder's tokens.
  const connection: Connection = { ledger, drop: () => {} };
  const times: number[] = [];
  let now = start;
  const expected = await play(
    { synchronous: true, connect: () => connection },
    Array.from({ length: HOLDERS }, () => connection),
    'model',
    commands,
    (_, command) => {
      const { advance } = command;
      if (typeof advance === 'number') now += advance;
      else {
        const stored = record(KEYS[command.key] as string);
        if (stored !== undefined) {
          now = Math.max(
            now,
            (advance.edge === 'lease' ? stored.leaseUntil : stored.expiresAt) + advance.delta,
          );
        }
      }
      times.push(now);
      return now;
    },
  );
  return { expected, times };
}

/** The kind of an answer, to count which transitions the random sequences reached. */
function kind(command: Command, answer: unknown): string {
  if (answer === undefined) return `${command.op} none`;
  if (typeof answer !== 'object' || answer === null) return `${command.op} ${String(answer)}`;
  const { status, reclaimed } = answer as { status: string; reclaimed?: boolean };
  return `${command.op} ${reclaimed === true ? 'reclaimed' : status}`;
}

/** The transitions every store's sequences must reach, else the comparison proves little. */
const TRANSITIONS = [
  'claim claimed',
  'claim reclaimed',
  'claim in-progress',
  'claim completed',
  'claim failed',
  'complete done',
  'complete lease-lost',
  'fail done',
  'fail lease-lost',
  'release done',
  'release lease-lost',
  'renew true',
  'renew false',
  'get claimed',
  'get completed',
  'get failed',
  'get none',
  'seen true',
  'seen false',
  'crash crashed',
];

const base = {
  key: fc.nat(KEYS.length - 1),
  holder: fc.nat(HOLDERS - 1),
  advance: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.nat(1_500) },
    {
      weight: 2,
      arbitrary: fc.record({
        edge: fc.constantFrom('lease' as const, 'retention' as const),
        delta: fc.constantFrom(0, 0, -1, 1),
      }),
    },
  ) as fc.Arbitrary<Advance>,
};
const lease = fc.constantFrom(...LEASES);
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('claim' as const), leaseMs: lease, ...base }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('complete' as const),
      result: fc.option(fc.nat(), { nil: undefined }),
      ...base,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constantFrom('fail' as const, 'release' as const, 'get' as const, 'seen' as const),
      ...base,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('renew' as const), leaseMs: lease, ...base }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('crash' as const), ...base, advance: fc.constant(0) }),
  },
);

/**
 * The model test of one store: `numRuns` random sequences, each in a scope of its own on the same store, through
 * connections that outlive the runs (a crash replaces one).
 */
function describeModel(
  name: string,
  skip: boolean,
  numRuns: number,
  makeStore: () => Promise<Store> | Store,
) {
  describe.skipIf(skip)(`${name} follows the ledger rules`, { timeout: 120_000 }, () => {
    let store: Store;
    let connections: Connection[] = [];
    let runs = 0;

    beforeAll(async () => {
      store = await makeStore();
      connections = await Promise.all(Array.from({ length: HOLDERS }, () => store.connect()));
    }, 60_000);
    afterAll(async () => {
      await Promise.all(connections.map((c) => c.drop()));
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('gives the model’s answers to random operation sequences', async () => {
      // Only Date is faked: the clock jumps where the commands say, and nothing waits on it.
      vi.useFakeTimers({ toFake: ['Date'] });
      const reached = new Set<string>();
      // Drawn here, so that the coverage check below can name it too.
      const seed = SEED ?? Math.floor(Math.random() * 2 ** 31);
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), async (commands) => {
          // Each run starts later than every record of the runs before could live, in a scope of its own.
          const scope = `turn-${++runs}`;
          const { expected, times } = await playModel(commands, 4_000_000_000_000 + runs * 1_000_000);
          expect(await play(store, connections, scope, commands, (index) => times[index] as number)).toEqual(
            expected,
          );
          commands.forEach((command, index) => {
            reached.add(kind(command, expected[index]));
          });
        }),
        { numRuns, seed },
      );
      for (const wanted of TRANSITIONS) expect(reached, `LEDGER_MODEL_SEED=${seed}`).toContain(wanted);
    });
  });
}

describeModel('MemoryEffectLedger', false, RUNS.memory, () => {
  // One process: every holder shares the ledger, and a crash only forgets the holder's tokens.
  const ledger = new MemoryEffectLedger({ retentionMs: RETENTION_MS });
  return { synchronous: true, connect: () => ({ ledger, drop: () => {} }) };
});

describe('stores started for this file', () => {
  let dir: string;
  let redis: RedisServer | undefined;
  let postgres: PostgresServer | undefined;
  afterAll(async () => {
    await redis?.stop();
    await postgres?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  describeModel('SqliteEffectLedger', false, RUNS.sqlite, () => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-model-'));
    const database = join(dir, 'effects.db');
    return {
      synchronous: true,
      connect: () => {
        const ledger = new SqliteEffectLedger({ database, retentionMs: RETENTION_MS });
        return { ledger, drop: () => ledger.close() };
      },
    };
  });

  // RedisEffectLedger measures leases on the Redis server's clock (TIME) and lets PEXPIRE forget records on it.
  // This case needs its `now` option, which runs both on the fake clock; a ledger without it fails here.
  describeModel('RedisEffectLedger', redisTests.skip, RUNS.redis, async () => {
    redis = await startRedisServer();
    const server = redis;
    return {
      synchronous: false,
      connect: () => {
        const client = server.client();
        const options: RedisEffectLedgerOptions & { now: () => number } = {
          client,
          retentionMs: RETENTION_MS,
          now: () => Date.now(),
        };
        return { ledger: new RedisEffectLedger(options), drop: () => client.disconnect() };
      },
    };
  });

  describeModel('PostgresEffectLedger', postgresTests.skip, RUNS.postgres, async () => {
    postgres = await startPostgresServer();
    const server = postgres;
    return {
      synchronous: false,
      connect: () => {
        const pool: pg.Pool = server.pool({ max: 1 });
        const ledger = new PostgresEffectLedger({
          pool,
          table: 'model_effects',
          retentionMs: RETENTION_MS,
          now: () => Date.now(),
        });
        return { ledger, drop: () => pool.end() };
      },
    };
  });
});
