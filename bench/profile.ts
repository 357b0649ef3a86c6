// The CPU profile of the end-to-end case: `node --cpu-prof` on each wire format's body through streamTurn to the
// final turn, one child process per format; the parent keeps the samples taken while the workload ran and sums
// self time per function.

import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { outDir } from './build.js';
import { report, runChild } from './child.js';
import { FORMAT_NAMES, formatCase } from './endToEnd.js';
import { same } from './harness.js';

/** One row of the profile summary. */
export interface ProfileRow {
  /** Share of the workload's samples, in percent. */
  percent: number;
  fn: string;
  /** Where it lives: cleanturn (file), eventsource-parser, rxjs, node, V8… */
  owner: string;
  location: string;
}

export interface ProfileResult {
  /** The wire format profiled (a name of the end-to-end bench). */
  format: string;
  runs: number;
  msPerRun: number;
  samples: number;
  rows: ProfileRow[];
  /** Share of samples in cleanturn's own code, JSON.parse excluded (it is the floor's too). */
  oursPercent: number;
  /** Where the .cpuprofile was kept, to open in Chrome DevTools. */
  file: string;
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The workload window the child reports, in µs of the monotonic clock the profile uses. */
interface Window {
  start: number;
  end: number;
  runs: number;
  msPerRun: number;
}

const RUNS = 15;

/** Child: run one format's end-to-end case RUNS times under --cpu-prof, and report when the workload ran. */
async function child(format: string): Promise<void> {
  const { loadPackage } = await import('./build.js');
  const pkg = await loadPackage({ build: false });
  const { body, run } = formatCase(pkg, format);
  // The warm-up runs check the whole turn; the profiled ones only its text, to keep the check out of the samples.
  for (let i = 0; i < 3; i++) same(`profile: ${format}`, await run(), body.expected);
  const now = () => Number(process.hrtime.bigint() / 1000n);
  const start = now();
  for (let i = 0; i < RUNS; i++) {
    if ((await run()).text !== body.expected.text) throw new Error(`profile: ${format}: wrong final text`);
  }
  const end = now();
  report({ start, end, runs: RUNS, msPerRun: (end - start) / 1000 / RUNS } satisfies Window);
}

/** Who a frame belongs to. */
function ownerOf(url: string, fn: string): string {
  if (url.includes('cleanturn-bench/')) return `cleanturn (${url.slice(url.lastIndexOf('/') + 1)})`;
  if (url.includes('eventsource-parser')) return 'eventsource-parser';
  if (url.includes('/rxjs/')) return 'rxjs';
  if (url.includes('/bench/') || url.includes('/test/support/')) return 'bench harness';
  if (url.startsWith('node:') || url === '') return fn.startsWith('(') ? 'V8' : 'Node (native)';
  return url.slice(url.lastIndexOf('/') + 1);
}

/** The first line of a cleanturn function, and whether it calls JSON.parse (its self time then includes the parse). */
function describeOurs(url: string, line: number, fn: string): string {
  try {
    const file = url.startsWith('file://') ? fileURLToPath(url) : url;
    const lines = readFileSync(file, 'utf8').split('\n');
    // The function's body: down to the first line that closes it (as indented as its first line, or less).
    const indent = (lines[line] ?? '').search(/\S/);
    let end = line + 1;
    while (end < lines.length) {
      const text = lines[end] ?? '';
      if (/^\s*}/.test(text) && text.search(/\S/) <= indent) break;
      end++;
    }
    const body = lines.slice(line, end + 1).join('\n');
    const head = (lines[line] ?? '').trim().slice(0, 40);
    // The top-level function or class of the bundle that encloses it: the operator's name.
    let enclosing = '';
    for (let i = line; i >= 0 && enclosing === ''; i--) {
      const match = /^(?:async )?function\*? (\w+)|^var (\w+) = class/.exec(lines[i] ?? '');
      if (match !== null) enclosing = match[1] ?? match[2] ?? '';
    }
    const own = fn === '' ? `(anonymous) ${head}` : fn;
    const name = enclosing !== '' && enclosing !== fn ? `${enclosing}: ${own}` : own;
    return body.includes('JSON.parse') ? `${name} → JSON.parse` : name;
  } catch {
    return fn || '(anonymous)';
  }
}

