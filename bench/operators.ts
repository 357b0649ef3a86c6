// Item 1: operator overhead. 10,000 turns × 100 synthetic events (1,000,000 events), every turn its own
// subscription and every turn retried mid-way, through (a) a plain for-loop doing the same bookkeeping, (b) a
// plain RxJS chain of four simple operators, (c) the full clean pipeline.

import type * as Core from 'cleanturn';
import type { KeyedToolCall, ProviderEvent, TurnState } from 'cleanturn';
import { filter, from, map, scan } from 'rxjs';
import { compare, type Measured, pick, rate, ratio, same, times, type Variant } from './harness.js';

/** The workload's shape. */
export interface OperatorWorkload {
  turns: number;
  eventsPerTurn: number;
  /** The event lists; turn `t` replays `templates[t % templates.length]` (no operator mutates its input). */
  templates: readonly (readonly ProviderEvent[])[];
}

const words = [
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

/**
 * One turn of 100 events. Attempt 1: 20 text, a tool call in 4 fragments, 24 text, usage (49); a retry (1);
 * attempt 2: 20 text, the same call with another id in 4 fragments, 24 text, usage, finish (50).
 */
function turnEvents(variant: number): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  const attempt = (id: string, finish: boolean) => {
    for (let i = 0; i < 20; i++)
      events.push({ type: 'text', text: words[(i + variant) % words.length] as string });
    events.push({ type: 'tool-call-delta', index: 0, id, name: 'issue_refund', argsDelta: '' });
    events.push({ type: 'tool-call-delta', index: 0, argsDelta: '{"order_id":' });
    events.push({ type: 'tool-call-delta', index: 0, argsDelta: `"ORD-${7700 + variant}",` });
    events.push({ type: 'tool-call-delta', index: 0, argsDelta: '"amount":"full"}' });
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
  return { turns, eventsPerTurn: (templates[0] as ProviderEvent[]).length, templates };
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
    let last: TurnState<KeyedToolCall> | undefined;
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
          for (const c of open) {
            held.push({ id: c.id ?? '', name: c.name ?? '', args: JSON.parse(c.parts.join('')) });
          }
          open = [];
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

/** The result of item 1. */
export interface OperatorResult {
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
  options: { quick: boolean },
): Promise<OperatorResult> {
  const w = operatorWorkload();
  const events = w.turns * w.eventsPerTurn;
  // Every variant sees the same turns; the for-loop and the pipeline must agree on the result.
  same('operators: pipeline vs for-loop', runPipeline(core, w), runForLoop(core, w));
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
    events,
    loop,
    fourOps,
    fourOpsCopying,
    pipeline,
    ratioToFourOps: ratio(pipeline, fourOps),
    ratioToLoop: ratio(pipeline, loop),
  };
}

/** Prints item 1 for the console. */
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
  printOperators(await benchOperators(core, { quick: process.argv.includes('--quick') }));
}
