// Taking over a turn whose runner was lost, within one process: two turn servers on two views of one memory turn
// log (memoryTurnLogView: each has claims and leases of its own, as two processes sharing Redis do). Server A runs a
// run of two steps and is closed with handOver in step 2 (its runs stop, nothing is written, its lease lapses); a
// reader on server B takes the run over at the step it was in. The same in Redis across processes:
// killRunner.redis.test.ts.
import { type RunEvent, runSteps, type StepContext, type TurnEvent, UsageError } from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { at, finish, keyed, text } from 'cleanturn/testing';
import { memoryTurnLog, type TurnMessage, turnServer } from 'cleanturn/transport';
import { concat, concatMap, delay, from, lastValueFrom, NEVER, type Observable, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { memoryTurnLogView } from '../../src/transport/turnLog.js';
import type { RunContext } from '../../src/transport/turnServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

const runId = 'run-9';
const LEASE = 120;
const refundCall = keyed(
  runId,
  1,
  { type: 'tool-call', id: 'c1', name: 'issue_refund', args: { order_id: 'A-1' } },
  1,
);

expectNoLeftoverHandles(async () => {});

/** A provider in virtual form: step 1 asks for the refund; step 2 answers (and, where `hang`, stops after a word). */
function turnOf({ step }: StepContext, hang: boolean): Observable<TurnEvent> {
  const events: TurnEvent[] =
    step === 1
      ? [at(1, text('Refunding. ')), refundCall, at(1, finish('tool-calls'))]
      : [at(1, text('The refund ')), at(1, text('has started.')), at(1, finish('stop'))];
  const paced = from(hang && step === 2 ? events.slice(0, 1) : events).pipe(
    concatMap((event) => of(event).pipe(delay(2))),
  );
  return hang && step === 2 ? concat(paced, NEVER) : paced;
}

const parse = (messages: TurnMessage[]) =>
  messages.map((m) => ({ type: m.type, data: JSON.parse(m.data) as Record<string, unknown> }));

describe('turnServer: a run whose runner was lost is taken over by a reader', () => {
  it('at the step it was in: a reset for the cut attempt, no finished step again, every effect once', async () => {
    const log = memoryTurnLog<RunEvent>({ leaseMs: LEASE });
    const a = turnServer({ log });
    const b = turnServer({ log: memoryTurnLogView(log) });
    const ledger = new MemoryEffectLedger();
    let refunds = 0;
    const handlers = { issue_refund: async () => ({ refund_id: `R-${++refunds}` }) };
    const calls: { server: string; step: number; history: number }[] = [];
    const run =
      (server: string, hang: boolean) =>
      ({ takeover }: RunContext<RunEvent>) =>
        runSteps({
          runId,
          resume: takeover?.events,
          turn: (context) => {
            calls.push({ server, step: context.step, history: context.history.length });
            return turnOf(context, hang);
          },
          execute: (turn$) => turn$.pipe(executeTools(handlers, { turnId: runId, ledger })),
        });

    // A runs the run; a reader on B follows it from the log.
    const first = a.serve({ turnId: runId, run: run('A', true) }).subscribe();
    const reading = lastValueFrom(b.serve({ turnId: runId, run: run('B', false) }).pipe(toArray()));
    await new Promise((resolve) => setTimeout(resolve, 60));
    // A goes away in step 2 without a word in the log.
    await a.close({ handOver: true });
    first.unsubscribe();
    const messages = parse(await reading);

    expect(calls).toEqual([
      { server: 'A', step: 1, history: 0 },
      { server: 'A', step: 2, history: 1 },
      { server: 'B', step: 2, history: 1 },
    ]);
    expect(refunds).toBe(1);
    const events = messages.filter((m) => m.type === 'turn').map((m) => m.data);
    const step2 = events.filter((e) => e.step === 2);
    expect(step2.map((e) => [e.type, e.attempt, e.text ?? e.reason])).toEqual([
      ['text', 1, 'The refund '],
      ['reset', 2, 'the runner was lost'],
      ['text', 2, 'The refund '],
      ['text', 2, 'has started.'],
      ['finish', 2, 'stop'],
      ['step-end', undefined, undefined],
    ]);
    expect(step2[1]).toMatchObject({ errorName: 'TransportError', failedAttempt: 1, outputStarted: true });
    expect(events.filter((e) => e.type === 'step-end').map((e) => [e.step, e.end])).toEqual([
      [1, undefined],
      [2, 'done'],
    ]);
    expect(messages.at(-1)?.type).toBe('end');
    // The server forgets the run once its end is written, right after its readers had it.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(b.running).toBe(0);
    await b.close();
  });

  it('past its takeover bounds (max 0), the reader ends the turn as failed with a TransportError runner-lost', async () => {
    const log = memoryTurnLog<RunEvent>({ leaseMs: LEASE });
    const a = turnServer({ log });
    const b = turnServer({ log: memoryTurnLogView(log), takeover: { max: 0 } });
    let started = 0;
    const hang = () => {
      started++;
      return concat(of(at(1, text('Hel')) as unknown as RunEvent), NEVER);
    };
    const first = a.serve({ turnId: 't', run: hang }).subscribe();
    const reading = lastValueFrom(b.serve({ turnId: 't', run: hang }).pipe(toArray()));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.close({ handOver: true });
    first.unsubscribe();
    const messages = parse(await reading);
    expect(messages.map((m) => m.type)).toEqual(['turn', 'failed']);
    expect(messages[1]?.data).toMatchObject({ name: 'TransportError', code: 'runner-lost', retryable: true });
    expect(String(messages[1]?.data.message)).toContain('the runner of turn t was lost');
    expect(started).toBe(1);
  });

  it('a live runner keeps its turn: a quiet reader never takes it over while the lease is renewed', async () => {
    const log = memoryTurnLog<string>({ leaseMs: LEASE });
    const a = turnServer({ log });
    const b = turnServer({ log: memoryTurnLogView(log) });
    let started = 0;
    const slow = () => {
      started++;
      return of('late').pipe(delay(LEASE * 5));
    };
    const first = a.serve({ turnId: 'slow', run: slow }).subscribe();
    const messages = parse(await lastValueFrom(b.serve({ turnId: 'slow', run: slow }).pipe(toArray())));
    first.unsubscribe();
    expect(messages.map((m) => m.type)).toEqual(['turn', 'end']);
    expect(started).toBe(1);
  });

  it('a lease past what a timer holds (2^40 ms) neither renews nor checks in a busy loop', async () => {
    const log = memoryTurnLog<string>({ leaseMs: 2 ** 40 });
    let renewals = 0;
    let checks = 0;
    const runner = turnServer({
      log: {
        ...log,
        renew: (id) => {
          renewals++;
          return log.renew?.(id) ?? Promise.resolve(false);
        },
      },
    });
    const view = memoryTurnLogView(log);
    const reader = turnServer({
      log: {
        ...view,
        takeOver: (id) => {
          checks++;
          return view.takeOver?.(id) ?? Promise.resolve(undefined);
        },
      },
    });
    const running = runner.serve({ turnId: 'long', run: () => NEVER }).subscribe();
    const reading = reader.serve({ turnId: 'long', run: () => NEVER }).subscribe();
    await new Promise((resolve) => setTimeout(resolve, 50));
    reading.unsubscribe();
    running.unsubscribe();
    await runner.close();
    expect({ renewals, checks }).toEqual({ renewals: 0, checks: 0 });
  });

  it('refuses a log whose leaseMs is not a duration', () => {
    const log = memoryTurnLog();
    for (const leaseMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => turnServer({ log: { ...log, leaseMs } })).toThrow(UsageError);
  });

  it('takeover bounds are checked', () => {
    const log = memoryTurnLog();
    for (const max of [-1, 1.5, Number.NaN])
      expect(() => turnServer({ log, takeover: { max } })).toThrow(UsageError);
    for (const withinMs of [0, -1, Number.NaN])
      expect(() => turnServer({ log, takeover: { withinMs } })).toThrow(UsageError);
  });
});

describe('runSteps({ resume })', () => {
  const turn = ({ step }: StepContext) =>
    from([at(1, text(`step ${step}`)), at(1, finish(step === 1 ? 'tool-calls' : 'stop'))] as TurnEvent[]);
  const stepEnd1: RunEvent = {
    type: 'step-end',
    step: 1,
    turn: undefined,
    results: [],
    next: 'answer',
  };

  it('after a finished step and nothing of the next: goes on at the next step, with no reset', async () => {
    const seen: StepContext[] = [];
    const events = await lastValueFrom(
      runSteps({
        runId,
        resume: [{ ...at(1, text('step 1')), step: 1 }, stepEnd1],
        turn: (context) => {
          seen.push(context);
          return turn(context);
        },
      }).pipe(toArray()),
    );
    expect(events.map((e) => [e.type, e.step])).toEqual([
      ['text', 2],
      ['finish', 2],
      ['step-end', 2],
    ]);
    expect(seen.map((c) => [c.step, c.history.length, c.previous?.step])).toEqual([[2, 1, 1]]);
  });

  it('after the run ended: emits nothing, runs nothing', async () => {
    let calls = 0;
    const events = await lastValueFrom(
      runSteps({
        runId,
        resume: [{ ...stepEnd1, next: 'done', end: 'done' }],
        turn: (context) => {
          calls++;
          return turn(context);
        },
      }).pipe(toArray()),
    );
    expect(events).toEqual([]);
    expect(calls).toBe(0);
  });

  it('numbers the new turn after the highest attempt of the cut step, its own resets included', async () => {
    const events = await lastValueFrom(
      runSteps({
        runId,
        resume: [
          { ...at(1, text('a')), step: 1 },
          { type: 'reset', attempt: 2, reason: 'connection reset', failedAttempt: 1, step: 1 },
          { ...at(2, text('b')), step: 1 },
        ],
        maxSteps: 1,
        turn: () =>
          from([
            at(1, text('c')),
            { type: 'reset', attempt: 2, reason: 'HTTP 503', failedAttempt: 1 },
            at(2, text('d')),
            at(2, finish('stop')),
          ] as TurnEvent[]),
      }).pipe(toArray()),
    );
    expect(events.map((e) => [e.type, 'attempt' in e ? e.attempt : undefined])).toEqual([
      ['reset', 3],
      ['text', 3],
      ['reset', 4],
      ['text', 4],
      ['finish', 4],
      ['step-end', undefined],
    ]);
    expect(events[2]).toMatchObject({ failedAttempt: 3 });
    const end = events.at(-1);
    expect(end?.type === 'step-end' && end.turn?.text).toBe('d');
  });

  it('refuses a resume that is not an array', () => {
    expect(() => runSteps({ runId, turn, resume: 'events' as never })).toThrow(UsageError);
  });
});
