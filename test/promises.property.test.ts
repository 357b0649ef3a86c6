import { isDeepStrictEqual } from 'node:util';
import type { FinishReason, KeyedToolCall, ProviderEvent, TurnEvent, TurnState } from 'cleanturn';
import { accumulateTurn, cleanTurn, effectKey } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { call, finish, reasoning, retrying, text, usage } from 'cleanturn/testing';
import fc from 'fast-check';
import { filter, map, Observable, type OperatorFunction, Subject, share, takeWhile, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { FinishEvent, ReleasedCall, RetryEvent, ToolCallEvent } from '../src/types.js';

// The four promises of a turn (DESIGN.md, rules 1–6), each checked as a property over random retried turns,
// through the whole stack a user wires: `cleanTurn` shared between a consumer that folds `accumulateTurn()` and
// `executeTools` over a ledger. Sources are synchronous `Subject`s: no timers, no timed assertions.
//
// Each property is a function of the pipeline (and of how the executor is wired), so that the last block can show
// that every property rejects a pipeline that is wrong on purpose.

const RUNS = process.env.CI === 'true' ? 10_000 : 1_000;
const TURN_ID = 'turn-promises';

// ---------------------------------------------------------------------------------------------------------
// The generated turn
// ---------------------------------------------------------------------------------------------------------

/** The provider events of this file: whole tool calls (as after `assembleToolCalls()`), no fragments. */
type WholeEvent = Exclude<ProviderEvent, { type: 'tool-call-delta' }>;

/** `lookup_order` is the pure read (the `early` one); the others change state. */
const TOOL_NAMES = ['issue_refund', 'send_email', 'lookup_order'] as const;
type ToolName = (typeof TOOL_NAMES)[number];
const EARLY_TOOL: ToolName = 'lookup_order';
const isEarly = (c: { name: string }): boolean => c.name === EARLY_TOOL;
const changesState = (c: { name: string }): boolean => c.name !== EARLY_TOOL;

/**
 * A small pool of arguments, so that equal calls within an attempt and across attempts are common. Each call gets
 * a fresh object. The last two have the same meaning with a different key order: one effect key.
 */
const ARGS: readonly { label: string; make: () => Record<string, unknown> }[] = [
  { label: 'ORD-1', make: () => ({ order_id: 'ORD-1' }) },
  { label: 'ORD-2', make: () => ({ order_id: 'ORD-2' }) },
  { label: 'ORD-1,full', make: () => ({ order_id: 'ORD-1', amount: 'full' }) },
  { label: 'full,ORD-1', make: () => ({ amount: 'full', order_id: 'ORD-1' }) },
];

/** The effect key of each (tool, argument pool index) pair, computed once. */
const KEYS = new Map<string, string>(
  TOOL_NAMES.flatMap((name) =>
    ARGS.map((a, i) => [`${name}/${i}`, effectKey(TURN_ID, { name, args: a.make() })] as const),
  ),
);
const keyOf = (name: string, args: number): string => KEYS.get(`${name}/${args}`) as string;

/** `send_email` to ORD-2 is declined for good (`retryable: false`): its failure is recorded and replayed. */
const declines = (name: string, args: unknown): boolean =>
  name === 'send_email' &&
  (args as { order_id?: unknown }).order_id === 'ORD-2' &&
  !('amount' in (args as object));

/** One step of an attempt's body, before ids are given. */
type Step =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'call'; name: ToolName; args: number }
  | { kind: 'usage'; inputTokens: number | undefined; outputTokens: number | undefined }
  | { kind: 'resume'; after: number };

/** What may follow the final finish (and must be ignored, `usage` excepted). */
type TrailingStep = Step | { kind: 'finish'; reason: FinishReason };

/** A generated call and where it came from. */
interface GenCall {
  event: ToolCallEvent;
  attempt: number;
  key: string;
}

interface GenAttempt {
  /** 1-based. */
  attempt: number;
  /** The body: the events before the attempt's `retry` (abandoned) or `finish` (the last one). */
  events: WholeEvent[];
  calls: GenCall[];
  text: string;
  /** The attempt's reasoning text. */
  reasoning: string;
}

