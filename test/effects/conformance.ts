// The promises of an effect ledger (see EffectLedger in src/effects/types.ts), as one suite that every ledger
// runs. Time-dependent cases use short leases and retentions and wait for the condition, never for a fixed time.
import { type ClaimResult, EffectError, type EffectLedger } from 'cleanturn/effects';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SerializedError } from '../../src/effects/types.js';

/** One store of records, reachable through several handles (connections), as several processes reach it. */
export interface LedgerStore {
  /** A new handle on the same records (a new connection, where the ledger has connections). */
  open(): EffectLedger;
  /** Closes every handle and removes the store. */
  close(): Promise<void> | void;
}

/** Makes a fresh, empty store with the given retention. */
export type MakeStore = (options: { retentionMs: number }) => LedgerStore | Promise<LedgerStore>;

/** Resolves once `condition` holds, asking every 20 ms. The test's own timeout bounds the wait. */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** What `call` rejects (or throws) with; it fails the test when `call` succeeds. */
export async function rejection(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const DAY = 24 * 60 * 60 * 1000;
const LONG = { leaseMs: 60_000 };
const SHORT = { leaseMs: 150 };
const declined: SerializedError = {
  name: 'CardDeclinedError',
  message: 'card declined',
  retryable: false,
  code: 'card_declined',
};

let scopes = 0;
/** A scope no other test uses. */
const freshScope = () => `turn-${process.pid}-${Date.now()}-${++scopes}`;

function expectClaimed(result: ClaimResult): string {
  expect(result).toEqual({ status: 'claimed', token: expect.any(String), reclaimed: false });
  return (result as { token: string }).token;
}

export function describeLedgerConformance(name: string, makeStore: MakeStore): void {
  describe(`${name}: effect ledger conformance`, () => {
    let store: LedgerStore;
    let a: EffectLedger;
    let b: EffectLedger;
    const key = '9f2c4be1a0d37e55';

    beforeAll(async () => {
      store = await makeStore({ retentionMs: DAY });
      a = store.open();
      b = store.open();
    });
    afterAll(async () => {
      await store?.close();
    });

    it('has no record for a key never claimed', async () => {
      expect(await a.get(freshScope(), key)).toBeUndefined();
    });

    it('first claim wins; a second caller is told the effect is in progress, until when', async () => {
      const scope = freshScope();
      const before = Date.now();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      const second = await b.claim(scope, key, LONG);
      expect(second).toEqual({ status: 'in-progress', until: expect.any(Number) });
      expect((second as { until: number }).until).toBeGreaterThan(before);
      expect(await b.get(scope, key)).toEqual({
        status: 'claimed',
        token,
        leaseUntil: expect.any(Number),
        expiresAt: expect.any(Number),
      });
    });

    it('completes, then replays the stored result to every later caller', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      const result = { refund_id: 're_1', amount: 4999, currency: 'eur', items: [1, 'two', null, true] };
      await a.complete(scope, key, token, result);
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'completed', result });
      expect(await a.claim(scope, key, LONG)).toEqual({ status: 'completed', result });
      expect(await b.get(scope, key)).toEqual({
        status: 'completed',
        token,
        result,
        expiresAt: expect.any(Number),
      });
    });

    it('stores "no result" as such', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      await a.complete(scope, key, token, undefined);
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'completed', result: undefined });
      const nothing = freshScope();
      const t2 = expectClaimed(await a.claim(nothing, key, LONG));
      await a.complete(nothing, key, t2, null);
      expect(await b.claim(nothing, key, LONG)).toEqual({ status: 'completed', result: null });
    });

    it('fail records the error, and later claims replay it instead of running again', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      await a.fail(scope, key, token, declined);
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'failed', error: declined });
      expect(await b.get(scope, key)).toEqual({
        status: 'failed',
        token,
        error: declined,
        expiresAt: expect.any(Number),
      });
    });

    it('release deletes the claim, so that the next caller runs the effect again', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      await a.release(scope, key, token);
      expect(await b.get(scope, key)).toBeUndefined();
      const again = expectClaimed(await b.claim(scope, key, LONG));
      expect(again).not.toBe(token);
      await a.release(freshScope(), key, 'no-such-token'); // absent: nothing to do
    });

    it('an expired lease lets a new holder in, with a new token and reclaimed: true', async () => {
      const scope = freshScope();
      const first = expectClaimed(await a.claim(scope, key, SHORT));
      expect((await b.claim(scope, key, SHORT)).status).toBe('in-progress');
      let taken: ClaimResult | undefined;
      await until(async () => {
        taken = await b.claim(scope, key, LONG);
        return taken.status !== 'in-progress';
      });
      expect(taken).toEqual({ status: 'claimed', token: expect.any(String), reclaimed: true });
      expect((taken as { token: string }).token).not.toBe(first);
      expect((await a.claim(scope, key, LONG)).status).toBe('in-progress');
    });

    it('fences off the stale holder: its complete, fail and release are rejected; the new holder wins', async () => {
      const scope = freshScope();
      const stale = expectClaimed(await a.claim(scope, key, SHORT));
      let fresh: ClaimResult | undefined;
      await until(async () => {
        fresh = await b.claim(scope, key, LONG);
        return fresh.status === 'claimed';
      });
      const token = (fresh as { token: string }).token;

      for (const write of [
        () => a.complete(scope, key, stale, { refund_id: 're_stale' }),
        () => a.fail(scope, key, stale, declined),
        () => a.release(scope, key, stale),
      ]) {
        const error = await rejection(write);
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({ code: 'lease-lost' });
        expect(error).toMatchObject({ scope, key, retryable: false });
      }
      expect(await a.get(scope, key)).toMatchObject({ status: 'claimed', token });

      await b.complete(scope, key, token, { refund_id: 're_fresh' });
      const fenced = await rejection(() => a.complete(scope, key, stale, { refund_id: 're_stale' }));
      expect(fenced).toBeInstanceOf(EffectError);
      expect(fenced).toMatchObject({ code: 'lease-lost' });
      expect(await a.claim(scope, key, LONG)).toEqual({
        status: 'completed',
        result: { refund_id: 're_fresh' },
      });
    });

    it('lets a holder whose lease expired complete while nobody else has claimed', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, SHORT));
      await until(async () => {
        const record = await b.get(scope, key);
        return record?.status === 'claimed' && record.leaseUntil <= Date.now();
      });
      await a.complete(scope, key, token, { late: true });
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'completed', result: { late: true } });
    });

    it('a settled record cannot be released', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      await a.complete(scope, key, token, 1);
      const fenced = await rejection(() => a.release(scope, key, token));
      expect(fenced).toBeInstanceOf(EffectError);
      expect(fenced).toMatchObject({ code: 'lease-lost' });
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'completed', result: 1 });
    });

    it('keeps the same key in different scopes (turn ids) apart', async () => {
      const [s1, s2] = [freshScope(), freshScope()];
      const t1 = expectClaimed(await a.claim(s1, key, LONG));
      const t2 = expectClaimed(await b.claim(s2, key, LONG));
      await a.complete(s1, key, t1, 'first');
      expect(await b.get(s2, key)).toMatchObject({ status: 'claimed', token: t2 });
      await b.complete(s2, key, t2, 'second');
      expect(await a.claim(s1, key, LONG)).toEqual({ status: 'completed', result: 'first' });
      expect(await a.claim(s2, key, LONG)).toEqual({ status: 'completed', result: 'second' });

      // Separators inside scopes and keys cannot make two pairs meet.
      const base = freshScope();
      const pairs: [string, string][] = [
        [`${base}:a`, 'b'],
        [base, 'a:b'],
        [`${base}}:a`, 'b'],
        [`${base}`, '}:a:b'],
        [`${base}*`, 'k'],
        [`${base}?`, 'k'],
      ];
      for (const [scope, k] of pairs) expectClaimed(await a.claim(scope, k, LONG));
    });

    it('of many concurrent callers on many handles, exactly one wins each key', async () => {
      const scope = freshScope();
      const handles = [a, b, store.open(), store.open()];
      const keys = Array.from({ length: 10 }, (_, i) => `key-${i}`);
      const answers = await Promise.all(
        keys.flatMap((k) =>
          handles.flatMap((h) =>
            Array.from({ length: 5 }, async () => ({ k, answer: await h.claim(scope, k, LONG) })),
          ),
        ),
      );
      for (const k of keys) {
        const statuses = answers.filter((x) => x.k === k).map((x) => x.answer.status);
        expect(statuses.filter((s) => s === 'claimed')).toHaveLength(1);
        expect(statuses.filter((s) => s === 'in-progress')).toHaveLength(handles.length * 5 - 1);
      }
    });

    it('rejects a result that is not JSON data with EffectError unstorable-result, and writes nothing', async () => {
      const scope = freshScope();
      const token = expectClaimed(await a.claim(scope, key, LONG));
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const notJson: unknown[] = [
        new Date(0),
        { at: new Map() },
        [1, undefined],
        10n,
        Number.NaN,
        { nested: { infinity: Number.POSITIVE_INFINITY } },
        cyclic,
        () => 1,
        new (class Refund {})(),
        // biome-ignore lint/suspicious/noSparseArray: a hole is what is checked
        [1, , 3],
        Object.assign([1], { extra: true }),
      ];
      for (const value of notJson) {
        const error = await rejection(() => a.complete(scope, key, token, value));
        expect(error).toBeInstanceOf(EffectError);
        expect(error).toMatchObject({ code: 'unstorable-result' });
        expect(error).toMatchObject({ retryable: false });
      }
      expect(await a.get(scope, key)).toMatchObject({ status: 'claimed', token });
      // Undefined properties are left out, as JSON.stringify does.
      await a.complete(scope, key, token, { refund_id: 're_1', note: undefined });
      expect(await b.claim(scope, key, LONG)).toEqual({ status: 'completed', result: { refund_id: 're_1' } });
    });

    // On the same two handles as the rules above, under a key of its own.
    describe('renew', () => {
      const key = '5eed5eed5eed5eed';
      /** The ledger's `renew`, or a skip where the ledger has none (it is optional). */
      const renewOf = (ledger: EffectLedger, skip: (note: string) => void) => {
        const renew = (ledger as { renew?: EffectLedger['renew'] }).renew;
        if (renew === undefined) skip('this ledger has no renew');
        return (renew as NonNullable<EffectLedger['renew']>).bind(ledger);
      };

      it('renews the holder’s lease even after it ended, while nobody has taken the key over', async (context) => {
        const renew = renewOf(a, context.skip);
        const scope = freshScope();
        const token = expectClaimed(await a.claim(scope, key, SHORT));
        await until(async () => {
          const record = await b.get(scope, key);
          return record?.status === 'claimed' && record.leaseUntil < Date.now();
        });
        expect(await renew(scope, key, token, 60_000)).toBe(true);
        // The renewed lease is live again for everyone, and the record is still the holder's.
        expect(await b.claim(scope, key, SHORT)).toEqual({
          status: 'in-progress',
          until: expect.any(Number),
        });
        await a.complete(scope, key, token, { renewed: true });
        expect(await b.claim(scope, key, SHORT)).toEqual({ status: 'completed', result: { renewed: true } });
      });

      it('answers false, and changes nothing, for a released, settled, other or absent claim', async (context) => {
        const renew = renewOf(a, context.skip);
        const scope = freshScope();
        expect(await renew(scope, key, 'no-such-token', 60_000)).toBe(false);
        expect(await a.get(scope, key)).toBeUndefined();
        const first = expectClaimed(await a.claim(scope, key, LONG));
        await a.release(scope, key, first);
        expect(await renew(scope, key, first, 60_000)).toBe(false);
        expect(await a.get(scope, key)).toBeUndefined();
        const second = expectClaimed(await b.claim(scope, key, LONG));
        expect(await renew(scope, key, first, 60_000)).toBe(false);
        await b.fail(scope, key, second, declined);
        expect(await renew(scope, key, second, 60_000)).toBe(false);
        expect(await a.claim(scope, key, LONG)).toEqual({ status: 'failed', error: declined });
      });
    });
  });

  describe(`${name}: retention`, () => {
    let store: LedgerStore;
    let a: EffectLedger;
    beforeAll(async () => {
      store = await makeStore({ retentionMs: 200 });
      a = store.open();
    });
    afterAll(async () => {
      await store?.close();
    });

    it('forgets a settled record once its retention has run out: the key is new again', async () => {
      const scope = freshScope();
      const key = 'c0ffee00c0ffee00';
      const token = expectClaimed(await a.claim(scope, key, LONG));
      await a.complete(scope, key, token, { refund_id: 're_1' });
      expect(await a.claim(scope, key, LONG)).toEqual({ status: 'completed', result: { refund_id: 're_1' } });
      await until(async () => (await a.get(scope, key)) === undefined);
      expectClaimed(await a.claim(scope, key, LONG));

      const failed = freshScope();
      const t2 = expectClaimed(await a.claim(failed, key, LONG));
      await a.fail(failed, key, t2, declined);
      await until(async () => (await a.get(failed, key)) === undefined);
      expectClaimed(await a.claim(failed, key, LONG));
    });
  });
}
