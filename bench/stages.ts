// Per-stage cost: each operator of the clean pipeline on its own, source → one operator, over the 1,000,000
// events of the operator workloads (item 1 and 1b). Every stage gets, for each turn, exactly what it receives
// inside the pipeline (the output of the stages before it, computed once beforehand), one subscription per
// turn as in item 1. Side by side: the bare source (`from(events)` to a subscriber), whose time every stage
// includes, and one RxJS `map`, as a yardstick of what one plain operator costs. A stage's own cost is its time
// minus the bare source's, paired round by round; "no stage slower than today" compares these between two
// checkouts (`--src=`).

import { isDeepStrictEqual } from 'node:util';
import type * as Core from 'cleanturn';
import { defer, from, map, type OperatorFunction } from 'rxjs';
import { compare, type Measured, median, ms, pick, ratio, times, type Variant } from './harness.js';
import { manyAttemptWorkload, type OperatorWorkload, operatorWorkload } from './operators.js';

/** The events between stages, as far as this file cares. */
type Ev = { type: string };
type Op = OperatorFunction<Ev, Ev>;

/** One stage of the pipeline: a new operator for turn `t` (dedupeByEffectKey keys with the turn's id). */
interface Stage {
  name: string;
  make: (t: number) => Op;
}

/** The stages in the order of streamTurn (assembleToolCalls → requireFinish → tagAttempts → …). */
function stagesOf(core: typeof Core): Stage[] {
  const {
    accumulateTurn,
    assembleToolCalls,
    bufferUntilFinish,
    dedupeByEffectKey,
    requireFinish,
    resetOnRetry,
    tagAttempts,
  } = core;
  // The operators' own type parameters (tagged events, keyed calls) are not this file's concern.
  const op = (o: unknown) => o as Op;
  return [
    { name: 'assembleToolCalls', make: () => op(assembleToolCalls()) },
    { name: 'requireFinish', make: () => op(requireFinish()) },
    { name: 'tagAttempts', make: () => op(tagAttempts()) },
    { name: 'resetOnRetry', make: () => op(resetOnRetry()) },
    { name: 'bufferUntilFinish', make: () => op(bufferUntilFinish()) },
    { name: 'dedupeByEffectKey', make: (t) => op(dedupeByEffectKey({ turnId: `turn-${t}` })) },
    { name: 'accumulateTurn', make: () => op(accumulateTurn()) },
  ];
}

/** Token counts of a usage event. */
interface Counts {
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
}

/** An attempt record, as far as the bookkeeping map writes one. */
interface Rec {
  attempt: number;
  outcome: string;
  reason?: string;
  finishReason?: string;
  usage?: object;
  textLength: number;
  toolCalls: number;
}

/**
 * A `map` (with its state per subscription, in a `defer`) that does accumulateTurn's bookkeeping by hand: the live
 * attempt's text, reasoning, calls, usage and finish, a record per attempt, and a new snapshot object after every
 * event (what accumulateTurn emits), on events that are already clean (no straggler to drop).
 */
function sameBookkeeping(): Op {
  return (source) =>
    defer(() => {
      let attempt = 1;
      let text = '';
      let reasoning = '';
      let toolCalls: readonly Ev[] = [];
      let finish: (Ev & { reason: string; responseId?: string }) | undefined;
      let usage: object | undefined;
      let closed: readonly Rec[] = [];
      const record = (outcome: string, reason?: string): Rec => {
        const r: Rec = { outcome, attempt, toolCalls: toolCalls.length, textLength: text.length };
        if (reason !== undefined) r.reason = reason;
        if (finish !== undefined) r.finishReason = finish.reason;
        if (usage !== undefined) r.usage = usage;
        return r;
      };
      return source.pipe(
        map((event) => {
          const e = event as Ev & { attempt: number; text?: string; reason?: string };
          if (e.attempt > attempt) {
            closed = [...closed, record('abandoned', e.reason)];
            attempt = e.attempt;
            text = '';
            reasoning = '';
            toolCalls = [];
            finish = undefined;
            usage = undefined;
          }
          if (e.type === 'text') text += e.text;
          else if (e.type === 'reasoning') reasoning += e.text;
          else if (e.type === 'tool-call' || e.type === 'tool-call-repeat') toolCalls = [...toolCalls, e];
          else if (e.type === 'usage') {
            const u = e as Counts;
            const next: Counts = { ...usage };
            if (u.inputTokens !== undefined) next.inputTokens = u.inputTokens;
            if (u.outputTokens !== undefined) next.outputTokens = u.outputTokens;
            if (u.cachedInputTokens !== undefined) next.cachedInputTokens = u.cachedInputTokens;
            if (u.reasoningTokens !== undefined) next.reasoningTokens = u.reasoningTokens;
            usage = next;
          } else if (e.type === 'finish') finish = e as typeof finish;
          // The live record as one literal while the attempt streams (one shape each, no key added later).
          const live =
            finish !== undefined
              ? record(finish.reason === 'error' ? 'failed' : 'completed')
              : usage === undefined
                ? { outcome: 'streaming', attempt, toolCalls: toolCalls.length, textLength: text.length }
                : {
                    outcome: 'streaming',
                    attempt,
                    toolCalls: toolCalls.length,
                    textLength: text.length,
                    usage,
                  };
          // Written with the idioms V8 keeps fast (no rest pattern, no spread of the records). The snapshot's keys
          // in another order than accumulateTurn's: objects of one shape shared by two
          // implementations in one process would make V8 generalize the shape for both, and time neither.
          return {
            attempts: closed.length === 0 ? [live] : closed.concat(live),
            text,
            reasoning,
            attempt,
            toolCalls,
            usage,
            finish,
            responseId: finish?.responseId,
          } as unknown as Ev;
        }),
      );
    });
}