interface GenTurn {
  attempts: GenAttempt[];
  /** The retry that starts attempt i + 2, for each i. */
  retries: RetryEvent[];
  last: GenAttempt;
  /** The finish of the last attempt. */
  finish: FinishEvent;
  /** Events after that finish. */
  trailing: WholeEvent[];
  /** The whole stream, in order. */
  events: WholeEvent[];
  /** The effect key of every generated call, by id (the calls after the finish included). */
  keys: Map<string, string>;
  /** Keys a ledger of an earlier run already holds (pre-completed in the ledger too), if that is used. */
  seen: Set<string> | undefined;
  /** How fast-check prints a counterexample. */
  [fc.toStringMethod]: () => string;
}

const fragmentArb = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '.'), maxLength: 3 });

const callStepArb = fc.record({
  kind: fc.constant('call' as const),
  name: fc.constantFrom(...TOOL_NAMES),
  args: fc.nat({ max: ARGS.length - 1 }),
});

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('text' as const), text: fragmentArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reasoning' as const), text: fragmentArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const), after: fc.nat({ max: 99 }) }) },
  { weight: 4, arbitrary: callStepArb },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('usage' as const),
      inputTokens: fc.option(fc.nat({ max: 99 }), { nil: undefined }),
      outputTokens: fc.option(fc.nat({ max: 99 }), { nil: undefined }),
    }),
  },
);

const trailingStepArb: fc.Arbitrary<TrailingStep> = fc.oneof(
  stepArb,
  fc.record({
    kind: fc.constant('finish' as const),
    reason: fc.constantFrom<FinishReason>('stop', 'tool-calls'),
  }),
);

/** One line of a counterexample per event: `"ab"`, `issue_refund#a1-c0(ORD-1)`, `usage(3,-)`, `finish(stop)`. */
function label(e: WholeEvent): string {
  switch (e.type) {
    case 'text':
      return JSON.stringify(e.text);
    case 'reasoning':
      return `thinking(${JSON.stringify(e.text)})`;
    case 'tool-call': {
      const args = ARGS.find((a) => JSON.stringify(a.make()) === JSON.stringify(e.args))?.label ?? '?';
      return `${e.name}#${e.id}(${args})`;
    }
    case 'usage':
      return `usage(${e.inputTokens ?? '-'},${e.outputTokens ?? '-'})`;
    case 'finish':
      return `finish(${e.reason})`;
    case 'retry':
      return `retry(${e.reason})`;
    case 'resume':
      return `resume(${e.after})`;
    case 'resumable':
      return `resumable(${e.responseId})`;
  }
}

/** Turns the steps of one attempt into events, with ids unique per attempt (`a2-c1`) and fresh argument objects. */
function attemptEvents(prefix: string, attempt: number, steps: readonly Step[], firstCall = 0) {
  const events: WholeEvent[] = [];
  const calls: GenCall[] = [];
  let attemptText = '';
  let attemptReasoning = '';
  for (const step of steps) {
    if (step.kind === 'text') {
      events.push(text(step.text));
      attemptText += step.text;
    } else if (step.kind === 'reasoning') {
      events.push(reasoning(step.text));
      attemptReasoning += step.text;
    } else if (step.kind === 'call') {
      const event = call(
        `${prefix}-c${firstCall + calls.length}`,
        step.name,
        (ARGS[step.args] as (typeof ARGS)[number]).make(),
      );
      calls.push({ event, attempt, key: keyOf(step.name, step.args) });
      events.push(event);
    } else if (step.kind === 'resume') {
      // A cut connection resumed: the attempt goes on, and nothing of it is discarded.
      events.push({ type: 'resume', after: step.after, reason: 'connection reset' });
    } else {
      events.push(usage(step.inputTokens, step.outputTokens));
    }
  }
  return { events, calls, text: attemptText, reasoning: attemptReasoning };
}

