// The browser demo's server: builds the page with Vite, serves it, and streams the help-desk turn over SSE (one
// neutral ProviderEvent as JSON per event, see transcript.ts) slowly enough to break it at any moment.
//
//   npm run demo:browser             (PORT=5173 npm run demo:browser for a fixed port)
//
// The page waits 2 s between a broken attempt and the next one; `?retryDelay=5000` on its address makes it 5 s.
//
// Routes:
//   GET  /                             the built page and its assets
//   POST /turn?run=ID   one attempt of the turn; the server counts attempts per run: the first request
//                       streams attempt 1, every later one attempt 2 (with a new call id from attempt 3)
//   POST /break         destroys the socket of every open stream: the client sees the connection break
//                       mid-body, as after a proxy reset, and retries

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, resolve, sep } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { helpDeskAttempt } from './transcript.js';

/** Options of {@link startDemoServer}. */
export interface DemoServerOptions {
  /** The port; 0 or absent picks a free one. */
  port?: number;
  /** The interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** The time between two events of a stream, in milliseconds. Default 60. */
  eventDelayMs?: number;
  /** How long attempt 1 hesitates after `Refunding the dam` (a good moment to break it). Default 2500. */
  pauseMs?: number;
}

/** A running demo server. */
export interface DemoServer {
  /** The page's address, e.g. `http://127.0.0.1:5173/`. */
  url: string;
  /** Breaks the open streams, stops the server and removes the built page. */
  close(): Promise<void>;
}

const here = fileURLToPath(new URL('.', import.meta.url));

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
};

/** Builds the page with Vite into a temporary folder and starts the server. */
export async function startDemoServer(options: DemoServerOptions = {}): Promise<DemoServer> {
  const { port = 0, host = '127.0.0.1', eventDelayMs = 60, pauseMs = 2500 } = options;

  const outDir = await mkdtemp(join(tmpdir(), 'cleanturn-browser-demo-'));
  try {
    await build({
      configFile: join(here, 'vite.config.ts'),
      build: { outDir, emptyOutDir: true },
      logLevel: 'warn',
    });
  } catch (error) {
    await rm(outDir, { recursive: true, force: true });
    throw error;
  }

  // Attempts served so far, per run of the turn (the page sends a new run id each time the user starts).
  const attempts = new Map<string, number>();
  // The responses that are streaming now, to break or to end on close.
  const live = new Set<ServerResponse>();

  const streamAttempt = async (req: IncomingMessage, res: ServerResponse, run: string) => {
    const attempt = (attempts.get(run) ?? 0) + 1;
    attempts.set(run, attempt);
    if (attempts.size > 1000) attempts.delete(attempts.keys().next().value as string);
    req.resume();

    const gone = new AbortController();
    res.on('close', () => {
      live.delete(res);
      gone.abort();
    });
    live.add(res);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-demo-attempt': String(attempt),
    });
    res.flushHeaders();

    try {
      for (const step of helpDeskAttempt(attempt)) {
        await sleep(step.kind === 'hesitate' ? pauseMs : eventDelayMs, undefined, { signal: gone.signal });
        if (step.kind === 'event') res.write(`data: ${JSON.stringify(step.event)}\n\n`);
      }
      res.end();
    } catch (error) {
      // Aborted: the client went away or /break destroyed the socket. Anything else is a bug to show.
      if (!gone.signal.aborted) throw error;
    }
  };

  const serveFile = async (res: ServerResponse, pathname: string) => {
    const file = resolve(outDir, `.${pathname === '/' ? '/index.html' : decodeURIComponent(pathname)}`);
    if (!file.startsWith(outDir + sep)) return notFound(res);
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      return notFound(res);
    }
    res.writeHead(200, {
      'content-type': contentTypes[extname(file)] ?? 'application/octet-stream',
      'cache-control': 'no-store',
    });
    res.end(body);
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handle = async () => {
      if (req.method === 'POST' && url.pathname === '/turn') {
        return streamAttempt(req, res, url.searchParams.get('run') ?? 'default');
      }
      if (req.method === 'POST' && url.pathname === '/break') {
        req.resume();
        const broken = live.size;
        // The real fault: the socket goes away mid-stream, without a proper end of the chunked body.
        for (const stream of live) stream.socket?.destroy();
        live.clear();
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ broken }));
      }
      if (req.method === 'GET' || req.method === 'HEAD') return serveFile(res, url.pathname);
      return notFound(res);
    };
    handle().catch((error: unknown) => {
      console.error(error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });

  await new Promise<void>((ready, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ready());
  });
  const address = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}/`,
    close() {
      closing ??= (async () => {
        for (const stream of live) stream.destroy();
        live.clear();
        await new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        });
        await rm(outDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
  res.end('not found');
}

// Run as a script: `tsx examples/browser/serve.ts`.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await startDemoServer({ port: Number(process.env.PORT ?? 0) });
  console.log(`cleanturn browser demo: ${server.url}  (Ctrl+C to stop)`);
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
