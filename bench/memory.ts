// Item 5: memory. 100,000 turns with up to three retries each through the clean pipeline in one process; after
// GC the heap must come back to within 5 MB of where it started, and nothing of an abandoned attempt may stay
// reachable. Then 1,000 turns held open mid-stream (one attempt abandoned, the next half streamed) give the
// memory of a live turn. Runs in a child process with --expose-gc (see runMemory).

import type * as Core from 'cleanturn';
import type { ProviderEvent, TurnState } from 'cleanturn';
import { from, type Observable, Subject, type Subscription } from 'rxjs';
import { report, runChild } from './child.js';

export interface MemoryResult {
  turns: number;
  attempts: number;
  events: number;
  /** Heap used after GC before the run, at its highest during it (sampled), and after GC at the end. */
  heapBefore: number;
  heapPeak: number;
  heapAfter: number;
  /** Objects of abandoned attempts (and final snapshots) watched with WeakRefs, and how many survived GC. */
  watched: number;
  survivors: number;
  /** Turns held open mid-stream, and the heap they took after GC. */
  liveTurns: number;
  liveHeap: number;
  bytesPerLiveTurn: number;
  /** The heap after the live turns were closed, after GC. */
  heapAfterLive: number;
  seconds: number;
}

const words = [
  ' The',
  ' order',
  ' ORD-7781',
  ' arrived',
  ' damaged',
  ',',
  ' so',
  ' a',
  ' refund',
  ' starts',
  '.',
];

/** A small deterministic generator, so that every run sees the same turns. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * The events of one attempt: text, a tool call in fragments, more text, usage; a finished attempt ends with its
 * finish, an abandoned one is cut at `cut` (a fraction) and followed by a retry. New objects every time.
 */
function attemptEvents(turn: number, attempt: number, abandoned: boolean, cut: number): ProviderEvent[] {
  const events: ProviderEvent[] = [];
  for (let i = 0; i < 12; i++)
    events.push({ type: 'text', text: words[(i + turn) % words.length] as string });
  events.push({
    type: 'tool-call-delta',
    index: 0,
    id: `call_${turn}_${attempt}`,
    name: 'issue_refund',
    argsDelta: '',
  });
  events.push({ type: 'tool-call-delta', index: 0, argsDelta: `{"order_id":"ORD-${turn}",` });
  events.push({ type: 'tool-call-delta', index: 0, argsDelta: '"amount":"full"}' });
  for (let i = 0; i < 12; i++)
    events.push({ type: 'text', text: words[(i + attempt) % words.length] as string });
  events.push({ type: 'usage', inputTokens: 300, outputTokens: 30 });
  if (!abandoned) {
    events.push({ type: 'finish', reason: 'tool-calls' });
    return events;
  }
  const kept = events.slice(0, Math.max(1, Math.floor(events.length * cut)));
  kept.push({ type: 'retry', reason: 'connection reset' });
  return kept;
}

function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

/** Full GC, after letting WeakRef targets of the current job go. */
async function settle(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
  return heapUsed();
}

type Pipeline = (source: Observable<ProviderEvent>, turnId: string) => Observable<TurnState>;

function pipelineOf(core: typeof Core): Pipeline {
  const { accumulateTurn, assembleToolCalls, cleanTurn } = core;
  return (source, turnId) =>
    source.pipe(assembleToolCalls(), cleanTurn({ turnId }), accumulateTurn()) as Observable<TurnState>;
}

