// Item 6: the gateway. turnServer holding N live turns (100, 1,000, 5,000), each streamed from a loopback provider
// (OpenAI Chat Completions SSE, 30 chunks/s) and read by a client over a real socket, with the memory log and with
// the Redis log, against a floor measured in the same run: a plain SSE relay that pipes the provider's bytes
// through node:http unparsed. Three processes, so that the gateway's CPU is its own: this one (the provider and
// the clients), the gateway (bench/gatewayChild.ts: the relay or turnServer) and a redis-server.
//
// Each chunk's text carries the time the provider wrote it (`[t=<performance.timeOrigin + performance.now()>]`);
// the client reads it back from the delivered event: the added latency. The gateway reports its CPU time at the
// start and the end of a steady window (all turns live), and its memory after GC with the turns live and before
// they started, so that CPU per delivered chunk and memory per live turn are the gateway's alone. With the memory
// log, the row also says how much of that memory is the log's (the events it keeps for readers that reconnect with
// `Last-Event-ID`): the heap a copy of the live turns' entries takes. `--cpu-prof=<dir>` writes a CPU profile of
// each gateway's window, `--heap-snapshot=<dir>` heap snapshots before the turns and with them live.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, get, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { buildPackage, outDir } from './build.js';
import type { GatewayAnswer, GatewayChildConfig, GatewayMode, GatewayRequest } from './gatewayChild.js';
import { bytes, mark, ms } from './harness.js';

/** The live-turn counts of the comparison. */
export const TURN_COUNTS = [100, 1_000, 5_000] as const;
/** Chunks per second of every turn. */
export const CHUNKS_PER_SECOND = 30;
/** The goals: CPU per chunk ÷ the relay's, with each log; p99 added latency at 1,000 turns; heap per live turn. */
export const GOALS = { memoryCpu: 1.5, redisCpu: 2, p99Ms: 10, p99Turns: 1_000, bytesPerTurn: 16 * 1024 };

/** One measured row: one gateway (the relay or a log) serving N live turns. */
export interface GatewayRow {
  mode: GatewayMode;
  turns: number;
  /** Chunks per second the provider was to write (N × 30), and those the clients received in the window. */
  offered: number;
  delivered: number;
  /** The provider's chunks written per second in the window (below `offered` when this process fell behind). */
  written: number;
  /** The gateway's user + system CPU time over the window ÷ the chunks the clients received in it, in µs. */
  cpuMicrosPerChunk: number;
  /** The gateway's CPU time ÷ the window's wall time (100 = one core). */
  cpuPercent: number;
  /** The same for this process (the provider and the clients): near 100, it is the limit, not the gateway. */
  harnessCpuPercent: number;
  /** redis-server's CPU time over the window ÷ the chunks received, in µs (Redis rows on Linux). */
  redisMicrosPerChunk?: number;
  /** Added latency (provider write → client read) of the chunks received in the window, in ms. */
  p50: number;
  p99: number;
  /** (The gateway's heap used, RSS) with the N turns live minus before they started, after GC, ÷ N. */
  heapPerTurn: number;
  rssPerTurn: number;
  /**
   * Of `heapPerTurn`, what the memory log's entries of a live turn hold (its events, kept for the readers that
   * reconnect with `Last-Event-ID`): the heap a copy of them takes ÷ N. Absent for the relay, and for the Redis log
   * (whose entries are in Redis).
   */
  logPerTurn?: number;
  /** The bytes per entry of `logPerTurn`. */
  logPerEntry?: number;
  /** Chunks the clients had received per turn when the memory was taken (what a memory log held at least). */
  chunksAtMemory: number;
  /** Requests the provider got per turn (above 1: retries or takeovers). */
  requestsPerTurn: number;
  /** Turns whose client received every chunk and the end, and turns that ended otherwise (failed, cut, late). */
  complete: number;
  incomplete: number;
  /** Entries the gateway's log refused (turnServer's onLogError). */
  logErrors: number;
}

export interface GatewayResult {
  turnSeconds: number;
  /** The measured window, in seconds after the first turn started (every turn starts within the first second). */
  window: [number, number];
  /** The soft limit of open files (`ulimit -n`) and the largest N it allows, when that is below 5,000. */
  fdLimit: number;
  cappedAt?: number;
  /** Why the Redis rows are missing, when they are. */
  redisSkipped?: string;
  rows: GatewayRow[];
  seconds: number;
}

