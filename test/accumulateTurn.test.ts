import { type AttemptRecord, accumulateTurn, cleanTurn, type TurnState } from 'cleanturn';
import { at, call, finish, helpDesk, keyed, reset, retrying, text, usage } from 'cleanturn/testing';
import { from, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

type Tagged = { type: string; attempt: number };

/** Every snapshot accumulateTurn emits for these events, in order. */
type CallOf<E> = Extract<E, { type: 'tool-call' | 'tool-call-repeat' }>;
function snapshots<E extends Tagged>(events: readonly E[]): TurnState<CallOf<E>>[] {
  const out: TurnState<CallOf<E>>[] = [];
  from(events)
    .pipe(accumulateTurn<E>())
    .subscribe((state) => out.push(state));
  return out;
}

/** The last snapshot for these events. */
function final<E extends Tagged>(events: readonly E[]): TurnState<CallOf<E>> {
  const all = snapshots(events);
  const last = all[all.length - 1];
  if (last === undefined) throw new Error('no snapshot');
  return last;
}

const refund = call('c7', 'issue_refund', helpDesk.refundArgs);

describe('accumulateTurn: attempt records', () => {
  it('records an abandoned attempt and a completed one, each with its own usage, text length and calls', () => {
    const turn = final([
      at(1, text('Checking order ORD-7781. ')),
      at(1, call('c1', 'issue_refund', helpDesk.refundArgs)),
      at(1, text('Refunding the dam')),
      at(1, usage(310, 24)),
      reset(2, 'connection reset'),
      at(2, text('Refund started.')),
      at(2, refund),
      at(2, usage(320, 31)),
      at(2, finish('stop')),
    ]);

    expect(turn.attempts).toEqual([
      {
        attempt: 1,
        outcome: 'abandoned',
        reason: 'connection reset',
        usage: { inputTokens: 310, outputTokens: 24 },
        textLength: 'Checking order ORD-7781. Refunding the dam'.length,
        toolCalls: 1,
      },
      {
        attempt: 2,
        outcome: 'completed',
        finishReason: 'stop',
        usage: { inputTokens: 320, outputTokens: 31 },
        textLength: 'Refund started.'.length,
        toolCalls: 1,
      },
    ] satisfies AttemptRecord[]);
    expect(turn.attempt).toBe(2);
    expect(turn.text).toBe('Refund started.');
    expect(turn.toolCalls).toEqual([at(2, refund)]);
    expect(turn.finish).toEqual(at(2, finish('stop')));
    expect(turn.usage).toEqual({ inputTokens: 320, outputTokens: 31 });
  });

  it('the live attempt is streaming until its finish', () => {
    const states = snapshots([at(1, text('Refund')), at(1, text(' started.')), at(1, finish('stop'))]);
    expect(states.map((s) => s.attempts.map((a) => a.outcome))).toEqual([
      ['streaming'],
      ['streaming'],
      ['completed'],
    ]);
    expect(states.map((s) => s.finish)).toEqual([undefined, undefined, at(1, finish('stop'))]);
  });

  it('an attempt that finishes with reason error has failed', () => {
    const turn = final([at(1, text('Sorry')), at(1, finish('error', 'server_error'))]);
    expect(turn.attempts).toEqual([
      { attempt: 1, outcome: 'failed', finishReason: 'error', textLength: 5, toolCalls: 0 },
    ]);
  });

  it('other finish reasons count as completed', () => {
    for (const reason of ['stop', 'tool-calls', 'length', 'content-filter', 'other'] as const) {
      expect(final([at(1, finish(reason))]).attempts[0]).toMatchObject({
        outcome: 'completed',
        finishReason: reason,
      });
    }
  });

  it('a finished attempt that a newer attempt replaces is abandoned, and keeps its finish reason', () => {
    const turn = final([at(1, finish('length')), reset(2, 'truncated'), at(2, text('x'))]);
    expect(turn.attempts[0]).toEqual({
      attempt: 1,
      outcome: 'abandoned',
      reason: 'truncated',
      finishReason: 'length',
      textLength: 0,
      toolCalls: 0,
    });
    expect(turn.finish).toBeUndefined();
  });

  it('a tagged retry closes the attempt like a reset, with its reason', () => {
    const turn = final([at(1, text('abc')), at(2, retrying('timeout')), at(2, text('de'))]);
    expect(turn.attempts).toEqual([
      { attempt: 1, outcome: 'abandoned', reason: 'timeout', textLength: 3, toolCalls: 0 },
      { attempt: 2, outcome: 'streaming', textLength: 2, toolCalls: 0 },
    ]);
  });

  it('counts the characters of text and the tool calls of each attempt', () => {
    const turn = final([
      at(1, text('ab')),
      at(1, text('')),
      at(1, text('cde')),
      at(1, call('c1', 'lookup_order', {})),
      at(1, call('c2', 'issue_refund', helpDesk.refundArgs)),
    ]);
    expect(turn.attempts[0]).toMatchObject({ textLength: 5, toolCalls: 2 });
    expect(turn.toolCalls.map((c) => c.id)).toEqual(['c1', 'c2']);
  });
});

describe('accumulateTurn: usage', () => {
  it('is cumulative: a later usage event replaces the fields it carries, it does not add', () => {
    const states = snapshots([
      at(1, usage(100, 5)),
      at(1, usage(100, 9)),
      at(1, usage(undefined, 12)),
      at(1, usage(120)),
    ]);
    expect(states.map((s) => s.usage)).toEqual([
      { inputTokens: 100, outputTokens: 5 },
      { inputTokens: 100, outputTokens: 9 },
      { inputTokens: 100, outputTokens: 12 },
      { inputTokens: 120, outputTokens: 12 },
    ]);
    expect(states[3]?.attempts[0]?.usage).toEqual({ inputTokens: 120, outputTokens: 12 });
  });

  it('starts from scratch for each attempt', () => {
    const turn = final([at(1, usage(100, 5)), reset(2), at(2, usage(undefined, 7))]);
    expect(turn.usage).toEqual({ outputTokens: 7 });
    expect(turn.attempts.map((a) => a.usage)).toEqual([
      { inputTokens: 100, outputTokens: 5 },
      { outputTokens: 7 },
    ]);
  });

  it('is undefined, not zero, when the provider sent none', () => {
    const turn = final([at(1, text('x')), reset(2), at(2, text('y')), at(2, finish())]);
    expect(turn.usage).toBeUndefined();
    for (const record of turn.attempts) {
      expect(record.usage).toBeUndefined();
      expect('usage' in record).toBe(false);
    }
  });

  it('an empty usage event makes usage known but empty', () => {
    const turn = final([at(1, usage())]);
    expect(turn.usage).toEqual({});
    expect(turn.attempts[0]?.usage).toEqual({});
  });
});

describe('accumulateTurn: snapshots', () => {
  it('are never mutated by later events', () => {
    const events = [
      at(1, text('Checking')),
      at(1, call('c1', 'issue_refund', helpDesk.refundArgs)),
      at(1, usage(10, 1)),
      at(1, usage(undefined, 2)),
      reset(2, 'connection reset'),
      at(2, text('Refund')),
      at(2, refund),
      at(2, call('c8', 'send_email', { to: 'zoe@example.com' })),
      at(2, usage(12, 3)),
      at(2, text(' started.')),
      at(2, finish('stop')),
    ];
    const copies: unknown[] = [];
    const states: unknown[] = [];
    from(events)
      .pipe(accumulateTurn())
      .subscribe((state) => {
        states.push(state);
        copies.push(structuredClone(state));
      });
    expect(states).toHaveLength(events.length);
    expect(states).toEqual(copies);
  });

  it('are new objects whenever something changed', () => {
    const states = snapshots([at(1, text('a')), at(1, call('c1', 'f', {})), at(1, call('c2', 'g', {}))]);
    expect(states[1]).not.toBe(states[0]);
    expect(states[2]?.toolCalls).not.toBe(states[1]?.toolCalls);
    expect(states[1]?.toolCalls).toHaveLength(1);
  });

  it('are emitted after every event, in the same frame', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-r-b-|', { a: at(1, text('x')), r: reset(2), b: at(2, text('y')) });
      const sourceSubs = '  ^------!';
      const expected = '    -S-T-U-|';

      expectObservable(source.pipe(accumulateTurn())).toBe(expected, {
        S: expect.objectContaining({ attempt: 1, text: 'x' }),
        T: expect.objectContaining({ attempt: 2, text: '' }),
        U: expect.objectContaining({ attempt: 2, text: 'y' }),
      });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('start over for each subscription', () => {
    const source: Observable<TurnState> = from([at(1, text('a')), reset(2), at(2, text('b'))]).pipe(
      accumulateTurn(),
    );
    const runs: string[][] = [[], []];
    source.subscribe((s) => runs[0]?.push(`${s.attempt}:${s.text}`));
    source.subscribe((s) => runs[1]?.push(`${s.attempt}:${s.text}`));
    expect(runs[1]).toEqual(runs[0]);
    expect(runs[0]).toEqual(['1:a', '2:', '2:b']);
  });
});

describe('accumulateTurn: stragglers and gaps', () => {
  it('ignores events of an older attempt: text, calls, usage and finish', () => {
    const states = snapshots([
      at(1, text('Refunding the dam')),
      reset(2, 'connection reset'),
      at(2, text('Refund started.')),
      at(1, text('age')),
      at(1, call('c1', 'issue_refund', helpDesk.refundArgs)),
      at(1, usage(999, 999)),
      at(1, finish('stop')),
    ]);
    const before = states[2];
    expect(states).toHaveLength(7);
    for (const late of states.slice(3)) expect(late).toEqual(before);
    expect(before?.text).toBe('Refund started.');
    expect(before?.attempts).toEqual([
      { attempt: 1, outcome: 'abandoned', reason: 'connection reset', textLength: 17, toolCalls: 0 },
      { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 0 },
    ]);
  });

  it('a straggler before anything changed still yields a snapshot', () => {
    const states = snapshots([at(2, text('b')), at(1, text('late'))]);
    expect(states).toHaveLength(2);
    expect(states[1]).toEqual(states[0]);
  });

  it('records attempts skipped in a gap as abandoned and empty; the reason belongs to the attempt just before', () => {
    const turn = final([at(1, text('abc')), reset(4, 'timeout'), at(4, text('de'))]);
    expect(turn.attempt).toBe(4);
    expect(turn.attempts).toEqual([
      { attempt: 1, outcome: 'abandoned', textLength: 3, toolCalls: 0 },
      { attempt: 2, outcome: 'abandoned', textLength: 0, toolCalls: 0 },
      { attempt: 3, outcome: 'abandoned', reason: 'timeout', textLength: 0, toolCalls: 0 },
      { attempt: 4, outcome: 'streaming', textLength: 2, toolCalls: 0 },
    ]);
  });

  it('an event of a newer attempt without a reset starts that attempt, with no reason', () => {
    const turn = final([at(1, text('abc')), at(2, text('de'))]);
    expect(turn.text).toBe('de');
    expect(turn.attempts).toEqual([
      { attempt: 1, outcome: 'abandoned', textLength: 3, toolCalls: 0 },
      { attempt: 2, outcome: 'streaming', textLength: 2, toolCalls: 0 },
    ]);
  });

  it('a stream that starts at a later attempt records the earlier ones as abandoned', () => {
    const turn = final([reset(2, 'connection reset'), at(2, text('x'))]);
    expect(turn.attempts.map((a) => [a.attempt, a.outcome, a.reason])).toEqual([
      [1, 'abandoned', 'connection reset'],
      [2, 'streaming', undefined],
    ]);
  });
});

describe('accumulateTurn after cleanTurn', () => {
  it('the help-desk turn: the user reads attempt 2 only, one keyed refund, two attempt records', () => {
    const states: TurnState[] = [];
    from(helpDesk.turn)
      .pipe(cleanTurn({ turnId: 'turn-42' }), accumulateTurn())
      .subscribe((s) => states.push(s));
    const turn = states[states.length - 1];
    expect(turn?.text).toBe(
      'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.',
    );
    expect(turn?.toolCalls).toEqual([keyed('turn-42', 2, call('c7', 'issue_refund', helpDesk.refundArgs))]);
    expect(turn?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(turn?.attempts[0]).toMatchObject({
      textLength: 'Checking order ORD-7781. Refunding the dam'.length,
      toolCalls: 0,
    });
  });
});

describe('accumulateTurn: resumes', () => {
  const resume = (attempt: number, after: number) => ({
    type: 'resume',
    attempt,
    after,
    reason: 'connection reset',
  });

  it('counts the resumes of an attempt, keeps its text, and starts no new attempt', () => {
    const states: TurnState<never>[] = [];
    from([
      at(1, text('Checking order ')),
      resume(1, 4),
      at(1, text('ORD-7781.')),
      resume(1, 9),
      at(1, finish()),
    ])
      .pipe(accumulateTurn())
      .subscribe((s) => states.push(s as TurnState<never>));
    const last = states[states.length - 1];
    expect(last?.text).toBe('Checking order ORD-7781.');
    expect(last?.attempts).toEqual([
      { attempt: 1, outcome: 'completed', finishReason: 'stop', textLength: 24, toolCalls: 0, resumes: 2 },
    ]);
    expect(states[1]?.attempts[0]).toEqual({
      attempt: 1,
      outcome: 'streaming',
      textLength: 15,
      toolCalls: 0,
      resumes: 1,
    });
  });

  it('keeps the count on the abandoned attempt, and starts the next one at none', () => {
    let state: TurnState<never> | undefined;
    from([at(1, text('Refunding the dam')), resume(1, 3), reset(2, 'gap'), at(2, text('Refund started.'))])
      .pipe(accumulateTurn())
      .subscribe((s) => {
        state = s as TurnState<never>;
      });
    expect(state?.attempts).toEqual([
      { attempt: 1, outcome: 'abandoned', reason: 'gap', textLength: 17, toolCalls: 0, resumes: 1 },
      { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 0 },
    ]);
  });
});