function buildTurn(
  bodies: readonly Step[][],
  reasons: readonly string[],
  finishReason: FinishReason,
  trailingSteps: readonly TrailingStep[],
  seenPairs: readonly (readonly [ToolName, number])[] | null,
): GenTurn {
  const attempts: GenAttempt[] = bodies.map((steps, i) => ({
    attempt: i + 1,
    ...attemptEvents(`a${i + 1}`, i + 1, steps),
  }));
  const last = attempts[attempts.length - 1] as GenAttempt;
  const retries = attempts
    .slice(1)
    .map((_, i) => retrying(reasons[i % reasons.length] ?? 'connection reset'));
  const end = finish(finishReason);
  // After the finish: ids go on from the last attempt's (a provider that keeps talking reuses the attempt).
  const trailing: WholeEvent[] = [];
  const keys = new Map(attempts.flatMap((a) => a.calls.map((c) => [c.event.id, c.key] as const)));
  let lateCalls = last.calls.length;
  for (const step of trailingSteps) {
    if (step.kind === 'finish') trailing.push(finish(step.reason));
    else {
      const { events, calls } = attemptEvents(`a${last.attempt}`, last.attempt, [step], lateCalls);
      lateCalls += calls.length;
      for (const c of calls) keys.set(c.event.id, c.key);
      trailing.push(...events);
    }
  }
  const events: WholeEvent[] = [];
  attempts.forEach((a, i) => {
    if (i > 0) events.push(retries[i - 1] as RetryEvent);
    events.push(...a.events);
  });
  events.push(end, ...trailing);
  const seen = seenPairs === null ? undefined : new Set(seenPairs.map(([name, args]) => keyOf(name, args)));
  const script = () => {
    const parts: string[] = [];
    attempts.forEach((a, i) => {
      if (i > 0) parts.push(`| ${label(retries[i - 1] as RetryEvent)} |`);
      parts.push(`a${a.attempt}:`, ...a.events.map(label));
    });
    parts.push(label(end));
    if (trailing.length > 0) parts.push('|| after the finish:', ...trailing.map(label));
    if (seenPairs !== null)
      parts.push(`|| seen: {${seenPairs.map(([n, a]) => `${n}(${ARGS[a]?.label})`).join(', ')}}`);
    return parts.join(' ');
  };
  return { attempts, retries, last, finish: end, trailing, events, keys, seen, [fc.toStringMethod]: script };
}

const seenPairArb = fc.tuple(fc.constantFrom(...TOOL_NAMES), fc.nat({ max: ARGS.length - 1 }));

/**
 * A turn: 1–5 attempts of 0–6 steps; every attempt but the last is cut off by a `retry` before it finished; the
 * last one finishes (`tool-calls` or `stop`). Sometimes events follow that finish; sometimes a ledger of an
 * earlier run already holds some keys (`seen`).
 */
const turnArb: fc.Arbitrary<GenTurn> = fc
  .record({
    bodies: fc.array(fc.array(stepArb, { maxLength: 6 }), { minLength: 1, maxLength: 5 }),
    reasons: fc.array(fc.constantFrom('connection reset', 'timeout', 'overloaded'), {
      minLength: 1,
      maxLength: 4,
    }),
    finishReason: fc.constantFrom<FinishReason>('tool-calls', 'stop'),
    // Options shrink to none: a counterexample keeps what follows the finish only when it matters.
    trailing: fc.option(fc.array(trailingStepArb, { minLength: 1, maxLength: 3 }), { freq: 2, nil: null }),
    seen: fc.option(fc.uniqueArray(seenPairArb, { maxLength: 4, selector: ([n, a]) => `${n}/${a}` }), {
      freq: 2,
    }),
  })
  .map(({ bodies, reasons, finishReason, trailing, seen }) =>
    buildTurn(bodies, reasons, finishReason, trailing ?? [], seen),
  );

// ---------------------------------------------------------------------------------------------------------
// The stack under test
// ---------------------------------------------------------------------------------------------------------

interface PipelineOptions {
  turnId: string;
  early: (c: { name: string }) => boolean;
  seen: Set<string> | undefined;
}

/** What sits between the provider events and the consumers. */
type Pipeline = (options: PipelineOptions) => OperatorFunction<WholeEvent, TurnEvent>;

/** The pipeline under test: the recommended policy. */
const recommended: Pipeline = ({ turnId, early, seen }) =>
  cleanTurn(seen === undefined ? { turnId, early } : { turnId, early, seen });

/** How the executor is wired: `shared`, the ledger that `seen` agrees with; `fresh`, a new empty one (wrong). */
type LedgerWiring = 'shared' | 'fresh';

/** A released call whose key already ran (rule 6): a `tool-call-repeat`. */
const isRepeat = (c: ReleasedCall): boolean => c.type === 'tool-call-repeat';
/** A call the consumer received: one to run, or a repeat to answer. */
const isCall = (e: TurnEvent): e is ReleasedCall => e.type === 'tool-call' || e.type === 'tool-call-repeat';

/** An event the consumer received, as a counterexample prints it: `reset@2`, `tool-call@1 a1-c0 (repeat)`. */
const show = (e: TurnEvent): string =>
  `${e.type}@${e.attempt}${isCall(e) ? ` ${e.id}${isRepeat(e) ? ' (repeat)' : ''}` : ''}`;

