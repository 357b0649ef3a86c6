// The turn's promises, each against the input that broke it: the final attempt is whole (repeats are delivered,
// marked, and answered), a consumer that retries from its handler sees nothing of the abandoned attempt after the
// reset, nothing follows a finish, and every part of the package agrees on the attempt rules and on an error's
// text.
import type { ProviderEvent, ToolResultLike, TurnEvent } from 'cleanturn';
import * as core from 'cleanturn';
import { accumulateTurn, cleanTurn, effectKey } from 'cleanturn';
import { toAcpUpdates } from 'cleanturn/acp';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { initialView, reduceView, toTerminal } from 'cleanturn/renderers';
import { call, finish, retrying, text } from 'cleanturn/testing';
import { defer, from, last, lastValueFrom, Subject, share, throwError, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import { serializeError } from '../src/effects/json.js';
import { describeError } from '../src/internal/describeError.js';
import type { ReleasedCall } from '../src/types.js';
import { collect } from './support/collect.js';

type Whole = AssembledEvent<ProviderEvent>;

const turnId = 'turn-42';
const isRead = (c: { name: string }) => c.name === 'lookup_order';
const read1 = call('r1', 'lookup_order', { order_id: 'ORD-7781' });
const read2 = call('r2', 'lookup_order', { order_id: 'ORD-7781' });
const refund1 = call('w1', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });
const refund2 = call('w2', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });

const callIds = (events: readonly TurnEvent[], attempt?: number) =>
  events
    .filter(
      (e): e is ReleasedCall =>
        (e.type === 'tool-call' || e.type === 'tool-call-repeat') &&
        (attempt === undefined || e.attempt === attempt),
    )
    .map((e) => e.id);

describe('the final attempt is whole', () => {
  it('an early read of an abandoned attempt, asked again, reaches the consumer as a repeat', async () => {
    const events: Whole[] = [
      read1,
      refund1,
      retrying('connection reset'),
      read2,
      refund2,
      finish('tool-calls'),
    ];
    const turn = await lastValueFrom(
      from(events).pipe(cleanTurn({ turnId, early: isRead }), accumulateTurn(), last()),
    );
    expect(turn.toolCalls.map((c) => c.id)).toEqual(['r2', 'w2']);
    expect(turn.toolCalls.map((c) => c.type)).toEqual(['tool-call-repeat', 'tool-call']);
    expect(turn.toolCalls[0]?.effectKey).toBe(effectKey(turnId, read1));
  });

  it('a call whose key is in seen reaches the consumer as a repeat', () => {
    const seen = new Set([effectKey(turnId, refund2)]);
    const out = collect(
      from<Whole[]>([text('Done.'), refund2, finish('tool-calls')]).pipe(cleanTurn({ turnId, seen })),
    );
    expect(callIds(out.values)).toEqual(['w2']);
    expect(out.values.find((e) => 'id' in e && e.id === 'w2')).toMatchObject({ type: 'tool-call-repeat' });
  });

  it('two calls with one key in one attempt both reach the consumer, the second as a repeat', () => {
    const out = collect(from<Whole[]>([refund1, refund2, finish('tool-calls')]).pipe(cleanTurn({ turnId })));
    expect(callIds(out.values)).toEqual(['w1', 'w2']);
    expect(out.values.filter((e) => e.type.startsWith('tool-call')).map((e) => e.type)).toEqual([
      'tool-call',
      'tool-call-repeat',
    ]);
  });

  it('executeTools answers every call id of the final attempt, and runs each effect once', async () => {
    const runs: string[] = [];
    const ledger = new MemoryEffectLedger();
    const events: Whole[] = [
      read1,
      retrying('connection reset'),
      read2,
      refund2,
      refund1,
      finish('tool-calls'),
    ];
    const turn$ = from(events).pipe(cleanTurn({ turnId, early: isRead }), share());
    const [clean, results] = await Promise.all([
      lastValueFrom(turn$.pipe(toArray())),
      lastValueFrom(
        turn$.pipe(
          executeTools(
            {
              lookup_order: (args) => {
                runs.push('lookup_order');
                return { status: 'delivered', args };
              },
              issue_refund: () => {
                runs.push('issue_refund');
                return { refund: 're_1' };
              },
            },
            { turnId, ledger },
          ),
          toArray(),
        ),
      ),
    ]);
    const finalCalls = callIds(clean, 2);
    expect(finalCalls).toEqual(['r2', 'w2', 'w1']);
    const answered = results.filter((r) => r.call.attempt === 2).map((r) => r.call.id);
    expect(answered.sort()).toEqual([...finalCalls].sort());
    expect(runs.sort()).toEqual(['issue_refund', 'lookup_order']);
    const byId = new Map(results.map((r) => [r.call.id, r]));
    expect(byId.get('r2')).toMatchObject({ outcome: 'replayed', result: { status: 'delivered' } });
    expect(byId.get('w1')).toMatchObject({ outcome: 'replayed', result: { refund: 're_1' } });
  });
});

