// A TCP proxy on 127.0.0.1 (random free port) that forwards both ways until told to hold the replies of the
// connections open at that moment: what the client sends still reaches the server, what the server answers never
// comes back. That is a query whose answer is lost after the server ran it, as a network that fails mid-query or
// a load balancer that drops a connection leaves it. Connections opened later are forwarded as usual.
import { connect, createServer, type Socket } from 'node:net';

export interface ReplyHoldingProxy {
  /** The port clients connect to. */
  port: number;
  /** From now on, the server's bytes on every connection open at this moment are dropped. Returns how many. */
  holdReplies(): number;
  /** Closes every connection and stops accepting. */
  close(): Promise<void>;
}

/** Starts a proxy to `port` of 127.0.0.1. */
export async function startReplyHoldingProxy(port: number): Promise<ReplyHoldingProxy> {
  const open = new Set<{ client: Socket; upstream: Socket; held: boolean }>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    const pair = { client, upstream, held: false };
    open.add(pair);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (!pair.held) client.write(chunk);
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
  return {
    port: address.port,
    holdReplies: () => {
      for (const pair of open) pair.held = true;
      return open.size;
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