interface TurnRun {
  /** What the consumer received, in order. */
  received: TurnEvent[];
  /** The consumer's final `accumulateTurn()` state. */
  state: TurnState<ReleasedCall> | undefined;
  /** What `executeTools` emitted. */
  results: ToolResultEvent[];
  /** How many times each key's handler really ran, over the whole turn (a key `seen` holds ran once before). */
  runs: Map<string, number>;
  /** The calls whose handler ran. */
  handled: KeyedToolCall[];
  /** Error notifications (there should be none). */
  errors: unknown[];
}

/**
 * Runs a turn through `pipeline`, shared between the consumer (subscribed first) and the executor. `react` is the
 * consumer's own behaviour on each event: it may push more events into the source, synchronously.
 */
function runTurn(
  turn: GenTurn,
  pipeline: Pipeline = recommended,
  wiring: LedgerWiring = 'shared',
  react?: (event: TurnEvent, index: number, push: (e: WholeEvent) => void) => void,
): TurnRun {
  const run: TurnRun = {
    received: [],
    state: undefined,
    results: [],
    runs: new Map(),
    handled: [],
    errors: [],
  };
  const ledger = new MemoryEffectLedger();
  for (const key of turn.seen ?? []) {
    // An earlier run of this turn executed these keys: the ledger holds their results, and they ran once.
    const claim = ledger.claim(TURN_ID, key, { leaseMs: 60_000 });
    if (claim.status !== 'claimed') throw new Error(`cannot pre-complete ${key}: ${claim.status}`);
    ledger.complete(TURN_ID, key, claim.token, { earlier: true });
    run.runs.set(key, 1);
  }
  const handler = (args: unknown, context: { effectKey: string; call: KeyedToolCall }) => {
    const n = (run.runs.get(context.effectKey) ?? 0) + 1;
    run.runs.set(context.effectKey, n);
    run.handled.push(context.call);
    if (declines(context.call.name, args)) throw Object.assign(new Error('declined'), { retryable: false });
    return { tool: context.call.name, run: n };
  };
  const handlers = Object.fromEntries(TOOL_NAMES.map((name) => [name, handler]));

  const source = new Subject<WholeEvent>();
  const turn$ = source.pipe(pipeline({ turnId: TURN_ID, early: isEarly, seen: turn.seen }), share());
  const push = (e: WholeEvent) => source.next(e);
  turn$
    .pipe(
      tap((event) => {
        run.received.push(event);
        react?.(event, run.received.length - 1, push);
      }),
      accumulateTurn(),
    )
    .subscribe({
      next: (state) => {
        run.state = state as TurnState<ReleasedCall>;
      },
      error: (error: unknown) => run.errors.push(error),
    });
  turn$
    .pipe(executeTools(handlers, wiring === 'shared' ? { turnId: TURN_ID, ledger } : { turnId: TURN_ID }))
    .subscribe({ next: (r) => run.results.push(r), error: (error: unknown) => run.errors.push(error) });
  for (const e of turn.events) source.next(e);
  source.complete();
  return run;
}

/** Multiset equality of two id lists, as sorted lists (so the diff shows what is missing and what is extra). */
const sorted = (ids: readonly string[]): string[] => [...ids].sort();

// ---------------------------------------------------------------------------------------------------------
// The promises, each a property of (pipeline, wiring)
// ---------------------------------------------------------------------------------------------------------

/**
 * `expect(actual).toEqual(expected)`, paid for only on a mismatch: these checks run on every event of thousands
 * of turns, and a vitest `expect` per check made the properties several times slower.
 */
function same(actual: unknown, expected: unknown, message?: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, message).toEqual(expected);
}

/** Fails with `message()` unless `ok`. */
function ensure(ok: boolean, message: () => string): void {
  if (!ok) expect.fail(message());
}

/** 1. The user sees only the last attempt. */
function userSeesLastAttempt(pipeline: Pipeline = recommended): fc.IProperty<[GenTurn]> {
  return fc.property(turnArb, (turn) => {
    const run = runTurn(turn, pipeline);
    same(run.errors, []);
    same(run.state?.text, turn.last.text, 'text');
    same(run.state?.reasoning, turn.last.reasoning, 'reasoning');
    same(run.state?.attempt, turn.last.attempt, 'attempt');
    same(run.state?.finish?.reason, turn.finish.reason, 'finish reason');
  });
}