/** Runs `events` through `operators` synchronously and collects what comes out; throws on an error. */
function collect(events: readonly Ev[], operators: readonly Op[]): Ev[] {
  const out: Ev[] = [];
  let failed: { error: unknown } | undefined;
  let completed = false;
  operators
    .reduce((source, o) => source.pipe(o), from(events))
    .subscribe({
      next: (e) => {
        out.push(e);
      },
      error: (error) => {
        failed = { error };
      },
      complete: () => {
        completed = true;
      },
    });
  if (failed !== undefined) throw failed.error;
  if (!completed) throw new Error('stages: the pipeline did not complete synchronously');
  return out;
}

/** Each turn's subscription to one stage; counts what comes out, so that the work cannot be skipped. */
function runStage(inputs: readonly (readonly Ev[])[], turns: number, make: ((t: number) => Op) | undefined) {
  let count = 0;
  let failed: { error: unknown } | undefined;
  const observer = {
    next: () => {
      count++;
    },
    error: (error: unknown) => {
      failed = { error };
    },
  };
  for (let t = 0; t < turns; t++) {
    const source = from(inputs[t % inputs.length] as Ev[]);
    if (make === undefined) source.subscribe(observer);
    else source.pipe(make(t)).subscribe(observer);
  }
  if (failed !== undefined) throw failed.error;
  return count;
}

/** What one stage measured. */
export interface StageRow {
  /** The operator, or `source only` / `rxjs map (yardstick)`. */
  name: string;
  /** Events the stage receives in one run (all turns), and emits. */
  eventsIn: number;
  eventsOut: number;
  measured: Measured;
  /** The stage's own cost: median over rounds of (stage − bare source), in ms per run. */
  ownMs: number;
  /** The same per event of the pipeline's input (the workload's events), in ns. */
  ownNsPerEvent: number;
  /**
   * The stage's time ÷ the yardstick's (source → map), paired by round: less sensitive to the machine's load
   * than milliseconds, for comparing runs made at different times.
   */
  toYardstick: number;
}

/** The per-stage costs on one workload. */
export interface StageResult {
  workload: string;
  /** The pipeline's input events per run (turns × events per turn). */
  events: number;
  /** Bare source, the yardstick, then the stages in pipeline order. */
  rows: StageRow[];
}

const SOURCE = 'source only';
const YARDSTICK = 'rxjs map (yardstick)';
/** The row of the bookkeeping map, measured on accumulateTurn's input. */
export const BOOKKEEPING = 'map, same bookkeeping';

export async function benchStages(
  core: typeof Core,
  workload: OperatorWorkload,
  options: { quick: boolean },
): Promise<StageResult> {
  const stages = stagesOf(core);
  const events = workload.turns * workload.eventsPerTurn;
  // inputs[i][v]: what stage i receives for template v inside the full pipeline (the turn id of template v
  // stands for the turn's own: only the effect keys differ).
  const inputs: Ev[][][] = [];
  let current = workload.templates.map((list) => list.slice() as Ev[]);
  for (const stage of stages) {
    inputs.push(current);
    current = current.map((list, v) => collect(list, [stage.make(v)]));
  }
  const outputs = [...inputs.slice(1), current];
  const perRun = (lists: readonly (readonly Ev[])[]) => {
    let n = 0;
    for (let t = 0; t < workload.turns; t++) n += (lists[t % lists.length] as Ev[]).length;
    return n;
  };
  const raw = inputs[0] as Ev[][];
  // Each stage must emit in the timed loop what it emitted above.
  const variants: Variant[] = [
    { name: SOURCE, fn: () => runStage(raw, workload.turns, undefined) },
    { name: YARDSTICK, fn: () => runStage(raw, workload.turns, () => map((e: Ev) => e)) },
    ...stages.map((stage, i) => ({
      name: stage.name,
      fn: () => runStage(inputs[i] as Ev[][], workload.turns, stage.make),
    })),
  ];
  const counts = new Map<string, { in: number; out: number }>([
    [SOURCE, { in: perRun(raw), out: perRun(raw) }],
    [YARDSTICK, { in: perRun(raw), out: perRun(raw) }],
    ...stages.map(
      (stage, i) =>
        [stage.name, { in: perRun(inputs[i] as Ev[][]), out: perRun(outputs[i] as Ev[][]) }] as const,
    ),
  ]);
  for (const v of variants) {
    const got = v.fn() as number;
    const want = counts.get(v.name)?.out;
    if (got !== want)
      throw new Error(`stages (${workload.name}): ${v.name} emitted ${got}, expected ${want}`);
  }
  const results = await compare(variants, { rounds: options.quick ? 4 : 12, iterations: 1, warmup: 3 });
  const source = pick(results, SOURCE);
  const yardstick = pick(results, YARDSTICK);
  const rows = results.map((m): StageRow => {
    const own =
      m.samples.length === source.samples.length
        ? median(m.samples.map((x, i) => x - (source.samples[i] as number)))
        : m.median - source.median;
    const c = counts.get(m.name) ?? { in: 0, out: 0 };
    return {
      name: m.name,
      eventsIn: c.in,
      eventsOut: c.out,
      measured: m,
      ownMs: m.name === SOURCE ? 0 : own,
      ownNsPerEvent: m.name === SOURCE ? 0 : (own * 1e6) / events,
      toYardstick: ratio(m, yardstick),
    };
  });
  return { workload: workload.name, events, rows };
}

