// Turns a bench run into bench/RESULTS.md: the machine, every comparison with its ratios, and each target of
// the issue with ✓ or ✗ and, for a miss, why.

import type { AdapterRow } from './adapters.js';
import type { CompositionResult } from './composition.js';
import type { EffectKeyResult } from './effectKeys.js';
import { FLOOR_TARGET, type FormatResult } from './endToEnd.js';
import {
  CHUNKS_PER_SECOND,
  fixed,
  type GatewayResult,
  type GatewayRow,
  GOALS,
  keptUp,
  perSecond,
  relayOf,
  rowVerdicts,
} from './gateway.js';
import { bytes, type Machine, type Measured, mark, ms, rate, ratio, times, type Verdict } from './harness.js';
import type { MemoryResult } from './memory.js';
import type { OperatorResult } from './operators.js';
import type { ProfileResult } from './profile.js';
import type { ScalingResult } from './scaling.js';
import type { BookkeepingResult, StageResult } from './stages.js';

/** Everything one run measured; a section is absent when it was not run (`--only`). */
export interface RunResults {
  date: string;
  machine: Machine;
  versions: Record<string, string>;
  loadBefore: number;
  loadAfter: number;
  seconds: number;
  quick: boolean;
  operators?: OperatorResult;
  /** Item 1b: the operator comparison with 10 attempts per turn. */
  operatorsManyAttempts?: OperatorResult;
  /** Item 1c: the README's custom policy, one-by-one pipe calls, against cleanTurn and the four-operator chain. */
  composition?: CompositionResult;
  /** Each operator of the pipeline on its own, on the workloads of items 1 and 1b. */
  stages?: StageResult[];
  /** Item 1d: accumulateTurn against a map that does the same bookkeeping, on the workloads of items 1 and 1b. */
  bookkeeping?: BookkeepingResult[];
  adapters?: AdapterRow[];
  /** Item 2: end to end from bytes, one result per wire format. */
  formats?: FormatResult[];
  scaling?: ScalingResult;
  keys?: EffectKeyResult;
  memory?: MemoryResult;
  /** The CPU profile of the end-to-end case, one per wire format. */
  profile?: ProfileResult[];
  /** Item 6: turnServer holding many live turns, against a plain SSE relay. */
  gateway?: GatewayResult;
}

const MB = 1024 * 1024;

