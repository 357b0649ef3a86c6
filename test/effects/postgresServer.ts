// A throwaway PostgreSQL server for a test file: a cluster initialised in a temporary folder, started on a free
// port of 127.0.0.1 (its unix socket in the same folder), without durability (fsync off: nothing here survives
// the test anyway), and stopped (fast shutdown, waited for) and removed at the end. It needs Debian's binaries
// (/usr/lib/postgresql/<version>/bin, the package `postgresql`), or POSTGRES_BIN naming a folder with `initdb`
// and `postgres`. PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` system user the
// package creates (or `nobody`), through spawn's uid and gid.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { POSTGRES, skippedWithout } from '../support/requirements.js';
import { captureOutput, freePort } from '../support/serverProcess.js';

/** A running PostgreSQL server. */
export interface PostgresServer {
  port: number;
  /** `postgresql://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  url: string;
  /** A new pool on the server; `stop()` ends every pool it made. */
  pool(options?: pg.PoolConfig): pg.Pool;
  /** Ends the pools, stops the server, waits for it to exit and removes its folder. */
  stop(): Promise<void>;
}

/** The server of a describe block's tests (`usePostgresServer()`), and table names for them. */
export interface PostgresFixture {
  /** The server's port (once the block's tests run, not while they are collected). */
  readonly port: number;
  /** `postgresql://postgres@127.0.0.1:<port>/postgres` (once the block's tests run). */
  readonly url: string;
  /** A new pool on the server, ended with it after the block. */
  pool(options?: pg.PoolConfig): pg.Pool;
  /** A table name no other test of the block uses: `name` and a number. */
  freshTable(name: string): string;
}

/**
 * A PostgreSQL server for the tests of the describe block this is called in: started before them (beforeAll) and
 * stopped after them (afterAll), with a minute for each.
 */
export function usePostgresServer(): PostgresFixture {
  let server: PostgresServer | undefined;
  let tables = 0;
  beforeAll(async () => {
    server = await startPostgresServer();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  }, 60_000);
  const started = () => {
    if (server === undefined)
      throw new Error('the PostgreSQL server is not started yet: use it in a test or hook');
    return server;
  };
  return {
    get port() {
      return started().port;
    },
    get url() {
      return started().url;
    },
    pool: (options) => started().pool(options),
    freshTable: (name) => `${name}_${++tables}`,
  };
}

/** Where `initdb` and `postgres` are. */
interface Binaries {
  initdb: string;
  postgres: string;
}

/** The binaries: POSTGRES_BIN, else the newest of Debian's /usr/lib/postgresql/<version>/bin, else PATH. */
function findBinaries(): Binaries | undefined {
  const inFolder = (folder: string): Binaries | undefined => {
    const found = { initdb: join(folder, 'initdb'), postgres: join(folder, 'postgres') };
    return existsSync(found.initdb) && existsSync(found.postgres) ? found : undefined;
  };
  if (process.env.POSTGRES_BIN) return inFolder(process.env.POSTGRES_BIN);
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+(\.\d+)?$/.test(v))
        .sort((x, y) => Number(y) - Number(x))
    : [];
  for (const version of versions) {
    const found = inFolder(join(debian, version, 'bin'));
    if (found) return found;
  }
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    const found = folder === '' ? undefined : inFolder(folder);
    if (found) return found;
  }
  return undefined;
}

const binaries = findBinaries();
const MISSING = 'PostgreSQL not found: install the Debian package postgresql (or set POSTGRES_BIN)';

/**
 * Whether the PostgreSQL tests of a file run. Without the binaries they are skipped with one line, except in CI
 * (`CI=true`), where they run and fail: a CI that silently skips the only Postgres tests proves nothing.
 */
export const postgresTests: { skip: boolean } = { skip: binaries === undefined && process.env.CI !== 'true' };
if (postgresTests.skip) skippedWithout(POSTGRES, MISSING);

