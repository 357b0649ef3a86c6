// A TCP proxy on 127.0.0.1 (random free port) between clients and a server, for tests that break a connection the
// way a network or a load balancer does, at the moment the test picks. It forwards the bytes both ways as they are,
// until told otherwise:
// - `cut()` resets every connection open at that moment: a response cut in the middle, as a browser's network
//   or a load balancer cuts it.
// - `holdReplies()` keeps what the server answers on the connections open at that moment: the server ran the
//   commands, the client does not hear back. `releaseReplies()` forwards what was kept; never released, it is an
//   answer lost after the server ran the query.
// - `holdRequestsFrom(match)` keeps what a client sends from the first chunk that `match` accepts on: the server
//   has not seen it yet. `releaseRequests()` forwards what was kept.
// Nothing kept is dropped or reordered: a release forwards the kept bytes in order, ahead of later ones. So a test
// decides what the server has run, and what the client has heard, at each step, without waiting on a clock.
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** Where clients connect: `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The port clients connect to, on 127.0.0.1. */
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /**
   * Cuts every open connection: the client's side with a TCP reset (its read fails with ECONNRESET), the server's
   * side closed (the server sees its client go away). Returns how many were cut.
   */
  cut(): number;
  /**
   * From now on, the server's bytes on every connection open at this moment are kept, not forwarded, until
   * `releaseReplies()`; connections opened later are forwarded as usual. Returns how many connections it holds.
   */
  holdReplies(): number;
  /** The lines (`\r\n`) of the replies kept so far: one per reply for one-line replies (integers, errors). */
  readonly heldReplyLines: number;
  /** Forwards the kept replies to their clients, and the later ones as they come. */
  releaseReplies(): void;
  /**
   * Keeps a client's bytes from its first chunk whose text (latin1) `match` accepts on, until
   * `releaseRequests()`. One chunk matches at the most: the next needs another call.
   */
  holdRequestsFrom(match: (chunk: string) => boolean): void;
  /** Whether a client's bytes are kept now. */
  readonly requestsHeld: boolean;
  /** Forwards the kept client bytes to the server, and the later ones as they come; forgets a pending `match`. */
  releaseRequests(): void;
  /**
   * Resolves once `condition()` holds, checked at once and after every chunk the proxy forwards or keeps, either
   * way: a condition on what the proxy saw (`heldReplyLines`, `requestsHeld`), not on what a client has read.
   */
  until(condition: () => boolean): Promise<void>;
  /** Cuts what is open (as `cut()`) and stops accepting. */
  close(): Promise<void>;
}

/** One connection through the proxy, and what it keeps of each direction (undefined: forwarding). */
interface Link {
  client: Socket;
  upstream: Socket;
  replies: Buffer[] | undefined;
  requests: Buffer[] | undefined;
}

/** Starts a proxy to `target`: `http://host:port`, or a port of 127.0.0.1. */
export async function startTcpProxy(target: string | number): Promise<TcpProxy> {
  const { hostname, port } =
    typeof target === 'number' ? { hostname: '127.0.0.1', port: target } : new URL(target);
  const open = new Set<Link>();
  let connections = 0;
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
    connections++;
    const upstream = connect(Number(port), hostname);
    const link: Link = { client, upstream, replies: undefined, requests: undefined };
    open.add(link);
    client.on('data', (chunk: Buffer) => {
      if (link.requests === undefined && requestMatch?.(chunk.toString('latin1'))) {
        requestMatch = undefined;
        link.requests = [];
      }
      if (link.requests === undefined) upstream.write(chunk);
      else link.requests.push(chunk);
      check();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (link.replies === undefined) client.write(chunk);
      else {
        link.replies.push(chunk);
        heldReplyLines += chunk.toString('latin1').split('\r\n').length - 1;
      }
      check();
    });
    // An end is passed on as a pipe passes it, unless bytes are kept ahead of it (the close that follows ends both).
    client.on('end', () => {
      if (link.requests === undefined) upstream.end();
    });
    upstream.on('end', () => {
      if (link.replies === undefined) client.end();
    });
    const drop = () => {
      open.delete(link);
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
  const cut = () => {
    const links = [...open];
    open.clear();
    for (const { client, upstream } of links) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    return links.length;
  };
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    get connections() {
      return connections;
    },
    cut,
    holdReplies: () => {
      for (const link of open) link.replies ??= [];
      return open.size;
    },
    get heldReplyLines() {
      return heldReplyLines;
    },
    releaseReplies: () => {
      heldReplyLines = 0;
      for (const link of open) {
        const kept = link.replies ?? [];
        link.replies = undefined;
        for (const chunk of kept) link.client.write(chunk);
      }
    },
    holdRequestsFrom: (match) => {
      requestMatch = match;
    },
    get requestsHeld() {
      return [...open].some((link) => link.requests !== undefined);
    },
    releaseRequests: () => {
      requestMatch = undefined;
      for (const link of open) {
        const kept = link.requests ?? [];
        link.requests = undefined;
        for (const chunk of kept) link.upstream.write(chunk);
      }
    },
    until: (condition) =>
      new Promise<void>((resolve) => {
        if (condition()) resolve();
        else waiting.add({ condition, resolve });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}
