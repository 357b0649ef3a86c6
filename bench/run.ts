// npm run bench: every comparison of the performance issue in one run, printed as ratios, written to
// bench/RESULTS.md. Options: --quick (fewer runs), --only=operators,compose,stages,adapters,e2e,scaling,keys,memory,gateway,profile,
// --src=<checkout> (measure another checkout's src/ as a baseline), --no-write (do not touch RESULTS.md),
// --gateway-turns=100,1000 (the gateway's live-turn counts instead of 100, 1,000 and 5,000),
// --out=RESULTS-node24.md (write that file of bench/ instead, also with --quick, and put its targets beside
// RESULTS.md's in a section of RESULTS.md: how `npm run bench:node24` reports another Node).

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchAdapters, printAdapters } from './adapters.js';
import { loadPackage } from './build.js';
import { benchComposition, printComposition } from './composition.js';
import { benchEffectKeys, printEffectKeys } from './effectKeys.js';
import { benchFormats, printFormat } from './endToEnd.js';
import { benchGateway, printGateway } from './gateway.js';
import { load, machine, mark, packageVersion } from './harness.js';
import { printMemory, runMemory } from './memory.js';
import { benchOperators, manyAttemptWorkload, operatorWorkload, printOperators } from './operators.js';
import { printProfile, runProfiles } from './profile.js';
import { type RunResults, resultsMarkdown, verdicts, withOtherNode } from './results.js';
import { benchScaling, printScaling } from './scaling.js';
import { benchAllStages, benchBookkeeping, printBookkeeping, printStages } from './stages.js';

// The harness collects garbage between variants: make sure this process can (npx tsx bench/run.ts works too).
if ((globalThis as { gc?: unknown }).gc === undefined) {
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', self, ...process.argv.slice(2)],
    {
      stdio: 'inherit',
    },
  );
  process.exit(child.status ?? 1);
}

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const src = argv.find((a) => a.startsWith('--src='))?.slice('--src='.length);
const out = argv.find((a) => a.startsWith('--out='))?.slice('--out='.length);
const gatewayTurns = argv
  .find((a) => a.startsWith('--gateway-turns='))
  ?.slice('--gateway-turns='.length)
  .split(',')
  .map(Number);
const write =
  !argv.includes('--no-write') &&
  only === undefined &&
  src === undefined &&
  gatewayTurns === undefined &&
  (!quick || out !== undefined);
const wanted = (section: string) => only === undefined || only.includes(section);

const started = performance.now();
const results: RunResults = {
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  machine: machine(),
  versions: Object.fromEntries(
    ['rxjs', 'eventsource-parser', '@noble/hashes', 'openai', '@anthropic-ai/sdk', 'tinybench'].map(
      (name) => [name, packageVersion(name)],
    ),
  ),
  loadBefore: load(),
  loadAfter: 0,
  seconds: 0,
  quick,
};
const m = results.machine;
console.log(`cleanturn benchmarks — Node ${m.node}, ${m.cpu} × ${m.cores}, ${m.memory}, ${m.os}`);
console.log(
  `load average ${results.loadBefore.toFixed(2)}${src === undefined ? '' : `; measuring ${src}/src`}\n`,
);

const pkg = await loadPackage(src === undefined ? {} : { root: src });

