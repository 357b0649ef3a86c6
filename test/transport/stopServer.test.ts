// turnServer: a browser that drops its connection is not a stop (the turn goes on for the client that comes back);
// an explicit stop request is (`POST /turns/<id>/stop`, sent with `stopTurn`). The stop reaches the runner through
// the shared log, also when the request reaches another instance. Over real loopback HTTP: a provider server that
// trickles its answer, the turn server's HTTP server, and fetch clients.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TurnEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import {
  fromTurnSSE,
  memoryTurnLog,
  stopTurn,
  streamTurn,
  TransportError,
  type TurnLog,
  type TurnServer,
  toSSE,
  turnServer,
} from 'cleanturn/transport';
import { finalize, lastValueFrom, NEVER, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { type HttpServer, startHttpServer } from '../support/turnHttpServer.js';

let cleanup: (() => Promise<void>)[] = [];
expectNoLeftoverHandles(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A provider answer of `count` text chunks `gapMs` apart, then the finish. */
function trickle(count: number, gapMs: number): ScriptedResponse {
  return {
    body: '',
    stream: async function* () {
      for (let i = 0; i < count; i++) {
        yield chunk({ content: `${i} ` });
        await sleep(gapMs);
      }
      yield `${chunk({}, 'stop')}data: [DONE]\n\n`;
    },
  };
}

async function provider(script: ScriptedResponse[]): Promise<TestServer> {
  const srv = await startServer(script);
  cleanup.push(() => srv.close());
  return srv;
}

/**
 * The guide's HTTP server of turns: `GET /turns/<id>` streams the turn, `POST /turns/<id>/stop` stops it (202, or
 * 404 when no turn by that id runs). Each turn is a streamTurn against `providerUrl`, with the run's signal.
 */
async function turnsHttp(
  turns: TurnServer<TurnEvent>,
  providerUrl: string,
): Promise<HttpServer & { runs: () => number }> {
  const counts = { runs: 0 };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const stop = /^\/turns\/([^/]+)\/stop$/.exec(path);
    if (stop !== null && req.method === 'POST') {
      const turnId = decodeURIComponent(stop[1] ?? '');
      turns.stop(turnId, 'stopped by the user').then(
        (stopped) => res.writeHead(stopped ? 202 : 404).end(),
        () => res.writeHead(500).end(),
      );
      return;
    }
    const turnId = decodeURIComponent(path.slice('/turns/'.length));
    const header = req.headers['last-event-id'];
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const subscription = turns
      .serve({
        turnId,
        lastEventId: typeof header === 'string' ? header : undefined,
        run: ({ signal }) => {
          counts.runs++;
          return streamTurn({
            turnId,
            adapter: openaiChat(),
            retry: 0,
            signal,
            request: ({ signal: attempt }) => ({
              url: providerUrl,
              init: { method: 'POST', body: '{}', signal: attempt },
            }),
          });
        },
      })
      .subscribe({
        next: (message) => res.write(toSSE(message)),
        complete: () => res.end(),
        error: () => res.destroy(),
      });
    res.on('close', () => subscription.unsubscribe());
  };
  const http = await startHttpServer(handler);
  cleanup.push(() => http.close());
  return { ...http, runs: () => counts.runs };
}

/** Waits until `check` holds (polling), at most `limitMs`. */
async function until(check: () => boolean, limitMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error('the condition never held');
    await sleep(5);
  }
}

const textOf = (events: TurnEvent[]) => events.map((e) => (e.type === 'text' ? e.text : '')).join('');

describe('turnServer: a dropped connection is not a stop', () => {
  it('a client that goes away mid-turn leaves the turn running; a client that comes back reads all of it', async () => {
    const llm = await provider([trickle(10, 30)]);
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const http = await turnsHttp(turns, llm.url);
    // The browser reads two events, then its tab closes.
    const first = await lastValueFrom(fromTurnSSE(() => `${http.url}/turns/turn-1`).pipe(take(2), toArray()));
    expect(first).toHaveLength(2);
    expect(turns.running).toBe(1);
    await sleep(50);
    expect(llm.aborted).toBe(0);
    // It comes back (a new page, no Last-Event-ID) and reads the whole turn, which ran once and to its end.
    const again = await lastValueFrom(fromTurnSSE(() => `${http.url}/turns/turn-1`).pipe(toArray()));
    expect(textOf(again)).toBe('0 1 2 3 4 5 6 7 8 9 ');
    expect(again.at(-1)?.type).toBe('finish');
    expect(http.runs()).toBe(1);
    expect(llm.requests).toHaveLength(1);
    expect(llm.aborted).toBe(0);
  });
});