// ---- the build ----------------------------------------------------------------------------------------------

// ---- the provider ---------------------------------------------------------------------------------------------

const now = () => performance.timeOrigin + performance.now();
const words = [' The', ' order', ' ORD-7781', ' arrived', ' damaged,', ' so', ' a', ' refund', ' starts.'];
const chunkHead =
  '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764633600,"model":"gpt-4o",';

function contentChunk(k: number): string {
  const content = `${words[k % words.length]}[t=${now().toFixed(3)}]`;
  return `data: ${chunkHead}"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`;
}
const firstChunk = `data: ${chunkHead}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n`;
const lastChunks = `data: ${chunkHead}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`;

/** One response the provider streams. */
interface Stream {
  res: ServerResponse;
  /** When it started, and how many content chunks it wrote. */
  start: number;
  sent: number;
}

/**
 * The loopback provider: `POST /v1/chat/completions` streams `chunks` content chunks at 30/s (one ticker writes the
 * chunks that are due on every stream), then the finish and `[DONE]`.
 */
class Provider {
  readonly server: Server;
  private readonly streams = new Set<Stream>();
  private ticker: ReturnType<typeof setInterval> | undefined;
  /** Content chunks written, and requests received (more than one per turn: a retry or a takeover). */
  written = 0;
  requests = 0;
  chunks = 0;

