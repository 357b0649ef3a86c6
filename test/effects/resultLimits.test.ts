// Results that a ledger cannot store as they are: nested too deep (20,000 levels), too long for one JSON text,
// cyclic, or not JSON data. The check and the writer walk the result with an explicit stack, so no result can
// overflow the call stack; a result refused after its effect ran is recorded as failed once, and a rerun over the
// same SQLite file answers with that failure and never runs the handler again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EffectError,
  executeTools,
  MemoryEffectLedger,
  type ToolHandlers,
  type ToolResultEvent,
} from 'cleanturn/effects';
import { SqliteEffectLedger } from 'cleanturn/effects/sqlite';
import { call, helpDesk, keyed } from 'cleanturn/testing';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeResult, encodeResult } from '../../src/effects/json.js';

const turnId = 'turn-42';
const refund = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));

/** `levels` arrays inside each other around `leaf`. */
function nestedArrays(levels: number, leaf: unknown = 'leaf'): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** `levels` objects inside each other around `leaf`. */
function nestedObjects(levels: number, leaf: unknown = 'leaf'): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { inner: value };
  return value;
}

/** What `fn` throws (fails the test if it returns). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/**
 * Runs `fn` with only about `frames` small call frames of stack left, as code deep in a call chain would: recurses
 * until the stack is full, then calls `fn` on the way back, `frames` frames above the bottom.
 */
function withLittleStack<T>(frames: number, fn: () => T): T {
  let unwound = 0;
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  const down = (): void => {
    try {
      down();
    } catch (error) {
      // The stack overflowed below this frame; an error of `fn` passes on up.
      if (outcome !== undefined || !(error instanceof RangeError)) throw error;
      return;
    }
    if (outcome === undefined && ++unwound >= frames) {
      try {
        outcome = { ok: true, value: fn() };
      } catch (error) {
        outcome = { ok: false, error };
      }
    }
  };
  down();
  if (outcome === undefined) throw new Error('fn was not called');
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** The fewest free frames (of `withLittleStack`) that `fn` runs in: a measure of the stack it needs. */
function framesNeeded(fn: () => unknown): number {
  fn(); // compiled once, so that compiling does not count
  let low = 0;
  let high = 20_000;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    let ran: boolean;
    try {
      withLittleStack(middle, fn);
      ran = true;
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      ran = false;
    }
    if (ran) high = middle;
    else low = middle;
  }
  return high;
}

describe('encodeResult: results too deep, cyclic or not JSON data', () => {
  it('refuses a result nested 20,000 levels deep with EffectError unstorable-result, not a RangeError', () => {
    for (const deep of [nestedArrays(20_000), nestedObjects(20_000)]) {
      const error = thrown(() => encodeResult(deep));
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({ code: 'unstorable-result' });
      expect(error).toMatchObject({ retryable: false });
      expect((error as Error).message).toMatch(/nested deeper than 256 levels/);
    }
  });

  it('accepts 256 levels and gives back the same value', () => {
    for (const value of [nestedArrays(256), nestedObjects(256), nestedArrays(253, { a: [1, { b: null }] })]) {
      const text = encodeResult(value);
      expect(text).toBe(JSON.stringify(value));
      expect(decodeResult(text)).toEqual(value);
    }
    for (const nested of [nestedArrays(257), nestedObjects(257)]) {
      const error = thrown(() => encodeResult(nested));
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({ code: 'unstorable-result' });
    }
  });

  it('needs no more stack for 256 levels than for one: the walk does not recurse', () => {
    const growth = (write: (value: unknown) => unknown) =>
      framesNeeded(() => write(nestedArrays(256))) - framesNeeded(() => write(nestedArrays(1)));
    // The check can fail: JSON.stringify recurses, one native frame per level.
    expect(growth((value) => JSON.stringify(value))).toBeGreaterThan(100);
    expect(growth(encodeResult)).toBeLessThan(30);
  });

  it('finds a cycle 10,000 levels down without recursion, and names where it is', () => {
    const root: { next?: unknown } = {};
    let node = root;
    for (let i = 0; i < 10_000; i++) {
      const next = {};
      node.next = next;
      node = next;
    }
    (node as { next?: unknown }).next = root;
    const error = thrown(() => encodeResult(root));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'unstorable-result' });
    // The depth limit is met before the cycle: either way a typed error, never a RangeError.
    const shallow: Record<string, unknown> = { a: { b: [1] } };
    ((shallow.a as Record<string, unknown>).b as unknown[]).push(shallow);
    expect(thrown(() => encodeResult(shallow))).toMatchObject({ path: 'result.a.b[1]' });
    expect((thrown(() => encodeResult(shallow)) as Error).message).toContain('a cycle');
  });

  it('refuses a result whose JSON text would be longer than a string can be, with EffectError unstorable-result', () => {
    // 2 × 2^28 characters: past the longest string V8 can make (2^29 − 24).
    const half = 'x'.repeat(2 ** 28);
    const error = thrown(() => encodeResult([half, half]));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'unstorable-result' });
    expect(error).toMatchObject({ path: 'result' });
    expect((error as Error).message).toMatch(/too long/);
  });

  it('writes the same text as JSON.stringify for JSON data (member order kept)', () => {
    const values: unknown[] = [
      { z: 1, a: [true, false, null], m: { '\u2028': 'x', '': 'empty', 'say "hi"': '\ud800' } },
      [-0, 0.1, 1e21, -1e-7, Number.MAX_VALUE, 5e-324, 2 ** 64],
      'a lone string',
      42,
      null,
      { skipped: undefined, kept: 1 },
      Object.assign(Object.create(null), { b: 1, a: 2 }),
      JSON.parse('{"__proto__":{"x":1},"a":[{},[]]}'),
    ];
    for (const value of values) expect(encodeResult(value)).toBe(JSON.stringify(value));
  });
});