function summarise(
  profile: CpuProfile,
  window: Window,
): { rows: ProfileRow[]; samples: number; ours: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map<string, { count: number; fn: string; owner: string; location: string }>();
  let time = profile.startTime;
  let total = 0;
  let ours = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i] ?? 0;
    if (time < window.start || time > window.end) continue;
    const node = byId.get(profile.samples[i] as number);
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    total++;
    const owner = ownerOf(url, functionName);
    const fn = owner.startsWith('cleanturn')
      ? describeOurs(url, lineNumber, functionName)
      : functionName || '(anonymous)';
    if (owner.startsWith('cleanturn') && !fn.includes('JSON.parse')) ours++;
    const location = url === '' ? '' : `${url.slice(url.lastIndexOf('/') + 1)}:${lineNumber + 1}`;
    const key = `${fn}@${location}`;
    const entry = counts.get(key) ?? { count: 0, fn, owner, location };
    entry.count++;
    counts.set(key, entry);
  }
  const rows = [...counts.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, 14)
    .map((e) => ({ percent: (100 * e.count) / total, fn: e.fn, owner: e.owner, location: e.location }));
  return { rows, samples: total, ours: (100 * ours) / total };
}

/** A file name for a format: `OpenAI Chat Completions` → `openai-chat-completions`. */
function slug(format: string): string {
  return format
    .toLowerCase()
    .replace(/\(.*\)/g, '')
    .trim()
    .replace(/[^a-z0-9]+/g, '-');
}

/** Parent: profiles every format (or those of `only`), one child each, one after the other. */
export async function runProfiles(
  options: { only?: readonly string[]; onResult?: (result: ProfileResult) => void } = {},
): Promise<ProfileResult[]> {
  const out: ProfileResult[] = [];
  for (const format of FORMAT_NAMES) {
    if (options.only !== undefined && !options.only.includes(format)) continue;
    const result = await runProfile(format);
    options.onResult?.(result);
    out.push(result);
  }
  return out;
}

/** Parent: runs the child of one format under --cpu-prof and summarises the main thread's profile. */
export async function runProfile(format: string): Promise<ProfileResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-prof-'));
  try {
    const window = await runChild<Window>(
      './profile.ts',
      ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      [`--format=${format}`],
    );
    // The loader thread writes a profile too: keep the one with most samples inside the window.
    let best: { file: string; summary: ReturnType<typeof summarise> } | undefined;
    for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
      const file = join(dir, name);
      const summary = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, window);
      if (best === undefined || summary.samples > best.summary.samples) best = { file, summary };
    }
    if (best === undefined || best.summary.samples === 0)
      throw new Error('profile: no samples in the workload');
    const keepDir = join(outDir, '..', 'cleanturn-bench-profile');
    mkdirSync(keepDir, { recursive: true });
    const kept = join(keepDir, `end-to-end-${slug(format)}.cpuprofile`);
    copyFileSync(best.file, kept);
    return {
      format,
      runs: window.runs,
      msPerRun: window.msPerRun,
      samples: best.summary.samples,
      rows: best.summary.rows,
      oursPercent: best.summary.ours,
      file: kept,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printProfile(r: ProfileResult): void {
  console.log(
    `  ${r.format}: ${r.runs} runs, ${r.msPerRun.toFixed(0)} ms per run under the profiler, ${r.samples} samples; top self time:`,
  );
  for (const row of r.rows) {
    console.log(`  ${row.percent.toFixed(1).padStart(5)}%  ${row.fn.slice(0, 60).padEnd(60)} ${row.owner}`);
  }
  console.log(
    `  cleanturn's own code (JSON.parse excluded): ${r.oursPercent.toFixed(1)}% of samples; profile: ${r.file}`,
  );
}

// Run alone: npx tsx bench/profile.ts --print [--format=<name>]
if (import.meta.url === `file://${process.argv[1]}`) {
  const format = process.argv.find((a) => a.startsWith('--format='))?.slice('--format='.length);
  if (process.argv.includes('--print'))
    await runProfiles({ ...(format === undefined ? {} : { only: [format] }), onResult: printProfile });
  else await child(format ?? (FORMAT_NAMES[0] as string));
}
