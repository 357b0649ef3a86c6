// Item 1: operator overhead. 10,000 turns × 100 synthetic events (1,000,000 events), every turn its own
// subscription and every turn retried mid-way, through (a) a plain for-loop doing the same bookkeeping, (b) a
// plain RxJS chain of four simple operators, (c) the full clean pipeline. Item 1b: the same comparison on a
// workload of many attempts (10 per turn, 9 of them cut by a retry), also 1,000,000 events.

import type * as Core from 'cleanturn';
import type { ProviderEvent, TurnState } from 'cleanturn';
import { filter, from, map, scan } from 'rxjs';
import type { ReleasedCall } from '../src/types.js';
import { compare, type Measured, pick, rate, ratio, same, times, type Variant } from './harness.js';

/** The workload's shape. */
export interface OperatorWorkload {
  /** What it is, for headings. */
  name: string;
  turns: number;
  eventsPerTurn: number;
  /** Attempts per turn: all but the last are cut by a `retry`, the last one finishes. */
  attemptsPerTurn: number;
  /** The event lists; turn `t` replays `templates[t % templates.length]` (no operator mutates its input). */
  templates: readonly (readonly ProviderEvent[])[];
}

export const words = [
  'The ',
  'order ',
  'ORD-7781 ',
  'arrived ',
  'damaged, ',
  'so ',
  'a ',
  'full ',
  'refund ',
  'starts. ',
];

/** The refund call whole, then 3 text fragments: as many events as {@link pushCall}'s fragments. */
export function pushWholeCall(events: ProviderEvent[], id: string, variant: number): void {
  const args = { order_id: `ORD-${7700 + variant}`, amount: 'full' };
  events.push({ type: 'tool-call', id, name: 'issue_refund', args });
  for (let i = 0; i < 3; i++)
    events.push({ type: 'text', text: words[(i + variant) % words.length] as string });
}

/** The four fragments of the refund call: id and name with empty arguments, then the arguments in three pieces. */
function pushCall(events: ProviderEvent[], id: string, variant: number): void {
  events.push({ type: 'tool-call-delta', index: 0, id, name: 'issue_refund', argsDelta: '' });
  events.push({ type: 'tool-call-delta', index: 0, argsDelta: '{"order_id":' });
  events.push({ type: 'tool-call-delta', index: 0, argsDelta: `"ORD-${7700 + variant}",` });
  events.push({ type: 'tool-call-delta', index: 0, argsDelta: '"amount":"full"}' });
}

/**
 * One turn of 100 events. Attempt 1: 20 text, a tool call in 4 fragments, 24 text, usage (49); a retry (1);
 * attempt 2: 20 text, the same call with another id in 4 fragments, 24 text, usage, finish (50).
 */
function turnEvents(variant: number): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  const attempt = (id: string, finish: boolean) => {
    for (let i = 0; i < 20; i++)
      events.push({ type: 'text', text: words[(i + variant) % words.length] as string });
    pushCall(events, id, variant);
    for (let i = 0; i < 24; i++) events.push({ type: 'text', text: words[(i + 3) % words.length] as string });
    events.push({ type: 'usage', inputTokens: 310 + variant, outputTokens: 48 });
    if (finish) events.push({ type: 'finish', reason: 'tool-calls' });
  };
  attempt(`call_a${variant}`, false);
  events.push({ type: 'retry', reason: 'connection reset' });
  attempt(`call_b${variant}`, true);
  return events;
}

export function operatorWorkload(turns = 10_000): OperatorWorkload {
  const templates = Array.from({ length: 100 }, (_, v) => turnEvents(v));
  return {
    name: '2 attempts per turn',
    turns,
    eventsPerTurn: (templates[0] as ProviderEvent[]).length,
    attemptsPerTurn: 2,
    templates,
  };
}

/**
 * One turn of `attempts` attempts, 10 events each (100 events for 10 attempts). Every attempt opens with usage
 * (input tokens, as Anthropic's `message_start` reports them), streams 3 text fragments and the refund call
 * in 4 fragments (another id each attempt, the same arguments). An attempt that is cut then gets one more
 * text fragment and the `retry`, mid-way (no final usage, no finish); the last attempt gets its final usage
 * and the finish.
 */
