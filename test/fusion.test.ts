// Adjacent stage operators fuse into one subscriber, however the user splits them into `pipe` calls; an operator
// of the user's own between them ends the fusion. Fused or not, a composition emits the same events, errors the
// same way and calls the user's callbacks the same times: checked here on random turns.
import {
  accumulateTurn,
  assembleToolCalls,
  attemptPipeline,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  type ProviderEvent,
  requireFinish,
  resetOnRetry,
  tagAttempts,
} from 'cleanturn';
import { call, delta, finish, retrying, text, usage } from 'cleanturn/testing';
import fc from 'fast-check';
import { defer, from, map, type Observable, type OperatorFunction, pipe, take, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { fusedStages } from '../src/internal/stage.js';
import { collect } from './support/collect.js';

/** Any operator, as far as composing them here cares. */
type Op = OperatorFunction<never, unknown>;

/** What the user's callbacks were asked, in order. */
type Log = string[];

/** The public operators of a custom policy, in order, with callbacks that write to `log`. */
function stages(log: Log, throwAt?: { key?: number }): Op[] {
  let keys = 0;
  return [
    assembleToolCalls(),
    tagAttempts(),
    resetOnRetry(),
    bufferUntilFinish({
      early: (c: { id: string; name: string }) => {
        log.push(`early ${c.id}`);
        return c.name === 'lookup_order';
      },
    }),
    dedupeByEffectKey({
      turnId: 'turn-fused',
      seen: {
        has: (key) => {
          log.push(`seen ${key.slice(0, 8)}`);
          return false;
        },
      },
      key: (turnId, c) => {
        keys++;
        log.push(`key ${c.id}`);
        if (keys === throwAt?.key) throw new Error(`key ${keys} failed`);
        return `${turnId}:${c.name}:${JSON.stringify(c.args)}`;
      },
    }),
    accumulateTurn(),
  ] as Op[];
}

/** One `pipe` call with every operator. */
const together = (source: Observable<ProviderEvent>, ops: Op[]) =>
  (source.pipe as (...o: Op[]) => Observable<unknown>)(...ops);
/** One `pipe` call per operator. */
const oneByOne = (source: Observable<ProviderEvent>, ops: Op[]) =>
  ops.reduce<Observable<unknown>>((s, o) => s.pipe(o as OperatorFunction<unknown, unknown>), source);
/** An operator of the user's own (a `map` that changes nothing) between every two. */
const foreignBetween = (source: Observable<ProviderEvent>, ops: Op[]) =>
  oneByOne(
    source,
    ops.flatMap((o, i) => (i === 0 ? [o] : [map((e: never) => e) as Op, o])),
  );
/** Composed in halves with rxjs' `pipe()`, then the halves piped. */
const inHalves = (source: Observable<ProviderEvent>, ops: Op[]) =>
  source.pipe(
    (pipe as (...o: Op[]) => Op)(...ops.slice(0, 3)) as OperatorFunction<ProviderEvent, never>,
    (pipe as (...o: Op[]) => Op)(...ops.slice(3)) as OperatorFunction<never, unknown>,
  );

const compositions = { together, oneByOne, foreignBetween, inHalves };

/** What a composition emitted, how it ended, and what it asked the callbacks. */
function run(
  compose: (source: Observable<ProviderEvent>, ops: Op[]) => Observable<unknown>,
  events: readonly ProviderEvent[],
  throwAt?: { key?: number },
  limit?: number,
) {
  const log: Log = [];
  let pulled = 0;
  const source = from(events).pipe(tap(() => pulled++));
  const composed = compose(source, stages(log, throwAt));
  const { values, error, completed } = collect(limit === undefined ? composed : composed.pipe(take(limit)));
  return {
    values,
    error: error === undefined ? undefined : String(error),
    completed,
    log,
    pulled,
  };
}

describe('fusion of adjacent stage operators', () => {
  const source = from([text('Checking order ORD-7781. '), finish()]);

  it('runs operators piped next to each other as one chain of stages, whatever the pipe calls', () => {
    const log: Log = [];
    expect(fusedStages(together(source, stages(log)))).toBe(6);
    expect(fusedStages(oneByOne(source, stages(log)))).toBe(6);
    expect(fusedStages(inHalves(source, stages(log)))).toBe(6);
    // A foreign operator ends the chain: the last run of stages is the one operator after it.
    expect(fusedStages(foreignBetween(source, stages(log)))).toBe(1);
    // The composed operators are one stage factory each and fuse with their neighbours.
    expect(fusedStages(source.pipe(attemptPipeline(), cleanTurn({ turnId: 't' }), accumulateTurn()))).toBe(3);
    expect(fusedStages(source.pipe(assembleToolCalls(), requireFinish()))).toBe(2);
    expect(fusedStages(source)).toBe(0);
  });

  it('subscribes to the source once, and builds fresh stages for every subscription', () => {
    let subscriptions = 0;
    const counted = defer(() => {
      subscriptions++;
      return from([
        text('Refunding the dam'),
        retrying('connection reset'),
        text('Refund started.'),
        finish(),
      ]);
    });
    const turn$ = counted.pipe(tagAttempts(), resetOnRetry()).pipe(accumulateTurn());
    const first = collect(turn$);
    const second = collect(turn$);
    expect(subscriptions).toBe(2);
    expect(second.values).toEqual(first.values);
    expect((first.values.at(-1) as { text: string; attempt: number }).text).toBe('Refund started.');
    expect((first.values.at(-1) as { attempt: number }).attempt).toBe(2);
  });

  it('leaves the observable it extends as it was: each stays usable on its own', () => {
    const tagged$ = from([text('a'), retrying('cut'), text('b')]).pipe(tagAttempts());
    const reset$ = tagged$.pipe(resetOnRetry());
    expect(fusedStages(tagged$)).toBe(1);
    expect(fusedStages(reset$)).toBe(2);
    expect(collect(tagged$).values.map((e) => (e as { type: string }).type)).toEqual([
      'text',
      'retry',
      'text',
    ]);
    expect(collect(reset$).values.map((e) => (e as { type: string }).type)).toEqual([
      'text',
      'reset',
      'text',
    ]);
  });

  it('stops a synchronous source at once when the consumer takes what it needs', () => {
    for (const [name, compose] of Object.entries(compositions)) {
      const events = [text('a'), text('b'), text('c'), text('d'), finish()];
      const { values, pulled } = run((s, ops) => compose(s, ops).pipe(take(2)), events);
      expect({ name, values: values.length, pulled }).toEqual({ name, values: 2, pulled: 2 });
    }
  });

  it('asks nothing more of a callback once the chain has ended, in the middle of a release', () => {
    // Two state-changing calls are held until the finish; keying the first one throws. The second is never keyed.
    const events = [
      call('c1', 'issue_refund', { order_id: 'ORD-7781' }),
      call('c2', 'send_email', { to: 'ana@example.com' }),
      finish('tool-calls'),
    ];
    for (const [name, compose] of Object.entries(compositions)) {
      const result = run(compose, events, { key: 1 });
      expect({ name, ...result }).toMatchObject({
        name,
        error: 'Error: key 1 failed',
        completed: false,
        log: ['early c1', 'early c2', 'key c1'],
      });
      // The consumer has what it needs after the first released call: the second is not keyed either.
      const taken = run((s, ops) => compose(s, ops).pipe(take(1)), events);
      expect({ name, ...taken }).toMatchObject({
        name,
        completed: true,
        log: ['early c1', 'early c2', 'key c1', 'seen turn-fus'],
      });
    }
  });
});

// -----------------------------------------------------------------------------------------------------------
// Random turns: every composition agrees with the one-pipe composition
// -----------------------------------------------------------------------------------------------------------

const argsArb = fc.oneof(
  fc.record({ order_id: fc.constantFrom('ORD-7781', 'ORD-7782') }),
  fc.record({ to: fc.constantFrom('ana@example.com', 'bo@example.com'), body: fc.string({ maxLength: 6 }) }),
);

/** One step of a random turn: text, usage, a whole call, a call in fragments (sometimes garbled), a finish or a retry. */
const stepArb: fc.Arbitrary<ProviderEvent[]> = fc.oneof(
  fc.string({ maxLength: 5 }).map((t) => [text(t)]),
  fc.nat(500).map((n) => [usage(n, 3)]),
  fc
    .tuple(fc.constantFrom('issue_refund', 'lookup_order', 'send_email'), argsArb, fc.nat(3))
    .map(([name, args, n]) => [call(`c${n}`, name, args)]),
  fc
    .tuple(fc.nat(2), fc.constantFrom('issue_refund', 'lookup_order'), argsArb, fc.nat(4), fc.boolean())
    .map(([index, name, args, cut, garbled]) => {
      const json = garbled ? `${JSON.stringify(args)}}` : JSON.stringify(args);
      const at = Math.min(cut * 3, json.length);
      return [delta(index, json.slice(0, at), { id: `d${index}`, name }), delta(index, json.slice(at))];
    }),
  fc.constantFrom<ProviderEvent[]>([finish('tool-calls')], [finish('stop')]),
  fc.constantFrom('connection reset', 'stalled').map((r) => [retrying(r)]),
);

const turnArb = fc.array(stepArb, { maxLength: 14 }).map((steps) => steps.flat());

describe('fused and unfused compositions on random turns', () => {
  it('emit the same events, end the same way and ask the callbacks the same things', () => {
    fc.assert(
      fc.property(
        turnArb,
        fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        (events, failAt) => {
          const throwAt = failAt === undefined ? undefined : { key: failAt };
          const expected = run(together, events, throwAt);
          for (const compose of [oneByOne, foreignBetween, inHalves]) {
            expect(run(compose, events, throwAt)).toEqual(expected);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('agree with cleanTurn, the fused policy written as one operator', () => {
    fc.assert(
      fc.property(turnArb, (events) => {
        const log: Log = [];
        const ops = stages(log);
        const viaCleanTurn = collect(
          from(events).pipe(
            assembleToolCalls(),
            cleanTurn({ turnId: 'turn-fused', early: (c) => c.name === 'lookup_order' }),
            accumulateTurn(),
          ),
        );
        const oneByOneDefaultKeys = collect(
          oneByOne(from(events), [
            ops[0] as Op,
            tagAttempts() as Op,
            resetOnRetry() as Op,
            bufferUntilFinish({ early: (c: { name: string }) => c.name === 'lookup_order' }) as Op,
            dedupeByEffectKey({ turnId: 'turn-fused' }) as Op,
            accumulateTurn() as Op,
          ]),
        );
        expect(oneByOneDefaultKeys.values).toEqual(viaCleanTurn.values);
        expect(String(oneByOneDefaultKeys.error)).toBe(String(viaCleanTurn.error));
      }),
      { numRuns: 300 },
    );
  });
});
