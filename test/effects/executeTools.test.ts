// executeTools beyond its marble spec: the standard operator checks, async handlers and ledgers, failures and
// their recording, waiting for another holder, lease take-over, fencing, abort on unsubscribe.
import { cleanTurn, type KeyedToolCall, type TurnEvent, UsageError } from 'cleanturn';
import {
  EffectError,
  type EffectLedger,
  executeTools,
  MemoryEffectLedger,
  type ToolContext,
  type ToolHandlers,
} from 'cleanturn/effects';
import { at, call, finish, helpDesk, keyed, repeated, text } from 'cleanturn/testing';
import { firstValueFrom, from, lastValueFrom, Observable, of, type Subscription, toArray } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { nothing, standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const refund = keyed(turnId, 2, call('c7', 'issue_refund', helpDesk.refundArgs));
const email = keyed(turnId, 2, call('c8', 'send_email', { to: 'ada@example.com' }));

/** The same ledger behind promises, as a networked ledger answers. */
function asyncLedger(inner: EffectLedger): EffectLedger {
  return {
    claim: async (...args) => inner.claim(...args),
    complete: async (...args) => inner.complete(...args),
    fail: async (...args) => inner.fail(...args),
    release: async (...args) => inner.release(...args),
    get: async (...args) => inner.get(...args),
  };
}

/** The same ledger, synchronous if it was, without `renew` (a ledger of one's own from before it): no heartbeat. */
function withoutRenew(inner: EffectLedger): EffectLedger {
  return {
    claim: (...args) => inner.claim(...args),
    complete: (...args) => inner.complete(...args),
    fail: (...args) => inner.fail(...args),
    release: (...args) => inner.release(...args),
    get: (...args) => inner.get(...args),
  };
}

/** Runs calls through executeTools and collects the results. */
function run(calls: TurnEvent[], handlers: ToolHandlers, options: Parameters<typeof executeTools>[1]) {
  return lastValueFrom(from(calls).pipe(executeTools(handlers, options), toArray()));
}

/** A promise with its resolve function. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

// The call comes first, so that the source error check sees a result and then the error; the text and the finish
// give no result.
standardChecks<TurnEvent>({
  name: 'executeTools',
  make: () => executeTools({ issue_refund: () => ({ ok: true }), send_email: () => undefined }, { turnId }),
  values: { a: refund, b: at(2, text('Refund started.')), c: at(2, finish()) },
  expected: {
    a: {
      type: 'tool-result',
      effectKey: refund.effectKey,
      call: refund,
      outcome: 'executed',
      result: { ok: true },
      reclaimed: false,
    },
    b: nothing,
    c: nothing,
  },
  throwing: [
    {
      callback: 'recordFailure',
      make: (fail) =>
        executeTools(
          {
            issue_refund: () => {
              throw new Error('declined');
            },
          },
          { turnId, recordFailure: fail },
        ),
    },
  ],
});

describe('executeTools', () => {
  for (const [kind, make] of [
    ['synchronous ledger', () => new MemoryEffectLedger()],
    ['asynchronous ledger', () => asyncLedger(new MemoryEffectLedger())],
  ] as const) {
    describe(kind, () => {
      it('runs the help-desk refund once through cleanTurn, handing the handler the effect key', async () => {
        const ledger = make();
        const seen: ToolContext[] = [];
        const handlers: ToolHandlers = {
          issue_refund: async (args, context) => {
            seen.push(context);
            return { refund_id: 're_1', args: args as typeof helpDesk.refundArgs };
          },
        };
        const results = await lastValueFrom(
          from(helpDesk.turn).pipe(
            cleanTurn({ turnId }),
            executeTools(handlers, { turnId, ledger }),
            toArray(),
          ),
        );
        expect(results).toEqual([
          {
            type: 'tool-result',
            effectKey: refund.effectKey,
            call: refund,
            outcome: 'executed',
            result: { refund_id: 're_1', args: helpDesk.refundArgs },
            reclaimed: false,
          },
        ]);
        expect(seen).toHaveLength(1);
        expect(seen[0]).toMatchObject({
          effectKey: refund.effectKey,
          turnId,
          call: refund,
          reclaimed: false,
        });
        expect(seen[0]?.signal.aborted).toBe(false);
        expect(await ledger.get(turnId, refund.effectKey)).toMatchObject({
          status: 'completed',
          result: { refund_id: 're_1', args: helpDesk.refundArgs },
        });

        // The whole turn again (a restart): replayed, the handler is not called.
        const again = await lastValueFrom(
          from(helpDesk.turn).pipe(
            cleanTurn({ turnId }),
            executeTools(handlers, { turnId, ledger }),
            toArray(),
          ),
        );
        expect(again).toEqual([
          {
            type: 'tool-result',
            effectKey: refund.effectKey,
            call: refund,
            outcome: 'replayed',
            result: { refund_id: 're_1', args: helpDesk.refundArgs },
          },
        ]);
        expect(seen).toHaveLength(1);
      });

      it('answers a repeat under its own call id with the recorded result, without running the handler', async () => {
        const ledger = make();
        let calls = 0;
        const handlers: ToolHandlers = {
          issue_refund: async () => {
            calls++;
            return { refund_id: 're_1' };
          },
        };
        // The same refund twice in one attempt (c7, then c9): cleanTurn releases both, c9 as a repeat.
        const c9 = call('c9', 'issue_refund', helpDesk.refundArgs);
        const events = [
          text('Refunding twice.'),
          call('c7', 'issue_refund', helpDesk.refundArgs),
          c9,
          finish('tool-calls'),
        ];
        const results = await lastValueFrom(
          from(events).pipe(cleanTurn({ turnId }), executeTools(handlers, { turnId, ledger }), toArray()),
        );
        const again = repeated(turnId, 1, c9);
        expect(results).toEqual([
          expect.objectContaining({
            call: keyed(turnId, 1, call('c7', 'issue_refund', helpDesk.refundArgs)),
          }),
          {
            type: 'tool-result',
            effectKey: again.effectKey,
            call: again,
            outcome: 'replayed',
            result: { refund_id: 're_1' },
          },
        ]);
        expect(results[0]).toMatchObject({ outcome: 'executed', result: { refund_id: 're_1' } });
        expect(calls).toBe(1);

        // A restart, with the ledger as `seen`: the one call is a repeat too, answered from the ledger.
        const seen = ledger instanceof MemoryEffectLedger ? ledger.seen(turnId) : new Set([again.effectKey]);
        const restarted = await lastValueFrom(
          from(events.slice(0, 2).concat(finish('tool-calls'))).pipe(
            cleanTurn({ turnId, seen }),
            executeTools(handlers, { turnId, ledger }),
            toArray(),
          ),
        );
        expect(restarted).toEqual([
          expect.objectContaining({
            call: { ...refund, attempt: 1, type: 'tool-call-repeat' },
            outcome: 'replayed',
          }),
        ]);
        expect(restarted[0]).toMatchObject({ result: { refund_id: 're_1' } });
        expect(calls).toBe(1);
      });

      it('a repeat whose key left no record fails with NoRecordedResultError and runs nothing', async () => {
        const ledger = make();
        let calls = 0;
        const handlers: ToolHandlers = {
          issue_refund: () => {
            calls++;
            return { refund_id: 're_1' };
          },
        };
        const [result] = await run([{ ...refund, type: 'tool-call-repeat' }], handlers, { turnId, ledger });
        expect(result).toMatchObject({
          outcome: 'failed',
          replayed: true,
          error: { name: 'NoRecordedResultError', retryable: false },
        });
        expect(calls).toBe(0);
        expect(await ledger.get(turnId, refund.effectKey)).toBeUndefined(); // the claim was given back
      });

      it('releases a retryable failure: the next run runs the handler again', async () => {
        const ledger = make();
        let calls = 0;
        const handlers: ToolHandlers = {
          issue_refund: async () => {
            calls++;
            if (calls === 1) throw Object.assign(new Error('gateway timeout'), { code: 504 });
            return { refund_id: 're_1' };
          },
        };
        const [first] = await run([refund], handlers, { turnId, ledger });
        expect(first).toMatchObject({
          outcome: 'failed',
          replayed: false,
          error: { name: 'Error', message: 'gateway timeout', retryable: true, code: 504 },
        });
        expect((first as { cause: unknown }).cause).toBeInstanceOf(Error);
        expect(await ledger.get(turnId, refund.effectKey)).toBeUndefined();
        const [second] = await run([refund], handlers, { turnId, ledger });
        expect(second).toMatchObject({ outcome: 'executed', result: { refund_id: 're_1' } });
        expect(calls).toBe(2);
      });

      it('records a failure that says retryable: false, and replays it without running again', async () => {
        const ledger = make();
        let calls = 0;
        const handlers: ToolHandlers = {
          issue_refund: () => {
            calls++;
            throw Object.assign(new Error('card declined'), { retryable: false, code: 'card_declined' });
          },
        };
        const error = { name: 'Error', message: 'card declined', retryable: false, code: 'card_declined' };
        const [first] = await run([refund], handlers, { turnId, ledger });
        expect(first).toMatchObject({ outcome: 'failed', replayed: false, error });
        const [second] = await run([refund], handlers, { turnId, ledger });
        expect(second).toEqual({
          type: 'tool-result',
          effectKey: refund.effectKey,
          call: refund,
          outcome: 'failed',
          replayed: true,
          error,
        });
        expect(calls).toBe(1);
      });

      it('recordFailure decides which failures are recorded', async () => {
        const ledger = make();
        const handlers: ToolHandlers = {
          issue_refund: () => {
            throw new Error('anything');
          },
        };
        await run([refund], handlers, { turnId, ledger, recordFailure: () => true });
        expect(await ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'failed' });
      });

      it('a result that is not JSON data: a failed result, recorded, since the effect did run', async () => {
        const ledger = make();
        let calls = 0;
        const handlers: ToolHandlers = {
          issue_refund: () => {
            calls++;
            return { refund_id: 're_1', created: new Date(0) };
          },
        };
        const [first] = await run([refund], handlers, { turnId, ledger });
        expect(first).toMatchObject({
          outcome: 'failed',
          replayed: false,
          error: { name: 'EffectError', code: 'unstorable-result', retryable: false },
        });
        expect((first as { cause: unknown }).cause).toBeInstanceOf(EffectError);
        expect((first as { cause: unknown }).cause).toMatchObject({ code: 'unstorable-result' });
        const [second] = await run([refund], handlers, { turnId, ledger });
        expect(second).toMatchObject({
          outcome: 'failed',
          replayed: true,
          error: { name: 'EffectError', code: 'unstorable-result' },
        });
        expect(calls).toBe(1);
      });

      it('waits for another holder to finish, then replays its result (inProgress: wait)', async () => {
        const ledger = make();
        const other = await ledger.claim(turnId, refund.effectKey, { leaseMs: 60_000 });
        if (other.status !== 'claimed') throw new Error('expected a claim');
        let calls = 0;
        const result = firstValueFrom(
          of(refund).pipe(executeTools({ issue_refund: () => ++calls }, { turnId, ledger, pollMs: 10 })),
        );
        await ledger.complete(turnId, refund.effectKey, other.token, { refund_id: 're_other' });
        expect(await result).toMatchObject({ outcome: 'replayed', result: { refund_id: 're_other' } });
        expect(calls).toBe(0);
      });

      it("takes over a crashed holder's claim once its lease expires, and says so", async () => {
        const ledger = make();
        await ledger.claim(turnId, refund.effectKey, { leaseMs: 100 }); // a holder that never comes back
        const contexts: ToolContext[] = [];
        const [result] = await run(
          [refund],
          {
            issue_refund: (_args, context) => {
              contexts.push(context);
              return { refund_id: 're_1' };
            },
          },
          { turnId, ledger, pollMs: 10 },
        );
        expect(result).toMatchObject({ outcome: 'executed', reclaimed: true, result: { refund_id: 're_1' } });
        expect(contexts.map((c) => c.reclaimed)).toEqual([true]);
      });

      it("reports another holder's claim at once with inProgress: 'report'", async () => {
        const ledger = make();
        const other = await ledger.claim(turnId, refund.effectKey, { leaseMs: 60_000 });
        if (other.status !== 'claimed') throw new Error('expected a claim');
        const [result] = await run(
          [refund],
          { issue_refund: () => 1 },
          { turnId, ledger, inProgress: 'report' },
        );
        expect(result).toEqual({
          type: 'tool-result',
          effectKey: refund.effectKey,
          call: refund,
          outcome: 'in-progress',
          until: expect.any(Number),
        });
      });

      // With a ledger that renews, the slow holder keeps its lease (see leases.test.ts); without renew it cannot.
      it('a handler that outlives its lease (no renew): another holder takes over; both report what their handler did', async () => {
        const ledger = make();
        const gate = deferred<void>();
        const slow = firstValueFrom(
          of(refund).pipe(
            executeTools(
              {
                issue_refund: async () => {
                  await gate.promise;
                  return { by: 'slow' };
                },
              },
              { turnId, ledger: withoutRenew(ledger), leaseMs: 50 },
            ),
          ),
        );
        // A second process: it waits for the slow holder's lease to run out, then takes the key over.
        const [fast] = await run(
          [refund],
          { issue_refund: () => ({ by: 'fast' }) },
          { turnId, ledger, pollMs: 10 },
        );
        expect(fast).toMatchObject({ outcome: 'executed', reclaimed: true, result: { by: 'fast' } });
        gate.resolve();
        // The slow holder's completion is fenced off; it still reports what its handler returned.
        expect(await slow).toMatchObject({ outcome: 'executed', result: { by: 'slow' }, leaseLost: true });
        expect(await ledger.get(turnId, refund.effectKey)).toMatchObject({
          status: 'completed',
          result: { by: 'fast' },
        });
      });
    });
  }

  it('an unknown tool is a typed result and leaves the ledger alone, even for names on Object.prototype', async () => {
    const ledger = new MemoryEffectLedger();
    const unknown = keyed(turnId, 1, call('c1', 'toString', {}));
    const [result] = await run([unknown], {}, { turnId, ledger });
    expect(result).toEqual({
      type: 'tool-result',
      effectKey: unknown.effectKey,
      call: unknown,
      outcome: 'unknown-tool',
      error: { name: 'UnknownToolError', message: 'no handler for tool toString', retryable: false },
    });
    expect(ledger.get(turnId, unknown.effectKey)).toBeUndefined();
  });

  it('aborts the signal of a running handler on unsubscribe, and writes nothing afterwards', async () => {
    const ledger = new MemoryEffectLedger();
    const gate = deferred<void>();
    let signal: AbortSignal | undefined;
    const subscription: Subscription = of(refund)
      .pipe(
        executeTools(
          {
            issue_refund: async (_args, context) => {
              signal = context.signal;
              await gate.promise;
              return { refund_id: 're_1' };
            },
          },
          { turnId, ledger },
        ),
      )
      .subscribe();
    expect(signal?.aborted).toBe(false);
    subscription.unsubscribe();
    expect(signal?.aborted).toBe(true);
    gate.resolve();
    await gate.promise;
    await Promise.resolve();
    // The claim stays as it was: it expires after leaseMs, as if the process had crashed.
    expect(ledger.get(turnId, refund.effectKey)).toMatchObject({ status: 'claimed' });
  });

  it('does not abort a handler that has settled', async () => {
    let signal: AbortSignal | undefined;
    await run(
      [refund],
      {
        issue_refund: async (_args, context) => {
          signal = context.signal;
          return 1;
        },
      },
      { turnId },
    );
    expect(signal?.aborted).toBe(false);
  });

  it('takes an observable handler: its first value, or undefined when it completes empty; an error fails', async () => {
    const results = await run(
      [refund, email],
      {
        issue_refund: () => from([{ refund_id: 're_1' }, { refund_id: 're_ignored' }]),
        send_email: () => new Observable<never>((s) => s.error(new Error('smtp down'))),
      },
      { turnId },
    );
    expect(
      results.map((r) => [r.outcome, r.outcome === 'failed' ? r.error.message : 'result' in r && r.result]),
    ).toEqual([
      ['executed', { refund_id: 're_1' }],
      ['failed', 'smtp down'],
    ]);
    const [none] = await run([refund], { issue_refund: () => from([]) }, { turnId });
    expect(none).toMatchObject({ outcome: 'executed', result: undefined });
  });

  it('keeps results in call order with concurrency, or in completion order when asked', async () => {
    const calls = [1, 2, 3, 4].map((n) =>
      keyed(turnId, 1, call(`c${n}`, 'send_email', { to: `user${n}@example.com` })),
    );
    // The first call finishes last, the last first.
    const gates = calls.map(() => deferred<void>());
    const handlers: ToolHandlers = {
      send_email: async (args) => {
        const n = Number(/user(\d)/.exec((args as { to: string }).to)?.[1]);
        await gates[n - 1]?.promise;
        return n;
      },
    };
    const collect = (order: 'calls' | 'completion') => {
      const out: number[] = [];
      const done = lastValueFrom(
        from(calls).pipe(executeTools(handlers, { turnId, concurrency: 4, order }), toArray()),
      ).then((results) => {
        for (const r of results) out.push(r.outcome === 'executed' ? (r.result as number) : -1);
        return out;
      });
      return done;
    };
    const inOrder = collect('calls');
    const asReady = collect('completion');
    for (const gate of [...gates].reverse()) {
      gate.resolve();
      await gate.promise;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await inOrder).toEqual([1, 2, 3, 4]);
    expect(await asReady).toEqual([4, 3, 2, 1]);
  });

  it('the default ledger belongs to the operator: a second subscription replays', async () => {
    let calls = 0;
    const operator = executeTools({ issue_refund: () => ++calls }, { turnId });
    const first = await lastValueFrom(of(refund).pipe(operator));
    const second = await lastValueFrom(of(refund).pipe(operator));
    expect([first.outcome, second.outcome]).toEqual(['executed', 'replayed']);
    expect(calls).toBe(1);
  });

  it('errors when the ledger fails: whether the effect ran is unknown', async () => {
    const down = new Error('ECONNREFUSED');
    const ledger: EffectLedger = {
      ...asyncLedger(new MemoryEffectLedger()),
      claim: async () => {
        throw down;
      },
    };
    await expect(run([refund], { issue_refund: () => 1 }, { turnId, ledger })).rejects.toBe(down);
  });

  describe('a write that records the outcome fails for a while', () => {
    /**
     * A memory ledger whose `complete` throws `error` the first `failures` times (nothing written then). At each
     * failure it also plays another process that tries to claim the key, and notes what that claim got.
     */
    function flaky(failures: number, error: () => unknown) {
      const inner = new MemoryEffectLedger();
      const seen = { completes: 0, renewals: 0, others: [] as string[] };
      const ledger: EffectLedger = {
        claim: (...args) => inner.claim(...args),
        complete: (scope, key, token, result) => {
          if (++seen.completes <= failures) {
            seen.others.push(inner.claim(scope, key, { leaseMs: 1000 }).status);
            throw error();
          }
          return inner.complete(scope, key, token, result);
        },
        fail: (...args) => inner.fail(...args),
        release: (...args) => inner.release(...args),
        get: (...args) => inner.get(...args),
        renew: (scope, key, token, leaseMs) => {
          seen.renewals++;
          return inner.renew(scope, key, token, leaseMs);
        },
      };
      return { inner, ledger, seen };
    }

    it('sends it again, keeping the lease renewed past its first end: another holder never gets the key', async () => {
      const unanswered = () => Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' });
      // Three failures, then the pauses between the attempts (100 ms, then 200 ms or what is left of the lease)
      // outlast the 150 ms lease: only renewals keep it.
      const { inner, ledger, seen } = flaky(3, unanswered);
      let runs = 0;
      const [result] = await run(
        [refund],
        { issue_refund: () => ({ n: ++runs }) },
        { turnId, ledger, leaseMs: 150 },
      );
      expect(result).toMatchObject({ outcome: 'executed', result: { n: 1 } });
      expect(result).not.toHaveProperty('leaseLost');
      expect(seen.completes).toBe(4);
      expect(seen.others).toEqual(['in-progress', 'in-progress', 'in-progress']);
      expect(seen.renewals).toBeGreaterThan(1);
      expect(runs).toBe(1);
      expect(inner.get(turnId, refund.effectKey)).toMatchObject({ status: 'completed', result: { n: 1 } });
    });

    it('a write refused for good (retryable: false) is not sent again: the stream errors at once', async () => {
      const refused = Object.assign(new Error('the server can lose records'), { retryable: false });
      const { ledger, seen } = flaky(10, () => refused);
      await expect(run([refund], { issue_refund: () => 1 }, { turnId, ledger })).rejects.toBe(refused);
      expect(seen.completes).toBe(1);
    });

    it('gives up after five attempts in all, with the last error, and runs the handler once', async () => {
      const { ledger, seen } = flaky(10, () => new Error('ECONNREFUSED'));
      let runs = 0;
      await expect(
        run([refund], { issue_refund: () => ++runs }, { turnId, ledger, leaseMs: 60_000 }),
      ).rejects.toThrow('ECONNREFUSED');
      expect(seen.completes).toBe(5);
      expect(runs).toBe(1);
    });
  });

  it('renewals never overlap however long one takes, and the next goes out as soon as a late one answers', async () => {
    vi.useFakeTimers();
    try {
      const inner = new MemoryEffectLedger();
      // Each renewal answers after 140 ms, longer than a beat (leaseMs / 3 = 100 ms): a heartbeat that waited for the
      // next beat would send the second renewal at 300 ms, and its lease (from the first one, sent at 100 ms) would
      // end at 400 ms, before that renewal's answer.
      const sent: number[] = [];
      const answered: number[] = [];
      let inFlight = 0;
      let mostInFlight = 0;
      const ledger: EffectLedger = {
        ...asyncLedger(inner),
        renew: (scope, key, token, leaseMs) => {
          sent.push(Date.now());
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          return new Promise<boolean>((resolve) =>
            setTimeout(() => {
              inFlight--;
              answered.push(Date.now());
              resolve(inner.renew(scope, key, token, leaseMs));
            }, 140),
          );
        },
      };
      const gate = deferred<number>();
      const results: unknown[] = [];
      of(refund)
        .pipe(executeTools({ issue_refund: () => gate.promise }, { turnId, ledger, leaseMs: 300 }))
        .subscribe((r) => results.push(r));
      await vi.advanceTimersByTimeAsync(1_000);
      expect(mostInFlight).toBe(1);
      expect(sent.length).toBeGreaterThanOrEqual(5);
      // Each renewal but the first goes out when the one before it answered (its beat had passed by then).
      for (let i = 1; i < sent.length; i++) {
        expect(sent[i]).toBeGreaterThanOrEqual(answered[i - 1] ?? Number.NaN);
        expect(sent[i]).toBeLessThanOrEqual((answered[i - 1] ?? Number.NaN) + 1);
      }
      gate.resolve(1);
      await vi.advanceTimersByTimeAsync(200);
      expect(results).toMatchObject([{ outcome: 'executed', result: 1 }]);
      expect(results[0]).not.toHaveProperty('leaseLost');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('errors with EffectError missing-effect-key on a tool call that did not go through cleanTurn', async () => {
    const bare = at(1, call('c1', 'issue_refund', helpDesk.refundArgs)) as unknown as KeyedToolCall;
    await expect(run([bare], { issue_refund: () => 1 }, { turnId })).rejects.toSatisfy(
      (error) => error instanceof EffectError && error.code === 'missing-effect-key',
    );
  });

  it('refuses options that make no sense', () => {
    expect(() => executeTools({}, { turnId, concurrency: 0 })).toThrow(UsageError);
    expect(() => executeTools({}, { turnId, concurrency: 1.5 })).toThrow(UsageError);
    expect(() => executeTools({}, { turnId, leaseMs: -1 })).toThrow(UsageError);
    expect(() => executeTools({}, { turnId, pollMs: 0 })).toThrow(UsageError);
  });
});
