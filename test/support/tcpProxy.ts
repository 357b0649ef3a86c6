// A TCP proxy on 127.0.0.1 (random free port) between a client and a server, for tests that cut a connection in
// the middle of a response, as a browser's network or a load balancer does: it forwards the bytes both ways as they
// are, and `cut()` resets every connection open at that moment.
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** Where clients connect: `http://127.0.0.1:<port>`. */
  url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /**
   * Cuts every open connection: the client's side with a TCP reset (its read fails with ECONNRESET), the server's
   * side closed (the server sees its client go away). Returns how many were cut.
   */
  cut(): number;
  /** Cuts what is open and stops accepting. */
  close(): Promise<void>;
}

/** Starts a proxy to `target` (`http://host:port`). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<{ client: Socket; upstream: Socket }>();
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    const upstream = connect(Number(port), hostname);
    const pair = { client, upstream };
    open.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
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
  const cut = () => {
    const pairs = [...open];
    open.clear();
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    return pairs.length;
  };
  return {
    url: `http://127.0.0.1:${address.port}`,
    get connections() {
      return connections;
    },
    cut,
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}
