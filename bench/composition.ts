// Item 1c: the public operators composed by a user. The README's custom policy, exactly as its code block writes it
// (the block is read from README.md, compiled and loaded against the benchmark build): `tagAttempts → resetOnRetry
// → bufferUntilFinish → dedupeByEffectKey → accumulateTurn` in three `pipe` calls. Beside it: the fused `cleanTurn`
// with `accumulateTurn`, the same policy with an operator of the user's own in the middle (a `filter`, which ends
// the fusion), and the four-operator RxJS chain. The source emits whole calls (the operators of the policy read
// whole calls; assembling fragments is item 1's pipeline): item 1b's turns, each call whole and followed by three
// text fragments in place of its four fragments: 10,000 turns × 10 attempts × 10 events.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Core from 'cleanturn';
import type { AssembledEvent, ProviderEvent, TurnState } from 'cleanturn';
import { filter, from, type Observable } from 'rxjs';
import ts from 'typescript';
import { outDir } from './build.js';
import { compare, type Measured, pick, rate, ratio, same, times } from './harness.js';
import {
  fourOperatorsExpected,
  manyAttemptTurnEvents,
  type OperatorWorkload,
  pushWholeCall,
  runFourOperators,
} from './operators.js';

/** The README's policy: a turn's events to its states. */
type MyTurn = (events$: Observable<AssembledEvent<ProviderEvent>>, turnId: string) => Observable<TurnState>;

/** The README's code block that defines `myTurn`, as it is written there. */
export function readmePolicySource(readme = join(import.meta.dirname, '../README.md')): string {
  const markdown = readFileSync(readme, 'utf8');
  const blocks = [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  const found = blocks.filter((code) => code.includes('export function myTurn('));
  if (found.length !== 1) throw new Error(`README.md: ${found.length} blocks define myTurn, not 1`);
  return found[0] as string;
}

/** Compiles the README's block and loads it against the benchmark build of the package. */
export async function loadReadmePolicy(): Promise<MyTurn> {
  const source = readmePolicySource();
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const core = pathToFileURL(join(outDir, 'index.js')).href;
  const code = outputText.replace(/from 'cleanturn'/g, `from '${core}'`);
  if (code.includes("'cleanturn")) throw new Error('README.md: the policy block imports another entry point');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'readme-policy.mjs');
  writeFileSync(file, code);
  const mod = (await import(`${pathToFileURL(file).href}?${Date.now()}`)) as { myTurn?: MyTurn };
  if (typeof mod.myTurn !== 'function') throw new Error('README.md: the policy block exports no myTurn');
  return mod.myTurn;
}

/** 10,000 turns × 10 attempts × 10 events of whole calls (1,000,000 events). */
export function wholeCallWorkload(turns = 10_000, attempts = 10): OperatorWorkload {
  const templates = Array.from({ length: 100 }, (_, v) => manyAttemptTurnEvents(v, attempts, pushWholeCall));
  return {
    name: `${attempts} attempts per turn, whole calls`,
    turns,
    eventsPerTurn: (templates[0] as ProviderEvent[]).length,
    attemptsPerTurn: attempts,
    templates,
  };
}

/** What a composition computed, folded over all turns: checked equal across the compositions. */
interface Summary {
  textChars: number;
  calls: number;
  attempts: number;
  keys: string;
}

/** Runs every turn through `compose`, one subscription each, keeping the last state. */
function runTurns(
  w: OperatorWorkload,
  compose: (events$: Observable<AssembledEvent<ProviderEvent>>, turnId: string) => Observable<TurnState>,
): Summary {
  const summary: Summary = { textChars: 0, calls: 0, attempts: 0, keys: '' };
  for (let t = 0; t < w.turns; t++) {
    let last: TurnState | undefined;
    const events = w.templates[t % w.templates.length] as AssembledEvent<ProviderEvent>[];
    compose(from(events), `turn-${t}`).subscribe((state) => {
      last = state;
    });
    if (last === undefined) throw new Error('composition: no state');
    summary.textChars += last.text.length;
    summary.calls += last.toolCalls.length;
    summary.attempts += last.attempts.length;
    // A sample of the keys (every 1,000th turn), so that the check reads them without costing the timed runs.
    if (t % 1000 === 0)
      summary.keys += (last.toolCalls[0] as { effectKey: string } | undefined)?.effectKey ?? '-';
  }
  return summary;
}