describe('ledgers store no result they cannot store', () => {
  let dir: string;
  const ledgers: SqliteEffectLedger[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cleanturn-result-limits-'));
  });
  afterEach(() => {
    for (const ledger of ledgers.splice(0)) ledger.close();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  let files = 0;
  function sqlite(file = join(dir, `effects-${++files}.db`)) {
    const ledger = new SqliteEffectLedger({ database: file });
    ledgers.push(ledger);
    return { ledger, file };
  }

  for (const [name, make] of [
    ['MemoryEffectLedger', () => new MemoryEffectLedger()],
    ['SqliteEffectLedger', () => sqlite().ledger],
  ] as const) {
    it(`${name}: complete() with a result 20,000 levels deep throws EffectError unstorable-result and leaves the claim`, async () => {
      const ledger = make();
      const claim = await ledger.claim(turnId, 'k1', { leaseMs: 60_000 });
      if (claim.status !== 'claimed') throw new Error('expected a claim');
      const error = thrown(() => ledger.complete(turnId, 'k1', claim.token, nestedObjects(20_000)));
      expect(error).toBeInstanceOf(EffectError);
      expect(error).toMatchObject({ code: 'unstorable-result' });
      expect(await ledger.get(turnId, 'k1')).toMatchObject({ status: 'claimed' });
      // The holder can still record the failure.
      await ledger.fail(turnId, 'k1', claim.token, {
        name: 'EffectError',
        code: 'unstorable-result',
        message: 'x',
        retryable: false,
      });
      expect(await ledger.get(turnId, 'k1')).toMatchObject({ status: 'failed' });
    });
  }

  it("SqliteEffectLedger: a result past SQLite's limit (10^9 bytes of UTF-8, past better-sqlite3's too) is an unstorable-result error, the claim stays", async () => {
    const { ledger } = sqlite();
    const claim = await ledger.claim(turnId, 'k-big', { leaseMs: 60_000 });
    if (claim.status !== 'claimed') throw new Error('expected a claim');
    // 500,000,001 × 'é': one byte each in memory, two in UTF-8.
    const error = thrown(() => ledger.complete(turnId, 'k-big', claim.token, 'é'.repeat(500_000_001)));
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ code: 'unstorable-result' });
    expect((error as Error).message).toMatch(/too big for the SQLite ledger/);
    expect(ledger.get(turnId, 'k-big')).toMatchObject({ status: 'claimed' });
  }, 60_000);

  it('executeTools over a SQLite file: a result 20,000 levels deep is recorded as failed once; a rerun replays the failure', async () => {
    const { ledger, file } = sqlite();
    let runs = 0;
    const handlers: ToolHandlers = {
      issue_refund: async () => {
        runs++;
        return nestedArrays(20_000, { refund_id: 're_7781' });
      },
    };
    const execute = (l: SqliteEffectLedger) =>
      lastValueFrom(
        from([refund]).pipe(executeTools(handlers, { turnId, ledger: l, leaseMs: 50 }), toArray()),
      );

    const first = await execute(ledger);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      outcome: 'failed',
      replayed: false,
      error: { name: 'EffectError', code: 'unstorable-result', retryable: false },
    });
    expect((first[0] as { cause?: unknown }).cause).toBeInstanceOf(EffectError);
    expect((first[0] as { cause?: unknown }).cause).toMatchObject({ code: 'unstorable-result' });
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'failed' });

    // The rerun: another process opens the same file after the first one finished (past the first one's lease).
    ledger.close();
    await new Promise((resolve) => setTimeout(resolve, 80));
    const restarted = sqlite(file).ledger;
    const second: ToolResultEvent[] = await execute(restarted);
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({
      outcome: 'failed',
      replayed: true,
      error: { name: 'EffectError', code: 'unstorable-result', retryable: false },
    });
    expect(runs).toBe(1);
  });
});