export function manyAttemptTurnEvents(
  variant: number,
  attempts: number,
  push: (events: ProviderEvent[], id: string, variant: number) => void = pushCall,
): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  for (let a = 1; a <= attempts; a++) {
    events.push({ type: 'usage', inputTokens: 310 + variant, outputTokens: 1 });
    for (let i = 0; i < 3; i++)
      events.push({ type: 'text', text: words[(i + a + variant) % words.length] as string });
    push(events, `call_${variant}_${a}`, variant);
    if (a < attempts) {
      events.push({ type: 'text', text: words[(a + variant + 3) % words.length] as string });
      events.push({ type: 'retry', reason: 'connection reset' });
    } else {
      events.push({ type: 'usage', inputTokens: 310 + variant, outputTokens: 48 + a });
      events.push({ type: 'finish', reason: 'tool-calls' });
    }
  }
  return events;
}

/** 10,000 turns × 10 attempts × 10 events (1,000,000 events): every attempt but the last cut by a retry. */
export function manyAttemptWorkload(turns = 10_000, attempts = 10): OperatorWorkload {
  const templates = Array.from({ length: 100 }, (_, v) => manyAttemptTurnEvents(v, attempts));
  return {
    name: `${attempts} attempts per turn`,
    turns,
    eventsPerTurn: (templates[0] as ProviderEvent[]).length,
    attemptsPerTurn: attempts,
    templates,
  };
}

/** What every variant computes for a turn, folded over all turns: checked equal across variants. */
interface Summary {
  textChars: number;
  calls: number;
  attempts: number;
  keys: number;
}

function emptySummary(): Summary {
  return { textChars: 0, calls: 0, attempts: 0, keys: 0 };
}

/** Keeps a checksum of the keys instead of all 10,000 of them (cheap: it runs inside the timed variants). */
function foldKey(summary: Summary, key: string): void {
  summary.keys = (summary.keys + Number.parseInt(key.slice(0, 8), 16)) % 2 ** 32;
}

/** (c) The full clean pipeline; one subscription per turn, keeping the last snapshot. */
export function runPipeline(core: typeof Core, w: OperatorWorkload): Summary {
  const {
    accumulateTurn,
    assembleToolCalls,
    bufferUntilFinish,
    dedupeByEffectKey,
    resetOnRetry,
    tagAttempts,
  } = core;
  const summary = emptySummary();
  for (let t = 0; t < w.turns; t++) {
    let last: TurnState<ReleasedCall> | undefined;
    from(w.templates[t % w.templates.length] as ProviderEvent[])
      .pipe(
        assembleToolCalls(),
        tagAttempts(),
        resetOnRetry(),
        bufferUntilFinish(),
        dedupeByEffectKey({ turnId: `turn-${t}` }),
        accumulateTurn(),
      )
      .subscribe((state) => {
        last = state;
      });
    if (last === undefined) throw new Error('no snapshot');
    summary.textChars += last.text.length;
    summary.calls += last.toolCalls.length;
    summary.attempts += last.attempts.length;
    for (const call of last.toolCalls) foldKey(summary, call.effectKey);
  }
  return summary;
}

/** (b) Four simple operators over the same events; the state is mutated, never copied. */
export function runFourOperators(w: OperatorWorkload): number {
  let total = 0;
  for (let t = 0; t < w.turns; t++) {
    const state = { attempt: 1, textChars: 0 };
    from(w.templates[t % w.templates.length] as ProviderEvent[])
      .pipe(
        map((e) => (e.type === 'retry' ? { type: 'reset' as const, attempt: state.attempt + 1 } : e)),
        filter((e) => e.type !== 'usage'),
        scan((s, e) => {
          if (e.type === 'reset') {
            s.attempt = e.attempt;
            s.textChars = 0;
          } else if (e.type === 'text') s.textChars += e.text.length;
          return s;
        }, state),
        map((s) => s.textChars),
      )
      .subscribe((n) => {
        total += n;
      });
  }
  return total;
}