/** The targets of the issue, judged on this run. */
export function verdicts(r: RunResults): Verdict[] {
  const out: Verdict[] = [];
  for (const o of [r.operators, r.operatorsManyAttempts]) {
    if (o === undefined) continue;
    out.push({
      item: o === r.operators ? '1. Operator overhead' : `1b. Operator overhead, ${o.workload}`,
      target: 'full pipeline ≤ 3× the four-operator RxJS chain',
      measured: `${times(o.ratioToFourOps)} (${rate((o.events / o.pipeline.median) * 1000, 'events')} vs ${rate((o.events / o.fourOps.median) * 1000, 'events')})`,
      met: o.ratioToFourOps <= 3,
    });
  }
  if (r.composition) {
    const c = r.composition;
    out.push({
      item: "1c. Composition, the README's custom policy",
      target: 'operators piped one by one ≤ 2.5× the four-operator RxJS chain (10 attempts per turn)',
      measured: `${times(c.readmeToFourOps)} (${rate((c.events / c.readme.median) * 1000, 'events')} vs ${rate((c.events / c.fourOps.median) * 1000, 'events')})`,
      met: c.readmeToFourOps <= 2.5,
    });
    out.push({
      item: "1c. Composition, the README's custom policy",
      target: 'within 1.2× of the fused cleanTurn',
      measured: `${times(c.readmeToCleanTurn)} (cleanTurn → accumulateTurn ${rate((c.events / c.cleanTurn.median) * 1000, 'events')})`,
      met: c.readmeToCleanTurn <= 1.2,
    });
  }
  for (const b of r.bookkeeping ?? []) {
    out.push({
      item: `1d. accumulateTurn, ${b.workload}`,
      target: '≤ 1.3× a map that does the same bookkeeping',
      measured: `${times(b.ratio)} (${ms(b.accumulateTurn.median)} vs ${ms(b.map.median)})`,
      met: b.ratio <= 1.3,
    });
  }
  for (const f of r.formats ?? []) {
    out.push({
      item: `2. End to end, ${f.format}`,
      target: `streamTurn ≤ ${times(FLOOR_TARGET)} the parsing floor`,
      measured: `${times(f.ratioToFloor)} (${rate((f.events / f.streamTurn.median) * 1000, 'chunks')} vs floor ${rate((f.events / f.floor.median) * 1000, 'chunks')})`,
      met: f.ratioToFloor <= FLOOR_TARGET,
      ...(f.ratioToFloor <= FLOOR_TARGET
        ? {}
        : {
            note: `cleanturn adds ${ms(f.streamTurn.median - f.floor.median)} per ${f.events.toLocaleString('en')} events (${((1000 * (f.streamTurn.median - f.floor.median)) / f.events).toFixed(2)} µs each) to a floor of ${((1000 * f.floor.median) / f.events).toFixed(2)} µs per event. The transport (fromSSE with the JSON parse) keeps the floor's pace; the rest is work per event in the stages after it, none dominant (see the breakdown below and the profile of this format): the adapter's neutral event, the copy tagAttempts makes of every event to stamp its attempt (events belong to the caller and are never mutated), the retry and clean layers, and the snapshot accumulateTurn emits per event. That cost is the same for every event, so the smaller a format's events, the larger it is against the floor.`,
          }),
    });
    if (f.sdk === undefined || f.speedupOverSdk === undefined) continue;
    const floorVsSdk = ratio(f.sdk, f.floor);
    out.push({
      item: `2. End to end, ${f.format}`,
      target: `≥ 5× faster than the official SDK's ${f.adapter === 'anthropicMessages' ? 'MessageStream' : 'stream helper'}`,
      measured: `${times(f.speedupOverSdk)} (SDK ${rate((f.events / f.sdk.median) * 1000, 'chunks')})`,
      met: f.speedupOverSdk >= 5,
      ...(f.speedupOverSdk >= 5
        ? {}
        : {
            note:
              floorVsSdk < 5
                ? `Out of reach for any client on this input: the parsing floor itself is only ${times(floorVsSdk)} faster than the SDK here (the SDK does little beyond the same parse), so 5× would require parsing faster than eventsource-parser + JSON.parse.`
                : `The SDK is ${times(floorVsSdk)} slower than the floor; cleanturn keeps ${times(f.speedupOverSdk)} of that.`,
          }),
    });
  }
  if (r.scaling) {
    const s = r.scaling;
    out.push({
      item: '3. Scaling',
      target: 'time grows linearly with argument size (10 KB … 10 MB)',
      measured: `ns/byte at 10 MB ÷ at 100 KB = ${s.growth.toFixed(2)}`,
      met: s.growth <= 2,
    });
  }
  if (r.keys) {
    const k = r.keys;
    out.push({
      item: '4. Effect keys',
      target: '≥ 300 k keys/s in Node',
      measured: `${(k.nodeKeysPerSecond / 1000).toFixed(0)} k keys/s`,
      met: k.nodeKeysPerSecond >= 300_000,
    });
    if ('skipped' in k.browser) {
      out.push({
        item: '4. Effect keys',
        target: 'browser build of the core runs, with no Node built-in',
        measured: 'not measured',
        met: false,
        note: `Chromium was not available: ${k.browser.skipped}.`,
      });
    } else {
      out.push({
        item: '4. Effect keys',
        target: 'browser build of the core runs, with no Node built-in, and gives the same keys',
        measured: `${(k.browser.keysPerSecond / 1000).toFixed(0)} k keys/s in headless Chromium; Node built-ins in the bundle: ${k.browser.nodeBuiltins.length === 0 ? 'none' : k.browser.nodeBuiltins.join(', ')}`,
        met: k.browser.nodeBuiltins.length === 0,
      });
    }
  }
  if (r.memory) {
    const m = r.memory;
    const grew = m.heapAfter - m.heapBefore;
    out.push({
      item: '5. Memory',
      target:
        'after 100,000 retried turns and GC, heap within 5 MB of its start; no abandoned attempt retained',
      measured: `${grew >= 0 ? '+' : ''}${(grew / MB).toFixed(1)} MB; ${m.survivors} of ${m.watched.toLocaleString('en')} watched objects survived GC`,
      met: Math.abs(grew) <= 5 * MB && m.survivors === 0,
    });
  }
  if (r.gateway) out.push(...gatewayVerdicts(r.gateway));
  out.push({
    item: 'Run time',
    target: 'every comparison in one run, under 5 minutes',
    measured: `${(r.seconds / 60).toFixed(1)} min`,
    met: r.seconds < 300,
  });
  return out;
}

const logName = { memory: '`memoryTurnLog`', redis: '`redisTurnLog`' } as const;

/** The rows of one log, by N. */
function logRows(g: GatewayResult, mode: 'memory' | 'redis'): GatewayRow[] {
  return g.rows.filter((row) => row.mode === mode);
}

/**
 * A sentence per N at which a row delivered less than 95% of the offered chunks: which processes fell behind, and
 * whether the relay itself did (then this machine is the limit at that N, not turnServer).
 */
function gatewayLimits(g: GatewayResult): string[] {
  const counts = [...new Set(g.rows.map((row) => row.turns))];
  const out: string[] = [];
  for (const turns of counts) {
    const rows = g.rows.filter((row) => row.turns === turns);
    if (rows.every(keptUp)) continue;
    const relay = relayOf(g.rows, turns);
    const offered = (rows[0] as GatewayRow).offered;
    const each = rows
      .map(
        (row) =>
          `${row.mode === 'relay' ? 'the relay' : logName[row.mode]} ${perSecond(row.delivered)} (${((100 * row.delivered) / row.offered).toFixed(0)}%; gateway process at ${row.cpuPercent.toFixed(0)}% of a core, provider + clients at ${row.harnessCpuPercent.toFixed(0)}%)`,
      )
      .join(', ');
    const relayBehind = relay !== undefined && !keptUp(relay);
    out.push(
      `At ${turns.toLocaleString('en')} turns (${perSecond(offered)} offered) the clients received ${each}. ${relayBehind ? 'The relay itself cannot keep that rate on this machine: the figures of this N measure a saturated machine, and its CPU ratios compare processes that each did what they could.' : 'The relay kept the rate: turnServer is the limit at this N.'}`,
    );
  }
  return out;
}

