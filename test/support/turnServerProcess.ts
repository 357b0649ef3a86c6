// A turn server process for the two-process test (test/transport/turnResume.redis.test.ts), run with
// `node --import tsx`: an HTTP server on 127.0.0.1 (a free port) that serves `GET /turns/:id` as server-sent
// events from turnServer over a Redis turn log, each turn run by streamTurn against the provider at PROVIDER_URL
// (OpenAI Chat Completions). `?cutAfter=K` destroys the connection after its K-th message (once the bytes have
// left), as a proxy that drops a client would.
//
// Environment: REDIS_PORT, PROVIDER_URL, NAME. Writes JSON lines to stdout: `{"listening":port}` once it listens,
// `{"served":turnId,"lastEventId":…}` per connection, `{"ran":turnId}` when it runs a turn, `{"cut":turnId,
// "after":id}` when it cuts a connection.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openaiChat } from 'cleanturn/providers';
import { streamTurn, toSSE, turnServer } from 'cleanturn/transport';
import { redisTurnLog } from 'cleanturn/transport/redis';
import { Redis } from 'ioredis';
import type { Subscription } from 'rxjs';

const { REDIS_PORT, PROVIDER_URL, NAME = 'server' } = process.env;
if (REDIS_PORT === undefined || PROVIDER_URL === undefined)
  throw new Error('REDIS_PORT and PROVIDER_URL are needed');

const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ name: NAME, ...line })}\n`);

const client = new Redis({ host: '127.0.0.1', port: Number(REDIS_PORT) });
const turns = turnServer({ log: redisTurnLog({ client, blockMs: 1_000 }) });

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const match = /^\/turns\/([^/]+)$/.exec(url.pathname);
  if (req.method !== 'GET' || match === null) {
    res.writeHead(404).end();
    return;
  }
  let turnId: string;
  try {
    turnId = decodeURIComponent(match[1] as string);
  } catch {
    // Not percent-encoded UTF-8: no turn id at all.
    res.writeHead(400).end();
    return;
  }
  const header = req.headers['last-event-id'];
  const lastEventId = typeof header === 'string' ? header : undefined;
  const cutAfter = Number(url.searchParams.get('cutAfter') ?? Number.POSITIVE_INFINITY);
  print({ served: turnId, lastEventId: lastEventId ?? null });

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  let sent = 0;
  let cut = false;
  let subscription: Subscription | undefined;
  subscription = turns
    .serve({
      turnId,
      lastEventId,
      run: () => {
        print({ ran: turnId });
        return streamTurn({
          turnId,
          adapter: openaiChat(),
          backoff: false,
          request: ({ signal }) => ({
            url: PROVIDER_URL,
            init: {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'gpt-4o',
                stream: true,
                messages: [{ role: 'user', content: turnId }],
              }),
              signal,
            },
          }),
        });
      },
    })
    .subscribe({
      next: (message) => {
        if (cut) return;
        if (++sent < cutAfter) {
          res.write(toSSE(message));
          return;
        }
        cut = true;
        subscription?.unsubscribe();
        // Once the message's bytes have left: the client has it, and then the connection is gone.
        res.write(toSSE(message), () => {
          print({ cut: turnId, after: message.id });
          res.socket?.destroy();
        });
      },
      complete: () => res.end(),
      error: () => res.destroy(),
    });
  res.on('close', () => subscription?.unsubscribe());
});

server.listen(0, '127.0.0.1', () => {
  print({ listening: (server.address() as AddressInfo).port });
});
