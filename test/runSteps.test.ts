// runSteps: the loop of turns as one run. Virtual time for the order of steps and the standard checks; a strict
// Chat Completions server on loopback for a real three-step run with a retry and a refund asked for twice.
import {
  type KeyedToolCall,
  type RunEvent,
  runSteps,
  type StepContext,
  type ToolResultLike,
  type TurnEvent,
  UsageError,
} from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { openaiChat, toOpenAIChatMessages } from 'cleanturn/providers';
import { at, finish, helpDesk as h, keyed, text } from 'cleanturn/testing';
import { streamTurn } from 'cleanturn/transport';
import { filter, lastValueFrom, map, NEVER, type Observable, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { StepOutcome } from '../src/runSteps.js';
import { type ChatStep, type StrictChatServer, startStrictChatServer } from './support/strictChatServer.js';

const runId = 'run-7';
const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const a = at(1, text('Checking order ORD-7781. '));
const k = keyed(runId, 1, h.k, 1);
const f = at(1, finish('tool-calls'));
const g = at(1, finish('stop'));
const v = { a, k, f, g };

const refunds = (turn$: Observable<TurnEvent>): Observable<ToolResultLike> =>
  turn$.pipe(
    filter((event): event is KeyedToolCall => event.type === 'tool-call'),
    map((call) => ({
      type: 'tool-result',
      effectKey: call.effectKey,
      call,
      outcome: 'executed',
      result: 'ok',
    })),
  );

/** The run's events, of one kind. */
const ends = (events: RunEvent[]) => events.filter((e) => e.type === 'step-end');

describe('runSteps: the steps', () => {
  it('calls turn once per step, lazily, with the step and the outcome of the one before', async () => {
    const contexts: StepContext[] = [];
    const run = runSteps({
      runId,
      turn: (context) => {
        contexts.push(context);
        return of(...(context.step < 3 ? [a, k, f] : [a, g]));
      },
      execute: refunds,
    });
    expect(contexts).toEqual([]);
    const events = await lastValueFrom(run.pipe(toArray()));
    expect(contexts.map((c) => [c.runId, c.step, c.previous?.step])).toEqual([
      [runId, 1, undefined],
      [runId, 2, 1],
      [runId, 3, 2],
    ]);
    expect(contexts[1]?.previous?.results.map((r) => r.effectKey)).toEqual([k.effectKey]);
    expect(contexts[1]?.previous?.turn?.toolCalls).toEqual([k]);
    expect(ends(events).map((e) => e.type === 'step-end' && [e.step, e.next, e.end])).toEqual([
      [1, 'answer', undefined],
      [2, 'answer', undefined],
      [3, 'done', 'done'],
    ]);
    // Every other event carries its step.
    expect(events.filter((e) => e.type !== 'step-end').map((e) => e.step)).toEqual([
      1, 1, 1, 1, 2, 2, 2, 2, 3, 3,
    ]);
  });

  it('a paused turn (continue) takes another step; a failed finish ends the run as failed', async () => {
    const paused = at(1, { ...finish('stop'), paused: true });
    const failed = at(1, finish('error'));
    const events = await lastValueFrom(
      runSteps({ runId, turn: ({ step }) => of(a, step === 1 ? paused : failed) }).pipe(toArray()),
    );
    expect(ends(events).map((e) => e.type === 'step-end' && [e.step, e.next, e.end])).toEqual([
      [1, 'continue', undefined],
      [2, 'failed', 'failed'],
    ]);
  });

  it('until ends the run after the step it returns true for, with end: until', async () => {
    const asked: StepOutcome[] = [];
    const events = await lastValueFrom(
      runSteps({
        runId,
        turn: () => of(a, k, f),
        execute: refunds,
        until: (outcome) => {
          asked.push(outcome);
          return outcome.step === 2;
        },
      }).pipe(toArray()),
    );
    expect(asked.map((o) => o.step)).toEqual([1, 2]);
    expect(ends(events).at(-1)).toMatchObject({ step: 2, end: 'until' });
  });

  it('maxSteps defaults to 10', async () => {
    const events = await lastValueFrom(runSteps({ runId, turn: () => of(a, k, f) }).pipe(toArray()));
    expect(ends(events).map((e) => e.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(ends(events).at(-1)).toMatchObject({ end: 'max-steps' });
  });
});

describe('runSteps: resume of a step whose attempt read a background response', () => {
  const stamp = (step: number, event: object) => ({ ...event, step }) as RunEvent;
  const resumable = (attempt: number) => at(attempt, { type: 'resumable' as const, responseId: 'resp_9' });

  it('gives the turn resumeFrom, numbers its attempt as the cut one, and emits nothing the lost runner emitted', async () => {
    // Attempt 1 failed and was retried; attempt 2 read resp_9 and was cut after a text and a resume.
    const log: RunEvent[] = [
      stamp(1, a),
      stamp(1, { type: 'reset', attempt: 2, reason: 'connection reset' }),
      stamp(1, resumable(2)),
      stamp(1, at(2, text('Checking '))),
      stamp(1, at(2, { type: 'resume', after: 3, reason: 'connection reset' })),
    ];
    const contexts: StepContext[] = [];
    const events = await lastValueFrom(
      runSteps({
        runId,
        maxSteps: 1,
        resume: log,
        // The response read again: the turn's first attempt, from its start.
        turn: (context) => {
          contexts.push(context);
          return of(
            resumable(1),
            at(1, text('Checking ')),
            at(1, text('the order.')),
            keyed(runId, 1, h.k, 1),
            f,
          );
        },
        execute: refunds,
      }).pipe(toArray()),
    );
    expect(contexts.map((c) => c.resumeFrom)).toEqual([
      {
        responseId: 'resp_9',
        delivered: [resumable(2), at(2, text('Checking '))],
      },
    ]);
    expect(events.map((e) => [e.type, 'attempt' in e ? e.attempt : undefined])).toEqual([
      ['text', 2],
      ['tool-call', 2],
      ['tool-result', undefined],
      ['finish', 2],
      ['step-end', undefined],
    ]);
    expect(events.find((e) => e.type === 'text')).toMatchObject({ text: 'the order.', step: 1 });
    // The step's state is the whole attempt: the next request is built from it.
    expect(ends(events)[0]?.turn).toMatchObject({ attempt: 2, text: 'Checking the order.' });
  });

  it('a released call and its result that the log holds are not emitted again; the step still has its result', async () => {
    const call = keyed(runId, 1, h.k, 1);
    const result = {
      type: 'tool-result',
      effectKey: call.effectKey,
      call,
      outcome: 'executed',
      result: 'ok',
    };
    const log: RunEvent[] = [stamp(1, resumable(1)), stamp(1, a), stamp(1, call), stamp(1, result)];
    const events = await lastValueFrom(
      runSteps({
        runId,
        maxSteps: 1,
        resume: log,
        turn: () => of(resumable(1), a, call, f),
        execute: refunds,
      }).pipe(toArray()),
    );
    expect(events.map((e) => e.type)).toEqual(['finish', 'step-end']);
    expect(ends(events)[0]?.results).toEqual([result]);
  });

  it('a response read again that fails over to a new attempt: its reset and everything after it come out', async () => {
    const log: RunEvent[] = [stamp(1, resumable(1)), stamp(1, a)];
    const events = await lastValueFrom(
      runSteps({
        runId,
        maxSteps: 1,
        resume: log,
        // The response was forgotten: streamTurn fails its first attempt and retries with a new generation.
        turn: () =>
          of(
            {
              type: 'reset',
              attempt: 2,
              reason: 'cannot resume response resp_9',
              failedAttempt: 1,
            } as TurnEvent,
            at(2, text('Refund started.')),
            at(2, finish('stop')),
          ),
      }).pipe(toArray()),
    );
    expect(events.map((e) => [e.type, 'attempt' in e ? e.attempt : undefined])).toEqual([
      ['reset', 2],
      ['text', 2],
      ['finish', 2],
      ['step-end', undefined],
    ]);
  });

  it('a cut step without a resumable event of its last attempt starts over after a reset, without resumeFrom', async () => {
    // The response of attempt 1 is not the live one: attempt 2 had not named its response yet.
    const log: RunEvent[] = [
      stamp(1, resumable(1)),
      stamp(1, a),
      stamp(1, { type: 'reset', attempt: 2, reason: 'connection reset' }),
    ];
    const contexts: StepContext[] = [];
    const events = await lastValueFrom(
      runSteps({
        runId,
        maxSteps: 1,
        resume: log,
        turn: (context) => {
          contexts.push(context);
          return of(a, g);
        },
      }).pipe(toArray()),
    );
    expect(contexts[0]?.resumeFrom).toBeUndefined();
    expect(events.map((e) => [e.type, 'attempt' in e ? e.attempt : undefined])).toEqual([
      ['reset', 3],
      ['text', 3],
      ['finish', 3],
      ['step-end', undefined],
    ]);
  });
});

describe('runSteps: the standard checks', () => {
  it('empty: a turn that emits nothing ends the run as failed, with no turn state', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const turn = cold<TurnEvent>('--|');
      expectObservable(runSteps({ runId, turn: () => turn })).toBe('--(S|)', {
        S: { type: 'step-end', step: 1, turn: undefined, results: [], next: 'failed', end: 'failed' },
      });
    });
  });

  it('never: emits nothing and never ends; unsubscribing unsubscribes the live step', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const turn = cold('-a--', v);
      expectObservable(runSteps({ runId, turn: () => turn }), '^---!').toBe('-A--', { A: { ...a, step: 1 } });
      expectSubscriptions(turn.subscriptions).toBe('^---!');
    });
    let subscribed = false;
    const subscription = runSteps({
      runId,
      turn: () => {
        subscribed = true;
        return NEVER;
      },
    }).subscribe();
    expect(subscribed).toBe(true);
    subscription.unsubscribe();
  });

  it('unsubscribe in step 2: step 1 has ended, step 2 is unsubscribed, step 3 never starts', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-k-----f---|', v);
      const second = cold('-a-a-a-|', v);
      let n = 0;
      const turn = () => (n++ === 0 ? first : second);
      expectObservable(runSteps({ runId, turn, execute: refunds }), '^--------------!').toBe(
        '-(KR)--F---SA-A-',
        {
          K: { ...k, step: 1 },
          R: {
            type: 'tool-result',
            effectKey: k.effectKey,
            call: k,
            outcome: 'executed',
            result: 'ok',
            step: 1,
          },
          F: { ...f, step: 1 },
          S: expect.objectContaining({ type: 'step-end', step: 1, next: 'answer' }),
          A: { ...a, step: 2 },
        },
      );
      expectSubscriptions(first.subscriptions).toBe('^----------!');
      expectSubscriptions(second.subscriptions).toBe('-----------^---!');
    });
  });

  it('error of the executor: the run errors with it (after the event it failed on), and the turn is unsubscribed', () => {
    const boom = new Error('ledger unreachable');
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const turn = cold('-a-k-f-|', v);
      const execute = (turn$: Observable<TurnEvent>) =>
        turn$.pipe(
          map((event) => {
            if (event.type === 'tool-call') throw boom;
            return undefined as never;
          }),
          filter(() => false),
        );
      expectObservable(runSteps({ runId, turn: () => turn, execute })).toBe(
        '-A-(K#)',
        { A: { ...a, step: 1 }, K: { ...k, step: 1 } },
        boom,
      );
      expectSubscriptions(turn.subscriptions).toBe('^--!');
    });
  });

  it.each(['turn', 'execute', 'until'] as const)('what %s throws ends the run with it', async (which) => {
    const boom = new Error(`${which} threw`);
    const fail = () => {
      throw boom;
    };
    const run = runSteps({
      runId,
      turn: which === 'turn' ? fail : () => of(a, k, f),
      execute: which === 'execute' ? fail : refunds,
      until: which === 'until' ? fail : undefined,
    });
    await expect(lastValueFrom(run.pipe(toArray()))).rejects.toBe(boom);
  });

  it.each([
    ['options', undefined, /^runSteps: options must be an object/],
    ['runId', { runId: '', turn: () => of() }, /^runSteps: runId must be a non-empty string/],
    ['turn', { runId }, /^runSteps: turn must be a function, not undefined/],
    ['execute', { runId, turn: () => of(), execute: 5 }, /^runSteps: execute must be a function, not 5/],
    ['until', { runId, turn: () => of(), until: 'yes' }, /^runSteps: until must be a function/],
    [
      'maxSteps',
      { runId, turn: () => of(), maxSteps: 0 },
      /^runSteps: maxSteps must be an integer >= 1, not 0/,
    ],
  ])('refuses a wrong %s with a UsageError, when called', (_, options, message) => {
    expect(() => runSteps(options as never)).toThrow(UsageError);
    expect(() => runSteps(options as never)).toThrow(message);
  });
});

