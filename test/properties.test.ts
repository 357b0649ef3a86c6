import type { Attempted, FinishReason, ProviderEvent, ResetEvent, TurnEvent } from 'cleanturn';
import {
  accumulateTurn,
  assembleToolCalls,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  effectKey,
  lateExecutionPolicy,
  naivePolicy,
  resetOnlyPolicy,
  resetOnRetry,
  retryAsEvents,
  type TurnError,
  tagAttempts,
} from 'cleanturn';
import { call, delta, finish, retrying, text, usage } from 'cleanturn/testing';
import fc from 'fast-check';
import {
  concat,
  defer,
  from,
  lastValueFrom,
  type Observable,
  type OperatorFunction,
  Subject,
  take,
  tap,
  throwError,
  toArray,
} from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import type { WithEffectKeys } from '../src/dedupeByEffectKey.js';
import type {
  FinishEvent,
  PolicyEvent,
  RepeatedToolCall,
  RetryEvent,
  ToolCallEvent,
  UsageEvent,
} from '../src/types.js';
import { type Collected, collect } from './support/collect.js';
import { expectTurnError } from './support/errors.js';

// Property-based tests: random turns with random retries, checked against the rules of DESIGN.md.
// Everything runs on synchronous sources (`from(events)`), so no assertion depends on time.

const RUNS = 500;
const TURN_ID = 'turn-prop';

// ---------------------------------------------------------------------------------------------------------
// The generated turn
// ---------------------------------------------------------------------------------------------------------

/** Tool names: `lookup_order` is the pure read that may run early; the others change state. */
const TOOL_NAMES = ['issue_refund', 'send_email', 'lookup_order'] as const;
const EARLY_TOOL = 'lookup_order';
const isEarly = (c: { name: string }): boolean => c.name === EARLY_TOOL;

/**
 * A small set of argument values, so that equal calls (within an attempt and across attempts) are common.
 * Each is a factory: every call gets its own fresh object, so that object identity can be checked. Two of
 * them have the same meaning with a different key order (the effect key must not depend on key order).
 */
const ARG_FACTORIES: readonly (() => unknown)[] = [
  () => ({ order_id: 'ORD-1' }),
  () => ({ order_id: 'ORD-2' }),
  () => ({ order_id: 'ORD-1', amount: 'full' }),
  () => ({ amount: 'full', order_id: 'ORD-1' }),
  () => ({}),
  () => ({ items: [1, 2], note: null, nested: { b: true, a: 'x' } }),
];

/** A step of an attempt before ids are assigned. */
type Step =
  | { kind: 'text'; text: string }
  | { kind: 'call'; name: string; args: number }
  | { kind: 'usage'; inputTokens: number | undefined; outputTokens: number | undefined };

/** A generated tool call, with where it came from. */
interface GenCall {
  event: ToolCallEvent;
  /** 1-based attempt number. */
  attempt: number;
  /** Position among the calls of its attempt. */
  position: number;
}

interface GenAttempt {
  /** 1-based. */
  attempt: number;
  /** The events of the attempt, without its trailing `retry` or `finish` (whole calls, no fragments). */
  events: AssembledEvent<ProviderEvent>[];
  calls: GenCall[];
  text: string;
  usageEvents: UsageEvent[];
}

interface GenTurn {
  attempts: GenAttempt[];
  /** The retry event after each attempt but the last. */
  retries: RetryEvent[];
  /** The finish of the last attempt, if it finished. */
  finish: FinishEvent | undefined;
  /** The whole stream, in order (whole calls, no fragments). */
  events: AssembledEvent<ProviderEvent>[];
  /** Every generated call, by its (unique) id. */
  callsById: Map<string, GenCall>;
  last: GenAttempt;
  /** How fast-check prints a counterexample. */
  [fc.toStringMethod]: () => string;
}

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.string({ maxLength: 6 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('call' as const),
      name: fc.constantFrom(...TOOL_NAMES),
      args: fc.nat({ max: ARG_FACTORIES.length - 1 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('usage' as const),
      inputTokens: fc.option(fc.nat({ max: 500 }), { nil: undefined }),
      outputTokens: fc.option(fc.nat({ max: 500 }), { nil: undefined }),
    }),
  },
);

const finishReasonArb: fc.Arbitrary<FinishReason> = fc.constantFrom('stop', 'tool-calls', 'length', 'error');

/** Builds a turn from generated steps, giving every call a unique id and its own argument object. */
function buildTurn(bodies: Step[][], reasons: string[], finishReason: FinishReason | null): GenTurn {
  const callsById = new Map<string, GenCall>();
  const attempts: GenAttempt[] = bodies.map((steps, i) => {
    const attempt = i + 1;
    const events: AssembledEvent<ProviderEvent>[] = [];
    const calls: GenCall[] = [];
    const usageEvents: UsageEvent[] = [];
    let attemptText = '';
    for (const step of steps) {
      if (step.kind === 'text') {
        events.push(text(step.text));
        attemptText += step.text;
      } else if (step.kind === 'call') {
        const factory = ARG_FACTORIES[step.args] as () => unknown;
        const event = call(`a${attempt}-c${calls.length}`, step.name, factory());
        const gen: GenCall = { event, attempt, position: calls.length };
        calls.push(gen);
        callsById.set(event.id, gen);
        events.push(event);
      } else {
        const event = usage(step.inputTokens, step.outputTokens);
        usageEvents.push(event);
        events.push(event);
      }
    }
    return { attempt, events, calls, text: attemptText, usageEvents };
  });
  const retries = attempts
    .slice(1)
    .map((_, i) => retrying(reasons[i % reasons.length] ?? 'connection reset'));
  const end = finishReason === null ? undefined : finish(finishReason);
  const events: AssembledEvent<ProviderEvent>[] = [];
  attempts.forEach((a, i) => {
    if (i > 0) events.push(retries[i - 1] as RetryEvent);
    events.push(...a.events);
  });
  if (end !== undefined) events.push(end);
  return {
    attempts,
    retries,
    finish: end,
    events,
    callsById,
    last: attempts[attempts.length - 1] as GenAttempt,
    // Counterexamples print as the event stream only.
    [fc.toStringMethod]: () => `turn ${fc.stringify(events)}`,
  };
}