describe('turnServer.stop and stopTurn', () => {
  it('a stop request stops the run: its provider request is aborted, and the reader ends with TransportError turn-stopped', async () => {
    const llm = await provider([trickle(200, 20)]);
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    const http = await turnsHttp(turns, llm.url);
    const seen: TurnEvent[] = [];
    // Two readers of the turn: the one that started it, and a second tab.
    const reading = lastValueFrom(fromTurnSSE(() => `${http.url}/turns/turn-2`).pipe(toArray())).then(
      () => 'completed',
      (e: unknown) => e,
    );
    const watching = fromTurnSSE(() => `${http.url}/turns/turn-2`).subscribe({
      next: (e) => seen.push(e),
      error: () => {},
    });
    cleanup.push(async () => watching.unsubscribe());
    await until(() => seen.length >= 2);
    expect(await stopTurn(`${http.url}/turns/turn-2/stop`)).toBe(true);
    const error = await reading;
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'turn-stopped' });
    expect((error as TransportError).retryable).toBe(false);
    expect((error as TransportError).message).toContain('stopped by the user');
    await until(() => llm.aborted === 1);
    expect(turns.running).toBe(0);
    // The turn has ended: nothing to stop any more.
    expect(await stopTurn(`${http.url}/turns/turn-2/stop`)).toBe(false);
    expect(await stopTurn(`${http.url}/turns/never-ran/stop`)).toBe(false);
    // A reader that comes later reads the same end.
    const late = await lastValueFrom(fromTurnSSE(() => `${http.url}/turns/turn-2`)).then(
      () => 'completed',
      (e: unknown) => e,
    );
    expect(late).toBeInstanceOf(TransportError);
    expect(late).toMatchObject({ code: 'turn-stopped' });
    expect(llm.requests).toHaveLength(1);
  });

  it('a stop request that reaches another instance stops the run where it runs, through the shared log', async () => {
    const llm = await provider([trickle(200, 20)]);
    const log: TurnLog<TurnEvent> = memoryTurnLog();
    const runner = turnServer<TurnEvent>({ log });
    const other = turnServer<TurnEvent>({ log });
    const a = await turnsHttp(runner, llm.url);
    const b = await turnsHttp(other, llm.url);
    const seen: TurnEvent[] = [];
    const reading = new Promise<unknown>((resolve) => {
      const subscription = fromTurnSSE(() => `${a.url}/turns/turn-3`).subscribe({
        next: (e) => seen.push(e),
        error: resolve,
        complete: () => resolve('completed'),
      });
      cleanup.push(async () => subscription.unsubscribe());
    });
    await until(() => seen.length >= 2);
    expect(other.running).toBe(0);
    expect(await stopTurn(`${b.url}/turns/turn-3/stop`)).toBe(true);
    expect(await reading).toBeInstanceOf(TransportError);
    expect(await reading).toMatchObject({ code: 'turn-stopped' });
    await until(() => llm.aborted === 1);
    expect(runner.running).toBe(0);
    expect(a.runs() + b.runs()).toBe(1);
  });

  it('a run that ignores its signal is stopped all the same: unsubscribed, and its log ends as stopped', async () => {
    const log: TurnLog<TurnEvent> = memoryTurnLog();
    const turns = turnServer<TurnEvent>({ log });
    let unsubscribed = false;
    const messages = turns.serve({
      turnId: 'turn-4',
      run: () => NEVER.pipe(finalize(() => (unsubscribed = true))),
    });
    const reading = lastValueFrom(messages.pipe(toArray()));
    await until(() => turns.running === 1);
    expect(await turns.stop('turn-4')).toBe(true);
    const all = await reading;
    expect(unsubscribed).toBe(true);
    expect(all.map((m) => m.type)).toEqual(['failed']);
    expect(JSON.parse(all[0]?.data ?? '')).toMatchObject({
      name: 'TransportError',
      code: 'turn-stopped',
      retryable: false,
    });
    expect(await turns.stop('turn-4')).toBe(false);
  });

  it('stopTurn says what the server answered: false for a 404, an TransportError http-status for a 500', async () => {
    const srv = await provider([
      { status: 404, body: '' },
      { status: 500, body: 'oops' },
    ]);
    expect(await stopTurn(srv.url)).toBe(false);
    await expect(stopTurn(srv.url)).rejects.toMatchObject({
      name: 'TransportError',
      code: 'http-status',
      status: 500,
    });
    expect(srv.requests.map((r) => r.method)).toEqual(['POST', 'POST']);
  });
});