/** 2. The final attempt is whole: each of its calls reaches the consumer once and is answered once (rule 6). */
function finalAttemptIsWhole(pipeline: Pipeline = recommended): fc.IProperty<[GenTurn]> {
  return fc.property(turnArb, (turn) => {
    const run = runTurn(turn, pipeline);
    same(run.errors, []);
    const last = turn.last.attempt;
    const finalCalls = turn.last.calls.map((c) => c.event);
    const calls = run.received.filter(isCall);
    const delivered = calls.filter((c) => c.attempt === last);

    // Every call id of the final attempt, exactly once; in arrival order among the early ones and among the late.
    const ids = (list: readonly { id: string }[]) => list.map((c) => c.id);
    same(sorted(ids(delivered)), sorted(ids(finalCalls)), 'calls of the final attempt delivered');
    same(ids(delivered.filter(isEarly)), ids(finalCalls.filter(isEarly)), 'order of the early calls');
    same(
      ids(delivered.filter(changesState)),
      ids(finalCalls.filter(changesState)),
      'order of the late calls',
    );

    // Marked as a repeat exactly when its key was released before (in this turn, or by the ledger of `seen`).
    const released = new Set(turn.seen);
    for (const c of calls) {
      ensure(c.effectKey === turn.keys.get(c.id), () => `${c.id}: wrong effect key`);
      const repeat = released.has(c.effectKey);
      ensure(isRepeat(c) === repeat, () => `${show(c)}: repeat ${isRepeat(c)}, expected ${repeat}`);
      released.add(c.effectKey);
    }

    // Every call id of the final attempt answered exactly once, a repeat with the recorded outcome.
    const answers = run.results.filter((r) => r.call.attempt === last);
    same(
      sorted(answers.map((r) => r.call.id)),
      sorted(ids(finalCalls)),
      'calls of the final attempt answered',
    );
    for (const r of run.results) {
      const outcome = r.outcome === 'failed' ? `failed${r.replayed ? ' (replayed)' : ''}` : r.outcome;
      const expected = isRepeat(r.call)
        ? ['replayed', 'failed (replayed)']
        : declines(r.call.name, r.call.args)
          ? ['failed']
          : ['executed'];
      ensure(expected.includes(outcome), () => `${show(r.call)} answered ${outcome}, expected ${expected}`);
    }
  });
}

/** 3. No state-changing effect twice, and none of an abandoned attempt. */
function noEffectTwice(
  pipeline: Pipeline = recommended,
  wiring: LedgerWiring = 'shared',
): fc.IProperty<[GenTurn]> {
  return fc.property(turnArb, (turn) => {
    const run = runTurn(turn, pipeline, wiring);
    same(run.errors, []);
    const last = turn.last.attempt;
    // Each key's handler at most once over the whole turn (an earlier run's keys included), reads too.
    for (const [key, n] of run.runs) ensure(n <= 1, () => `the handler of ${key} ran ${n} times`);
    // State-changing calls: only the final attempt's, released with its finish.
    const finalIds = new Set(turn.last.calls.map((c) => c.event.id));
    run.received.forEach((e, i) => {
      if (!isCall(e) || !changesState(e)) return;
      ensure(
        e.attempt === last && finalIds.has(e.id),
        () => `${show(e)} released: not one of the final attempt’s calls before its finish`,
      );
      const next = run.received.slice(i + 1).find((later) => !isCall(later));
      ensure(
        next !== undefined && show(next) === `finish@${last}`,
        () => `${show(e)} released before the finish`,
      );
    });
    for (const c of run.handled) {
      ensure(!changesState(c) || c.attempt === last, () => `the handler of ${show(c)} ran`);
    }
  });
}

/** The non-call events a consumer must get, in order: each attempt's text and usage, a reset between, the finish. */
function expectedStream(turn: GenTurn): unknown[] {
  const out: unknown[] = [];
  for (const a of turn.attempts) {
    if (a.attempt > 1) {
      out.push({
        type: 'reset',
        attempt: a.attempt,
        reason: (turn.retries[a.attempt - 2] as RetryEvent).reason,
      });
    }
    for (const e of a.events) if (e.type !== 'tool-call') out.push({ ...e, attempt: a.attempt });
  }
  out.push({ ...turn.finish, attempt: turn.last.attempt });
  return out;
}