/**
 * A turn: 1–5 attempts of 0–8 steps each; every attempt but the last is cut off by a `retry`; the last one
 * either finishes or is cut off with no finish (the stream just completes).
 */
const turnArb: fc.Arbitrary<GenTurn> = fc
  .record({
    bodies: fc.array(fc.array(stepArb, { maxLength: 8 }), { minLength: 1, maxLength: 5 }),
    reasons: fc.array(fc.constantFrom('connection reset', 'timeout', 'overloaded'), {
      minLength: 1,
      maxLength: 4,
    }),
    finishReason: fc.option(finishReasonArb, { freq: 3 }),
  })
  .map(({ bodies, reasons, finishReason }) => buildTurn(bodies, reasons, finishReason));

/** A turn that has at least one retry. */
const retriedTurnArb = turnArb.filter((t) => t.attempts.length > 1);

// ---------------------------------------------------------------------------------------------------------
// Helpers and the independent model
// ---------------------------------------------------------------------------------------------------------

/** Runs a synchronous pipeline to the end. */
async function run<I, O>(events: readonly I[], operator: OperatorFunction<I, O>): Promise<O[]> {
  return lastValueFrom(from(events).pipe(operator, toArray()));
}

/** Runs a synchronous pipeline and returns its final value (undefined if it emitted none). */
async function final<I, O>(events: readonly I[], operator: OperatorFunction<I, O>): Promise<O | undefined> {
  return lastValueFrom(from(events).pipe(operator), { defaultValue: undefined });
}

/** Canonical JSON with sorted keys: the meaning of a call, computed independently of `effectKey`. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const meaning = (c: { name: string; args: unknown }): string => canonical([c.name, c.args]);

/** The first occurrence of each meaning, in order. */
function firstOfEachMeaning(calls: readonly GenCall[]): GenCall[] {
  const seen = new Set<string>();
  return calls.filter((c) => {
    const m = meaning(c.event);
    if (seen.has(m)) return false;
    seen.add(m);
    return true;
  });
}

/** What a consumer that honours resets shows on screen: text since the last reset. */
function screenText(events: readonly (PolicyEvent | TurnEvent)[]): string {
  let screen = '';
  for (const e of events) {
    if (e.type === 'reset') screen = '';
    if (e.type === 'text') screen += e.text;
  }
  return screen;
}

interface Violations {
  text: string[];
  calls: string[];
}

/**
 * Checks a policy's output against the rules of DESIGN.md for the generated turn. Returns what is wrong, so
 * that the checker itself can be tested against the policies that are wrong on purpose.
 */
function turnViolations(
  turn: GenTurn,
  output: readonly PolicyEvent[] | readonly TurnEvent[],
  early: (c: { name: string }) => boolean = () => false,
): Violations {
  const v: Violations = { text: [], calls: [] };
  const events: readonly (PolicyEvent | TurnEvent)[] = output;
  const last = turn.last.attempt;

  // What the user reads: the last attempt's text, never part of an abandoned attempt.
  const screen = screenText(events);
  if (screen !== turn.last.text)
    v.text.push(`screen ${JSON.stringify(screen)} != ${JSON.stringify(turn.last.text)}`);
  let live = 1;
  for (const e of events) {
    if (e.type === 'reset') live = e.attempt;
    else if (e.type === 'text' && e.attempt !== live)
      v.text.push(`text of attempt ${e.attempt} shown in ${live}`);
  }

  // Released calls: the tool-call events of the output.
  const released: { index: number; event: Attempted<ToolCallEvent> | RepeatedToolCall }[] = [];
  events.forEach((e, index) => {
    if (isReleased(e)) released.push({ index, event: e });
  });
  const meanings = new Set<string>();
  for (const { event } of released) {
    const gen = turn.callsById.get(event.id);
    if (gen === undefined) {
      v.calls.push(`unknown call ${event.id}`);
      continue;
    }
    if (event.args !== gen.event.args) v.calls.push(`${event.id}: args are not the generated object`);
    if (event.name !== gen.event.name) v.calls.push(`${event.id}: name changed`);
    if (event.attempt !== gen.attempt)
      v.calls.push(`${event.id}: stamped attempt ${event.attempt}, is ${gen.attempt}`);
    // Rule 6: a meaning already released comes again only marked as a repeat, and only then.
    const m = meaning(event);
    const repeat = event.type === 'tool-call-repeat';
    if (meanings.has(m) && !repeat) v.calls.push(`${event.id}: effect ${m} released twice`);
    if (!meanings.has(m) && repeat) v.calls.push(`${event.id}: first release of ${m} marked as a repeat`);
    meanings.add(m);
    if (early(event)) continue;
    if (gen.attempt !== last) v.calls.push(`${event.id}: call of abandoned attempt ${gen.attempt} released`);
    if (turn.finish === undefined)
      v.calls.push(`${event.id}: released although the last attempt never finished`);
  }

  // State-changing calls: every call of the last attempt (rule 6: the final attempt is whole), in arrival
  // order, right before the finish.
  const late = released.filter((r) => !early(r.event));
  const expectedIds =
    turn.finish === undefined ? [] : turn.last.calls.filter((c) => !early(c.event)).map((c) => c.event.id);
  const actualIds = late.map((r) => r.event.id);
  if (canonical(actualIds) !== canonical(expectedIds))
    v.calls.push(`released ${canonical(actualIds)}, expected ${canonical(expectedIds)}`);
  const finishIndex = events.findIndex((e) => e.type === 'finish');
  late.forEach((r, i) => {
    const wanted = finishIndex - late.length + i;
    if (r.index !== wanted) v.calls.push(`${r.event.id} at ${r.index}, not immediately before the finish`);
  });
  return v;
}

