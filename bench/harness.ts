// The measuring half of the benchmarks: tinybench runs, medians across interleaved rounds, and the machine.

import { readFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { Bench } from 'tinybench';

/** One contender of a comparison: a function that does the whole workload once. */
export interface Variant {
  name: string;
  fn: () => unknown;
}

/** What a comparison measured for one variant. */
export interface Measured {
  name: string;
  /** The median time of one run of the workload, in milliseconds. */
  median: number;
  /** The fastest and slowest runs, in milliseconds. */
  min: number;
  max: number;
  /** How many timed runs the median is taken over. */
  runs: number;
  /** The timed runs round by round (tinybench sorts those of one round), for paired ratios: one per round pairs. */
  samples: number[];
}

/** How long to measure. */
export interface CompareOptions {
  /** Rounds; each round runs every variant in turn (in a rotated order), so drift hits all of them alike. */
  rounds: number;
  /** Timed runs of each variant per round (1 interleaves best: A B C, B C A, …). */
  iterations: number;
  /** Untimed runs of each variant before its first round (JIT warm-up). */
  warmup: number;
}

/** Forces a full collection between runs when the process has `--expose-gc`, so that no run pays for another's garbage. */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc !== undefined) gc();
}

/**
 * Runs every variant `rounds × iterations` times with tinybench (after `warmup` untimed runs) and returns the
 * median time of each. The variants run side by side in this process; rounds interleave them.
 */
export async function compare(variants: readonly Variant[], options: CompareOptions): Promise<Measured[]> {
  const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  for (let round = 0; round < options.rounds; round++) {
    const bench = new Bench({
      iterations: options.iterations,
      time: 0,
      warmup: round === 0 && options.warmup > 0,
      warmupIterations: options.warmup,
      warmupTime: 0,
      retainSamples: true,
      throws: true,
      setup: collectGarbage,
    });
    // Rotate the order each round: no variant is always the one that runs right after a warm-up or a GC.
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + round) % variants.length] as Variant;
      bench.add(variant.name, variant.fn);
    }
    await bench.run();
    for (const task of bench.tasks) {
      const { result } = task;
      if (result.state !== 'completed') throw new Error(`${task.name}: ${result.state}`);
      const taken = result.latency.samples ?? [];
      samples.get(task.name)?.push(...taken);
    }
  }
  return variants.map((v) => {
    const inOrder = samples.get(v.name) ?? [];
    const all = inOrder.slice().sort((a, b) => a - b);
    return {
      name: v.name,
      median: median(all),
      min: all[0] ?? Number.NaN,
      max: all[all.length - 1] ?? Number.NaN,
      runs: all.length,
      samples: inOrder,
    };
  });
}

/**
 * How many times slower `a` is than `b`: the median of the ratios of runs made in the same round (each round
 * runs every variant once, back to back), so that a change of machine load during the comparison affects both
 * sides of each ratio alike. Falls back to the ratio of the medians when the runs do not pair up.
 */
export function ratio(a: Measured, b: Measured): number {
  if (a.samples.length !== b.samples.length || a.samples.length === 0) return a.median / b.median;
  return median(a.samples.map((x, i) => x / (b.samples[i] as number)));
}

/** The median of numbers (sorted or not). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The measurement of `name` in a comparison's results. */
export function pick(results: readonly Measured[], name: string): Measured {
  const found = results.find((r) => r.name === name);
  if (found === undefined) throw new Error(`no result named ${name}`);
  return found;
}

/** Formats a rate: `12.3 M/s`, `845 k/s`. */
export function rate(perSecond: number, unit = ''): string {
  const suffix = unit === '' ? '/s' : ` ${unit}/s`;
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(perSecond >= 1e7 ? 1 : 2)} M${suffix}`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(0)} k${suffix}`;
  return `${perSecond.toFixed(0)}${suffix}`;
}

/** Formats milliseconds with sensible precision. */
export function ms(value: number): string {
  if (value >= 100) return `${value.toFixed(0)} ms`;
  if (value >= 10) return `${value.toFixed(1)} ms`;
  return `${value.toFixed(2)} ms`;
}

/** Formats a ratio: `2.41×`. */
export function times(ratio: number): string {
  return `${ratio.toFixed(2)}×`;
}

/** Formats a byte count: `9.8 MiB`. */
export function bytes(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(1)} MiB`;
  if (abs >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${value.toFixed(0)} B`;
}

/** ✓ or ✗. */
export function mark(ok: boolean): string {
  return ok ? '✓' : '✗';
}

/** A target of the issue and whether this run met it. */
export interface Verdict {
  /** Which comparison. */
  item: string;
  /** The target as the issue states it. */
  target: string;
  /** What this run measured. */
  measured: string;
  met: boolean;
  /** An honest sentence when it is not met (or when it is met only in part). */
  note?: string;
}

/** The machine and runtime, for the results header. */
export interface Machine {
  node: string;
  v8: string;
  cpu: string;
  cores: number;
  memory: string;
  os: string;
  rxjs: string;
}

export function machine(): Machine {
  const cpu = cpus()[0];
  return {
    node: process.version,
    v8: process.versions.v8,
    cpu: cpu === undefined ? 'unknown' : `${cpu.model.trim()}${cpu.speed > 0 ? ` @ ${cpu.speed} MHz` : ''}`,
    cores: cpus().length,
    memory: `${(totalmem() / 1024 ** 3).toFixed(0)} GiB`,
    os: `${platform()} ${release()}`,
    rxjs: packageVersion('rxjs'),
  };
}

/** The version of an installed package, read from its package.json. */
export function packageVersion(name: string): string {
  try {
    const url = new URL(`../node_modules/${name}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The 1-minute load average, a hint of how noisy the numbers are. */
export function load(): number {
  return loadavg()[0] ?? 0;
}

/** Throws when `actual` is not `expected`: every variant of a comparison must reach the same result. */
export function same(what: string, actual: unknown, expected: unknown): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) {
    throw new Error(
      `${what}: the variants disagree\n  got      ${a.slice(0, 300)}\n  expected ${e.slice(0, 300)}`,
    );
  }
}