/** 4. Nothing lost, nothing after the finish. */
function nothingLostNothingAfter(pipeline: Pipeline = recommended): fc.IProperty<[GenTurn]> {
  return fc.property(turnArb, (turn) => {
    const run = runTurn(turn, pipeline);
    same(run.errors, []);
    const end = run.received.findIndex((e) => e.type === 'finish');
    ensure(end >= 0, () => 'no finish reached the consumer');
    // Up to the finish: every text, usage and reset, in order, each with its attempt.
    const before = run.received.slice(0, end + 1).filter((e) => !isCall(e));
    same(before, expectedStream(turn), 'up to the finish');
    // After it: usage of the final attempt at most.
    const after = run.received.slice(end + 1);
    same(
      after.filter((e) => e.type !== 'usage' || e.attempt !== turn.last.attempt).map(show),
      [],
      'after the finish',
    );
  });
}

/** How a re-entrant consumer reacts: pushes `retry` and a short finished attempt into the source, synchronously. */
interface Reentry {
  /** On the first `tool-call` of each attempt it receives. */
  onFirstCall: boolean;
  /** On the events it receives at these positions. */
  atEvents: number[];
  /** At most this many pushes per turn. */
  times: number;
  /** The bodies of the short attempts it pushes (then a `finish`), used in turn. */
  bodies: Step[][];
}

const reentryArb: fc.Arbitrary<Reentry> = fc.record({
  onFirstCall: fc.boolean(),
  atEvents: fc.uniqueArray(fc.nat({ max: 15 }), { maxLength: 2 }),
  times: fc.integer({ min: 1, max: 2 }),
  bodies: fc.array(fc.array(fc.oneof(stepArb, callStepArb), { maxLength: 3 }), {
    minLength: 2,
    maxLength: 2,
  }),
});