/** accumulateTurn beside a `map` doing the same bookkeeping, on accumulateTurn's input inside the pipeline. */
export interface BookkeepingResult {
  workload: string;
  accumulateTurn: Measured;
  map: Measured;
  /** accumulateTurn ÷ the map, paired by round: the target is at most 1.3. */
  ratio: number;
}

/**
 * accumulateTurn against {@link sameBookkeeping} in a comparison of their own: both get, for each turn, what
 * accumulateTurn receives in the pipeline, and must emit equal snapshots.
 */
export async function benchBookkeeping(
  core: typeof Core,
  workload: OperatorWorkload,
  options: { quick: boolean },
): Promise<BookkeepingResult> {
  const stages = stagesOf(core);
  const accumulate = stages.findIndex((stage) => stage.name === 'accumulateTurn');
  const upstream = stages.slice(0, accumulate);
  const inputs = workload.templates.map((list, v) =>
    collect(
      list,
      upstream.map((stage) => stage.make(v)),
    ),
  );
  inputs.forEach((list, v) => {
    const ours = collect(list, [core.accumulateTurn() as unknown as Op]);
    if (!isDeepStrictEqual(collect(list, [sameBookkeeping()]), ours))
      throw new Error(`bookkeeping (${workload.name}): the map and accumulateTurn disagree on template ${v}`);
  });
  const results = await compare(
    [
      {
        name: 'accumulateTurn',
        fn: () => runStage(inputs, workload.turns, () => core.accumulateTurn() as unknown as Op),
      },
      { name: BOOKKEEPING, fn: () => runStage(inputs, workload.turns, sameBookkeeping) },
    ],
    { rounds: options.quick ? 4 : 12, iterations: 1, warmup: 3 },
  );
  const ours = pick(results, 'accumulateTurn');
  const byHand = pick(results, BOOKKEEPING);
  return { workload: workload.name, accumulateTurn: ours, map: byHand, ratio: ratio(ours, byHand) };
}

export function printBookkeeping(r: BookkeepingResult): void {
  console.log(
    `  ${r.workload}: accumulateTurn ${ms(r.accumulateTurn.median)}, ${BOOKKEEPING} ${ms(r.map.median)}: ${times(r.ratio)} (target ≤ 1.3×)`,
  );
}

/** The per-stage costs on both operator workloads (item 1's and item 1b's). */
export async function benchAllStages(core: typeof Core, options: { quick: boolean }): Promise<StageResult[]> {
  return [
    await benchStages(core, operatorWorkload(), options),
    await benchStages(core, manyAttemptWorkload(), options),
  ];
}

export function printStages(r: StageResult): void {
  console.log(
    `  ${r.workload} (${r.events.toLocaleString('en')} events; own = stage − source only, paired by round; ÷ map = stage ÷ source → map)`,
  );
  console.log(
    `  ${'stage'.padEnd(22)} ${'events in'.padStart(10)} ${'out'.padStart(10)} ${'median'.padStart(9)} ${'own'.padStart(9)} ${'own ns/event'.padStart(13)} ${'÷ map'.padStart(7)}`,
  );
  for (const row of r.rows) {
    const own = row.name === SOURCE ? '' : ms(row.ownMs);
    const ns = row.name === SOURCE ? '' : row.ownNsPerEvent.toFixed(1);
    console.log(
      `  ${row.name.padEnd(22)} ${row.eventsIn.toLocaleString('en').padStart(10)} ${row.eventsOut.toLocaleString('en').padStart(10)} ${ms(row.measured.median).padStart(9)} ${own.padStart(9)} ${ns.padStart(13)} ${times(row.toYardstick).padStart(7)}`,
    );
  }
}

// Run alone: npx tsx bench/stages.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage();
  const quick = process.argv.includes('--quick');
  for (const r of await benchAllStages(core, { quick })) printStages(r);
  for (const w of [operatorWorkload(), manyAttemptWorkload()])
    printBookkeeping(await benchBookkeeping(core, w, { quick }));
}