/** A reference point: the same four operators, with a `scan` that copies its state object per event. */
export function runFourOperatorsCopying(w: OperatorWorkload): number {
  let total = 0;
  for (let t = 0; t < w.turns; t++) {
    from(w.templates[t % w.templates.length] as ProviderEvent[])
      .pipe(
        map((e) => e),
        filter((e) => e.type !== 'usage'),
        scan(
          (s, e) => ({
            ...s,
            attempt: e.type === 'retry' ? s.attempt + 1 : s.attempt,
            text: e.type === 'retry' ? '' : e.type === 'text' ? s.text + e.text : s.text,
          }),
          {
            attempt: 1,
            text: '',
            calls: [] as unknown[],
            usage: undefined as unknown,
            finish: undefined as unknown,
          },
        ),
        map((s) => s.text.length),
      )
      .subscribe((n) => {
        total += n;
      });
  }
  return total;
}

interface LoopCall {
  index: number;
  id: string | undefined;
  name: string | undefined;
  parts: string[];
}

/**
 * (a) A plain for-loop doing the same bookkeeping: attempts, text of the live attempt, fragments joined and
 * parsed, calls held until the finish, effect keys, per-attempt records. No immutability, no RxJS.
 *
 * Like the pipeline (whose assembleToolCalls emits a call as soon as its arguments close, before the finish),
 * it joins and parses a call once it is complete, also in an attempt that a retry later cuts, and holds it: a
 * call here is complete when an event other than one of its fragments follows it. A retry discards what the
 * cut attempt had open or held, as resetOnRetry and bufferUntilFinish do: with ten attempts, nine calls are
 * parsed and discarded per turn on both sides.
 */
export function runForLoop(core: typeof Core, w: OperatorWorkload): Summary {
  const { effectKey } = core;
  const summary = emptySummary();
  for (let t = 0; t < w.turns; t++) {
    const events = w.templates[t % w.templates.length] as ProviderEvent[];
    const turnId = `turn-${t}`;
    let attempt = 1;
    let text = '';
    let open: LoopCall[] = [];
    let held: { id: string; name: string; args: unknown }[] = [];
    const released: { id: string; name: string; args: unknown; effectKey: string }[] = [];
    const seen = new Set<string>();
    const records: { attempt: number; textLength: number; toolCalls: number; usage?: unknown }[] = [
      { attempt: 1, textLength: 0, toolCalls: 0 },
    ];
    for (const e of events) {
      // The open calls are complete once something else follows them (a retry voids them instead).
      if (open.length > 0 && e.type !== 'tool-call-delta' && e.type !== 'retry') {
        for (const c of open) {
          held.push({ id: c.id ?? '', name: c.name ?? '', args: JSON.parse(c.parts.join('')) });
        }
        open = [];
      }
      const record = records[records.length - 1] as (typeof records)[number];
      switch (e.type) {
        case 'text':
          text += e.text;
          record.textLength += e.text.length;
          break;
        case 'tool-call-delta': {
          let call = open.find((c) => c.index === e.index);
          if (call === undefined) {
            call = { index: e.index, id: e.id, name: e.name, parts: [] };
            open.push(call);
          }
          if (e.argsDelta !== '') call.parts.push(e.argsDelta);
          break;
        }
        case 'usage':
          record.usage = { inputTokens: e.inputTokens, outputTokens: e.outputTokens };
          break;
        case 'retry':
          attempt++;
          text = '';
          open = [];
          held = [];
          released.length = 0;
          records.push({ attempt, textLength: 0, toolCalls: 0 });
          break;
        case 'finish':
          for (const c of held) {
            const key = effectKey(turnId, c);
            if (seen.has(key)) continue;
            seen.add(key);
            released.push({ ...c, effectKey: key });
            record.toolCalls++;
          }
          held = [];
          break;
      }
    }
    summary.textChars += text.length;
    summary.calls += released.length;
    summary.attempts += records.length;
    for (const c of released) foldKey(summary, c.effectKey);
  }
  return summary;
}

/**
 * What the four-operator chains must return, computed without RxJS: the sum, over every event but usage, of the
 * live attempt's text length after it (a retry starts the count again).
 */
