// Item 3: scaling. One tool call whose arguments are 10 KB, 100 KB, 1 MB and 10 MB of JSON, streamed in
// 10-byte fragments, through the full clean pipeline to the final turn (joining, parsing, effect key). The time
// per byte must stay flat: a quadratic join (re-concatenating or re-scanning the buffer per fragment) would
// grow it 10× per size step.

import type * as Core from 'cleanturn';
import type { ProviderEvent } from 'cleanturn';
import { from, lastValueFrom } from 'rxjs';
import { collectGarbage, median } from './harness.js';

/** The sizes, in bytes of argument JSON. */
export const SIZES = [10_000, 100_000, 1_000_000, 10_000_000] as const;
const FRAGMENT = 10;

/** Argument JSON of exactly `size` bytes: `{"note":"…"}`. */
function argsOfSize(size: number): string {
  const overhead = '{"note":""}'.length;
  return `{"note":"${'abcdefghij'.repeat(Math.ceil((size - overhead) / 10)).slice(0, size - overhead)}"}`;
}

/** The events of one attempt: the call in `FRAGMENT`-byte fragments, then the finish. */
function scalingEvents(size: number): ProviderEvent[] {
  const args = argsOfSize(size);
  const events: ProviderEvent[] = [
    { type: 'tool-call-delta', index: 0, id: 'call_big', name: 'save_document', argsDelta: '' },
  ];
  for (let i = 0; i < args.length; i += FRAGMENT) {
    events.push({ type: 'tool-call-delta', index: 0, argsDelta: args.slice(i, i + FRAGMENT) });
  }
  events.push({ type: 'finish', reason: 'tool-calls' });
  return events;
}

/** One size's measurement. */
export interface ScalingPoint {
  bytes: number;
  fragments: number;
  /** Median time through the pipeline, ms. */
  median: number;
  /** Nanoseconds per byte of arguments. */
  nsPerByte: number;
}

export interface ScalingResult {
  points: ScalingPoint[];
  /** ns/byte at 10 MB over ns/byte at 100 KB: about 1 when linear, about 100 when quadratic. */
  growth: number;
}

async function runOnce(core: typeof Core, events: readonly ProviderEvent[], bytes: number): Promise<void> {
  const {
    accumulateTurn,
    assembleToolCalls,
    bufferUntilFinish,
    dedupeByEffectKey,
    resetOnRetry,
    tagAttempts,
  } = core;
  const state = await lastValueFrom(
    from(events).pipe(
      assembleToolCalls(),
      tagAttempts(),
      resetOnRetry(),
      bufferUntilFinish(),
      dedupeByEffectKey({ turnId: 'turn-scaling' }),
      accumulateTurn(),
    ),
  );
  const call = state.toolCalls[0];
  const note = (call?.args as { note?: string } | undefined)?.note;
  if (note === undefined || note.length !== bytes - '{"note":""}'.length || call?.effectKey.length !== 16) {
    throw new Error(`scaling: the ${bytes}-byte call did not come through whole`);
  }
}

export async function benchScaling(core: typeof Core, options: { quick: boolean }): Promise<ScalingResult> {
  const points: ScalingPoint[] = [];
  for (const bytes of SIZES) {
    let events: ProviderEvent[] | undefined = scalingEvents(bytes);
    // Small sizes run more often, so that every size is measured over a similar wall time.
    const runs = bytes >= 10_000_000 ? (options.quick ? 2 : 5) : bytes >= 1_000_000 ? 7 : 25;
    const warmups = bytes >= 10_000_000 ? 1 : 5;
    for (let i = 0; i < warmups; i++) await runOnce(core, events, bytes);
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      collectGarbage();
      const start = performance.now();
      await runOnce(core, events, bytes);
      samples.push(performance.now() - start);
    }
    const m = median(samples);
    points.push({ bytes, fragments: events.length - 2, median: m, nsPerByte: (m * 1e6) / bytes });
    events = undefined;
    collectGarbage();
  }
  const at = (bytes: number) => points.find((p) => p.bytes === bytes)?.nsPerByte ?? Number.NaN;
  return { points, growth: at(10_000_000) / at(100_000) };
}

export function printScaling(r: ScalingResult): void {
  for (const p of r.points) {
    console.log(
      `  ${`${(p.bytes / 1000).toLocaleString('en')} KB`.padStart(10)} in ${p.fragments.toLocaleString('en').padStart(9)} fragments: ${p.median.toFixed(1).padStart(8)} ms  ${p.nsPerByte.toFixed(1).padStart(6)} ns/byte`,
    );
  }
  console.log(
    `  ns/byte at 10 MB ÷ ns/byte at 100 KB = ${r.growth.toFixed(2)} (linear ≈ 1; quadratic ≈ 100)`,
  );
}

// Run alone: npx tsx bench/scaling.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage();
  printScaling(await benchScaling(core, { quick: process.argv.includes('--quick') }));
}