/** As root: the uid and gid of the user the server runs as (`postgres`, else `nobody`). Otherwise nothing. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const users = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .filter((fields) => fields.length >= 4);
  for (const name of ['postgres', 'nobody']) {
    const entry = users.find((fields) => fields[0] === name);
    if (entry) return { uid: Number(entry[2]), gid: Number(entry[3]) };
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

/** A base folder that `user` can reach: the temporary folder when every ancestor lets others through, else /tmp. */
function baseFolder(user: { uid: number } | undefined): string {
  const base = tmpdir();
  if (user === undefined) return base;
  for (let folder = base; ; folder = dirname(folder)) {
    if ((statSync(folder).mode & 0o001) === 0) return '/tmp';
    if (dirname(folder) === folder) return base;
  }
}

/** Runs a command to its end; rejects with its output when it fails. */
async function run(
  command: string,
  args: string[],
  user: { uid: number; gid: number } | undefined,
): Promise<void> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...user });
  const output = captureOutput(child);
  const [code] = (await Promise.race([
    once(child, 'exit'),
    once(child, 'error').then(([e]) => Promise.reject(e)),
  ])) as [number | null];
  if (code !== 0) throw new Error(`${command} exited with ${code}: ${output()}`);
}

/** Starts a PostgreSQL server in a new temporary folder and resolves once it answers a query. */
export async function startPostgresServer(): Promise<PostgresServer> {
  if (binaries === undefined) throw new Error(MISSING);
  const user = serverUser();
  const dir = mkdtempSync(join(baseFolder(user), 'cleanturn-pg-'));
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  try {
    await run(
      binaries.initdb,
      [
        '-D',
        data,
        '-U',
        'postgres',
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--no-locale',
        '--no-sync',
        '--no-instructions',
      ],
      user,
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  // A port can be taken between freePort and the bind: try a few.
  for (let tries = 1; ; tries++) {
    try {
      return await startOn(await freePort(), dir, data, user);
    } catch (error) {
      if (!(error instanceof PortTakenError) || tries === 3) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

class PortTakenError extends Error {}

async function startOn(
  port: number,
  dir: string,
  data: string,
  user: { uid: number; gid: number } | undefined,
): Promise<PostgresServer> {
  const postgres = (binaries as Binaries).postgres;
  const child: ChildProcess = spawn(
    postgres,
    [
      ...['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir],
      ...['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
      ...['-c', 'max_connections=100', '-c', 'shared_buffers=16MB'],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...user },
  );
  const output = captureOutput(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Why the server is gone, once it is.
  let dead: Error | undefined;
  child.once('error', (error) => {
    dead = new Error(`cannot start ${postgres}: ${error.message}`);
  });
  child.once('exit', (code, signal) => {
    dead ??= /could not bind|already in use/i.test(output())
      ? new PortTakenError(`port ${port} taken: ${output()}`)
      : new Error(`${postgres} exited with ${code ?? signal}: ${output()}`);
  });

  // A safety net: should the test process end without stop(), the server ends with it (immediate shutdown).
  const killOnExit = () => {
    child.kill('SIGQUIT');
  };
  process.once('exit', killOnExit);

  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const pools: pg.Pool[] = [];
  const pool = (options: pg.PoolConfig = {}) => {
    const p = new pg.Pool({ connectionString: url, ...options });
    // An idle connection that the server closes must not crash the test process.
    p.on('error', () => {});
    pools.push(p);
    return p;
  };
  const halt = async () => {
    process.removeListener('exit', killOnExit);
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      // Fast shutdown: disconnects the clients, then exits. Immediate (SIGQUIT) if that has not happened in 20 s.
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGQUIT'), 20_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const stop = async () => {
    // The server's fast shutdown closes every connection, so that ending the pools cannot wait on a client a
    // failed test kept checked out; a pool still not ended after 5 s is left to the garbage collector.
    await halt();
    await Promise.all(
      pools.map(async (p) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise((resolve) => {
          timer = setTimeout(resolve, 5_000);
        });
        await Promise.race([p.end().catch(() => undefined), late]);
        clearTimeout(timer);
      }),
    );
    pools.length = 0;
    rmSync(dir, { recursive: true, force: true });
  };

  // Wait until it answers a query: poll with a short-lived client, for 30 s at the most.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (dead !== undefined) {
      await halt();
      throw dead;
    }
    if (Date.now() > deadline) {
      await halt();
      throw new Error(`postgres on port ${port} did not answer within 30 s: ${output()}`);
    }
    const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.query('SELECT 1');
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 25));
    } finally {
      await probe.end().catch(() => undefined);
    }
  }
  return { port, url, pool, stop };
}