/** The compositions measured, by name. */
function compositions(core: typeof Core, myTurn: MyTurn) {
  const { accumulateTurn, bufferUntilFinish, cleanTurn, dedupeByEffectKey, resetOnRetry, tagAttempts } = core;
  const early = (call: { name: string }) => call.name === 'lookup_order';
  return {
    readme: myTurn,
    cleanTurn: (events$: Observable<AssembledEvent<ProviderEvent>>, turnId: string) =>
      events$.pipe(cleanTurn({ turnId, early }), accumulateTurn()),
    foreign: (events$: Observable<AssembledEvent<ProviderEvent>>, turnId: string) =>
      events$
        .pipe(tagAttempts(), resetOnRetry())
        .pipe(filter((event) => event.type !== 'reasoning'))
        .pipe(bufferUntilFinish({ early }))
        .pipe(dedupeByEffectKey({ turnId }), accumulateTurn()) as Observable<TurnState>,
  };
}

/** The result of item 1c. */
export interface CompositionResult {
  workload: string;
  events: number;
  fourOps: Measured;
  readme: Measured;
  cleanTurn: Measured;
  foreign: Measured;
  /** README policy ÷ four-operator chain: the target is at most 2.5. */
  readmeToFourOps: number;
  /** README policy ÷ cleanTurn + accumulateTurn: the target is at most 1.2. */
  readmeToCleanTurn: number;
  /** The policy with a foreign operator in the middle ÷ the README policy (not fused there). */
  foreignToReadme: number;
}

const names = {
  fourOps: 'rxjs map→filter→scan→map',
  readme: "README's policy, three pipe calls",
  cleanTurn: 'cleanTurn → accumulateTurn',
  foreign: 'the policy, a filter of its own in the middle',
} as const;

export async function benchComposition(
  core: typeof Core,
  options: { quick: boolean },
): Promise<CompositionResult> {
  const w = wholeCallWorkload();
  const myTurn = await loadReadmePolicy();
  const c = compositions(core, myTurn);
  // Every composition reaches the same turn states; the chain its own sum.
  const expected = runTurns(w, c.cleanTurn);
  if (expected.attempts !== w.turns * w.attemptsPerTurn || expected.calls !== w.turns)
    throw new Error(`composition: ${expected.attempts} attempts and ${expected.calls} calls`);
  same('composition: README policy vs cleanTurn', runTurns(w, c.readme), expected);
  same('composition: foreign operator vs cleanTurn', runTurns(w, c.foreign), expected);
  same('composition: four operators', runFourOperators(w), fourOperatorsExpected(w));
  const results = await compare(
    [
      { name: names.fourOps, fn: () => runFourOperators(w) },
      { name: names.readme, fn: () => runTurns(w, c.readme) },
      { name: names.cleanTurn, fn: () => runTurns(w, c.cleanTurn) },
      { name: names.foreign, fn: () => runTurns(w, c.foreign) },
    ],
    { rounds: options.quick ? 4 : 15, iterations: 1, warmup: 3 },
  );
  const m = Object.fromEntries(Object.entries(names).map(([k, n]) => [k, pick(results, n)])) as Record<
    keyof typeof names,
    Measured
  >;
  return {
    workload: w.name,
    events: w.turns * w.eventsPerTurn,
    ...m,
    readmeToFourOps: ratio(m.readme, m.fourOps),
    readmeToCleanTurn: ratio(m.readme, m.cleanTurn),
    foreignToReadme: ratio(m.foreign, m.readme),
  };
}

/** Prints item 1c for the console. */
export function printComposition(r: CompositionResult): void {
  for (const m of [r.fourOps, r.readme, r.cleanTurn, r.foreign]) {
    console.log(
      `  ${m.name.padEnd(46)} ${m.median.toFixed(1).padStart(8)} ms  ${rate((r.events / m.median) * 1000, 'events').padStart(16)}`,
    );
  }
  console.log(
    `  README policy / 4 ops = ${times(r.readmeToFourOps)} (target ≤ 2.5×); / cleanTurn = ${times(r.readmeToCleanTurn)} (target ≤ 1.2×); a foreign operator in the middle: ${times(r.foreignToReadme)} the README policy`,
  );
}

// Run alone: npx tsx bench/composition.ts [--quick]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadPackage } = await import('./build.js');
  const { core } = await loadPackage({ build: !process.argv.includes('--no-build') });
  printComposition(await benchComposition(core, { quick: process.argv.includes('--quick') }));
}
