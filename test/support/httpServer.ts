// A real HTTP server on 127.0.0.1 (random free port) for tests: serves a scripted response per request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the server does for one request. */
export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** The body, written in `chunks` pieces (default: one piece). Ignored when `stream` is given. */
  body: string | Uint8Array;
  /**
   * A body made on the fly (a hostile endless one): each piece is written with backpressure, and writing stops when
   * the client closes the connection. The response ends after the last piece unless `hold` is set.
   */
  stream?: () => Iterable<string | Uint8Array> | AsyncIterable<string | Uint8Array>;
  /** With `stream`: keep the socket open after the last piece instead of ending the response. */
  hold?: boolean;
  /** Split the body into writes of this many bytes, with a macrotask between writes. */
  chunkSize?: number;
  /** Destroy the socket after this many body bytes (a reset mid-stream). */
  destroyAfter?: number;
  /** End the response cleanly after this many body bytes (a clean close before the end). */
  endAfter?: number;
  /** Stop writing after this many bytes but keep the socket open (a stall). */
  stallAfter?: number;
}

export interface TestServer {
  url: string;
  /** Requests received so far, with their bodies. */
  requests: {
    method: string;
    url: string;
    headers: IncomingMessage['headers'];
    body: string;
    receivedAt: number;
  }[];
  /** Requests whose connection the client closed before the response ended. */
  aborted: number;
  close(): Promise<void>;
}

/**
 * Starts a server that answers the n-th request with `script(n)` (0-based). The last entry of an array repeats.
 */
export async function startServer(
  script: readonly ScriptedResponse[] | ((n: number, req: IncomingMessage, body: string) => ScriptedResponse),
): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const n = requests.length;
      requests.push({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
      });
      res.on('close', () => {
        if (!res.writableFinished) handle.aborted++;
      });
      const plan =
        typeof script === 'function'
          ? script(n, req, body)
          : (script[Math.min(n, script.length - 1)] as ScriptedResponse);
      void respond(plan, res);
    });
  });
  const { port, close } = await listenOnLoopback(server);
  const handle: TestServer = { url: `http://127.0.0.1:${port}`, requests, aborted: 0, close };
  return handle;
}

async function respond(plan: ScriptedResponse, res: ServerResponse): Promise<void> {
  if (plan.stream !== undefined) {
    await respondStreamed(plan, plan.stream, res);
    return;
  }
  const body = typeof plan.body === 'string' ? Buffer.from(plan.body, 'utf8') : Buffer.from(plan.body);
  res.writeHead(plan.status ?? 200, { 'content-type': 'text/event-stream', ...plan.headers });
  const limit = Math.min(body.length, plan.destroyAfter ?? plan.endAfter ?? plan.stallAfter ?? body.length);
  const size = plan.chunkSize ?? limit;
  for (let offset = 0; offset < limit; offset += Math.max(1, size)) {
    if (res.destroyed) return;
    res.write(body.subarray(offset, Math.min(limit, offset + Math.max(1, size))));
    if (plan.chunkSize !== undefined) await new Promise((resolve) => setImmediate(resolve));
  }
  if (plan.destroyAfter !== undefined) {
    // Let the written bytes leave before the reset.
    await new Promise((resolve) => setImmediate(resolve));
    res.socket?.destroy();
  } else if (plan.stallAfter !== undefined) {
    // Keep the socket open; the server's close() destroys it.
  } else {
    res.end();
  }
}

/** Writes a generated body with backpressure until it ends or the client goes away. */
async function respondStreamed(
  plan: ScriptedResponse,
  stream: NonNullable<ScriptedResponse['stream']>,
  res: ServerResponse,
): Promise<void> {
  res.writeHead(plan.status ?? 200, { 'content-type': 'text/event-stream', ...plan.headers });
  res.flushHeaders();
  for await (const piece of stream()) {
    if (res.destroyed || res.writableEnded) return;
    if (!res.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  if (!res.destroyed && !plan.hold) res.end();
}

/**
 * Listens on a free port of 127.0.0.1 and keeps track of the server's sockets: `close` destroys every one of them
 * (a half-read stream included) and then closes the server, so nothing outlives the test.
 */
export async function listenOnLoopback(
  server: Server,
): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return { port, close };
}
