// The gateway process of the gateway bench (bench/gateway.ts), run with `node --expose-gc --import tsx`: an HTTP
// server on 127.0.0.1 (a free port) that serves `GET /turns/<turn id>`, either as the floor, a plain SSE relay that
// pipes the provider's bytes through unparsed, or as turnServer (memory or Redis log) running each turn with
// streamTurn against the provider and writing each message with toSSE. It answers its parent over IPC: its CPU
// time (and, when asked, a CPU profile of the window between two such answers), its memory after GC (with the
// memory log, what the log's entries take of it), a heap snapshot, and closing.
//
// Argument: the JSON of a GatewayChildConfig.

import { writeFileSync } from 'node:fs';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { Session } from 'node:inspector';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import type { Subscription } from 'rxjs';

/** What the gateway process serves with. */
export type GatewayMode = 'relay' | 'memory' | 'redis';

/** The gateway process's argument. */
export interface GatewayChildConfig {
  mode: GatewayMode;
  /** The provider's Chat Completions URL (`http://127.0.0.1:<port>/v1/chat/completions`). */
  providerUrl: string;
  /** The redis-server's port (mode `redis`). */
  redisPort?: number;
  /** The directory of the benchmark build that holds transport-redis.js (see bench/gateway.ts). */
  buildDir: string;
  /**
   * Where to write a CPU profile (`.cpuprofile`, for Chrome DevTools) of the measured window: from the first `cpu`
   * request to the second.
   */
  cpuProfile?: string;
}

/** A request of the parent. */
export type GatewayRequest =
  | { op: 'cpu' }
  | { op: 'memory' }
  | { op: 'snapshot'; path: string }
  | { op: 'close' };

/** The answers of the gateway process. */
export type GatewayAnswer =
  | { ready: number }
  | { cpu: { user: number; system: number }; wall: number }
  | { heapUsed: number; rss: number; external: number; log?: { bytes: number; entries: number } }
  | { snapshot: string }
  | { closed: true; logErrors: number };

/** The request body the provider gets for a turn: the turn id is the user message. */
export function providerBody(turnId: string): string {
  return JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: turnId }] });
}

function turnIdOf(req: IncomingMessage): string | undefined {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (!path.startsWith('/turns/')) return undefined;
  try {
    return decodeURIComponent(path.slice('/turns/'.length));
  } catch {
    return undefined;
  }
}

