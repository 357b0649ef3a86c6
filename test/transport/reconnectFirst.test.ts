// A turn stream cut before its first message: the runner's instance died before the turn had an event (or the
// connection broke at once). The request names the turn, and a turn server runs each turn id once, so fromTurnSSE
// connects again (without Last-Event-ID) instead of failing the read; fromSSE does not, unless asked.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromSSE, fromTurnSSE } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { expectNoLeftoverHandles } from '../support/resources.js';

let server: Server | undefined;
expectNoLeftoverHandles(async () => {});
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server that cuts its first `cuts` connections before any byte of their body, then serves one turn. */
async function start(
  cuts: number,
  before: 'headers' | 'body',
): Promise<{ url: string; requests: (string | null)[] }> {
  const requests: (string | null)[] = [];
  server = createServer((req, res) => {
    const header = req.headers['last-event-id'];
    requests.push(typeof header === 'string' ? header : null);
    if (requests.length <= cuts) {
      if (before === 'body') res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      setTimeout(() => res.socket?.destroy(), 5);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      'id: t:0\nevent: turn\ndata: {"type":"text","text":"hi","attempt":1}\n\n' +
        'id: t:1\nevent: end\ndata: {"outcome":"completed"}\n\n',
    );
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/turns/t`, requests };
}

describe('a turn stream cut before its first message', () => {
  for (const before of ['headers', 'body'] as const) {
    it(`fromTurnSSE connects again, without Last-Event-ID (cut before the ${before})`, async () => {
      const { url, requests } = await start(2, before);
      const events = await lastValueFrom(fromTurnSSE(() => url, { reconnect: { delay: 0 } }).pipe(toArray()));
      expect(events).toEqual([{ type: 'text', text: 'hi', attempt: 1 }]);
      expect(requests).toEqual([null, null, null]);
    });
  }

  it('fromTurnSSE still gives up after reconnect.count connections in a row without a message', async () => {
    const { url, requests } = await start(10, 'body');
    await expect(
      lastValueFrom(fromTurnSSE(() => url, { reconnect: { delay: 0, count: 2 } })),
    ).rejects.toMatchObject({ name: 'TransportError', code: 'connection' });
    expect(requests).toHaveLength(3);
  });

  it('fromSSE with reconnect does not: without an id, the server could only start over', async () => {
    const { url, requests } = await start(1, 'body');
    await expect(
      lastValueFrom(fromSSE(() => url, { reconnect: { count: 5, delay: 0 } })),
    ).rejects.toMatchObject({ name: 'TransportError', code: 'connection' });
    expect(requests).toHaveLength(1);
  });
});
