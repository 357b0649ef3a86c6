// The gateway process of the gateway bench (bench/gateway.ts), run with `node --expose-gc --import tsx`: an HTTP
// server on 127.0.0.1 (a free port) that serves `GET /turns/<turn id>`, either as the floor, a plain SSE relay that
// pipes the provider's bytes through unparsed, or as turnServer (memory or Redis log) running each turn with
// streamTurn against the provider and writing each message with toSSE. It answers its parent over IPC: its CPU
// time, its memory after GC, and closing.
//
// Argument: the JSON of a GatewayChildConfig.

import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
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
}

/** A request of the parent. */
export type GatewayRequest = { op: 'cpu' } | { op: 'memory' } | { op: 'close' };

/** The answers of the gateway process. */
export type GatewayAnswer =
  | { ready: number }
  | { cpu: { user: number; system: number }; wall: number }
  | { heapUsed: number; rss: number; external: number }
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
    handler = (req, res) => {
      const turnId = turnIdOf(req);
      if (turnId === undefined) {
        res.writeHead(404).end();
        return;
      }
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
      send({ cpu, wall: performance.now() - started });
      return;
    }
    if (message.op === 'memory') {
      void settle().then(() => {
        const m = process.memoryUsage();
        send({ heapUsed: m.heapUsed, rss: m.rss, external: m.external });
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