if (wanted('operators')) {
  console.log('1. Operator overhead (1,000,000 events: 10,000 turns × 100, each retried mid-way)');
  results.operators = await benchOperators(pkg.core, { quick });
  printOperators(results.operators);
  console.log(
    '\n1b. Operator overhead, many attempts (1,000,000 events: 10,000 turns × 10 attempts × 10 events, 9 attempts of each turn cut by a retry)',
  );
  results.operatorsManyAttempts = await benchOperators(pkg.core, { quick, workload: manyAttemptWorkload() });
  printOperators(results.operatorsManyAttempts);
}
if (wanted('compose')) {
  console.log(
    "\n1c. Composition (the README's custom policy, 1,000,000 events: 10,000 turns × 10 attempts × 10 events, whole calls)",
  );
  results.composition = await benchComposition(pkg.core, { quick });
  printComposition(results.composition);
}
if (wanted('stages')) {
  console.log(
    '\nPer-stage cost (source → one operator, each turn its own subscription, workloads of 1 and 1b)',
  );
  results.stages = await benchAllStages(pkg.core, { quick });
  for (const r of results.stages) printStages(r);
  console.log('\n1d. accumulateTurn against a map with the same bookkeeping (its input inside the pipeline)');
  results.bookkeeping = [
    await benchBookkeeping(pkg.core, operatorWorkload(), { quick }),
    await benchBookkeeping(pkg.core, manyAttemptWorkload(), { quick }),
  ];
  for (const r of results.bookkeeping) printBookkeeping(r);
}
if (wanted('adapters')) {
  console.log(
    '\nPer-adapter cost (100,000 parsed payloads: 1,000 turns × 100, each turn its own subscription)',
  );
  results.adapters = await benchAdapters(pkg.providers, { quick });
  printAdapters(results.adapters);
}
if (wanted('e2e')) {
  console.log(
    '\n2. End to end from bytes (100,000 SSE events in 16 KiB pieces, to the final clean turn; five wire formats)',
  );
  results.formats = await benchFormats(pkg, { quick, onResult: printFormat });
}
if (wanted('scaling')) {
  console.log('\n3. Scaling (one tool call, 10-byte fragments)');
  results.scaling = await benchScaling(pkg.core, { quick });
  printScaling(results.scaling);
}
if (wanted('keys')) {
  console.log('\n4. Effect keys');
  results.keys = await benchEffectKeys(pkg.core, { quick });
  printEffectKeys(results.keys);
}
if (wanted('memory')) {
  console.log('\n5. Memory (child process, --expose-gc)');
  results.memory = await runMemory();
  printMemory(results.memory);
}
if (wanted('gateway')) {
  console.log(
    '\n6. Gateway (turnServer holding N live turns at 30 chunks/s each, against a plain SSE relay; three processes)',
  );
  results.gateway = await benchGateway({
    quick,
    ...(gatewayTurns === undefined ? {} : { turns: gatewayTurns }),
    ...(src === undefined ? {} : { root: src }),
  });
  printGateway(results.gateway);
}
if (wanted('profile')) {
  console.log('\nCPU profile of the end-to-end case, per wire format (child processes, --cpu-prof)');
  results.profile = await runProfiles({ onResult: printProfile });
}

results.seconds = (performance.now() - started) / 1000;
results.loadAfter = load();
console.log(`\nTargets (${results.seconds.toFixed(0)} s, load average ${results.loadAfter.toFixed(2)}):`);
for (const v of verdicts(results)) console.log(`  ${mark(v.met)} ${v.item}: ${v.target} — ${v.measured}`);
if (write) {
  const main = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
  const markdown = resultsMarkdown(results);
  if (out === undefined) {
    // Another Node's run written earlier (npm run bench:node24) keeps its section, beside the new figures.
    const node24 = fileURLToPath(new URL('./RESULTS-node24.md', import.meta.url));
    const other = existsSync(node24) ? readFileSync(node24, 'utf8') : undefined;
    writeFileSync(main, other === undefined ? markdown : withOtherNode(markdown, other, 'RESULTS-node24.md'));
    console.log(`\nwrote ${main}`);
  } else {
    const file = fileURLToPath(new URL(`./${out}`, import.meta.url));
    writeFileSync(file, markdown);
    console.log(`\nwrote ${file}`);
    if (existsSync(main)) {
      writeFileSync(main, withOtherNode(readFileSync(main, 'utf8'), markdown, out));
      console.log(`wrote its targets beside those of ${main}`);
    }
  }
} else {
  console.log(
    '\nbench/RESULTS.md not written (a full run without --quick, --only or --src writes it; --out=FILE writes FILE)',
  );
}