/** A released call of a policy's output: a call to run, or (with effect keys) a repeat to answer. */
function isReleased<E extends { type: string }>(
  e: E,
): e is Extract<E, { type: 'tool-call' }> | Extract<E, { type: 'tool-call-repeat' }> {
  return e.type === 'tool-call' || e.type === 'tool-call-repeat';
}

const clean = (v: Violations): boolean => v.text.length === 0 && v.calls.length === 0;

/** Merges usage events as a provider reports them: later fields replace earlier ones. */
function mergedUsage(
  events: readonly UsageEvent[],
): { inputTokens?: number; outputTokens?: number } | undefined {
  if (events.length === 0) return undefined;
  const u: { inputTokens?: number; outputTokens?: number } = {};
  for (const e of events) {
    if (e.inputTokens !== undefined) u.inputTokens = e.inputTokens;
    if (e.outputTokens !== undefined) u.outputTokens = e.outputTokens;
  }
  return u;
}

// ---------------------------------------------------------------------------------------------------------
// cleanTurn + accumulateTurn
// ---------------------------------------------------------------------------------------------------------

describe('cleanTurn on random retried turns', () => {
  it('shows only the last attempt, releases each of its calls once, right before its finish', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const out = await run(turn.events, cleanTurn({ turnId: TURN_ID }));
        const v = turnViolations(turn, out);
        expect(v).toEqual({ text: [], calls: [] });

        // No call of an abandoned attempt, by attempt number and by id.
        const releasedCalls = out.filter(isReleased);
        for (const c of releasedCalls) {
          expect(c.attempt).toBe(turn.last.attempt);
          expect(turn.last.calls.map((g) => g.event.id)).toContain(c.id);
          expect(c.effectKey).toBe(effectKey(TURN_ID, c));
        }
        // Each effect key at most once unmarked: every later call with it is a repeat.
        const keys = releasedCalls.filter((c) => c.type === 'tool-call').map((c) => c.effectKey);
        expect(new Set(keys).size).toBe(keys.length);
        // No finish: no state-changing call at all.
        if (turn.finish === undefined) expect(releasedCalls).toEqual([]);
        // Released calls end with the finish, and the finish ends the stream.
        if (turn.finish !== undefined) {
          expect(out.at(-1)).toEqual({ ...turn.finish, attempt: turn.last.attempt });
          const tail = out.slice(out.length - 1 - releasedCalls.length, -1);
          expect(tail).toEqual(releasedCalls);
        }
        // One reset per retry, numbered 2, 3, …
        expect(out.filter((e) => e.type === 'reset').map((e) => e.attempt)).toEqual(
          turn.retries.map((_, i) => i + 2),
        );
      }),
      { numRuns: RUNS },
    );
  });

  it('accumulates to the last attempt: its text, its released calls, every attempt recorded', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const state = await final(turn.events, (s: Observable<AssembledEvent<ProviderEvent>>) =>
          s.pipe(cleanTurn({ turnId: TURN_ID }), accumulateTurn()),
        );
        if (state === undefined) {
          // Nothing came out: a single attempt of held calls only, that never finished.
          expect(turn.finish).toBeUndefined();
          expect(turn.events.every((e) => e.type === 'tool-call')).toBe(true);
          return;
        }
        expect(state.attempt).toBe(turn.last.attempt);
        expect(state.text).toBe(turn.last.text);
        for (const abandoned of turn.attempts.slice(0, -1)) {
          // Never a part of an abandoned attempt (when it said something that the last one did not).
          if (abandoned.text !== '' && !turn.last.text.includes(abandoned.text))
            expect(state.text).not.toContain(abandoned.text);
        }
        // Rule 6: every call of the finished last attempt, repeats of a meaning included (marked).
        const expectedCalls = turn.finish === undefined ? [] : turn.last.calls.map((c) => c.event.id);
        const firsts = new Set(firstOfEachMeaning(turn.last.calls).map((c) => c.event.id));
        for (const c of state.toolCalls) expect(c.type === 'tool-call-repeat').toBe(!firsts.has(c.id));
        expect(state.toolCalls.map((c) => c.id)).toEqual(expectedCalls);
        for (const c of state.toolCalls) expect(c.args).toBe(turn.callsById.get(c.id)?.event.args);

        if (turn.finish === undefined) {
          expect(state.finish).toBeUndefined();
        } else {
          expect(state.finish).toEqual({ ...turn.finish, attempt: turn.last.attempt });
        }
        // One record per attempt, usage and text length per attempt: an abandoned attempt is billed too.
        expect(state.attempts.map((a) => a.attempt)).toEqual(turn.attempts.map((a) => a.attempt));
        turn.attempts.forEach((a, i) => {
          const record = state.attempts[i];
          const isLast = i === turn.attempts.length - 1;
          const outcome = !isLast
            ? 'abandoned'
            : turn.finish === undefined
              ? 'streaming'
              : turn.finish.reason === 'error'
                ? 'failed'
                : 'completed';
          expect(record?.outcome).toBe(outcome);
          expect(record?.textLength).toBe(a.text.length);
          expect(record?.usage).toEqual(mergedUsage(a.usageEvents));
          expect(record?.toolCalls).toBe(isLast ? expectedCalls.length : 0);
          if (!isLast) expect(record?.reason).toBe(turn.retries[i]?.reason);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('lets early calls (pure reads) through at once, a meaning seen before marked as a repeat, and still holds the rest', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const input = new Subject<AssembledEvent<ProviderEvent>>();
        const out: TurnEvent[] = [];
        const sub = input.pipe(cleanTurn({ turnId: TURN_ID, early: isEarly })).subscribe((e) => out.push(e));
        const seenEarly = new Set<string>();
        for (const event of turn.events) {
          const before = out.length;
          input.next(event);
          if (event.type === 'tool-call' && isEarly(event)) {
            const m = meaning(event);
            // Released during its own arrival: never held; a read whose key was already released is marked.
            const released = out.slice(before);
            expect(released.map((e) => (isReleased(e) ? e.id : e.type))).toEqual([event.id]);
            expect(released[0]?.type === 'tool-call-repeat').toBe(seenEarly.has(m));
            seenEarly.add(m);
          }
        }
        input.complete();
        sub.unsubscribe();
        expect(turnViolations(turn, out, isEarly)).toEqual({ text: [], calls: [] });
      }),
      { numRuns: RUNS },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// The individual operators
// ---------------------------------------------------------------------------------------------------------

describe('tagAttempts', () => {
  it('numbers attempts from 1, non-decreasing, 1 + retries seen so far (including the retry itself)', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const tagged$ = from(turn.events).pipe(tagAttempts());
        const out = await lastValueFrom(tagged$.pipe(toArray()));
        expect(out).toHaveLength(turn.events.length);
        let retries = 0;
        let previous = 1;
        out.forEach((e, i) => {
          const input = turn.events[i] as ProviderEvent;
          if (input.type === 'retry') retries++;
          expect(e).toEqual({ ...input, attempt: 1 + retries });
          expect(e.attempt).toBeGreaterThanOrEqual(previous);
          previous = e.attempt;
        });
        // The first attempt is 1 (a leading retry already starts attempt 2).
        if (turn.events[0] !== undefined && turn.events[0].type !== 'retry') expect(out[0]?.attempt).toBe(1);
        // Each subscription counts from 1 again.
        expect(await lastValueFrom(tagged$.pipe(toArray()))).toEqual(out);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('resetOnRetry', () => {
  it('replaces each retry with a reset and drops stragglers of older attempts and repeated retries', async () => {
    // Attempted events in any order of attempts, as a merged or delayed source might deliver them.
    const eventArb = fc.record({
      attempt: fc.integer({ min: 1, max: 4 }),
      isRetry: fc.boolean(),
      text: fc.string({ maxLength: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { maxLength: 20 }), async (specs) => {
        const events = specs.map(
          (s): Attempted<ProviderEvent> =>
            s.isRetry ? { ...retrying(s.text), attempt: s.attempt } : { ...text(s.text), attempt: s.attempt },
        );
        const out = await run(events, resetOnRetry());
        // The live attempt starts at 1; a retry that starts no newer attempt is stale too.
        let live = 1;
        const expected = events.flatMap((e): (Attempted<ProviderEvent> | ResetEvent)[] => {
          if (e.attempt < live || (e.attempt === live && e.type === 'retry')) return [];
          live = e.attempt;
          return e.type === 'retry' ? [{ type: 'reset', attempt: e.attempt, reason: e.reason }] : [e];
        });
        expect(out).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('bufferUntilFinish (lateExecutionPolicy)', () => {
  it('passes everything but calls at once; releases the last attempt’s calls, all of them, right before its finish', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const out = await run(turn.events, lateExecutionPolicy());
        const viaOperators = await run(turn.events, (s: Observable<ProviderEvent>) =>
          s.pipe(tagAttempts(), resetOnRetry(), bufferUntilFinish()),
        );
        expect(viaOperators).toEqual(out);

        // Model: the tagged stream with retries as resets, calls removed, the last attempt's calls before its finish.
        let attempt = 1;
        const expected: PolicyEvent[] = [];
        for (const e of turn.events) {
          if (e.type === 'retry') {
            attempt++;
            expected.push({ type: 'reset', attempt, reason: e.reason });
          } else if (e.type === 'finish') {
            for (const c of turn.last.calls) expected.push({ ...c.event, attempt });
            expected.push({ ...e, attempt });
          } else if (e.type !== 'tool-call') {
            expected.push({ ...e, attempt });
          }
        }
        expect(out).toEqual(expected);
        for (const e of out) {
          if (e.type === 'tool-call') {
            expect(e.attempt).toBe(turn.last.attempt);
            expect(e.args).toBe(turn.callsById.get(e.id)?.event.args);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('never holds an early call: it comes out while it goes in', async () => {
    await fc.assert(
      fc.property(turnArb, (turn) => {
        const input = new Subject<Attempted<ProviderEvent>>();
        const out: Attempted<ProviderEvent>[] = [];
        const sub = input
          .pipe(bufferUntilFinish<Attempted<ProviderEvent>>({ early: isEarly }))
          .subscribe((e) => out.push(e));
        let attempt = 1;
        for (const event of turn.events) {
          if (event.type === 'retry') attempt++;
          const before = out.length;
          input.next({ ...event, attempt });
          const emitted = out.slice(before);
          if (event.type === 'tool-call') {
            // Held (nothing out) unless early, in which case exactly itself, at once.
            expect(emitted).toEqual(isEarly(event) ? [{ ...event, attempt }] : []);
          } else if (event.type === 'finish') {
            const held = turn.last.calls
              .filter((c) => !isEarly(c.event))
              .map((c) => ({ ...c.event, attempt }));
            expect(emitted).toEqual([...held, { ...event, attempt }]);
          } else {
            expect(emitted).toEqual([{ ...event, attempt }]);
          }
        }
        input.complete();
        sub.unsubscribe();
      }),
      { numRuns: RUNS },
    );
  });
});

describe('dedupeByEffectKey', () => {
  it('stamps effect keys, and marks every call of a meaning released before or already seen as a repeat', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, fc.array(fc.nat({ max: 40 }), { maxLength: 3 }), async (turn, seenPicks) => {
        const all = [...turn.callsById.values()];
        const seenCalls = seenPicks.flatMap((p) =>
          all.length === 0 ? [] : [all[p % all.length] as GenCall],
        );
        const seen = new Set(seenCalls.map((c) => effectKey(TURN_ID, c.event)));
        const seenBefore = [...seen];
        const seenMeanings = new Set(seenCalls.map((c) => meaning(c.event)));
        const tagged = await run(turn.events, tagAttempts());
        const out = await run(tagged, dedupeByEffectKey({ turnId: TURN_ID, seen }));
        const kept = new Set<string>(seenMeanings);
        const expected = tagged.flatMap((e): WithEffectKeys<Attempted<ProviderEvent>>[] => {
          if (e.type !== 'tool-call') return [e];
          const m = meaning(e);
          const repeat = kept.has(m);
          kept.add(m);
          return [
            {
              ...e,
              effectKey: effectKey(TURN_ID, e),
              ...(repeat ? { type: 'tool-call-repeat' as const } : {}),
            },
          ];
        });
        expect(out).toEqual(expected);
        // `seen` is only read.
        expect([...seen]).toEqual(seenBefore);
      }),
      { numRuns: RUNS },
    );
  });

  it('effect keys depend on meaning only: equal meanings give equal keys, different meanings different keys', () => {
    fc.assert(
      fc.property(turnArb, (turn) => {
        const calls = [...turn.callsById.values()].map((c) => c.event);
        for (const a of calls) {
          for (const b of calls) {
            expect(effectKey(TURN_ID, a) === effectKey(TURN_ID, b)).toBe(meaning(a) === meaning(b));
          }
          expect(effectKey(TURN_ID, a)).toMatch(/^[0-9a-f]{16}$/);
          expect(effectKey(`${TURN_ID}-other`, a)).not.toBe(effectKey(TURN_ID, a));
        }
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// The policies that are wrong on purpose, and the checker itself
// ---------------------------------------------------------------------------------------------------------

describe('the seed comparison', () => {
  it('naive policy: the text is every attempt glued together (the bug it documents)', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const state = await final(turn.events, (s: Observable<ProviderEvent>) =>
          s.pipe(naivePolicy(), accumulateTurn()),
        );
        if (state === undefined) {
          // Naive drops the retries and nothing else.
          expect(turn.events.every((e) => e.type === 'retry')).toBe(true);
          return;
        }
        expect(state.text).toBe(turn.attempts.map((a) => a.text).join(''));
        // It runs every call as soon as it arrives, abandoned or not.
        expect(state.toolCalls.map((c) => c.id)).toEqual([...turn.callsById.keys()]);
      }),
      { numRuns: RUNS },
    );
  });

  it('the checker flags the naive policy whenever an abandoned attempt showed text or made a call', async () => {
    let flagged = 0;
    await fc.assert(
      fc.asyncProperty(retriedTurnArb, async (turn) => {
        const abandoned = turn.attempts.slice(0, -1);
        const leaksText = abandoned.some((a) => a.text !== '');
        const leaksCall = abandoned.some((a) => a.calls.length > 0);
        const v = turnViolations(turn, await run(turn.events, naivePolicy()));
        if (leaksText) expect(v.text).not.toEqual([]);
        if (leaksCall) expect(v.calls).not.toEqual([]);
        if (leaksText || leaksCall) flagged++;
      }),
      { numRuns: RUNS },
    );
    // The generator does produce the turns that matter.
    expect(flagged).toBeGreaterThan(RUNS / 2);
  });

  it('the checker flags reset-only (calls of abandoned attempts ran) but not its text', async () => {
    await fc.assert(
      fc.asyncProperty(retriedTurnArb, async (turn) => {
        const v = turnViolations(turn, await run(turn.events, resetOnlyPolicy()));
        expect(v.text).toEqual([]);
        const abandonedCall = turn.attempts.slice(0, -1).some((a) => a.calls.length > 0);
        if (abandonedCall) expect(v.calls.some((m) => m.includes('abandoned attempt'))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('the checker flags late execution without dedupe exactly when the last attempt repeats an effect', async () => {
    await fc.assert(
      fc.asyncProperty(turnArb, async (turn) => {
        const v = turnViolations(turn, await run(turn.events, lateExecutionPolicy()));
        const repeats =
          turn.finish !== undefined && firstOfEachMeaning(turn.last.calls).length !== turn.last.calls.length;
        expect(clean(v)).toBe(!repeats);
      }),
      { numRuns: RUNS },
    );
  });

  it('the checker flags a policy that releases calls of a last attempt that never finished', async () => {
    // Reset-only on turns whose last attempt made a state-changing call and was cut off.
    const cutOff = turnArb.filter((t) => t.finish === undefined && t.last.calls.length > 0);
    await fc.assert(
      fc.asyncProperty(cutOff, async (turn) => {
        const v = turnViolations(turn, await run(turn.events, resetOnlyPolicy()));
        expect(v.calls.some((m) => m.includes('never finished'))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('the checker flags a clean output that was tampered with: calls moved, reordered, or stale text', async () => {
    const withCalls = turnArb.filter((t) => t.finish !== undefined && t.last.calls.length > 0);
    await fc.assert(
      fc.asyncProperty(withCalls, fc.nat(), async (turn, pick) => {
        const out = await run(turn.events, cleanTurn({ turnId: TURN_ID }));
        expect(clean(turnViolations(turn, out))).toBe(true);
        const calls = out.filter(isReleased);
        const others = out.filter((e) => e.type !== 'tool-call');
        const finishEvent = others.at(-1) as TurnEvent;
        // A released call moved before some other event: it ran before its attempt finished.
        const before = others.slice(0, -1);
        if (before.length > 0) {
          const at = pick % before.length;
          const first = calls[0] as TurnEvent;
          const moved = [...before.slice(0, at), first, ...before.slice(at), ...calls.slice(1), finishEvent];
          expect(turnViolations(turn, moved).calls).not.toEqual([]);
        }
        // Released calls out of arrival order.
        if (calls.length > 1) {
          const reversed = [...others.slice(0, -1), ...[...calls].reverse(), finishEvent];
          expect(turnViolations(turn, reversed).calls).not.toEqual([]);
        }
        // A text of the live attempt that it never streamed.
        const stale: TurnEvent = { type: 'text', text: '<stale>', attempt: turn.last.attempt };
        expect(turnViolations(turn, [stale, ...out]).text).not.toEqual([]);
        // The finish dropped: the calls no longer precede it.
        expect(turnViolations(turn, out.slice(0, -1)).calls).not.toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// assembleToolCalls
// ---------------------------------------------------------------------------------------------------------

interface FragmentedCall {
  index: number;
  id: string | undefined;
  name: string;
  args: unknown;
  /** The JSON argument text cut into pieces (some empty); joined, they are the whole text. */
  fragments: string[];
}

/** Cuts `text` at the given points (sorted, duplicates give empty fragments). */
function cut(argsText: string, points: number[]): string[] {
  const sorted = [...points].map((p) => p % (argsText.length + 1)).sort((a, b) => a - b);
  const pieces: string[] = [];
  let start = 0;
  for (const p of sorted) {
    pieces.push(argsText.slice(start, p));
    start = p;
  }
  pieces.push(argsText.slice(start));
  return pieces;
}

/** Parallel calls of one attempt, with distinct indexes, each with its JSON text cut into fragments. */
const fragmentedCallsArb: fc.Arbitrary<FragmentedCall[]> = fc
  .uniqueArray(
    fc.record({
      index: fc.nat({ max: 7 }),
      withId: fc.boolean(),
      name: fc.constantFrom(...TOOL_NAMES),
      args: fc.nat({ max: ARG_FACTORIES.length - 1 }),
      spacing: fc.constantFrom(0, 2),
      points: fc.array(fc.nat({ max: 200 }), { maxLength: 6 }),
    }),
    { selector: (c) => c.index, maxLength: 4 },
  )
  .map((calls) =>
    calls.map((c, k): FragmentedCall => {
      const args = (ARG_FACTORIES[c.args] as () => unknown)();
      return {
        index: c.index,
        id: c.withId ? `call-${k}` : undefined,
        name: c.name,
        args,
        fragments: cut(JSON.stringify(args, null, c.spacing), c.points),
      };
    }),
  );

/** Fragments of the calls interleaved at random (each call's own fragments in order), with other events among them. */
function interleave(calls: FragmentedCall[], fillers: ProviderEvent[], order: number[]): ProviderEvent[] {
  const next = calls.map(() => 0);
  let filler = 0;
  return order.map((k) => {
    if (k < 0) return fillers[filler++] as ProviderEvent;
    const c = calls[k] as FragmentedCall;
    const i = next[k] as number;
    next[k] = i + 1;
    const piece = c.fragments[i] as string;
    if (i > 0) return delta(c.index, piece);
    const start: { id?: string; name?: string } = { name: c.name };
    if (c.id !== undefined) start.id = c.id;
    return delta(c.index, piece, start);
  });
}

const fillerArb: fc.Arbitrary<ProviderEvent> = fc.oneof(
  fc.string({ maxLength: 4 }).map((s) => text(s)),
  fc.nat({ max: 99 }).map((n) => usage(n, n)),
);

/** One attempt of fragments: the calls, the interleaved stream (without finish), and the first-fragment order. */
const fragmentedAttemptArb = fc
  .record({ calls: fragmentedCallsArb, fillers: fc.array(fillerArb, { maxLength: 4 }) })
  .chain(({ calls, fillers }) => {
    const slots = [...calls.flatMap((c, k) => c.fragments.map(() => k)), ...fillers.map(() => -1)];
    return fc
      .shuffledSubarray(slots, { minLength: slots.length, maxLength: slots.length })
      .map((order) => ({ calls, fillers, order, events: interleave(calls, fillers, order) }));
  });

/** An abandoned attempt: some fragments (a random prefix of the stream), then a retry. */
const abandonedAttemptArb = fragmentedAttemptArb.chain((a) =>
  fc.nat({ max: a.events.length }).map((n) => a.events.slice(0, n)),
);

describe('assembleToolCalls', () => {
  /**
   * A reference model of assembleToolCalls, written the slow and obvious way: a call is complete at the first
   * fragment after which its accumulated text parses as JSON (for the object and array arguments generated
   * here, that is where the top-level value closes); calls still open at the finish come out there in
   * first-fragment order; a retry discards open calls.
   */
  function modelAssemble(events: ProviderEvent[]): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    let open = new Map<
      number,
      { id: string | undefined; name: string | undefined; text: string; done: boolean }
    >();
    let order: {
      id: string | undefined;
      name: string | undefined;
      text: string;
      done: boolean;
      index: number;
    }[] = [];
    const whole = (c: (typeof order)[number]) =>
      call(c.id ?? `index-${c.index}`, c.name ?? '', c.text.trim() === '' ? {} : JSON.parse(c.text));
    for (const e of events) {
      if (e.type === 'tool-call-delta') {
        let c = open.get(e.index);
        if (c === undefined || (e.id !== undefined && c.id !== undefined && c.id !== e.id)) {
          const fresh = { id: undefined, name: undefined, text: '', done: false, index: e.index };
          open.set(e.index, fresh);
          order.push(fresh);
          c = fresh;
        }
        c.id ??= e.id;
        c.name ??= e.name;
        if (c.done) continue;
        c.text += e.argsDelta;
        let parses = false;
        try {
          JSON.parse(c.text);
          parses = c.text.trim() !== '';
        } catch {}
        if (parses && c.name !== undefined) {
          c.done = true;
          out.push(whole(c as (typeof order)[number]));
        }
      } else if (e.type === 'finish') {
        for (const c of order) if (!c.done) out.push(whole(c));
        open = new Map();
        order = [];
        out.push(e);
      } else {
        if (e.type === 'retry') {
          open = new Map();
          order = [];
        }
        out.push(e);
      }
    }
    return out;
  }

  it('joins random fragments into the original args, each call when it closes, open ones at the finish', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(abandonedAttemptArb, { maxLength: 2 }),
        fragmentedAttemptArb,
        finishReasonArb,
        async (abandoned, live, reason) => {
          const end = finish(reason);
          const events: ProviderEvent[] = [
            ...abandoned.flatMap((a) => [...a, retrying('connection reset')]),
            ...live.events,
            end,
          ];
          const expected = modelAssemble(events);
          const out = await run(events, assembleToolCalls());
          expect(out).toEqual(expected);

          // Every call of the live attempt comes out exactly once, with the original arguments.
          const liveStart = expected.map((e) => e.type).lastIndexOf('retry') + 1;
          const liveCalls = expected.slice(liveStart).filter((e) => e.type === 'tool-call');
          const byId = (c: { id?: string; index: number }) => c.id ?? `index-${c.index}`;
          expect([...liveCalls].map((c) => c.id).sort()).toEqual(
            [...new Set(live.order.filter((k) => k >= 0))]
              .map((k) => byId(live.calls[k] as FragmentedCall))
              .sort(),
          );
          for (const c of liveCalls) {
            const original = live.calls.find((f) => byId(f) === c.id) as FragmentedCall;
            expect(c.args).toEqual(original.args);
          }

          // With attempt numbers upstream, an assembled call keeps its attempt.
          const lastAttempt = abandoned.length + 1;
          const tagged = await run(events, (s: Observable<ProviderEvent>) =>
            s.pipe(tagAttempts(), assembleToolCalls()),
          );
          const taggedLive = tagged.filter((e) => e.type === 'tool-call' && e.attempt === lastAttempt);
          expect(taggedLive).toEqual(liveCalls.map((c) => ({ ...c, attempt: lastAttempt })));

          // Through the recommended pipeline, only the finished attempt's calls come out, each once (a meaning
          // seen before marked as a repeat), in the order they completed, right before the finish.
          const cleaned = await run(events, (s: Observable<ProviderEvent>) =>
            s.pipe(assembleToolCalls(), cleanTurn({ turnId: TURN_ID })),
          );
          const seen = new Set<string>();
          const repeats = liveCalls.map((c) => seen.has(meaning(c)) || (seen.add(meaning(c)) && false));
          const cleanedCalls = cleaned.filter(isReleased);
          expect(cleanedCalls.map((c) => c.id)).toEqual(liveCalls.map((c) => c.id));
          expect(cleanedCalls.map((c) => c.type === 'tool-call-repeat')).toEqual(repeats);
          expect(cleaned.at(-1)?.type).toBe('finish');
          expect(cleaned.slice(cleaned.length - 1 - cleanedCalls.length, -1)).toEqual(cleanedCalls);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('emits only the calls whose arguments closed when an attempt never finishes', async () => {
    await fc.assert(
      fc.asyncProperty(fragmentedAttemptArb, async (live) => {
        const out = await run(live.events, assembleToolCalls());
        expect(out).toEqual(modelAssemble(live.events));
        // A call with no argument text at all is complete only at a finish.
        const silent = live.calls
          .filter((c) => c.fragments.join('').trim() === '')
          .map((c) => c.id ?? `index-${c.index}`);
        for (const c of out) if (c.type === 'tool-call') expect(silent).not.toContain(c.id);
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// retryAsEvents
// ---------------------------------------------------------------------------------------------------------

/** Subscribes to a synchronous observable and returns everything it said, checking that it has ended. */
function collectSync<T>(source: Observable<T>): Collected<T> {
  const result = collect(source);
  expect(result.error !== undefined || result.completed).toBe(true);
  return result;
}

describe('retryAsEvents', () => {
  /** Values per subscription; the subscription `i` fails (after its values) while `i < k`. */
  const scenarioArb = fc.record({
    count: fc.nat({ max: 5 }),
    failures: fc.nat({ max: 7 }),
    values: fc.array(fc.array(fc.integer({ min: -9, max: 99 }), { maxLength: 4 }), {
      minLength: 8,
      maxLength: 8,
    }),
  });

  /** The retry after failed attempt `failed` (1-based), with the facts it carries: no delay, no status. */
  function retryOf(failed: number, count: number, values: number[][], errors: Error[]): RetryEvent {
    return {
      type: 'retry',
      reason: `boom ${failed - 1}`,
      error: errors[failed - 1],
      delay: 0,
      failedAttempt: failed,
      outputStarted: (values[failed - 1] ?? []).length > 0,
      retryCount: failed,
      maxRetries: count,
      errorName: 'Error',
    };
  }

  function coldSource(values: number[][], failures: number, errors: Error[]) {
    let subscriptions = 0;
    const source$ = defer(() => {
      const i = subscriptions++;
      const own = from(values[i] ?? []);
      return i < failures
        ? concat(
            own,
            throwError(() => errors[i]),
          )
        : own;
    });
    return { source$, subscriptions: () => subscriptions };
  }

  it('with k <= count failures: the attempts’ values separated by exactly k retry events, then complete', async () => {
    await fc.assert(
      fc.asyncProperty(
        scenarioArb.filter((s) => s.failures <= s.count),
        async ({ count, failures, values }) => {
          const errors = values.map((_, i) => new Error(`boom ${i}`));
          const { source$, subscriptions } = coldSource(values, failures, errors);
          const out = await lastValueFrom(source$.pipe(retryAsEvents({ count }), toArray()));
          const expected: (number | RetryEvent)[] = [];
          for (let i = 0; i <= failures; i++) {
            if (i > 0) expected.push(retryOf(i, count, values, errors));
            expected.push(...(values[i] as number[]));
          }
          expect(out).toEqual(expected);
          expect(out.filter((e) => typeof e !== 'number')).toHaveLength(failures);
          expect(subscriptions()).toBe(failures + 1);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('with k > count failures: retries-exhausted TurnError with count + 1 attempt records', () => {
    fc.assert(
      fc.property(
        // count 0 retries nothing and passes the error through unchanged, as RxJS `retry` does.
        scenarioArb.filter((s) => s.failures > s.count && s.count > 0),
        ({ count, failures, values }) => {
          const errors = values.map((_, i) => new Error(`boom ${i}`));
          const { source$, subscriptions } = coldSource(values, failures, errors);
          const result = collectSync(source$.pipe(retryAsEvents({ count })));
          expect(result.completed).toBe(false);
          expectTurnError(result.error, 'retries-exhausted');
          const error = result.error as TurnError;
          expect(error.retryable).toBe(false);
          expect(error.attempts).toEqual(
            values.slice(0, count + 1).map((v, i) => ({
              attempt: i + 1,
              reason: `boom ${i}`,
              error: errors[i],
              emitted: v.length,
            })),
          );
          // What was seen before the error: count + 1 attempts separated by count retries.
          const expected: (number | RetryEvent)[] = [];
          for (let i = 0; i <= count; i++) {
            if (i > 0) expected.push(retryOf(i, count, values, errors));
            expected.push(...(values[i] as number[]));
          }
          expect(result.values).toEqual(expected);
          expect(subscriptions()).toBe(count + 1);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('passes an error that is not retryable through unchanged, without a retry event for it', () => {
    fc.assert(
      fc.property(scenarioArb, fc.nat({ max: 7 }), ({ values }, fatalAt) => {
        const fatal = Object.assign(new Error('bad request'), { retryable: false });
        let subscriptions = 0;
        const source$ = defer(() => {
          const i = subscriptions++;
          return concat(
            from(values[i] ?? []),
            throwError(() => (i === fatalAt ? fatal : new Error(`boom ${i}`))),
          );
        });
        const result = collectSync(source$.pipe(retryAsEvents({ count: 10 })));
        expect(result.error).toBe(fatal);
        expect(result.values.filter((e) => typeof e !== 'number')).toHaveLength(fatalAt);
        expect(subscriptions).toBe(fatalAt + 1);
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// Unsubscribing stops the source (standard operator check, on synchronous sources)
// ---------------------------------------------------------------------------------------------------------

/** Pushes events one at a time and returns how many inputs it takes to produce `n` outputs (all, if never). */
function inputsNeeded<I, O>(events: readonly I[], operator: OperatorFunction<I, O>, n: number): number {
  const input = new Subject<I>();
  let outputs = 0;
  const sub = input.pipe(operator).subscribe({ next: () => outputs++, error: () => undefined });
  let needed = events.length;
  for (let i = 0; i < events.length; i++) {
    input.next(events[i] as I);
    if (outputs >= n) {
      needed = i + 1;
      break;
    }
  }
  sub.unsubscribe();
  return needed;
}

/** How many events a synchronous source delivers before `take(n)` downstream of `operator` has unsubscribed. */
function pulledBy<I, O>(events: readonly I[], operator: OperatorFunction<I, O>, n: number): number {
  let pulled = 0;
  from(events)
    .pipe(
      tap(() => pulled++),
      operator,
      take(n),
    )
    .subscribe({ error: () => undefined });
  return pulled;
}

describe('unsubscribing during a synchronous emission', () => {
  const operators: Record<string, () => OperatorFunction<AssembledEvent<ProviderEvent>, unknown>> = {
    'cleanTurn()': () => cleanTurn({ turnId: TURN_ID }),
    'lateExecutionPolicy()': () => lateExecutionPolicy(),
    'assembleToolCalls()': () => assembleToolCalls(),
    'retryAsEvents()': () => retryAsEvents({ count: 3 }),
    'tagAttempts(), bufferUntilFinish()': () => (s) => s.pipe(tagAttempts(), bufferUntilFinish()),
  };
  for (const [label, operator] of Object.entries(operators)) {
    it(`${label} stops pulling the source as soon as the consumer has what it wants`, () => {
      fc.assert(
        fc.property(turnArb, fc.integer({ min: 1, max: 12 }), (turn, n) => {
          expect(pulledBy(turn.events, operator(), n)).toBe(inputsNeeded(turn.events, operator(), n));
        }),
        { numRuns: 200 },
      );
    });
  }

  it('retryAsEvents() neither pulls nor resubscribes after the consumer unsubscribed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat({ max: 9 }), { maxLength: 4 }), { minLength: 8, maxLength: 8 }),
        fc.nat({ max: 7 }),
        fc.integer({ min: 1, max: 20 }),
        (values, failures, n) => {
          let subscriptions = 0;
          let pulled = 0;
          const source$ = defer(() => {
            const i = subscriptions++;
            const own = from(values[i] ?? []).pipe(tap(() => pulled++));
            return i < failures
              ? concat(
                  own,
                  throwError(() => new Error(`boom ${i}`)),
                )
              : own;
          });
          const seen = collectSync(source$.pipe(retryAsEvents({ count: 7 }), take(n))).values;
          expect(pulled).toBe(seen.filter((v) => typeof v === 'number').length);
          const retries = seen.filter((v) => typeof v !== 'number').length;
          // Ended by itself: every attempt ran. Stopped by the consumer: on a value, the attempt that sent it
          // was the last one; on a retry event, the attempt it announces never starts.
          const ended = seen.length < n;
          const stoppedOnRetry = typeof seen.at(-1) === 'object';
          expect(subscriptions).toBe(ended ? failures + 1 : stoppedOnRetry ? retries : retries + 1);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
