// A request given as a Request object whose body streams: replay safety reads a copy of the body, which must not
// hold the request back until the body ends (it never does here).

import { createServer } from 'node:http';
import { openaiChat } from 'cleanturn/providers';
import { streamTurn } from 'cleanturn/transport';
import { lastValueFrom } from 'rxjs';
import { afterEach, expect, it } from 'vitest';
import { listenOnLoopback } from '../support/httpServer.js';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

it('a streaming body: the request is sent at once, and the turn ends with its answer', async () => {
  let requests = 0;
  let pullsWhenSent = -1;
  const server = createServer((req, res) => {
    requests++;
    pullsWhenSent = pulls;
    // Answers at once, without waiting for the body (which never ends).
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`${chunk({ content: 'ok' })}${chunk({}, 'stop')}data: [DONE]\n\n`);
    req.resume();
  });
  const listening = await listenOnLoopback(server);
  close = listening.close;

  // A body that streams for about 2 s.
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (++pulls === 100) controller.close();
      else controller.enqueue(new TextEncoder().encode(' '));
    },
  });
  const events = await lastValueFrom(
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiChat(),
      retry: 0,
      request: ({ signal }) =>
        new Request(`http://127.0.0.1:${listening.port}/v1/chat/completions`, {
          method: 'POST',
          body,
          signal,
          duplex: 'half',
        } as RequestInit),
    }),
    { defaultValue: undefined },
  );
  expect(events).toMatchObject({ type: 'finish', reason: 'stop' });
  expect(requests).toBe(1);
  // The request reached the server while its body was still streaming.
  expect(pullsWhenSent).toBeLessThan(100);
});
