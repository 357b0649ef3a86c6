// A local stand-in for a provider's API, so that the examples run offline: it replays a recorded stream, breaking
// the first response part-way through (a connection reset, which the pipeline retries) and sending it whole after.
// The first response is another generation, as a real first attempt is: its text has other words, and it breaks off
// mid-word, so that what the reset takes away can be seen.
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
 * The words of the recorded text (every fixture of the examples streams `Checking order` then ` ORD-7781. `) and
 * those of the first, abandoned attempt in their place: `Looking up order ORD-7781 to refund the dam`, cut off.
 */
const abandonedWords: readonly (readonly [recorded: string, abandoned: string])[] = [
  ['Checking order', 'Looking up order'],
  [' ORD-7781. ', ' ORD-7781 to refund the dam'],
];

/** The text the first attempt streams before its connection is reset. */
export const abandonedText = abandonedWords.map(([, abandoned]) => abandoned).join('');

/**
 * Starts a server on 127.0.0.1 (a free port) that answers every request with the recorded stream `fixture`, a file
 * of `test/fixtures/`. The first response streams {@link abandonedText} in place of the recorded text, stops at the
 * byte offset `cutAt(body)` of its body, and its connection is reset.
 */
export async function replayServer(fixture: string, cutAt: (body: Buffer) => number): Promise<ReplayServer> {
  const body = readFileSync(new URL(`../../test/fixtures/${fixture}`, import.meta.url));
  let firstText = body.toString('utf8');
  for (const [recorded, abandoned] of abandonedWords) {
    if (!firstText.includes(recorded))
      throw new Error(`${fixture} does not stream ${JSON.stringify(recorded)}`);
    firstText = firstText.replaceAll(recorded, abandoned);
  }
  const first = Buffer.from(firstText);
  const cut = cutAt(first);
  if (cut <= 0 || cut >= first.length) throw new Error(`no place to cut ${fixture} at: ${cut}`);
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (requests++ > 0) return res.end(body);
      // Let the written bytes leave before the reset.
      res.write(first.subarray(0, cut), () => setImmediate(() => res.destroy()));
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
