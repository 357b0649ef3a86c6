// The transport guide's server of turns, for tests: a real HTTP server on 127.0.0.1 (random free port) that serves
// `GET /turns/<turn id>` as server-sent events from a turnServer, the turn id decoded from the path
// (decodeURIComponent) and the Last-Event-ID header passed on. It can cut a connection after a given number of
// messages, once their bytes have left, as a network that drops a client does. `startHttpServer` is the plain
// server under it, for a test's own handler.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TurnEvent } from 'cleanturn';
import { type TurnMessage, type TurnServer, toSSE } from 'cleanturn/transport';
import type { Observable } from 'rxjs';

/** A plain HTTP server on 127.0.0.1. */
export interface HttpServer {
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Closes every connection and stops the server. */
  close(): Promise<void>;
}

/** Starts an HTTP server on a free port of 127.0.0.1 that answers every request with `handler`. */
export async function startHttpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<HttpServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What the server saw of one request. */
export interface SeenRequest {
  /** The decoded turn id; undefined when the path does not decode (the request got a 400). */
  turnId: string | undefined;
  lastEventId: string | undefined;
}

export interface TurnHttpServer extends HttpServer {
  /** Every request so far, in order. */
  requests: SeenRequest[];
  /** How many times the turn server started `run`. */
  runs(): number;
}

/**
 * Serves `turns`, each turn started with `run`. The n-th connection (0-based) is cut after `cutAfter(n)` messages,
 * once their bytes have left: 0 cuts it before any, undefined never.
 */
export async function startTurnHttpServer<E = TurnEvent>(
  turns: TurnServer<E>,
  run: () => Observable<E>,
  cutAfter: (connection: number) => number | undefined = () => undefined,
): Promise<TurnHttpServer> {
  const requests: SeenRequest[] = [];
  let runs = 0;
  const server = await startHttpServer((req, res) => {
    const connection = requests.length;
    const header = req.headers['last-event-id'];
    const lastEventId = typeof header === 'string' ? header : undefined;
    let turnId: string;
    try {
      turnId = decodeURIComponent(
        new URL(req.url ?? '/', 'http://localhost').pathname.slice('/turns/'.length),
      );
    } catch {
      requests.push({ turnId: undefined, lastEventId });
      res.writeHead(400).end();
      return;
    }
    requests.push({ turnId, lastEventId });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const limit = cutAfter(connection);
    if (limit === 0) {
      res.destroy();
      return;
    }
    let sent = 0;
    const subscription = turns
      .serve({
        turnId,
        lastEventId,
        run: () => {
          runs++;
          return run();
        },
      })
      .subscribe({
        next: (message: TurnMessage) => {
          if (++sent !== limit) {
            res.write(toSSE(message));
            return;
          }
          // The cut: after this message has reached the socket.
          subscription?.unsubscribe();
          res.write(toSSE(message), () => res.destroy());
        },
        complete: () => res.end(),
        error: () => res.destroy(),
      });
    res.on('close', () => subscription.unsubscribe());
  });
  return { ...server, requests, runs: () => runs };
}
