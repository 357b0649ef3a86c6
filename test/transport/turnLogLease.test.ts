// Runner leases of memoryTurnLog: a claim takes a lease for leaseMs, renew extends it, and a turn whose lease lapsed
// is taken over by another runner (another view of the same store), whose appends are then the only ones taken.
// The clock is a fake one, so that a lease lapses exactly when the test says.
import { UsageError } from 'cleanturn';
import type { TurnLog, TurnLogEntry } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Takeover } from '../../src/transport/turnLog.js';
import { memoryTurnLog, memoryTurnLogView } from '../../src/transport/turnLog.js';

const event = (seq: number, by = 'a'): TurnLogEntry<string> => ({ seq, event: `${by}${seq}` });
const LEASE = 1_000;

/** A memory log on a fake clock, and `others` more runners (views) of the same store. */
function runners(others = 1) {
  const clock = { t: 5_000 };
  const log = memoryTurnLog<string>({ leaseMs: LEASE, now: () => clock.t });
  const views = Array.from({ length: others }, () => memoryTurnLogView(log));
  return { clock, log, views, other: views[0] as TurnLog<string> };
}

describe('memoryTurnLog leases', () => {
  it('leaseMs is the option, 10 000 by default', () => {
    expect(memoryTurnLog().leaseMs).toBe(10_000);
    expect(memoryTurnLog({ leaseMs: 250 }).leaseMs).toBe(250);
    expect(memoryTurnLogView(memoryTurnLog({ leaseMs: 250 })).leaseMs).toBe(250);
  });

  it('while the lease is alive: renew is true, and nobody can take the turn over', async () => {
    const { clock, log, other } = runners();
    expect(await log.claim('t')).toBe(true);
    expect(await other.claim('t')).toBe(false);
    clock.t += LEASE - 1;
    expect(await other.takeOver?.('t')).toBeUndefined();
    expect(await log.renew?.('t')).toBe(true);
    // Renewed at +999: alive until +1999.
    clock.t += LEASE - 1;
    expect(await other.takeOver?.('t')).toBeUndefined();
    expect(await log.takeOver?.('t')).toBeUndefined();
    expect(await log.renew?.('t')).toBe(true);
    // A runner that never claimed the turn has no lease to renew.
    expect(await other.renew?.('t')).toBe(false);
  });

  it('a lapsed lease: the other runner takes over at the next seq, the old one is refused, readers see both', async () => {
    const { clock, log, other } = runners();
    const claimedAt = clock.t;
    await log.claim('t');
    await log.append('t', event(0));
    await log.append('t', event(1));
    await log.append('t', event(2));
    const live = lastValueFrom(log.read('t', -1).pipe(toArray()));
    clock.t += LEASE;
    const takeover = await other.takeOver?.('t');
    expect(takeover).toEqual({ count: 1, next: 3, claimedAt } satisfies Takeover);
    await expect(log.append('t', event(3))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-taken-over',
    });
    await expect(log.append('t', event(3))).rejects.toMatchObject({ turnId: 't' });
    expect(await log.renew?.('t')).toBe(false);
    // The new owner's lease is alive: the old runner cannot take the turn back.
    expect(await log.takeOver?.('t')).toBeUndefined();
    expect(await other.renew?.('t')).toBe(true);
    await other.append('t', event(3, 'b'));
    await other.append('t', { seq: 4, end: 'completed' });
    const expected = [event(0), event(1), event(2), event(3, 'b'), { seq: 4, end: 'completed' }];
    expect(await live).toEqual(expected);
    expect(await lastValueFrom(log.read('t', -1).pipe(toArray()))).toEqual(expected);
    expect(await lastValueFrom(other.read('t', 1).pipe(toArray()))).toEqual(expected.slice(2));
  });

  it('a takeover of a turn with no entries starts at seq 0', async () => {
    const { clock, log, other } = runners();
    const claimedAt = clock.t;
    await log.claim('t');
    clock.t += LEASE + 500;
    expect(await other.takeOver?.('t')).toEqual({ count: 1, next: 0, claimedAt });
    await other.append('t', event(0, 'b'));
    await other.append('t', { seq: 1, end: 'completed' });
    expect(await lastValueFrom(log.read('t', -1).pipe(toArray()))).toEqual([
      event(0, 'b'),
      { seq: 1, end: 'completed' },
    ]);
  });

  it('a renew after the lapse but before any takeover takes the lease again', async () => {
    const { clock, log, other } = runners();
    await log.claim('t');
    await log.append('t', event(0));
    clock.t += LEASE + 200;
    expect(await log.renew?.('t')).toBe(true);
    expect(await other.takeOver?.('t')).toBeUndefined();
    clock.t += LEASE - 1;
    expect(await other.takeOver?.('t')).toBeUndefined();
    await log.append('t', event(1));
    // Not renewed since: it lapses leaseMs after the renew.
    clock.t += 1;
    expect(await other.takeOver?.('t')).toMatchObject({ count: 1, next: 2 });
  });

  it('of ten runners that take over at once, exactly one gets the turn', async () => {
    const { clock, log, views } = runners(10);
    const claimedAt = clock.t;
    await log.claim('t');
    await log.append('t', event(0));
    clock.t += LEASE;
    const answers = await Promise.all(views.map((view) => view.takeOver?.('t')));
    const won = answers.filter((answer) => answer !== undefined);
    expect(won).toEqual([{ count: 1, next: 1, claimedAt }]);
    const winner = views[answers.findIndex((answer) => answer !== undefined)] as TurnLog<string>;
    // Only the winner's appends and renews are taken.
    const losers = views.filter((view) => view !== winner);
    const refused = await Promise.allSettled([log, ...losers].map((view) => view.append('t', event(1, 'x'))));
    expect(refused.map((r) => r.status)).toEqual(Array(10).fill('rejected'));
    for (const r of refused)
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        name: 'TransportError',
        code: 'turn-taken-over',
      });
    expect(await Promise.all([log, ...losers].map((view) => view.renew?.('t')))).toEqual(
      Array(10).fill(false),
    );
    expect(await winner.renew?.('t')).toBe(true);
    await winner.append('t', event(1, 'w'));
    await winner.append('t', { seq: 2, end: 'completed' });
    expect(await lastValueFrom(log.read('t', -1).pipe(toArray()))).toEqual([
      event(0),
      event(1, 'w'),
      { seq: 2, end: 'completed' },
    ]);
  });

  it('a second lapse: the turn is taken over again, count 2, claimedAt unchanged', async () => {
    const { clock, log, views } = runners(2);
    const [b, c] = views as [TurnLog<string>, TurnLog<string>];
    const claimedAt = clock.t;
    await log.claim('t');
    await log.append('t', event(0));
    clock.t += LEASE;
    expect(await b.takeOver?.('t')).toEqual({ count: 1, next: 1, claimedAt });
    await b.append('t', event(1, 'b'));
    clock.t += LEASE - 1;
    expect(await c.takeOver?.('t')).toBeUndefined();
    clock.t += 1;
    expect(await c.takeOver?.('t')).toEqual({ count: 2, next: 2, claimedAt });
    await expect(b.append('t', event(2, 'b'))).rejects.toMatchObject({
      name: 'TransportError',
      code: 'turn-taken-over',
    });
    expect(await b.renew?.('t')).toBe(false);
    // Even the first runner may take it back once c's lease lapses: the third takeover.
    clock.t += LEASE;
    expect(await log.takeOver?.('t')).toEqual({ count: 3, next: 2, claimedAt });
    await log.append('t', { seq: 2, end: 'completed' });
    expect(await lastValueFrom(c.read('t', -1).pipe(toArray()))).toEqual([
      event(0),
      event(1, 'b'),
      { seq: 2, end: 'completed' },
    ]);
  });

  it('an ended turn is not taken over, nor renewed, even long after its lease', async () => {
    const { clock, log, other } = runners();
    await log.claim('t');
    await log.append('t', event(0));
    await log.append('t', { seq: 1, end: 'completed' });
    expect(await log.renew?.('t')).toBe(false);
    expect(await other.takeOver?.('t')).toBeUndefined();
    clock.t += LEASE * 5;
    expect(await other.takeOver?.('t')).toBeUndefined();
    expect(await log.takeOver?.('t')).toBeUndefined();
    expect(await log.renew?.('t')).toBe(false);
    expect(await other.renew?.('t')).toBe(false);
  });

  it('a failed turn is not taken over either', async () => {
    const { clock, log, other } = runners();
    await log.claim('t');
    await log.append('t', {
      seq: 0,
      end: 'failed',
      error: { name: 'RetriesExhaustedError', message: 'no', retryable: true },
    });
    clock.t += LEASE * 2;
    expect(await other.takeOver?.('t')).toBeUndefined();
    expect(await log.renew?.('t')).toBe(false);
  });

  it('an unknown turn: takeOver is undefined and renew false', async () => {
    const { clock, log, other } = runners();
    expect(await log.takeOver?.('nope')).toBeUndefined();
    expect(await log.renew?.('nope')).toBe(false);
    clock.t += LEASE * 2;
    expect(await other.takeOver?.('nope')).toBeUndefined();
    expect(await other.renew?.('nope')).toBe(false);
  });

  it('a claim past an ended, expired turn takes a fresh lease: no takeover', async () => {
    const clock = { t: 0 };
    const log = memoryTurnLog<string>({ leaseMs: LEASE, ttlMs: 100, now: () => clock.t });
    const other = memoryTurnLogView(log);
    await log.claim('t');
    await log.append('t', { seq: 0, end: 'completed' });
    clock.t += 200;
    expect(await other.claim('t')).toBe(true);
    clock.t += LEASE - 1;
    expect(await log.takeOver?.('t')).toBeUndefined();
    expect(await log.renew?.('t')).toBe(false);
    expect(await other.renew?.('t')).toBe(true);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses leaseMs %s with a UsageError',
    (leaseMs) => {
      expect(() => memoryTurnLog({ leaseMs })).toThrow(UsageError);
      expect(() => memoryTurnLog({ leaseMs })).toThrow('memoryTurnLog: leaseMs must be a finite number > 0');
    },
  );

  it('memoryTurnLogView refuses a log that is not a memory log', () => {
    const fake = { ...memoryTurnLog() };
    expect(() => memoryTurnLogView(fake)).toThrow(UsageError);
  });
});