export function fourOperatorsExpected(w: OperatorWorkload): number {
  let total = 0;
  for (let t = 0; t < w.turns; t++) {
    let textChars = 0;
    for (const e of w.templates[t % w.templates.length] as ProviderEvent[]) {
      if (e.type === 'usage') continue;
      if (e.type === 'retry') textChars = 0;
      else if (e.type === 'text') textChars += e.text.length;
      total += textChars;
    }
  }
  return total;
}

/** The result of item 1 (or 1b: the same comparison on another workload). */
export interface OperatorResult {
  /** The workload's name (`2 attempts per turn`, `10 attempts per turn`). */
  workload: string;
  turns: number;
  eventsPerTurn: number;
  attemptsPerTurn: number;
  events: number;
  loop: Measured;
  fourOps: Measured;
  fourOpsCopying: Measured;
  pipeline: Measured;
  /** pipeline / four operators: the target is at most 3. */
  ratioToFourOps: number;
  ratioToLoop: number;
}

export async function benchOperators(
  core: typeof Core,
  options: { quick: boolean; workload?: OperatorWorkload },
): Promise<OperatorResult> {
  const w = options.workload ?? operatorWorkload();
  const events = w.turns * w.eventsPerTurn;
  // Every variant sees the same turns; the for-loop and the pipeline must agree on the result, and both
  // four-operator chains on theirs.
  const summary = runForLoop(core, w);
  if (summary.attempts !== w.turns * w.attemptsPerTurn) {
    throw new Error(
      `operators (${w.name}): ${summary.attempts} attempts, not ${w.turns * w.attemptsPerTurn}`,
    );
  }
  same(`operators (${w.name}): pipeline vs for-loop`, runPipeline(core, w), summary);
  const expected = fourOperatorsExpected(w);
  same(`operators (${w.name}): four operators`, runFourOperators(w), expected);
  same(`operators (${w.name}): four operators copying`, runFourOperatorsCopying(w), expected);
  const variants: Variant[] = [
    { name: 'for-loop', fn: () => runForLoop(core, w) },
    { name: 'rxjs map→filter→scan→map', fn: () => runFourOperators(w) },
    { name: 'rxjs 4 ops, scan copies state', fn: () => runFourOperatorsCopying(w) },
    { name: 'cleanturn full pipeline', fn: () => runPipeline(core, w) },
  ];
  // One run of each per round, rotated: a change of load hits every variant alike.
  const results = await compare(variants, { rounds: options.quick ? 4 : 15, iterations: 1, warmup: 3 });
  const loop = pick(results, 'for-loop');
  const fourOps = pick(results, 'rxjs map→filter→scan→map');
  const fourOpsCopying = pick(results, 'rxjs 4 ops, scan copies state');
  const pipeline = pick(results, 'cleanturn full pipeline');
  return {
    workload: w.name,
    turns: w.turns,
    eventsPerTurn: w.eventsPerTurn,
    attemptsPerTurn: w.attemptsPerTurn,
    events,
    loop,
    fourOps,
    fourOpsCopying,
    pipeline,
    ratioToFourOps: ratio(pipeline, fourOps),
    ratioToLoop: ratio(pipeline, loop),
  };
}

/** Prints item 1 (or 1b) for the console. */
export function printOperators(r: OperatorResult): void {
  for (const m of [r.loop, r.fourOps, r.fourOpsCopying, r.pipeline]) {
    console.log(
      `  ${m.name.padEnd(34)} ${m.median.toFixed(1).padStart(8)} ms  ${rate((r.events / m.median) * 1000, 'events').padStart(16)}`,
    );
  }
  console.log(
    `  pipeline / 4 ops = ${times(r.ratioToFourOps)} (target ≤ 3×); pipeline / for-loop = ${times(r.ratioToLoop)}`,
  );
}

// Run alone: npx tsx bench/operators.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage();
  const quick = process.argv.includes('--quick');
  for (const workload of [operatorWorkload(), manyAttemptWorkload()]) {
    console.log(workload.name);
    printOperators(await benchOperators(core, { quick, workload }));
  }
}