describe('runSteps over loopback: three steps against a strict Chat Completions server', () => {
  let server: StrictChatServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const chunk = (id: string, delta: object, finishReason: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created: 1786790000,
    model: 'help-desk-1',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const refundText = '{"order_id":"ORD-7781","amount":"full"}';
  /** A whole attempt that asks for the refund with call id `id`. */
  const asksRefund = (id: string, words: string): ChatStep => ({
    events: [
      chunk(id, { role: 'assistant', content: words }),
      chunk(id, {
        tool_calls: [{ index: 0, id, type: 'function', function: { name: 'issue_refund', arguments: '' } }],
      }),
      chunk(id, { tool_calls: [{ index: 0, function: { arguments: refundText } }] }),
      chunk(id, {}, 'tool_calls'),
      '[DONE]',
    ],
    message: { tool_calls: [{ id, name: 'issue_refund', arguments: refundText }] },
  });

  it('step 1 is cut mid-call and retried: one refund; step 2 asks for the same refund again: a second one; step 3 answers', async () => {
    server = await startStrictChatServer({
      steps: [
        { ...asksRefund('call_a1', 'Checking order ORD-7781. '), cutAfter: 2 },
        asksRefund('call_a2', 'Checking order ORD-7781. '),
        asksRefund('call_b1', 'The first refund bounced; trying once more. '),
        {
          events: [
            chunk('answer', { role: 'assistant', content: 'Both refunds have started.' }),
            chunk('answer', {}, 'stop'),
            '[DONE]',
          ],
        },
      ],
    });
    const url = `${server.url}/chat/completions`;
    const ledger = new MemoryEffectLedger();
    const ran: number[] = [];
    const messages: unknown[] = [{ role: 'user', content: 'Please refund order ORD-7781.' }];
    const tools = [{ type: 'function', function: { name: 'issue_refund', parameters: { type: 'object' } } }];

    const events = await lastValueFrom(
      runSteps({
        runId,
        turn: ({ step, previous }) => {
          if (previous?.turn) messages.push(...toOpenAIChatMessages(previous.turn, previous.results));
          const body = JSON.stringify({ model: 'help-desk-1', messages, tools, stream: true });
          return streamTurn({
            turnId: runId,
            step,
            adapter: openaiChat(),
            backoff: false,
            request: ({ signal }) => ({ url, init: { method: 'POST', body, signal } }),
          });
        },
        execute: (turn$, context) =>
          turn$.pipe(
            executeTools(
              {
                issue_refund: async () => {
                  ran.push(context.step);
                  return { refund_id: `R-${context.step}` };
                },
              },
              { turnId: runId, ledger },
            ),
          ),
      }).pipe(toArray()),
    );

    expect(ran).toEqual([1, 2]);
    expect(ends(events).map((e) => e.type === 'step-end' && [e.step, e.next, e.end])).toEqual([
      [1, 'answer', undefined],
      [2, 'answer', undefined],
      [3, 'done', 'done'],
    ]);
    const resets = events.filter((e) => e.type === 'reset');
    expect(resets.map((e) => [e.step, e.attempt])).toEqual([[1, 2]]);
    const released = events.filter((e) => e.type === 'tool-call');
    expect(released.map((e) => [e.step, e.id])).toEqual([
      [1, 'call_a2'],
      [2, 'call_b1'],
    ]);
    expect(new Set(released.map((e) => e.effectKey)).size).toBe(2);
    // Four requests: step 1 twice (the cut), then steps 2 and 3, each accepted by the strict server.
    expect(server.requests.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const last = events
      .filter((e) => e.type === 'text' && e.step === 3)
      .map((e) => e.type === 'text' && e.text);
    expect(last.join('')).toBe('Both refunds have started.');
  });
});