/** 5. Re-entrancy: what the consumer receives never goes back to an older attempt. */
function reentrantConsumerStaysCurrent(pipeline: Pipeline = recommended): fc.IProperty<[GenTurn, Reentry]> {
  return fc.property(turnArb, reentryArb, (turn, reentry) => {
    let pushes = 0;
    const triggered = new Set<number>();
    const react = (event: TurnEvent, index: number, push: (e: WholeEvent) => void) => {
      const firstCall = reentry.onFirstCall && isCall(event) && !triggered.has(event.attempt);
      if (isCall(event)) triggered.add(event.attempt);
      if (!(firstCall || reentry.atEvents.includes(index)) || pushes >= reentry.times) return;
      const body = reentry.bodies[pushes] ?? [];
      pushes++;
      push(retrying('re-entrant'));
      for (const e of attemptEvents(`r${pushes}`, 0, body).events) push(e);
      push(finish('stop'));
    };
    const run = runTurn(turn, pipeline, 'shared', react);
    same(run.errors, []);
    let live = 0;
    run.received.forEach((e, i) => {
      if (e.attempt < live) {
        const context = run.received.slice(Math.max(0, i - 4), i + 1).map(show);
        expect.fail(`${show(e)} after attempt ${live} started: … ${context.join(' ')}`);
      }
      live = e.attempt;
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// The properties on the recommended stack
// ---------------------------------------------------------------------------------------------------------

// About 0.15 ms of CPU a run: 10 000 runs take 1–3 s a property, over vitest's default 5 s on a busy machine.
describe(`the promises of a turn, cleanTurn + accumulateTurn + executeTools (${RUNS} random turns each)`, {
  timeout: 60_000,
}, () => {
  it('1. the user sees only the last attempt: its text, its number, its finish', () => {
    fc.assert(userSeesLastAttempt(), { numRuns: RUNS });
  });

  it('2. the final attempt is whole: each call reaches the consumer once, repeats marked, each answered once', () => {
    fc.assert(finalAttemptIsWhole(), { numRuns: RUNS });
  });

  it('3. no effect twice: each key runs at most once; no state-changing call of an abandoned attempt', () => {
    fc.assert(noEffectTwice(), { numRuns: RUNS });
  });

  it('4. nothing lost before the finish, nothing but usage after it', () => {
    fc.assert(nothingLostNothingAfter(), { numRuns: RUNS });
  });

  it('5. a consumer that pushes a retry re-entrantly never receives an older attempt after a newer reset', () => {
    fc.assert(reentrantConsumerStaysCurrent(), { numRuns: RUNS });
  });
});

// ---------------------------------------------------------------------------------------------------------
// Every property can fail: each rejects a pipeline that is wrong on purpose (fixed seed: deterministic)
// ---------------------------------------------------------------------------------------------------------

/** Stamps attempts without any rule: every event, whatever came before (what a hand-rolled tagger does). */
function stampAttempts(): OperatorFunction<WholeEvent, WholeEvent & { attempt: number }> {
  return (source) =>
    new Observable((subscriber) => {
      let attempt = 1;
      return source.subscribe({
        next: (e) => {
          if (e.type === 'retry') attempt++;
          subscriber.next({ ...e, attempt });
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
}

/** `retry` → `reset`, nothing dropped; calls keyed, never marked as repeats; everything passes at once. */
const resetOnly: Pipeline =
  ({ turnId }) =>
  (source) =>
    source.pipe(
      stampAttempts(),
      map(
        (e) =>
          (e.type === 'retry'
            ? { type: 'reset', attempt: e.attempt, reason: e.reason }
            : e.type === 'tool-call'
              ? { ...e, effectKey: effectKey(turnId, e) }
              : e) as TurnEvent,
      ),
    );

/** Like `resetOnly`, and holds calls until the finish, releasing them in a loop that a re-entrant reset cannot stop. */
const loopingBuffer: Pipeline = (options) => (source) =>
  new Observable<TurnEvent>((subscriber) => {
    let held: TurnEvent[] = [];
    return source.pipe(resetOnly(options)).subscribe({
      next: (e) => {
        if (e.type === 'reset') held = [];
        if (e.type === 'tool-call' && !options.early(e)) held.push(e);
        else if (e.type === 'finish') {
          const release = held;
          held = [];
          for (const c of release) subscriber.next(c);
          subscriber.next(e);
        } else subscriber.next(e);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => subscriber.complete(),
    });
  });

/** The recommended policy on a stream whose retries were spliced out: attempts glued together. */
const glued: Pipeline = (options) => (source) =>
  source.pipe(
    filter((e) => e.type !== 'retry'),
    recommended(options),
  );

/** The recommended policy, then a filter that drops repeats (what `dedupeByEffectKey` did before rule 6). */
const dropsRepeats: Pipeline = (options) => (source) =>
  source.pipe(
    recommended(options),
    filter((e) => !isCall(e) || !isRepeat(e)),
  );

/** The recommended policy without the ledger's keys (`seen`), with an executor on a fresh ledger. */
const forgetsSeen: Pipeline = ({ turnId, early }) => recommended({ turnId, early, seen: undefined });

/** Like `resetOnly`, ending with the first finish, and it loses usage. */
const dropsUsage: Pipeline = (options) => (source) =>
  source.pipe(
    resetOnly(options),
    takeWhile((e) => e.type !== 'finish', true),
    filter((e) => e.type !== 'usage'),
  );

describe('each property rejects a pipeline that breaks its promise', () => {
  /** Checks that `property` finds a counterexample, and that it fails for the expected `reason`. */
  const rejects = <T extends [unknown, ...unknown[]]>(property: fc.IProperty<T>, reason: RegExp): void => {
    const details = fc.check(property, { seed: 20_240_601, numRuns: 2_000 });
    expect(details.failed, 'the property found no counterexample').toBe(true);
    expect(String((details.errorInstance as Error | undefined)?.message)).toMatch(reason);
  };

  it('1 rejects glued attempts', () => {
    rejects(userSeesLastAttempt(glued), /^(text|attempt)/);
  });
  it('2 rejects a pipeline that drops repeats', () => {
    rejects(finalAttemptIsWhole(dropsRepeats), /calls of the final attempt delivered/);
  });
  it('3 rejects reset-only (calls run at once) and an executor whose ledger forgets the earlier run', () => {
    rejects(noEffectTwice(resetOnly), /tool-call@\d+ \S+ released/);
    rejects(noEffectTwice(forgetsSeen, 'fresh'), /ran 2 times/);
  });
  it('4 rejects a pipeline that loses usage, and one that passes what follows the finish', () => {
    rejects(nothingLostNothingAfter(dropsUsage), /up to the finish/);
    rejects(nothingLostNothingAfter(resetOnly), /after the finish/);
  });
  it('5 rejects a buffer that releases calls in a loop a re-entrant reset cannot stop', () => {
    rejects(reentrantConsumerStaysCurrent(loopingBuffer), /after attempt \d+ started/);
  });
});