async function main(config: GatewayChildConfig): Promise<void> {
  const send = (answer: GatewayAnswer) => process.send?.(answer);
  let logErrors = 0;
  let handler: (req: IncomingMessage, res: ServerResponse) => void;
  let close: () => Promise<void> = async () => {};
  /**
   * The memory log's entries of the live turns as they are now (undefined for the relay and the Redis log), for
   * {@link entryBytes}.
   */
  let logEntries: () => unknown[] | undefined = () => undefined;

  if (config.mode === 'relay') {
    // The floor: the provider's bytes piped to the client as they come, nothing parsed.
    const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
    const provider = new URL(config.providerUrl);
    handler = (req, res) => {
      const turnId = turnIdOf(req);
      if (turnId === undefined) {
        res.writeHead(404).end();
        return;
      }
      const body = providerBody(turnId);
      const upstream = httpRequest(
        {
          host: provider.hostname,
          port: provider.port,
          path: provider.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, {
            'content-type': answer.headers['content-type'] ?? 'text/event-stream',
            'cache-control': 'no-cache',
          });
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      res.on('close', () => upstream.destroy());
      upstream.end(body);
    };
    close = async () => agent.destroy();
  } else {
    const buildUrl = pathToFileURL(config.buildDir.endsWith('/') ? config.buildDir : `${config.buildDir}/`);
    const providers = (await import(
      new URL('providers.js', buildUrl).href
    )) as typeof import('cleanturn/providers');
    const transport = (await import(
      new URL('transport.js', buildUrl).href
    )) as typeof import('cleanturn/transport');
    const { streamTurn, toSSE, turnServer, memoryTurnLog } = transport;
    let log: import('cleanturn/transport').TurnLog<import('cleanturn').TurnEvent>;
    let quit: (() => Promise<unknown>) | undefined;
    if (config.mode === 'redis') {
      const { redisTurnLog } = (await import(
        new URL('transport-redis.js', buildUrl).href
      )) as typeof import('cleanturn/transport/redis');
      const { Redis } = await import('ioredis');
      const client = new Redis({ host: '127.0.0.1', port: config.redisPort as number });
      log = redisTurnLog({ client });
      quit = () => client.quit();
    } else {
      log = memoryTurnLog();
    }
    const turns = turnServer({
      log,
      onLogError: () => {
        logErrors++;
      },
    });
    const { providerUrl } = config;
    const live = new Set<string>();
    if (config.mode === 'memory') logEntries = () => entriesOf(log, live);
    handler = (req, res) => {
      const turnId = turnIdOf(req);
      if (turnId === undefined) {
        res.writeHead(404).end();
        return;
      }
      live.add(turnId);
      res.on('close', () => live.delete(turnId));
      const header = req.headers['last-event-id'];
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const subscription: Subscription = turns
        .serve({
          turnId,
          lastEventId: typeof header === 'string' ? header : undefined,
          run: ({ signal }) =>
            streamTurn({
              turnId,
              adapter: providers.openaiChat(),
              signal,
              request: ({ signal: attempt }) => ({
                url: providerUrl,
                init: {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: providerBody(turnId),
                  signal: attempt,
                },
              }),
            }),
        })
        .subscribe({
          next: (message) => res.write(toSSE(message)),
          complete: () => res.end(),
          error: () => res.destroy(),
        });
      res.on('close', () => subscription.unsubscribe());
    };
    close = async () => {
      await turns.close();
      await quit?.();
    };
  }

  const server = createServer(handler);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 1024, resolve));
  const started = performance.now();

  process.on('message', (message: GatewayRequest) => {
    if (message.op === 'cpu') {
      const cpu = process.cpuUsage();
      const answer = () => send({ cpu, wall: performance.now() - started });
      if (config.cpuProfile === undefined) answer();
      else profiler.toggle(config.cpuProfile).then(answer, (error: unknown) => console.error(error));
      return;
    }
    if (message.op === 'snapshot') {
      // A heap snapshot after GC, for a look at what the live turns hold (`--heap-snapshot` of bench/gateway.ts).
      void settle().then(() => send({ snapshot: writeHeapSnapshot(message.path) }));
      return;
    }
    if (message.op === 'memory') {
      void settle().then(async () => {
        const m = process.memoryUsage();
        // The entries the log held when the heap was measured, then what they take.
        const entries = logEntries();
        const log =
          entries === undefined ? undefined : { bytes: await entryBytes(entries), entries: entries.length };
        send({
          heapUsed: m.heapUsed,
          rss: m.rss,
          external: m.external,
          ...(log === undefined ? {} : { log }),
        });
      });
      return;
    }
    server.closeAllConnections();
    server.close();
    void close().then(() => {
      send({ closed: true, logErrors });
      process.disconnect();
    });
  });
  send({ ready: (server.address() as AddressInfo).port });
}

/**
 * What the memory log holds of the turns `turnIds`: the event of each entry (it keeps no entry object of its own:
 * a reader gets one made as it reads), and the end. A reader gets what the log holds at once, as it is (not copies).
 */
function entriesOf(
  log: import('cleanturn/transport').TurnLog<unknown>,
  turnIds: ReadonlySet<string>,
): unknown[] {
  const kept: unknown[] = [];
  for (const turnId of turnIds) {
    log
      .read(turnId, -1)
      .subscribe({
        next: (entry) => kept.push('event' in entry ? entry.event : entry),
        error: () => undefined,
      })
      .unsubscribe();
  }
  return kept;
}

/**
 * What a log's entries hold, in bytes: the heap that a copy of them takes (the same objects, their strings, and a
 * slot each in one array), measured after GC. An estimate: a copy's objects are laid out anew (a spread object
 * takes more than its copy), and a text event's string is also the decoder's, kept for the next request.
 */
async function entryBytes(entries: readonly unknown[]): Promise<number> {
  await settle();
  const without = process.memoryUsage().heapUsed;
  const copy = structuredClone(entries);
  await settle();
  const withCopy = process.memoryUsage().heapUsed;
  // The copy is used after the measure, so that it is alive during it.
  if (copy.length !== entries.length) throw new Error('the copy of the entries lost some');
  return withCopy - without;
}

/** A CPU profile of the window: the first toggle starts it, the second writes it to `path`. */
const profiler = {
  session: undefined as Session | undefined,
  async toggle(path: string): Promise<void> {
    const post = (method: string) =>
      new Promise<unknown>((resolve, reject) => {
        this.session?.post(method, (error, result) => (error ? reject(error) : resolve(result)));
      });
    if (this.session === undefined) {
      this.session = new Session();
      this.session.connect();
      await post('Profiler.enable');
      await post('Profiler.start');
      return;
    }
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    this.session.disconnect();
    writeFileSync(path, JSON.stringify(profile));
  },
};

/** Full collections, with a turn of the event loop between them (the memory figures are taken after GC). */
async function settle(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main(JSON.parse(process.argv[2] ?? '{}') as GatewayChildConfig);
}