  constructor() {
    this.server = createServer((req, res) => {
      this.requests++;
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(firstChunk);
        const stream = { res, start: performance.now(), sent: 0 };
        this.streams.add(stream);
        res.on('close', () => this.streams.delete(stream));
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', 1024, resolve));
    this.ticker = setInterval(() => this.tick(), 5);
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/chat/completions`;
  }

  private tick(): void {
    const t = performance.now();
    for (const s of this.streams) {
      while (s.sent < this.chunks && s.start + ((s.sent + 1) * 1000) / CHUNKS_PER_SECOND <= t) {
        s.res.write(contentChunk(s.sent));
        s.sent++;
        this.written++;
      }
      if (s.sent === this.chunks) {
        this.streams.delete(s);
        s.res.end(lastChunks);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.ticker);
    for (const s of this.streams) s.res.destroy();
    this.streams.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---- the clients ----------------------------------------------------------------------------------------------

const MARKER = /\[t=(\d+\.\d+)\]/g;

/** What the clients of one row received. */
class Clients {
  /** Chunks received in all, in the window, and the window's added latencies (ms). */
  total = 0;
  inWindow = 0;
  latencies: number[] = [];
  measuring = false;
  complete = 0;
  incomplete = 0;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  private pending = 0;
  private gaveUp = false;
  private allDone: (() => void) | undefined;

  constructor(
    private readonly base: string,
    private readonly chunks: number,
  ) {}

  /** Opens the turn `turnId` and reads it to its end. */
  open(turnId: string): void {
    this.pending++;
    let received = 0;
    let failed = false;
    let tail = '';
    let finished = false;
    const done = (ok: boolean) => {
      // Once per turn, and not after the wait for the ends gave up (the rest were counted then).
      if (finished || this.gaveUp) return;
      finished = true;
      if (ok && !failed && received === this.chunks) this.complete++;
      else this.incomplete++;
      if (--this.pending === 0) this.allDone?.();
    };
    const req = get(`${this.base}/turns/${encodeURIComponent(turnId)}`, { agent: this.agent }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const at = now();
        // Markers of complete events only: one cut by the piece's end is read with the next piece.
        const all = tail + text;
        const end = all.lastIndexOf('\n\n');
        if (end === -1) {
          tail = all;
          return;
        }
        const events = all.slice(0, end);
        tail = all.slice(end + 2);
        if (events.includes('event: failed')) failed = true;
        for (const event of events.split('\n\n')) {
          // A finish of turnServer's carries the whole text (its output message): not a chunk.
          if (event.includes('"type":"finish"')) continue;
          for (const m of event.matchAll(MARKER)) {
            received++;
            this.total++;
            if (this.measuring) {
              this.inWindow++;
              this.latencies.push(at - Number(m[1]));
            }
          }
        }
      });
      res.on('end', () => done(true));
      res.on('close', () => done(false));
    });
    req.on('error', () => done(false));
  }

  /** Resolves once every turn opened has ended, or after `timeoutMs` (the rest count as incomplete). */
  async ended(timeoutMs: number): Promise<void> {
    if (this.pending > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          this.allDone = resolve;
        }),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      this.incomplete += this.pending;
      this.pending = 0;
      this.gaveUp = true;
    }
    this.agent.destroy();
  }
}

// ---- the gateway process ----------------------------------------------------------------------------------------

/** The gateway child process and its answers. */
class Gateway {
  private readonly child: ChildProcess;
  /** Requests waiting for their answer, and answers no request waits for yet (the first: ready). */
  private readonly waiting: { resolve: (answer: GatewayAnswer) => void; reject: (error: Error) => void }[] =
    [];
  private readonly early: GatewayAnswer[] = [];
  private gone: Error | undefined;
  readonly exited: Promise<void>;

  constructor(childConfig: GatewayChildConfig) {
    const file = fileURLToPath(new URL('./gatewayChild.ts', import.meta.url));
    this.child = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', file, JSON.stringify(childConfig)],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.on('message', (answer: GatewayAnswer) => {
      const waiter = this.waiting.shift();
      if (waiter === undefined) this.early.push(answer);
      else waiter.resolve(answer);
    });
    this.child.once('exit', (code, signal) => {
      this.gone = new Error(`the ${childConfig.mode} gateway process exited with ${code ?? signal}`);
      for (const w of this.waiting.splice(0)) w.reject(this.gone);
    });
  }

  /** The next answer (answers come in the order of the requests). */
  private next<T extends GatewayAnswer>(request?: GatewayRequest): Promise<T> {
    const early = this.early.shift();
    if (early !== undefined) return Promise.resolve(early as T);
    if (this.gone !== undefined) return Promise.reject(this.gone);
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ resolve: resolve as (answer: GatewayAnswer) => void, reject });
      if (request !== undefined) this.child.send(request);
    });
  }

  ready(): Promise<{ ready: number }> {
    return this.next();
  }
  cpu(): Promise<{ cpu: { user: number; system: number }; wall: number }> {
    return this.next({ op: 'cpu' });
  }
  memory(): Promise<{
    heapUsed: number;
    rss: number;
    external: number;
    log?: { bytes: number; entries: number };
  }> {
    return this.next({ op: 'memory' });
  }
  snapshot(path: string): Promise<{ snapshot: string }> {
    return this.next({ op: 'snapshot', path });
  }
  async close(): Promise<number> {
    const answer = await this.next<{ closed: true; logErrors: number }>({ op: 'close' });
    await this.exited;
    return answer.logErrors;
  }
  kill(): void {
    this.child.kill('SIGKILL');
  }
}

// ---- redis-server ---------------------------------------------------------------------------------------------

/** A free port of 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The redis-server binary: REDIS_SERVER, else `redis-server` on the PATH; undefined when there is none. */
function redisBinary(): string | undefined {
  const named = process.env.REDIS_SERVER ?? 'redis-server';
  if (named.includes('/')) return existsSync(named) ? named : undefined;
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((folder) => join(folder, named))
    .find((path) => path !== named && existsSync(path));
}

interface RedisProcess {
  port: number;
  pid: number;
  client: Redis;
  stop(): Promise<void>;
}

/**
 * Starts a redis-server on a free port of 127.0.0.1 with a data directory of its own and no persistence (no AOF,
 * no RDB snapshots), and resolves once it answers PING.
 */
async function startRedis(binary: string): Promise<RedisProcess> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-bench-redis-'));
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on port ${port} did not start`);
    }
    const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch {
      probe.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  const client = new Redis({ host: '127.0.0.1', port });
  return {
    port,
    pid: child.pid as number,
    client,
    stop: async () => {
      await client.quit().catch(() => client.disconnect());
      await stop();
    },
  };
}

/** A process's user + system CPU time in µs, from /proc (Linux), or undefined. */
function processCpu(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, in clock ticks (USER_HZ, 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

// ---- one row ----------------------------------------------------------------------------------------------------

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
}

const sleepUntil = (t: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, t - performance.now())));

interface Timing {
  turnMs: number;
  windowMs: [number, number];
  rampMs: number;
}

/**
 * What to record of each gateway process besides the figures: a CPU profile of the measured window into
 * `cpuProfDir` (`<mode>-<N>.cpuprofile`; the profiler's own cost is in that row's CPU figures), and heap snapshots
 * after GC into `snapshotDir`, before the turns start (`<mode>-<N>-before.heapsnapshot`) and with them live
 * (`-live`). Snapshots take seconds: they are taken after the window's figures, and the memory figures before them.
 */
export interface Profiling {
  cpuProfDir?: string;
  snapshotDir?: string;
}

let runs = 0;

async function measureRow(
  mode: GatewayMode,
  turns: number,
  provider: Provider,
  providerUrl: string,
  timing: Timing,
  redis: RedisProcess | undefined,
  profile: Profiling,
): Promise<GatewayRow> {
  const run = ++runs;
  const gateway = new Gateway({
    mode,
    providerUrl,
    buildDir: outDir,
    ...(redis ? { redisPort: redis.port } : {}),
    ...(profile.cpuProfDir === undefined
      ? {}
      : { cpuProfile: join(profile.cpuProfDir, `${mode}-${turns}.cpuprofile`) }),
  });
  const snapshot = async (when: 'before' | 'live') => {
    if (profile.snapshotDir !== undefined)
      await gateway.snapshot(join(profile.snapshotDir, `${mode}-${turns}-${when}.heapsnapshot`));
  };
  try {
    const { ready: port } = await gateway.ready();
    const base = `http://127.0.0.1:${port}`;

    // Warm-up: a few short turns through the whole path (JIT, connections), then the memory with none live.
    provider.chunks = CHUNKS_PER_SECOND;
    const warm = new Clients(base, provider.chunks);
    for (let i = 0; i < Math.min(turns, 100); i++) warm.open(`warm-${run}-${i}`);
    await warm.ended(30_000);
    const before = await gateway.memory();
    await snapshot('before');

    const chunks = (timing.turnMs / 1000) * CHUNKS_PER_SECOND;
    provider.chunks = chunks;
    const requestsBefore = provider.requests;
    const clients = new Clients(base, chunks);
    const t0 = performance.now();
    // The ramp: every 5 ms, the turns due by then (turn i at i/N of the ramp).
    for (let i = 0; i < turns; ) {
      const due = Math.min(turns, Math.floor(((performance.now() - t0) / timing.rampMs) * turns) + 1);
      for (; i < due; i++) clients.open(`bench-${run}-${mode}-${i}`);
      if (i < turns) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await sleepUntil(t0 + timing.windowMs[0]);
    const cpuStart = await gateway.cpu();
    const redisStart = redis ? processCpu(redis.pid) : undefined;
    const writtenStart = provider.written;
    const harnessStart = process.cpuUsage();
    const wallStart = performance.now();
    clients.measuring = true;
    await sleepUntil(t0 + timing.windowMs[1]);
    clients.measuring = false;
    const wall = performance.now() - wallStart;
    const harness = process.cpuUsage(harnessStart);
    const cpuEnd = await gateway.cpu();
    const redisEnd = redis ? processCpu(redis.pid) : undefined;
    const written = provider.written - writtenStart;
    const chunksAtMemory = clients.total / turns;
    const live = await gateway.memory();
    await snapshot('live');

    // The turns end by second turnMs / 1000 + 1 when the gateway keeps up; one that falls behind gets 10 s more.
    await clients.ended(t0 + timing.turnMs + timing.rampMs + 10_000 - performance.now());
    const requests = provider.requests - requestsBefore;
    const logErrors = await gateway.close();
    if (redis) await redis.client.flushall();

    const cpu = cpuEnd.cpu.user + cpuEnd.cpu.system - cpuStart.cpu.user - cpuStart.cpu.system;
    const sorted = Float64Array.from(clients.latencies).sort();
    const delivered = clients.inWindow;
    return {
      mode,
      turns,
      offered: turns * CHUNKS_PER_SECOND,
      delivered: (delivered / wall) * 1000,
      written: (written / wall) * 1000,
      cpuMicrosPerChunk: delivered > 0 ? cpu / delivered : Number.NaN,
      cpuPercent: (cpu / 1000 / (cpuEnd.wall - cpuStart.wall)) * 100,
      harnessCpuPercent: ((harness.user + harness.system) / 1000 / wall) * 100,
      ...(redisStart !== undefined && redisEnd !== undefined
        ? { redisMicrosPerChunk: delivered > 0 ? (redisEnd - redisStart) / delivered : Number.NaN }
        : {}),
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      chunksAtMemory,
      requestsPerTurn: requests / turns,
      heapPerTurn: (live.heapUsed - before.heapUsed) / turns,
      rssPerTurn: (live.rss - before.rss) / turns,
      ...(live.log === undefined
        ? {}
        : { logPerTurn: live.log.bytes / turns, logPerEntry: live.log.bytes / live.log.entries }),
      complete: clients.complete,
      incomplete: clients.incomplete,
      logErrors,
    };
  } catch (error) {
    gateway.kill();
    throw error;
  }
}

// ---- the section --------------------------------------------------------------------------------------------------

/** The soft limit of open files of processes started from here. */
function fdLimit(): number {
  const out = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
  return out === 'unlimited' ? Number.POSITIVE_INFINITY : Number(out);
}

/**
 * Runs item 6: for each N, the relay, then turnServer with the memory log, then with the Redis log, each in a new
 * gateway process. `turns` replaces the live-turn counts (for a short run while developing); `root` is the checkout
 * whose `src/` is measured (as `--src`).
 */
export async function benchGateway(
  options: { quick?: boolean; turns?: readonly number[]; root?: string; profile?: Profiling } = {},
): Promise<GatewayResult> {
  const started = performance.now();
  const quick = options.quick === true;
  const timing: Timing = quick
    ? { turnMs: 5_000, windowMs: [2_000, 4_000], rampMs: 1_000 }
    : { turnMs: 10_000, windowMs: [2_000, 8_000], rampMs: 1_000 };

  // The gateway holds 3 sockets per turn with the Redis log (client, provider, its reader's Redis connection);
  // this process 2 (its client's and the provider's end), redis-server 1.
  const limit = fdLimit();
  const maxTurns = Math.floor((limit - 256) / 3);
  let counts = [...(options.turns ?? TURN_COUNTS)];
  let cappedAt: number | undefined;
  if (counts.some((n) => n > maxTurns)) {
    cappedAt = maxTurns;
    console.log(
      `  ulimit -n is ${limit}: ${Math.max(...counts).toLocaleString('en')} turns need about ${(3 * Math.max(...counts) + 256).toLocaleString('en')} open files; capped at ${maxTurns.toLocaleString('en')} turns (raise it with ulimit -n)`,
    );
    counts = [...new Set(counts.map((n) => Math.min(n, maxTurns)))];
  }

  await buildPackage(options.root);
  const binary = redisBinary();
  let redisSkipped: string | undefined;
  let redis: RedisProcess | undefined;
  if (binary === undefined) {
    redisSkipped = 'redis-server not found (install the Debian package redis-server, or set REDIS_SERVER)';
    console.log(`  Redis rows skipped: ${redisSkipped}`);
  } else {
    redis = await startRedis(binary);
  }
  const provider = new Provider();
  const providerUrl = await provider.listen();
  const rows: GatewayRow[] = [];
  try {
    for (const turns of counts) {
      for (const mode of ['relay', 'memory', 'redis'] as const) {
        if (mode === 'redis' && redis === undefined) continue;
        const row = await measureRow(
          mode,
          turns,
          provider,
          providerUrl,
          timing,
          mode === 'redis' ? redis : undefined,
          options.profile ?? {},
        );
        rows.push(row);
        printRow(row, rows);
      }
    }
  } finally {
    await provider.close();
    await redis?.stop();
  }
  return {
    turnSeconds: timing.turnMs / 1000,
    window: [timing.windowMs[0] / 1000, timing.windowMs[1] / 1000],
    fdLimit: limit,
    ...(cappedAt === undefined ? {} : { cappedAt }),
    ...(redisSkipped === undefined ? {} : { redisSkipped }),
    rows,
    seconds: (performance.now() - started) / 1000,
  };
}

/** The relay's row of the same N. */
export function relayOf(rows: readonly GatewayRow[], turns: number): GatewayRow | undefined {
  return rows.find((r) => r.mode === 'relay' && r.turns === turns);
}

/** What a row's figures say about the goals (the relay has none of its own). */
export interface RowVerdicts {
  cpu?: { ratio: number; goal: number; met: boolean };
  p99?: { goal: number; met: boolean };
  memory: { goal: number; met: boolean };
}

export function rowVerdicts(row: GatewayRow, rows: readonly GatewayRow[]): RowVerdicts {
  const relay = relayOf(rows, row.turns);
  const goal = row.mode === 'redis' ? GOALS.redisCpu : GOALS.memoryCpu;
  const ratio = relay === undefined ? Number.NaN : row.cpuMicrosPerChunk / relay.cpuMicrosPerChunk;
  return {
    ...(row.mode === 'relay' ? {} : { cpu: { ratio, goal, met: ratio <= goal } }),
    ...(row.mode !== 'relay' && row.turns === GOALS.p99Turns
      ? { p99: { goal: GOALS.p99Ms, met: row.p99 <= GOALS.p99Ms } }
      : {}),
    memory: { goal: GOALS.bytesPerTurn, met: row.heapPerTurn <= GOALS.bytesPerTurn },
  };
}

const label: Record<GatewayMode, string> = {
  relay: 'relay (floor)',
  memory: 'turnServer + memoryTurnLog',
  redis: 'turnServer + redisTurnLog',
};

/** A figure with `digits` decimals, or `—` when there is none (nothing was delivered). */
export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '—';
}

/** Whether a row delivered (nearly) every chunk offered: 95% or more. */
export function keptUp(row: GatewayRow): boolean {
  return row.delivered >= 0.95 * row.offered;
}

/** `4.5 k/s` for chunk rates. */
export function perSecond(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)} k/s` : `${value.toFixed(0)}/s`;
}

function printRow(row: GatewayRow, rows: readonly GatewayRow[]): void {
  const v = rowVerdicts(row, rows);
  const cpu = v.cpu ? ` (${fixed(v.cpu.ratio, 2)}× relay ${mark(v.cpu.met)} ≤ ${v.cpu.goal}×)` : '';
  const redisCpu =
    row.redisMicrosPerChunk === undefined ? '' : `, redis-server ${fixed(row.redisMicrosPerChunk, 1)} µs`;
  const p99 = v.p99 ? ` ${mark(v.p99.met)} ≤ ${v.p99.goal} ms` : '';
  const latency = Number.isFinite(row.p50) ? `p50 ${ms(row.p50)}, p99 ${ms(row.p99)}` : 'none delivered';
  const behind = !keptUp(row)
    ? ` — only ${((100 * row.delivered) / row.offered).toFixed(0)}% of the offered rate delivered (the provider wrote ${perSecond(row.written)}; provider + clients at ${row.harnessCpuPercent.toFixed(0)}% of a core)`
    : '';
  console.log(
    `  ${row.turns.toLocaleString('en').padStart(5)} turns  ${label[row.mode].padEnd(27)} offered ${perSecond(row.offered)}, delivered ${perSecond(row.delivered)}; CPU ${fixed(row.cpuMicrosPerChunk, 1)} µs/chunk${cpu}${redisCpu}, ${row.cpuPercent.toFixed(0)}% of a core; added latency ${latency}${p99}; ${bytes(row.heapPerTurn)} heap (${bytes(row.rssPerTurn)} RSS) per live turn ${mark(v.memory.met)} (${row.chunksAtMemory.toFixed(0)} chunks in${row.logPerTurn === undefined ? '' : `; of which the log: ${bytes(row.logPerTurn)}, ${fixed(row.logPerEntry ?? Number.NaN, 0)} B per entry`}); ${row.complete}/${row.turns} turns complete${row.requestsPerTurn > 1 ? `, ${row.requestsPerTurn.toFixed(2)} provider requests per turn` : ''}${row.logErrors > 0 ? `, ${row.logErrors} log errors` : ''}${behind}`,
  );
}

export function printGateway(r: GatewayResult): void {
  console.log(
    `  ${r.rows.length} rows in ${r.seconds.toFixed(0)} s (turns of ${r.turnSeconds} s at ${CHUNKS_PER_SECOND} chunks/s, window ${r.window[0]}–${r.window[1]} s, ulimit -n ${r.fdLimit}${r.cappedAt === undefined ? '' : `, N capped at ${r.cappedAt}`})`,
  );
}

// Alone: npx tsx bench/gateway.ts [--quick] [--turns=100,1000] [--src=<checkout>] [--cpu-prof=<dir>]
// [--heap-snapshot=<dir>]
if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) =>
    process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(`--${name}=`.length);
  const turns = arg('turns')?.split(',').map(Number);
  const cpuProfDir = arg('cpu-prof');
  const snapshotDir = arg('heap-snapshot');
  const root = arg('src');
  const result = await benchGateway({
    quick: process.argv.includes('--quick'),
    ...(turns ? { turns } : {}),
    ...(root === undefined ? {} : { root }),
    profile: {
      ...(cpuProfDir === undefined ? {} : { cpuProfDir }),
      ...(snapshotDir === undefined ? {} : { snapshotDir }),
    },
  });
  printGateway(result);
}
