// Model-based: random sequences of operations (several keys, several holders, a fake clock that jumps past leases
// and retentions) run against the ledger rules used as the model, against MemoryEffectLedger and against
// SqliteEffectLedger on a real SQLite file, and every answer must be the same. Tokens are random per ledger, so
// each is named by the order in which it was handed out (t0, t1…): the same name in every ledger, if they agree.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  decide,
  type EffectRecord,
  isSettled,
  LeaseLostError,
  MemoryEffectLedger,
  type SerializedError,
  type StoredRecord,
} from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

const RETENTION_MS = 200;
const KEYS = ['k0', 'k1', 'k2'];
const HOLDERS = 3;

type Command =
  | { op: 'claim'; key: number; holder: number; leaseMs: number; advance: number }
  | { op: 'complete'; key: number; holder: number; result: number | undefined; advance: number }
  | { op: 'fail'; key: number; holder: number; advance: number }
  | { op: 'release' | 'get' | 'seen'; key: number; holder: number; advance: number }
  | { op: 'renew'; key: number; holder: number; leaseMs: number; advance: number };

/** The same ledger surface for the model and both adapters, answering synchronously (no lock contention here). */
interface Subject {
  claim(key: string, leaseMs: number): ReturnType<MemoryEffectLedger['claim']>;
  complete(key: string, token: string, result: unknown): void;
  fail(key: string, token: string, error: SerializedError): void;
  release(key: string, token: string): void;
  renew(key: string, token: string, leaseMs: number): boolean;
  get(key: string): EffectRecord | undefined;
  seen(key: string): boolean;
}

/** The model: a map of stored records and the rules, nothing else. */
function model(): Subject {
  const records = new Map<string, StoredRecord>();
  let tokens = 0;
  const run = <A>(key: string, decision: { answer: A; write: ReturnType<typeof decide>['write'] }): A => {
    if (decision.write.type === 'put') records.set(key, decision.write.record);
    if (decision.write.type === 'delete') records.delete(key);
    return decision.answer;
  };
  const lost = (answer: string, key: string) => {
    if (answer === 'lease-lost') throw new LeaseLostError('model', key);
  };
  return {
    claim: (key, leaseMs) =>
      run(
        key,
        decide(records.get(key), Date.now(), {
          type: 'claim',
          token: `model-${tokens++}`,
          leaseMs,
          retentionMs: RETENTION_MS,
        }),
      ),
    complete: (key, token, result) =>
      lost(
        run(
          key,
          decide(records.get(key), Date.now(), {
            type: 'complete',
            token,
            payload: result === undefined ? undefined : JSON.stringify(result),
            retentionMs: RETENTION_MS,
          }),
        ),
        key,
      ),
    fail: (key, token, error) =>
      lost(
        run(
          key,
          decide(records.get(key), Date.now(), { type: 'fail', token, error, retentionMs: RETENTION_MS }),
        ),
        key,
      ),
    release: (key, token) =>
      lost(run(key, decide(records.get(key), Date.now(), { type: 'release', token })), key),
    renew: (key, token, leaseMs) =>
      run(
        key,
        decide(records.get(key), Date.now(), { type: 'renew', token, leaseMs, retentionMs: RETENTION_MS }),
      ),
    get: (key) => decide(records.get(key), Date.now(), { type: 'get' }).answer,
    seen: (key) => isSettled(records.get(key), Date.now()),
  };
}

/** A ledger of the SyncEffectLedger shape (SQLite answers synchronously while nobody else holds the lock). */
interface Ledger {
  claim(scope: string, key: string, options: { leaseMs: number }): unknown;
  complete(scope: string, key: string, token: string, result: unknown): unknown;
  fail(scope: string, key: string, token: string, error: SerializedError): unknown;
  release(scope: string, key: string, token: string): unknown;
  renew(scope: string, key: string, token: string, leaseMs: number): unknown;
  get(scope: string, key: string): EffectRecord | undefined;
  seen(scope: string): { has(key: string): boolean };
}

function sync<T>(value: unknown): T {
  if (value instanceof Promise) throw new Error('expected a synchronous answer: nobody else holds the lock');
  return value as T;
}

function adapter(ledger: Ledger, scope: string): Subject {
  return {
    claim: (key, leaseMs) => sync(ledger.claim(scope, key, { leaseMs })),
    complete: (key, token, result) => sync(ledger.complete(scope, key, token, result)),
    fail: (key, token, error) => sync(ledger.fail(scope, key, token, error)),
    release: (key, token) => sync(ledger.release(scope, key, token)),
    renew: (key, token, leaseMs) => sync(ledger.renew(scope, key, token, leaseMs)),
    get: (key) => ledger.get(scope, key),
    seen: (key) => ledger.seen(scope).has(key),
  };
}