async function measure(core: typeof Core, turns: number, liveTurns: number): Promise<MemoryResult> {
  const pipeline = pipelineOf(core);
  const rand = random(42);
  let attempts = 0;
  let events = 0;
  let released = 0;
  const runTurn = (turn: number, watch: WeakRef<object>[] | undefined) => {
    const retries = Math.floor(rand() * 4); // 0 to 3 retries
    const list: ProviderEvent[] = [];
    for (let a = 1; a <= retries + 1; a++) {
      const attempt = attemptEvents(turn, a, a <= retries, 0.3 + rand() * 0.6);
      if (watch !== undefined && a <= retries) for (const e of attempt) watch.push(new WeakRef(e));
      list.push(...attempt);
    }
    attempts += retries + 1;
    events += list.length;
    let last: TurnState | undefined;
    pipeline(from(list), `turn-${turn}`).subscribe((state) => {
      last = state;
    });
    if (last === undefined || last.finish === undefined) throw new Error(`turn ${turn} did not finish`);
    released += last.toolCalls.length;
    if (watch !== undefined) watch.push(new WeakRef(last));
  };

  // Warm up (JIT code and inline caches are heap too), then start from a collected heap.
  for (let t = 0; t < 2_000; t++) runTurn(-1 - t, undefined);
  attempts = 0;
  events = 0;
  released = 0;
  const started = performance.now();
  const heapBefore = await settle();
  let heapPeak = heapBefore;
  const watch: WeakRef<object>[] = [];
  for (let t = 0; t < turns; t++) {
    runTurn(t, t % 100 === 0 ? watch : undefined);
    if (t % 250 === 0) heapPeak = Math.max(heapPeak, heapUsed());
  }
  if (released !== turns) throw new Error(`expected one released call per turn, got ${released}`);
  const heapAfter = await settle();
  const survivors = watch.filter((w) => w.deref() !== undefined).length;
  const seconds = (performance.now() - started) / 1000;

  // Live turns: each holds an abandoned attempt's record and a half-streamed live attempt.
  const base = await settle();
  const sources: Subject<ProviderEvent>[] = [];
  const subscriptions: Subscription[] = [];
  const states: (TurnState | undefined)[] = [];
  for (let i = 0; i < liveTurns; i++) {
    const source = new Subject<ProviderEvent>();
    sources.push(source);
    states.push(undefined);
    subscriptions.push(
      pipeline(source, `live-${i}`).subscribe((state) => {
        states[i] = state;
      }),
    );
    for (const e of attemptEvents(i, 1, true, 0.8)) source.next(e);
    const second = attemptEvents(i, 2, false, 1);
    for (const e of second.slice(0, second.length >> 1)) source.next(e);
  }
  const liveHeapUsed = await settle();
  if (states.some((s) => s === undefined || s.attempt !== 2))
    throw new Error('a live turn is not in attempt 2');
  for (const source of sources) source.complete();
  for (const subscription of subscriptions) subscription.unsubscribe();
  sources.length = 0;
  subscriptions.length = 0;
  states.length = 0;
  const heapAfterLive = await settle();

  return {
    turns,
    attempts,
    events,
    heapBefore,
    heapPeak,
    heapAfter,
    watched: watch.length,
    survivors,
    liveTurns,
    liveHeap: liveHeapUsed - base,
    bytesPerLiveTurn: (liveHeapUsed - base) / liveTurns,
    heapAfterLive,
    seconds,
  };
}

/** Runs item 5 in a child process with --expose-gc. */
export function runMemory(): Promise<MemoryResult> {
  return runChild<MemoryResult>('./memory.ts', ['--expose-gc']);
}

export function printMemory(r: MemoryResult): void {
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  console.log(
    `  ${r.turns.toLocaleString('en')} turns, ${r.attempts.toLocaleString('en')} attempts, ${r.events.toLocaleString('en')} events in ${r.seconds.toFixed(1)} s`,
  );
  console.log(
    `  heap before ${mb(r.heapBefore)}, peak ${mb(r.heapPeak)}, after GC ${mb(r.heapAfter)} (${r.heapAfter - r.heapBefore >= 0 ? '+' : ''}${mb(r.heapAfter - r.heapBefore)}, target within 5 MB)`,
  );
  console.log(
    `  abandoned-attempt objects and final snapshots watched: ${r.watched}, still reachable after GC: ${r.survivors}`,
  );
  console.log(
    `  ${r.liveTurns.toLocaleString('en')} live turns mid-stream: ${mb(r.liveHeap)}, ${(r.bytesPerLiveTurn / 1024).toFixed(1)} KiB per live turn; after closing them: ${mb(r.heapAfterLive)}`,
  );
}

// As a child: node --expose-gc --import tsx bench/memory.ts [--print]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage({ build: process.argv.includes('--print') });
  const result = await measure(core, 100_000, 1_000);
  if (process.argv.includes('--print')) printMemory(result);
  report(result);
}
