// A throwaway redis-server for a test file: started on a free port of 127.0.0.1, without persistence, and
// stopped (and waited for) at the end. CI installs redis-server with apt-get.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** A running redis-server. */
export interface RedisServer {
  port: number;
  /** A new client of the server; `stop()` closes every client it made. */
  client(): Redis;
  /** Closes the clients, stops the server and waits for it to exit. */
  stop(): Promise<void>;
}

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Starts a redis-server and resolves once it answers PING. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    BINARY,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Why the server is gone, once it is.
  let dead: Error | undefined;
  child.once('error', (error) => {
    dead = new Error(`cannot start ${BINARY} (install redis-server): ${error.message}`);
  });
  child.once('exit', (code) => {
    dead ??= new Error(`${BINARY} exited with ${code}: ${output}`);
  });

  // A safety net: should the test process end without stop(), the server ends with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const clients: Redis[] = [];
  const client = () => {
    const c = new Redis({ host: '127.0.0.1', port, lazyConnect: false, maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };
  const stop = async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    clients.length = 0;
    process.removeListener('exit', killOnExit);
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };

  // Wait until it answers PING: poll with a short-lived client, for 20 s at the most.
  const deadline = Date.now() + 20_000;
  for (;;) {
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
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 25));
    } finally {
      probe.disconnect();
    }
  }
  return { port, client, stop };
}
