// A local stand-in for a provider's API, so that the examples run offline: it replays a recorded stream, breaking
// the first response part-way through (a connection reset, which the pipeline retries) and sending it whole after.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running replay server. */
export interface ReplayServer {
  /** Where it listens: `http://127.0.0.1:<port>`, without a path. */
  url: string;
  /** Closes the server and any connection still open. */
  close: () => Promise<void>;
}

/**
 * Starts a server on 127.0.0.1 (a free port) that answers every request with the recorded stream `fixture`, a file
 * of `test/fixtures/`. The first response stops at the byte offset `cutAt(body)` and its connection is reset.
 */
export async function replayServer(fixture: string, cutAt: (body: Buffer) => number): Promise<ReplayServer> {
  const body = readFileSync(new URL(`../../test/fixtures/${fixture}`, import.meta.url));
  const cut = cutAt(body);
  if (cut <= 0 || cut >= body.length) throw new Error(`no place to cut ${fixture} at: ${cut}`);
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (requests++ > 0) return res.end(body);
      // Let the written bytes leave before the reset.
      res.write(body.subarray(0, cut), () => setImmediate(() => res.destroy()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