/** Milliseconds, or `—` when nothing was measured. */
function msOrNone(value: number): string {
  return Number.isFinite(value) ? ms(value) : '—';
}

/**
 * Item 6's targets: CPU per chunk against the relay (judged at the N where the relay kept the offered rate: past
 * it the machine is the limit), p99 at 1,000 turns, heap per live turn (at the largest N that kept the rate).
 */
function gatewayVerdicts(g: GatewayResult): Verdict[] {
  const out: Verdict[] = [];
  const limits = gatewayLimits(g);
  const relayKept = (row: GatewayRow) => {
    const relay = relayOf(g.rows, row.turns);
    return relay !== undefined && keptUp(relay);
  };
  for (const mode of ['memory', 'redis'] as const) {
    const rows = logRows(g, mode);
    if (rows.length === 0) continue;
    const item = `6. Gateway, ${logName[mode]}`;
    const goal = mode === 'memory' ? GOALS.memoryCpu : GOALS.redisCpu;
    const ratioOf = (row: GatewayRow) => rowVerdicts(row, g.rows).cpu?.ratio ?? Number.NaN;
    const judged = rows.some(relayKept) ? rows.filter(relayKept) : rows;
    const met = judged.every((row) => ratioOf(row) <= goal);
    out.push({
      item,
      target: `CPU per delivered chunk ≤ ${goal}× the plain SSE relay's`,
      measured: rows
        .map(
          (row) =>
            `${fixed(ratioOf(row), 2)}× at ${row.turns.toLocaleString('en')} turns (${fixed(row.cpuMicrosPerChunk, 1)} vs ${fixed(relayOf(g.rows, row.turns)?.cpuMicrosPerChunk ?? Number.NaN, 1)} µs${relayKept(row) ? '' : '; relay saturated'})`,
        )
        .join(', '),
      met,
      ...(met && limits.length === 0 ? {} : { note: [...limits, ...(met ? [] : [cpuNote(mode)])].join(' ') }),
    });
    const at = rows.find((row) => row.turns === GOALS.p99Turns);
    if (at !== undefined) {
      out.push({
        item,
        target: `p99 added latency ≤ ${GOALS.p99Ms} ms at ${GOALS.p99Turns.toLocaleString('en')} live turns`,
        measured: `${msOrNone(at.p99)} (p50 ${msOrNone(at.p50)}; relay p99 ${msOrNone(relayOf(g.rows, at.turns)?.p99 ?? Number.NaN)}${relayKept(at) ? '' : ', relay saturated'})`,
        met: at.p99 <= GOALS.p99Ms,
      });
    }
    const kept = rows.filter(keptUp);
    const pool = kept.length > 0 ? kept : rows;
    const largest = pool[pool.length - 1] as GatewayRow;
    out.push({
      item,
      target: `≤ ${GOALS.bytesPerTurn / 1024} KiB of heap per live turn`,
      measured: `${bytes(largest.heapPerTurn)} heap (${bytes(largest.rssPerTurn)} RSS) at ${largest.turns.toLocaleString('en')} turns, ${largest.chunksAtMemory.toFixed(0)} chunks into each${keptUp(largest) ? '' : ' (no N kept the offered rate: its turns hold fewer chunks)'}`,
      met: largest.heapPerTurn <= GOALS.bytesPerTurn,
      ...(largest.heapPerTurn <= GOALS.bytesPerTurn ? {} : { note: memoryNote(largest) }),
    });
  }
  return out;
}

/** Where a gateway's CPU per chunk goes beyond the relay's, from CPU profiles of the measured window (`--cpu-prof=DIR`). */
function cpuNote(mode: 'memory' | 'redis'): string {
  const common =
    "The relay forwards bytes; the gateway decodes every chunk (eventsource-parser, `JSON.parse`, the adapter), runs the turn's pipeline and encodes an SSE event per chunk for its reader. Profiles of the measured window: writes to the client sockets about a third of the busy time (the relay writes once per chunk too), GC 10%, the SSE and JSON decoding about 10%, undici's `fetch` and its web streams about 7%, the log's append and delivery 4%, `toSSE` 1.4%.";
  return mode === 'memory'
    ? common
    : `${common} With Redis, a further 30% is ioredis writing commands: every entry is one append (a script, sent by its SHA-1) and one \`XREAD\` per reader on the reader's own connection, so that a reader on any instance reads the same log.`;
}

/**
 * Where a gateway's heap per live turn goes: the log's share as this run measured it, the rest as heap snapshots of
 * the gateway child attribute it (`npx tsx bench/gateway.ts --heap-snapshot=DIR`, 100 live turns, each owner's
 * retained size counted once).
 */