describe('a consumer that starts a new attempt while calls are released', () => {
  it('receives nothing of the abandoned attempt after the reset', () => {
    const source = new Subject<Whole>();
    const received: string[] = [];
    let retried = false;
    source.pipe(cleanTurn({ turnId })).subscribe((event) => {
      received.push(`${event.type}@${event.attempt}`);
      if (event.type === 'tool-call' && !retried) {
        retried = true;
        source.next(retrying('the user pressed regenerate'));
      }
    });
    source.next(refund1);
    source.next(read1);
    source.next(call('w3', 'send_email', { to: 'a@example.com' }));
    source.next(finish('tool-calls'));
    expect(received).toEqual(['tool-call@1', 'reset@2']);
    // The new attempt works as usual.
    source.next(refund2);
    source.next(finish('tool-calls'));
    expect(received).toEqual(['tool-call@1', 'reset@2', 'tool-call-repeat@2', 'finish@2']);
  });
});

describe('nothing after a finish', () => {
  const afterFinish: Whole[] = [
    text('Refund started.'),
    finish('stop'),
    refund1,
    text(' And a bonus.'),
    finish('tool-calls'),
    { type: 'usage', inputTokens: 310, outputTokens: 48 },
  ];

  it('a call and text after the finish are not part of the turn; usage still counts', async () => {
    const out = collect(from(afterFinish).pipe(cleanTurn({ turnId })));
    expect(out.values.map((e) => e.type)).toEqual(['text', 'finish', 'usage']);
    const turn = await lastValueFrom(from(afterFinish).pipe(cleanTurn({ turnId }), accumulateTurn(), last()));
    expect(turn.text).toBe('Refund started.');
    expect(turn.toolCalls).toEqual([]);
    expect(turn.finish?.reason).toBe('stop');
    expect(turn.usage).toEqual({ inputTokens: 310, outputTokens: 48 });
  });

  it('the operators enforce it on their own, from a tagged source that skipped the others', async () => {
    const tagged = afterFinish.map((e) => ({ ...e, attempt: 1 }));
    const held = collect(from(tagged).pipe(core.bufferUntilFinish()));
    expect(held.values.map((e) => e.type)).toEqual(['text', 'finish', 'usage']);
    const turn = await lastValueFrom(from(tagged).pipe(accumulateTurn(), last()));
    expect(turn.text).toBe('Refund started.');
    expect(turn.toolCalls).toEqual([]);
  });
});

describe('the renderers agree, from the one rule', () => {
  // Attempt 1 shows text and an early read, is abandoned; the read's result arrives late; attempt 2 finishes,
  // then text and a call arrive after its finish.
  const keyedRead = { ...read1, attempt: 1, effectKey: effectKey(turnId, read1) };
  const staleResult: ToolResultLike = {
    type: 'tool-result',
    effectKey: keyedRead.effectKey,
    call: keyedRead,
    outcome: 'executed',
    result: { status: 'delivered' },
  };
  const events: (TurnEvent | ToolResultLike)[] = [
    { type: 'text', text: 'Checking', attempt: 1 },
    keyedRead,
    { type: 'reset', attempt: 2, reason: 'connection reset' },
    staleResult,
    { type: 'text', text: 'Refund started.', attempt: 2 },
    { type: 'finish', reason: 'stop', attempt: 2 },
    { type: 'text', text: ' Late.', attempt: 2 },
    { type: 'text', text: 'Straggler', attempt: 1 },
  ];

  it('the view shows the final attempt only and drops the stale result', () => {
    const view = events.reduce(reduceView, initialView);
    expect(view).toMatchObject({ attempt: 2, text: 'Refund started.', toolCalls: [], finished: true });
  });

  it('the terminal prints nothing of the stale result nor after the finish', async () => {
    const printed = (await lastValueFrom(from(events).pipe(toTerminal(), toArray()))).join('');
    expect(printed).not.toContain('✓');
    expect(printed).not.toContain('Late');
    expect(printed).not.toContain('Straggler');
  });

  it('ACP sends nothing for the stale result nor after the finish', async () => {
    const updates = await lastValueFrom(
      from(events).pipe(toAcpUpdates({ sessionId: 's', messageId: (a) => `m${a}` }), toArray()),
    );
    const kinds = updates.map((u) => u.update.sessionUpdate);
    expect(kinds).not.toContain('tool_call_update');
    const texts = updates.flatMap((u) =>
      u.update.sessionUpdate === 'agent_message_chunk' && u.update.content.type === 'text'
        ? [u.update.content.text]
        : [],
    );
    expect(texts.join('')).toBe('CheckingRefund started.');
  });
});

describe('an error as text, one rule', () => {
  const cases: [unknown, string][] = [
    [new Error('socket hang up'), 'socket hang up'],
    [new Error(''), 'Error'],
    [new TypeError(''), 'TypeError'],
    [{ message: 'card declined' }, 'card declined'],
    [{ message: '', name: 'CardError' }, 'CardError'],
    ['overloaded', 'overloaded'],
    ['', 'unknown error'],
    [undefined, 'unknown error'],
    [null, 'unknown error'],
    [42, '42'],
    [{ code: 503 }, '{"code":503}'],
  ];

  it.each(cases)('describeError(%o) is %j', (error, expected) => {
    expect(describeError(error)).toBe(expected);
  });

  it.each(cases)('the retry reason and the stored failure say the same for %o', async (error, expected) => {
    let subscriptions = 0;
    const failingOnce = defer(() =>
      subscriptions++ === 0 ? throwError(() => error) : from<Whole[]>([finish()]),
    );
    const events = await lastValueFrom(failingOnce.pipe(core.retryAsEvents({ count: 1 }), toArray()));
    expect(events[0]).toMatchObject({ type: 'retry', reason: expected });
    expect(serializeError(error).message).toBe(expected);
  });
});
