// A throwaway redis-server for a test file: started on a free port of 127.0.0.1 with its own data directory, and
// stopped (and waited for) at the end. By default it persists as the Redis effect ledger requires (AOF,
// appendfsync everysec); `startRedisServer({ persistence: 'none' })` starts one that forgets everything on a
// restart. `kill()` and `restart()` simulate a crash and a restart on the same port and data directory;
// `restart({ wipe: true })` a restart that lost its data (the volume is gone), `restart({ persistence: 'none' })`
// another server at the same address; `pause()` and `resume()` stall the server (SIGSTOP, SIGCONT).
// CI installs redis-server with apt-get.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { REDIS, skippedWithout } from '../support/requirements.js';
import { captureOutput, freePort } from '../support/serverProcess.js';

/** A running redis-server. */
export interface RedisServer {
  port: number;
  /** The pid of the running redis-server (a new one after each restart). */
  readonly pid: number;
  /** A new client of the server; `stop()` closes every client it made. */
  client(): Redis;
  /** Kills the server with SIGKILL (a crash: nothing is flushed) and waits for it to exit. */
  kill(): Promise<void>;
  /**
   * Kills the server (SIGKILL, if it still runs) and starts it again on the same port and data directory, and
   * resolves once it answers PING. With `wipe`, the data directory is emptied first (a restart whose volume was
   * lost); with server options, the new server starts with those instead (another server at the same address),
   * and so do later restarts.
   */
  restart(options?: RedisRestartOptions): Promise<void>;
  /** Stops the server with SIGSTOP: it keeps its connections but answers nothing until `resume()`. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  /** Closes the clients, stops the server, waits for it to exit and removes its data directory. */
  stop(): Promise<void>;
}

/** How to restart the server: see {@link RedisServer.restart}. */
export interface RedisRestartOptions extends RedisServerOptions {
  /** Empty the data directory before the server starts again. */
  wipe?: boolean;
}

/** How to start the server. */
export interface RedisServerOptions {
  /** `'aof'` (default): `appendonly yes`; `'none'`: no AOF and no RDB snapshots. */
  persistence?: 'aof' | 'none';
  /** The AOF's fsync policy. Default: `everysec`, Redis's own default. */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** More command-line arguments (`['--maxmemory-policy', 'allkeys-lru']`, `['--rename-command', 'CONFIG', '']`). */
  args?: string[];
}

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';

/** Whether the binary is there: REDIS_SERVER as a path, else `redis-server` on the PATH. */
function found(): boolean {
  if (BINARY.includes('/')) return existsSync(BINARY);
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((folder) => folder !== '' && existsSync(join(folder, BINARY)));
}
const MISSING = 'redis-server not found: install the Debian package redis-server (or set REDIS_SERVER)';

/**
 * Whether the Redis tests of a file run. Without the binary they are skipped with one line, except in CI
 * (`CI=true`), where they run and fail: a CI that silently skips the only Redis tests proves nothing.
 */
export const redisTests: { skip: boolean } = { skip: !found() && process.env.CI !== 'true' };
if (redisTests.skip) skippedWithout(REDIS, MISSING);

/** A started server process, and why it is gone once it is. */
interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  dead(): Error | undefined;
}

function spawnServer(port: number, dir: string, options: RedisServerOptions): Running {
  const persistence =
    options.persistence === 'none'
      ? ['--appendonly', 'no']
      : ['--appendonly', 'yes', '--appendfsync', options.appendfsync ?? 'everysec'];
  const child = spawn(
    BINARY,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      ...persistence,
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = captureOutput(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let dead: Error | undefined;
  child.once('error', (error) => {
    dead = new Error(`cannot start ${BINARY} (install redis-server): ${error.message}`);
  });
  child.once('exit', (code, signal) => {
    dead ??= new Error(`${BINARY} exited with ${code ?? signal}: ${output()}`);
  });
  return { child, exited, dead: () => dead };
}

/** Starts a redis-server and resolves once it answers PING. */
export async function startRedisServer(initial: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cleanturn-redis-'));
  let options = initial;
  let running = spawnServer(port, dir, options);
  let paused = false;

  // A safety net: should the test process end without stop(), the server ends with it.
  const killOnExit = () => running.child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const clients: Redis[] = [];
  const client = () => {
    const c = new Redis({ host: '127.0.0.1', port, lazyConnect: false, maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };
  const resume = () => {
    if (!paused) return;
    paused = false;
    running.child.kill('SIGCONT');
  };
  const halt = async (signal: NodeJS.Signals) => {
    const { child, exited } = running;
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      // A stopped process takes a SIGTERM only once it goes on.
      resume();
      await exited;
    }
    paused = false;
  };
  const stop = async () => {
    resume();
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    clients.length = 0;
    process.removeListener('exit', killOnExit);
    await halt('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };

  /** Waits until the server answers PING: polls with a short-lived client, for 20 s at the most. */
  const ready = async () => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const dead = running.dead();
      if (dead !== undefined) {
        await stop();
        throw dead;
      }
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`redis-server on port ${port} did not answer PING within 20 s`);
      }
      const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 25));
      } finally {
        probe.disconnect();
      }
    }
  };
  const kill = () => halt('SIGKILL');
  const restart = async ({ wipe = false, ...serverOptions }: RedisRestartOptions = {}) => {
    await halt('SIGKILL');
    if (wipe) {
      for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true });
    }
    if (Object.keys(serverOptions).length > 0) options = serverOptions;
    running = spawnServer(port, dir, options);
    await ready();
  };
  const pause = () => {
    if (paused) return;
    paused = true;
    running.child.kill('SIGSTOP');
  };

  await ready();
  return {
    port,
    get pid() {
      const { pid } = running.child;
      if (pid === undefined) throw new Error('redis-server has no pid');
      return pid;
    },
    client,
    kill,
    restart,
    pause,
    resume,
    stop,
  };
}