function memoryNote(row: GatewayRow): string {
  const log =
    row.logPerTurn === undefined
      ? "The Redis log keeps the entries in redis-server, not in the gateway; in their place each turn holds its reader's own ioredis connection and three sockets (about 13 KB) and the pending `XREAD`, append and stop check (about 21 KB of promises and closures)."
      : `Of it, the log's entries are about ${bytes(row.logPerTurn)} (${fixed(row.logPerEntry ?? Number.NaN, 0)} B per entry): the events kept so that a reader that reconnects with \`Last-Event-ID\` reads on, which is the log's guarantee.`;
  return `${log} The rest is held per turn, not per chunk, by what a live turn is: heap snapshots of the gateway (100 live turns) attribute about 28 KB to the provider request through \`fetch\` (undici's request, the response body's web streams, its pool client), 12 KB to the RxJS subscriber chains of the turn and of its reader, 8 KB to the decoder's parts kept for the next request (\`finish.output\`: the text parts and the calls as sent), 6 KB to timers (the stall and quiet checks, the lease), 5 KB to the two sockets and 3 KB to the HTTP request and response objects. A provider request over \`node:http\` in place of \`fetch\` would remove most of the first item; the others are the turn's own state.`;
}

/** Item 6 in RESULTS.md: a table per log, beside the relay of the same N. */
function gatewayMarkdown(g: GatewayResult): string[] {
  const parts: string[] = [];
  parts.push('## 6. Gateway: turnServer holding many live turns');
  parts.push(
    `N live turns, each streamed by a loopback provider (OpenAI Chat Completions SSE, ${CHUNKS_PER_SECOND} chunks/s for ${g.turnSeconds} s, then the finish and \`[DONE]\`) and read by a client over a real socket (\`GET /turns/<id>\`, one keep-alive connection per turn); the N turns start within the first second. The gateway runs in a process of its own (\`bench/gatewayChild.ts\`): \`turnServer\` over \`node:http\`, each turn run by \`streamTurn({ adapter: openaiChat() })\` and written with \`toSSE\`, with \`memoryTurnLog()\` or \`redisTurnLog()\` (a local redis-server without persistence, its CPU counted apart); the floor is a plain SSE relay in the same kind of process that pipes the provider's bytes through \`node:http\` unparsed. The provider and the clients share this process. CPU is the gateway's user + system time over seconds ${g.window[0]}–${g.window[1]} ÷ the chunks the clients received in that window; the added latency is from the provider's write (a timestamp in the chunk's text) to the client's read of the delivered event; memory per live turn is the gateway's heap (and RSS) at second ${g.window[1]} minus before the turns started, both after GC, ÷ N (a turn that keeps the rate is then about ${(g.window[1] * CHUNKS_PER_SECOND).toFixed(0)} chunks in: its memory log holds that many entries). Where a row delivered less than 95% of the offered chunks, the sentence under the tables says which processes fell behind.`,
  );
  if (g.cappedAt !== undefined)
    parts.push(`\`ulimit -n\` was ${g.fdLimit}: N was capped at ${g.cappedAt.toLocaleString('en')}.`);
  if (g.redisSkipped !== undefined) parts.push(`The Redis rows were skipped: ${g.redisSkipped}.`);
  for (const mode of ['memory', 'redis'] as const) {
    const rows = logRows(g, mode);
    if (rows.length === 0) continue;
    parts.push(`**turnServer + ${logName[mode]}**`);
    parts.push(
      table(
        [
          'N',
          'Offered',
          'Delivered (relay)',
          'CPU µs/chunk',
          'Relay µs/chunk',
          '÷ relay',
          ...(mode === 'redis' ? ['redis-server µs/chunk'] : []),
          'Gateway CPU',
          'Added latency p50 / p99 (relay)',
          'Per live turn: heap, RSS (relay heap)',
          'Complete turns',
          'Verdicts',
        ],
        rows.map((row) => {
          const relay = relayOf(g.rows, row.turns);
          const v = rowVerdicts(row, g.rows);
          const verdicts = [
            v.cpu ? `CPU ${mark(v.cpu.met)}` : '',
            v.p99 ? `p99 ${mark(v.p99.met)}` : '',
            `memory ${mark(v.memory.met)}`,
          ].filter((x) => x !== '');
          return [
            row.turns.toLocaleString('en'),
            perSecond(row.offered),
            `${perSecond(row.delivered)} (${relay ? perSecond(relay.delivered) : '?'})`,
            fixed(row.cpuMicrosPerChunk, 1),
            relay ? fixed(relay.cpuMicrosPerChunk, 1) : '?',
            v.cpu ? `${fixed(v.cpu.ratio, 2)}×` : '?',
            ...(mode === 'redis'
              ? [row.redisMicrosPerChunk === undefined ? '?' : fixed(row.redisMicrosPerChunk, 1)]
              : []),
            `${row.cpuPercent.toFixed(0)}% of a core (provider + clients ${row.harnessCpuPercent.toFixed(0)}%)`,
            `${msOrNone(row.p50)} / ${msOrNone(row.p99)} (${relay ? `${msOrNone(relay.p50)} / ${msOrNone(relay.p99)}` : '?'})`,
            `${bytes(row.heapPerTurn)}, ${bytes(row.rssPerTurn)} (${relay ? bytes(relay.heapPerTurn) : '?'}), ${row.chunksAtMemory.toFixed(0)} chunks in`,
            `${row.complete.toLocaleString('en')} of ${row.turns.toLocaleString('en')}${row.logErrors > 0 ? `, ${row.logErrors} log errors` : ''}${row.requestsPerTurn > 1.001 ? `, ${row.requestsPerTurn.toFixed(2)} provider requests per turn` : ''}`,
            verdicts.join(', '),
          ];
        }),
      ),
    );
  }
  parts.push(
    `Goals: CPU per chunk ≤ ${GOALS.memoryCpu}× the relay's with the memory log, ≤ ${GOALS.redisCpu}× with Redis; p99 added latency ≤ ${GOALS.p99Ms} ms at ${GOALS.p99Turns.toLocaleString('en')} turns; ≤ ${GOALS.bytesPerTurn / 1024} KiB of heap per live turn.`,
  );
  const limits = gatewayLimits(g);
  if (limits.length > 0) parts.push(limits.join(' '));
  return parts;
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function resultsMarkdown(r: RunResults): string {
  const v = verdicts(r);
  const m = r.machine;
  const parts: string[] = [];
  parts.push('# cleanturn benchmarks');
  parts.push(
    `Generated by \`npm run ${process.env.npm_lifecycle_event ?? 'bench'}\` on ${r.date}${r.quick ? ' (quick mode: fewer runs)' : ''}. Every comparison ran side by side in one process (memory and the CPU profile in child processes with \`--expose-gc\` / \`--cpu-prof\`); each round runs every variant once (tinybench, after warm-up), back to back and in rotated order; times are medians over the rounds, and ratios are medians of the per-round ratios, so that a change of machine load during the run affects both sides of a ratio alike.`,
  );
  parts.push(
    table(
      ['', ''],
      [
        ['Machine', `${m.cpu}, ${m.cores} cores, ${m.memory}, ${m.os}`],
        ['Runtime', `Node ${m.node} (V8 ${m.v8})`],
        [
          'Packages',
          Object.entries(r.versions)
            .map(([k, ver]) => `${k} ${ver}`)
            .join(', '),
        ],
        [
          'Load average (1 min)',
          `${r.loadBefore.toFixed(2)} at the start, ${r.loadAfter.toFixed(2)} at the end`,
        ],
        ['Duration', `${r.seconds.toFixed(0)} s`],
      ],
    ),
  );

  parts.push('## Targets');
  parts.push(
    table(
      ['', 'Target', 'Measured', ''],
      v.map((x) => [x.item, x.target, x.measured, mark(x.met)]),
    ),
  );
  const misses = v.filter((x) => x.note !== undefined);
  if (misses.length > 0) {
    parts.push(misses.map((x) => `- **${mark(x.met)} ${x.item} — ${x.target}.** ${x.note}`).join('\n'));
  }

  for (const o of [r.operators, r.operatorsManyAttempts]) {
    if (o === undefined) continue;
    const row = (label: string, x: Measured) => [
      label,
      ms(x.median),
      `${ms(x.min)} – ${ms(x.max)}`,
      rate((o.events / x.median) * 1000, 'events'),
      times(ratio(x, o.fourOps)),
    ];
    if (o === r.operators) {
      parts.push('## 1. Operator overhead');
      parts.push(
        `${o.events.toLocaleString('en')} synthetic events: ${o.turns.toLocaleString('en')} turns × ${o.eventsPerTurn} events, each turn its own subscription, each retried mid-way (a tool call in four fragments per attempt, usage, a finish). All variants process the same events; the for-loop and the pipeline must reach the same text, calls and effect keys.`,
      );
    } else {
      parts.push(`## 1b. Operator overhead, ${o.workload}`);
      parts.push(
        `${o.events.toLocaleString('en')} synthetic events: ${o.turns.toLocaleString('en')} turns × ${o.attemptsPerTurn} attempts × ${o.eventsPerTurn / o.attemptsPerTurn} events, each turn its own subscription. Every attempt opens with usage and streams text and a tool call in four fragments; all but the last are cut mid-way by a retry, the last one finishes. Same variants and checks as item 1; the for-loop parses the call of every attempt, as the pipeline does, and discards those of the cut ones.`,
      );
    }
    parts.push(
      table(
        ['Variant', 'Median', 'Range', 'Throughput', '÷ four-operator chain'],
        [
          row('plain for-loop, same bookkeeping (mutable state)', o.loop),
          row('RxJS `map → filter → scan → map` (state mutated)', o.fourOps),
          row('RxJS four operators, `scan` copying its state object per event', o.fourOpsCopying),
          row(
            '**cleanturn** `assembleToolCalls → tagAttempts → resetOnRetry → bufferUntilFinish → dedupeByEffectKey → accumulateTurn`',
            o.pipeline,
          ),
        ],
      ),
    );
    parts.push(
      `pipeline ÷ four-operator chain = **${times(o.ratioToFourOps)}** (target ≤ 3×); pipeline ÷ for-loop = **${times(o.ratioToLoop)}**.`,
    );
  }

  if (r.composition) {
    const c = r.composition;
    const row = (label: string, x: Measured) => [
      label,
      ms(x.median),
      `${ms(x.min)} – ${ms(x.max)}`,
      rate((c.events / x.median) * 1000, 'events'),
      times(ratio(x, c.fourOps)),
    ];
    parts.push("## 1c. Composition: the README's custom policy");
    parts.push(
      `${c.events.toLocaleString('en')} synthetic events (${c.workload}): 10,000 turns × 10 attempts × 10 events, each turn its own subscription; every attempt streams usage, text and a whole tool call, all but the last are cut by a retry. The policy is the README's code block itself, read from README.md, compiled and loaded against the benchmark build: \`tagAttempts → resetOnRetry → bufferUntilFinish → dedupeByEffectKey → accumulateTurn\` in three \`pipe\` calls, whose adjacent stages fuse into one subscriber. Beside it: \`cleanTurn\` (the same rules as one operator), and the same policy with a \`filter\` of the user's own between \`resetOnRetry\` and \`bufferUntilFinish\`, where the fusion stops. All three must reach the same turn states.`,
    );
    parts.push(
      table(
        ['Variant', 'Median', 'Range', 'Throughput', '÷ four-operator chain'],
        [
          row('RxJS `map → filter → scan → map` (state mutated)', c.fourOps),
          row("**cleanturn**, the README's policy in three `pipe` calls", c.readme),
          row('cleanturn `cleanTurn → accumulateTurn`', c.cleanTurn),
          row('cleanturn, the policy with a `filter` of its own in the middle', c.foreign),
        ],
      ),
    );
    parts.push(
      `README policy ÷ four-operator chain = **${times(c.readmeToFourOps)}** (target ≤ 2.5×); ÷ \`cleanTurn\` = **${times(c.readmeToCleanTurn)}** (target ≤ 1.2×); with a foreign operator in the middle, ${times(c.foreignToReadme)} the README policy.`,
    );
  }

  if (r.bookkeeping) {
    parts.push('## 1d. accumulateTurn against a map with the same bookkeeping');
    parts.push(
      "Both get, for each turn, what `accumulateTurn` receives inside the pipeline of items 1 and 1b, one subscription per turn. The map (its state in a `defer`) keeps the live attempt's text, reasoning, calls, usage and finish and a record per attempt, and builds a new snapshot per event, as `accumulateTurn` does; both must emit equal snapshots.",
    );
    parts.push(
      table(
        ['Workload', '`accumulateTurn`', 'map, same bookkeeping', 'ratio'],
        r.bookkeeping.map((b) => [b.workload, ms(b.accumulateTurn.median), ms(b.map.median), times(b.ratio)]),
      ),
    );
  }

  if (r.stages) {
    parts.push('## Per-stage cost');
    parts.push(
      'Each operator of the pipeline alone (`from(events) → operator → subscriber`, each turn its own subscription), fed exactly what it receives inside the pipeline (computed beforehand), on the workloads of items 1 and 1b. "Own" is the stage minus the bare source, paired round by round, per event of the workload; an RxJS `map` is the yardstick of one plain operator, and "÷ source → map" (the time of the stage over that of the yardstick, paired by round) is the figure least moved by the load of the machine.',
    );
    for (const st of r.stages) {
      parts.push(`**${st.workload}** (${st.events.toLocaleString('en')} events)`);
      parts.push(
        table(
          ['Stage', 'Events in', 'Events out', 'Median', 'Own', 'Own ns/event', '÷ source → map'],
          st.rows.map((row, i) => [
            i < 2 ? row.name : `\`${row.name}\``,
            row.eventsIn.toLocaleString('en'),
            row.eventsOut.toLocaleString('en'),
            ms(row.measured.median),
            i === 0 ? '' : ms(row.ownMs),
            i === 0 ? '' : row.ownNsPerEvent.toFixed(1),
            times(row.toYardstick),
          ]),
        ),
      );
    }
  }

  for (const f of r.formats ?? []) {
    const row = (label: string, x: Measured) => [
      label,
      ms(x.median),
      `${ms(x.min)} – ${ms(x.max)}`,
      rate((f.events / x.median) * 1000, 'chunks'),
      times(ratio(x, f.floor)),
    ];
    parts.push(`## 2. End to end from bytes: ${f.format}`);
    parts.push(
      `${f.events.toLocaleString('en')} SSE events (${bytes(f.bytes)}) in the format's wire shape: text deltas and one tool call in about 1,000 argument fragments, served by a custom \`fetch\` as a \`ReadableStream\` of 16 KiB pieces, to the final clean turn. The floor is eventsource-parser + \`JSON.parse\` + the concatenation this format needs (text deltas, the call's id and name, its argument pieces), nothing else. Every variant must reach the same text and the same call (id, name, parsed arguments).`,
    );
    parts.push(
      table(
        ['Variant', 'Median', 'Range', 'Throughput', '÷ floor'],
        [
          row('floor: eventsource-parser + `JSON.parse` + string concatenation', f.floor),
          row(
            `**cleanturn** \`streamTurn({ adapter: ${f.adapter}(), fetch })\` → \`accumulateTurn()\``,
            f.streamTurn,
          ),
          row(
            'cleanturn `fromSSE → sseJson → adapter → assembleToolCalls → cleanTurn → accumulateTurn` (no retry layer)',
            f.composed,
          ),
          ...(f.sdk === undefined ? [] : [row(f.sdkLabel ?? 'official SDK', f.sdk)]),
        ],
      ),
    );
    parts.push(
      `streamTurn is **${times(f.ratioToFloor)}** the floor (target ≤ ${times(FLOOR_TARGET)})${f.speedupOverSdk === undefined ? '' : ` and **${times(f.speedupOverSdk)}** faster than the SDK helper`}.`,
    );
    if (f.breakdown.length > 0) {
      const base = f.breakdown[0] as Measured;
      parts.push(
        'Where the time goes: the stages of streamTurn added one at a time, each run to the end of the body, side by side with the floor (medians of this separate comparison; stages before accumulateTurn do not build the text, the floor does):',
      );
      parts.push(
        table(
          ['Stages', 'Median', '÷ floor', 'Step'],
          f.breakdown.map((m, i) => {
            const previous = i <= 1 ? undefined : f.breakdown[i - 1];
            return [
              i === 0 ? 'floor' : `\`${m.name}\``,
              ms(m.median),
              times(ratio(m, base)),
              previous === undefined
                ? ''
                : `${m.median - previous.median >= 0 ? '+' : ''}${ms(m.median - previous.median)}`,
            ];
          }),
        ),
      );
    }
  }

  if (r.scaling) {
    parts.push('## 3. Scaling with argument size');
    parts.push(
      'One tool call whose JSON arguments arrive in 10-byte fragments, through the full clean pipeline (join, parse, effect key, snapshot). Linear time keeps ns/byte flat; a quadratic join would multiply it by 10 at every step.',
    );
    parts.push(
      table(
        ['Arguments', 'Fragments', 'Median', 'ns per byte'],
        r.scaling.points.map((p) => [
          bytes(p.bytes),
          p.fragments.toLocaleString('en'),
          ms(p.median),
          p.nsPerByte.toFixed(1),
        ]),
      ),
    );
    parts.push(
      `ns/byte at 10 MB ÷ ns/byte at 100 KB = **${r.scaling.growth.toFixed(2)}** (10 KB is dominated by the fixed cost of a subscription).`,
    );
  }

  if (r.keys) {
    const k = r.keys;
    parts.push('## 4. Effect keys');
    parts.push(
      '`effectKey(turnId, { name, args })` for a refund call (canonical JSON + SHA-256, first 16 hex characters). In Node the core uses the native `crypto.hash`, looked up at run time with `process.getBuiltinModule` (no import: browser bundles never see `node:crypto`); elsewhere `@noble/hashes`. Both give the same keys (tested on many inputs).',
    );
    const rows: string[][] = [
      ['Node, native SHA-256 (what Node users get)', `${(k.nodeKeysPerSecond / 1000).toFixed(0)} k keys/s`],
      [
        'Node, portable SHA-256 (@noble/hashes, what browsers run)',
        `${(k.nodePortableKeysPerSecond / 1000).toFixed(0)} k keys/s`,
      ],
    ];
    if ('skipped' in k.browser) rows.push(['Headless Chromium', `skipped: ${k.browser.skipped}`]);
    else {
      rows.push([
        `Headless Chromium, browser bundle of the core (${bytes(k.browser.bundleBytes)} minified, rxjs included)`,
        `${(k.browser.keysPerSecond / 1000).toFixed(0)} k keys/s, same keys as Node`,
      ]);
    }
    parts.push(table(['Runtime', 'Throughput'], rows));
  }

  if (r.memory) {
    const mm = r.memory;
    parts.push('## 5. Memory');
    parts.push(
      `${mm.turns.toLocaleString('en')} turns with 0–3 retries each (${mm.attempts.toLocaleString('en')} attempts, ${mm.events.toLocaleString('en')} events, new objects for every turn) through \`assembleToolCalls → cleanTurn → accumulateTurn\` in one process (${mm.seconds.toFixed(1)} s). WeakRefs watch the input events of abandoned attempts and the final snapshots of every 100th turn.`,
    );
    parts.push(
      table(
        ['', 'Heap used'],
        [
          ['Before (after warm-up and GC)', bytes(mm.heapBefore)],
          ['Peak during the run (sampled every 250 turns)', bytes(mm.heapPeak)],
          [
            'After the run and GC',
            `${bytes(mm.heapAfter)} (${mm.heapAfter >= mm.heapBefore ? '+' : ''}${bytes(mm.heapAfter - mm.heapBefore)})`,
          ],
          [
            'Watched objects still reachable after GC',
            `${mm.survivors} of ${mm.watched.toLocaleString('en')}`,
          ],
          [
            `${mm.liveTurns.toLocaleString('en')} turns held open mid-stream (attempt 1 abandoned, attempt 2 half streamed)`,
            `${bytes(mm.liveHeap)}: **${bytes(mm.bytesPerLiveTurn)} per live turn**`,
          ],
          ['After closing them, after GC', bytes(mm.heapAfterLive)],
        ],
      ),
    );
  }

  if (r.gateway) parts.push(...gatewayMarkdown(r.gateway));

  for (const p of r.profile ?? []) {
    parts.push(`## CPU profile of the end-to-end case: ${p.format}`);
    parts.push(
      `\`node --cpu-prof\` on the ${p.format} case through \`streamTurn\` (${p.runs} runs, ${p.samples.toLocaleString('en')} samples inside the workload). Self time per function; JSON.parse has no frame of its own and is counted in the function that calls it.`,
    );
    parts.push(
      table(
        ['Self time', 'Function', 'Owner'],
        p.rows.map((row) => [`${row.percent.toFixed(1)}%`, `\`${row.fn.replace(/\|/g, '\\|')}\``, row.owner]),
      ),
    );
    parts.push(
      `cleanturn's own code, JSON.parse excluded: **${p.oursPercent.toFixed(1)}%** of the samples. The rest is the parse every client pays (JSON.parse, eventsource-parser, UTF-8 decoding), RxJS's subscriber chain and GC.`,
    );
  }

  parts.push('## Reproduce');
  parts.push(
    "```sh\nnpm run bench                 # everything, writes bench/RESULTS.md\nnpm run bench -- --quick      # fewer runs\nnpm run bench -- --only=operators,compose,stages,e2e,scaling,keys,memory,profile,gateway\nnpm run bench -- --src=../other-checkout --no-write   # measure another checkout's src/ as a baseline\nnpm run bench:node24          # the same bench under Node 24 (fetched from npm), writes bench/RESULTS-node24.md\nnpm run bench:node24:quick    # the same in quick mode\n```\n" +
      "The benchmarks build the package with the project's tsup config into `node_modules/.cache/cleanturn-bench/` and measure that build. Close other work on the machine for stable numbers: the load average above tells how busy it was.",
  );
  return `${parts.join('\n\n')}\n`;
}

const otherStart = '<!-- other-node:start -->';
const otherEnd = '<!-- other-node:end -->';

/** The rows of the Targets table of a results file: item, target, measured, mark. */
function targetRows(markdown: string): string[][] {
  const section = markdown.split('\n## Targets\n')[1]?.split('\n## ')[0] ?? '';
  return section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('|  | Target') && !l.startsWith('| ---'))
    .map((l) =>
      l
        .slice(2, -2)
        .split(' | ')
        .map((c) => c.trim()),
    );
}

