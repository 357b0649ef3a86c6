// A TCP proxy on 127.0.0.1 (random free port) in front of a redis-server that can hold either direction of its
// connections and let it go later, in order: `holdReplies()` keeps what the server answers (it ran the commands;
// the client just does not hear back yet), `holdRequestsFrom(match)` keeps what the client sends from the first
// chunk that matches on (the server has not seen it yet). Nothing is dropped: `releaseRequests()` and
// `releaseReplies()` forward what was kept. So a test decides what the server has run, and what the client has
// heard, at each step, without waiting on a clock.
import { connect, createServer, type Socket } from 'node:net';

export interface HoldingProxy {
  /** The port clients connect to. */
  port: number;
  /** From now on, the server's bytes are kept, not forwarded, until `releaseReplies()`. */
  holdReplies(): void;
  /** The lines (`\r\n`) of the replies kept so far: one per reply for one-line replies (integers, errors). */
  readonly heldReplyLines: number;
  /** Keeps the client's bytes from the first chunk whose text `match` accepts on, until `releaseRequests()`. */
  holdRequestsFrom(match: (chunk: string) => boolean): void;
  /** Whether client bytes are kept now. */
  readonly requestsHeld: boolean;
  /** Resolves once `condition()` holds, checked after every chunk either way. */
  until(condition: () => boolean): Promise<void>;
  /** Forwards the kept client bytes, and the later ones as they come. */
  releaseRequests(): void;
  /** Forwards the kept replies, and the later ones as they come. */
  releaseReplies(): void;
  /** Closes every connection and stops accepting. */
  close(): Promise<void>;
}

/** Starts a proxy to `port` of 127.0.0.1. */
export async function startHoldingProxy(port: number): Promise<HoldingProxy> {
  const open = new Set<{ client: Socket; upstream: Socket }>();
  let replies: Buffer[] | undefined;
  let requests: Buffer[] | undefined;
  let requestMatch: ((chunk: string) => boolean) | undefined;
  let heldReplyLines = 0;
  const waiting = new Set<{ condition: () => boolean; resolve: () => void }>();
  const check = () => {
    for (const wait of waiting) {
      if (!wait.condition()) continue;
      waiting.delete(wait);
      wait.resolve();
    }
  };
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    const pair = { client, upstream };
    open.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (requests === undefined && requestMatch?.(chunk.toString('latin1'))) {
        requestMatch = undefined;
        requests = [];
      }
      if (requests === undefined) upstream.write(chunk);
      else requests.push(chunk);
      check();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (replies === undefined) client.write(chunk);
      else {
        replies.push(chunk);
        heldReplyLines += chunk.toString('latin1').split('\r\n').length - 1;
      }
      check();
    });
    const drop = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', drop);
      socket.on('close', drop);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  /** Writes what was kept for one direction to every open connection's other end. */
  const flush = (kept: Buffer[], side: 'client' | 'upstream') => {
    for (const pair of open) for (const chunk of kept) pair[side].write(chunk);
  };
  return {
    port: address.port,
    holdReplies: () => {
      replies ??= [];
    },
    get heldReplyLines() {
      return heldReplyLines;
    },
    holdRequestsFrom: (match) => {
      requestMatch = match;
    },
    get requestsHeld() {
      return requests !== undefined;
    },
    until: (condition) =>
      new Promise<void>((resolve) => {
        if (condition()) resolve();
        else waiting.add({ condition, resolve });
      }),
    releaseRequests: () => {
      const kept = requests ?? [];
      requests = undefined;
      requestMatch = undefined;
      flush(kept, 'upstream');
    },
    releaseReplies: () => {
      const kept = replies ?? [];
      replies = undefined;
      heldReplyLines = 0;
      flush(kept, 'client');
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const { client, upstream } of open) {
          client.destroy();
          upstream.destroy();
        }
        open.clear();
        server.close(() => resolve());
      }),
  };
}