/** Runs a subject through the commands from `start`, and gives back every answer with tokens named by order. */
function play(subject: Subject, commands: Command[], start: number): unknown[] {
  const names = new Map<string, string>();
  const held: (string | undefined)[][] = Array.from({ length: HOLDERS }, () => []);
  const name = (token: string) => names.get(token) ?? `unknown token ${token}`;
  const answers: unknown[] = [];
  let now = start;
  vi.setSystemTime(now);
  for (const command of commands) {
    now += command.advance;
    vi.setSystemTime(now);
    const key = KEYS[command.key] as string;
    const holds = held[command.holder] as (string | undefined)[];
    const token = holds[command.key] ?? 'a-token-nobody-was-given';
    const settle = (write: () => void) => {
      try {
        write();
        return 'done';
      } catch (error) {
        if (error instanceof LeaseLostError) return 'lease-lost';
        throw error;
      }
    };
    switch (command.op) {
      case 'claim': {
        const answer = subject.claim(key, command.leaseMs);
        if (answer.status === 'claimed') {
          names.set(answer.token, `t${names.size}`);
          holds[command.key] = answer.token;
          answers.push({ ...answer, token: name(answer.token) });
        } else answers.push(answer);
        break;
      }
      case 'complete':
        answers.push(
          settle(() =>
            subject.complete(key, token, command.result === undefined ? undefined : { n: command.result }),
          ),
        );
        break;
      case 'fail':
        answers.push(
          settle(() =>
            subject.fail(key, token, {
              name: 'DeclinedError',
              message: `no ${key}`,
              retryable: false,
              code: 7,
            }),
          ),
        );
        break;
      case 'release':
        answers.push(settle(() => subject.release(key, token)));
        break;
      case 'renew':
        answers.push(subject.renew(key, token, command.leaseMs));
        break;
      case 'get': {
        const record = subject.get(key);
        answers.push(record === undefined ? undefined : { ...record, token: name(record.token) });
        break;
      }
      case 'seen':
        answers.push(subject.seen(key));
        break;
    }
  }
  return answers;
}

/** The kind of an answer, to count which transitions the random sequences reached. */
function kind(command: Command, answer: unknown): string {
  if (answer === undefined) return `${command.op} none`;
  if (typeof answer !== 'object' || answer === null) return `${command.op} ${String(answer)}`;
  const { status, reclaimed } = answer as { status: string; reclaimed?: boolean };
  return `${command.op} ${reclaimed === true ? 'reclaimed' : status}`;
}

const base = {
  key: fc.nat(KEYS.length - 1),
  holder: fc.nat(HOLDERS - 1),
  advance: fc.oneof(fc.constant(0), fc.nat(150)),
};
const lease = fc.constantFrom(1, 20, 100);
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ op: fc.constant('claim' as const), leaseMs: lease, ...base }),
  fc.record({
    op: fc.constant('complete' as const),
    result: fc.option(fc.nat(), { nil: undefined }),
    ...base,
  }),
  fc.record({ op: fc.constant('fail' as const), ...base }),
  fc.record({ op: fc.constantFrom('release' as const, 'get' as const, 'seen' as const), ...base }),
  fc.record({ op: fc.constant('renew' as const), leaseMs: lease, ...base }),
);

describe('the ledger rules as a model of MemoryEffectLedger and SqliteEffectLedger', () => {
  let dir: string;
  let sqlite: SqliteEffectLedger;
  let runs = 0;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-model-'));
    sqlite = new SqliteEffectLedger({ database: join(dir, 'effects.db'), retentionMs: RETENTION_MS });
  });
  afterAll(() => {
    sqlite?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gives the same answers to random operation sequences', () => {
    // Only Date is faked: the clock jumps where the commands say, and nothing waits on it.
    vi.useFakeTimers({ toFake: ['Date'] });
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 40 }), (commands) => {
        // Each run starts later than every record of the runs before could live, in a scope of its own.
        const start = 1_700_000_000_000 + ++runs * 1_000_000;
        const expected = play(model(), commands, start);
        expect(
          play(adapter(new MemoryEffectLedger({ retentionMs: RETENTION_MS }), 'turn'), commands, start),
        ).toEqual(expected);
        expect(play(adapter(sqlite, `turn-${runs}`), commands, start)).toEqual(expected);
        commands.forEach((command, index) => {
          seen.add(kind(command, expected[index]));
        });
      }),
      { numRuns: 200 },
    );
    // The sequences reached every transition that matters (else the comparison above proves little).
    for (const wanted of [
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
    ]) {
      expect(seen).toContain(wanted);
    }
  });
});