/** `Node v24.22.3` from the Runtime row of a results file. */
function runtimeOf(markdown: string): string {
  return /^\| Runtime \| (Node \S+)/m.exec(markdown)?.[1] ?? 'Node ?';
}

/**
 * `main` (bench/RESULTS.md) with a section that puts the targets of another run of the bench, under another
 * Node (`file`, e.g. RESULTS-node24.md, its markdown `other`), beside its own; the section of an earlier call is
 * replaced. It goes after the Targets section.
 */
export function withOtherNode(main: string, other: string, file: string): string {
  const rows = targetRows(main);
  const theirs = targetRows(other);
  const key = (row: string[]) => `${row[0]} — ${row[1]}`;
  const mine = new Map(rows.map((row) => [key(row), row]));
  const keys = [...rows.map(key), ...theirs.map(key).filter((k) => !mine.has(k))];
  const byKey = new Map(theirs.map((row) => [key(row), row]));
  const cell = (row: string[] | undefined) => (row === undefined ? 'not run' : `${row[2]} ${row[3]}`);
  const generated = /^Generated by `([^`]+)` on (\S+?)( \(quick mode: fewer runs\))?\./m.exec(other);
  const load = /^\| Load average \(1 min\) \| ([^|]+) \|/m.exec(other)?.[1];
  const section = [
    otherStart,
    `## ${runtimeOf(other)}`,
    `The same bench under ${runtimeOf(other)}: [${file}](${file})${generated ? `, from \`${generated[1]}\` on ${generated[2]}${generated[3] ?? ''}` : ''}${load ? `; load average ${load}` : ''}. Its targets beside this run's (each ratio is measured within one run, both sides under the same Node):`,
    table(
      ['', 'Target', runtimeOf(main), runtimeOf(other)],
      keys.map((k) => {
        const row = mine.get(k) ?? byKey.get(k) ?? [k, ''];
        return [row[0] ?? '', row[1] ?? '', cell(mine.get(k)), cell(byKey.get(k))];
      }),
    ),
    otherEnd,
  ].join('\n\n');
  const at = main.indexOf(otherStart);
  const without =
    at === -1
      ? main
      : main.slice(0, at) + main.slice(main.indexOf(otherEnd, at) + otherEnd.length).replace(/^\n+/, '');
  const targets = without.indexOf('\n## Targets\n');
  const next = targets === -1 ? -1 : without.indexOf('\n## ', targets + 1);
  if (next === -1) return `${without.trimEnd()}\n\n${section}\n`;
  return `${without.slice(0, next + 1)}${section}\n\n${without.slice(next + 1)}`;
}
