// stopTurn against a server whose answer never ends: the answer's status decides, and the body is not read to its
// end (it would never come, and would grow in memory).

import { createServer, type ServerResponse } from 'node:http';
import { stopTurn, TransportError } from 'cleanturn/transport';
import { afterEach, expect, it } from 'vitest';
import { listenOnLoopback } from '../support/httpServer.js';

let close: (() => Promise<void>) | undefined;
const open: ServerResponse[] = [];
afterEach(async () => {
  for (const res of open.splice(0)) res.destroy();
  await close?.();
  close = undefined;
});

/** A server that answers `status` and then writes its body forever. */
async function endless(status: number): Promise<string> {
  const server = createServer((_req, res) => {
    open.push(res);
    res.writeHead(status, { 'content-type': 'text/plain' });
    const write = () => {
      if (res.destroyed) return;
      res.write('x'.repeat(1024), () => setTimeout(write, 1));
    };
    write();
  });
  const listening = await listenOnLoopback(server);
  close = listening.close;
  return `http://127.0.0.1:${listening.port}/turns/turn-42/stop`;
}

it.each([202, 404])(
  'a %i whose body never ends: answered at once',
  async (status) => {
    const url = await endless(status);
    expect(await stopTurn(url)).toBe(status === 202);
  },
  5_000,
);

it('a 500 whose body never ends: an TransportError http-status with the start of the body', async () => {
  const url = await endless(500);
  const error = await stopTurn(url).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(TransportError);
  expect(error).toMatchObject({ code: 'http-status' });
  expect((error as TransportError).status).toBe(500);
  expect((error as TransportError).body?.length).toBeLessThanOrEqual(4096);
}, 8_000);
