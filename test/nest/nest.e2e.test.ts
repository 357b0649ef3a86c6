// The NestJS example (examples/nest) end to end, on Nest's own HTTP platform (Express) and real sockets, no mocks:
//
//   fromTurnSSE (the browser) ⇄ TCP proxy (cut once) ⇄ Nest @Sse() → turnServer → streamTurn ⇄ fake provider
//                                                                            → executeTools → Payments
//
// The provider resets its first connection in the middle of the answer (attempt 2 follows, after a reset); then
// the proxy cuts the browser's connection while attempt 2 streams, and the client reconnects with Last-Event-ID.
// The user reads attempt 2's text once, sees one reset (the provider's) and none for its own cut, the refund runs
// once, and the provider gets one request per attempt, none per reconnect.
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ResetEvent } from 'cleanturn';
import { turnView } from 'cleanturn/renderers';
import { fromTurnSSE, RemoteTurnError } from 'cleanturn/transport';
import { createParser } from 'eventsource-parser';
import { from, lastValueFrom, type Observable, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { Payments } from '../../examples/nest/payments.js';
import { TurnsModule } from '../../examples/nest/turns.module.js';
import { TurnsService, type TurnUpdate } from '../../examples/nest/turns.service.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { lastSentence, refund } from '../support/retriedChatServer.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';

const turnId = 'turn-42';
const question = 'Please refund order ORD-7781, the book arrived damaged.';
const opening = 'Checking order ORD-7781. ';

let provider: TestServer | undefined;
let app: INestApplication | undefined;
let proxy: TcpProxy | undefined;
/** Opens the provider's gate, so that a held response can end. */
let release: (() => void) | undefined;
const subscriptions: Subscription[] = [];
expectNoLeftoverHandles(async () => {
  for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
  release?.();
  await app?.close();
  await proxy?.close();
  await provider?.close();
  app = proxy = provider = release = undefined;
});

// Attempt 1: text, the whole refund call (c1), half a sentence, and the connection resets inside a word.
const attempt1 = chatTranscript([
  { text: opening },
  { call: { id: 'call_c1', name: 'issue_refund', args: JSON.stringify(refund) } },
  { text: 'Refunding the dam' },
  { text: 'aged book in full.' },
]);
// Attempt 2: the same refund with another id (c7), a sentence, the finish, the usage.
const attempt2 = chatTranscript(
  [
    { text: opening },
    { call: { id: 'call_c7', name: 'issue_refund', args: JSON.stringify(refund) } },
    { text: lastSentence },
  ],
  { usage: { prompt: 142, completion: 58 } },
);

/**
 * The fake provider (OpenAI Chat Completions): the first request gets attempt 1, reset after "Refunding the dam";
 * every later one gets attempt 2, held before its last sentence until the test opens the gate.
 */
async function startProvider(): Promise<TestServer> {
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held = attempt2.before(`text:${lastSentence}`);
  provider = await startServer((n) =>
    n === 0
      ? { body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam') }
      : {
          body: '',
          stream: async function* () {
            yield attempt2.body.subarray(0, held);
            await opened;
            yield attempt2.body.subarray(held);
          },
        },
  );
  return provider;
}

/** The example's module in a Nest app on a free port of 127.0.0.1, against the fake provider. */
async function startApp(baseUrl: string): Promise<INestApplication> {
  app = await NestFactory.create(TurnsModule.forRoot({ baseUrl: `${baseUrl}/v1`, backoff: false }), {
    logger: ['error', 'warn'],
    abortOnError: false,
  });
  await app.listen(0, '127.0.0.1');
  return app;
}

/** One HTTP connection of the client, as it went over the wire. */
interface Connection {
  /** The `Last-Event-ID` it was made with. */
  lastEventId: string | null;
  /** The ids of the events it received. */
  ids: string[];
}

/** A fetch for the client that records, per connection, its `Last-Event-ID` and the event ids it read. */
function recordingFetch(): { fetch: typeof fetch; connections: Connection[] } {
  const connections: Connection[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const connection: Connection = { lastEventId: request.headers.get('last-event-id'), ids: [] };
    connections.push(connection);
    const response = await fetch(request);
    if (response.body === null) return response;
    const parser = createParser({
      onEvent: (event) => {
        if (event.id !== undefined) connection.ids.push(event.id);
      },
    });
    const decoder = new TextDecoder();
    const tee = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        controller.enqueue(chunk);
      },
    });
    const { status, statusText, headers } = response;
    return new Response(response.body.pipeThrough(tee), { status, statusText, headers });
  };
  return { fetch: recording, connections };
}

/** What the client read of a turn so far, and how its stream ended. */
interface Reading {
  events: TurnUpdate[];
  ended: Promise<{ error?: unknown }>;
}

/** Subscribes to `turn$`, keeping its events; the subscription ends with the test. */
function read(turn$: Observable<TurnUpdate>): Reading {
  const events: TurnUpdate[] = [];
  let subscription: Subscription | undefined;
  const ended = new Promise<{ error?: unknown }>((resolve) => {
    subscription = turn$.subscribe({
      next: (event) => events.push(event),
      error: (error: unknown) => resolve({ error }),
      complete: () => resolve({}),
    });
  });
  if (subscription !== undefined) subscriptions.push(subscription);
  return { events, ended };
}

/** Waits until `check()` is true, polling; fails after `limitMs` (a bound, never an assertion on time). */
async function until(check: () => boolean, what: string, limitMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const attempt2Started = (events: readonly TurnUpdate[]) =>
  events.some((event) => event.type === 'text' && event.attempt === 2);

describe('examples/nest: a clean turn over @Sse() that the browser resumes', { timeout: 20_000 }, () => {
  it('a provider cut and a browser cut in one turn: attempt 2 read once, one reset, one refund, two requests', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    proxy = await startTcpProxy(await nest.getUrl());
    const cutter = proxy;
    const wire = recordingFetch();
    const url = `${cutter.url}/turns/${turnId}?message=${encodeURIComponent(question)}`;
    const turn = read(fromTurnSSE<TurnUpdate>(() => url, { fetch: wire.fetch, reconnect: { delay: 20 } }));

    // The provider cut attempt 1; attempt 2 streams, held before its last sentence: cut the browser now.
    await until(() => attempt2Started(turn.events), "attempt 2's first text");
    expect(cutter.cut()).toBe(1);
    await until(() => cutter.connections === 2, 'the reconnect');
    release?.();
    expect(await turn.ended).toEqual({});

    // Two connections: the second asked for the events after the last one the first delivered.
    expect(wire.connections).toHaveLength(2);
    const [first, second] = wire.connections as [Connection, Connection];
    expect(first.lastEventId).toBeNull();
    expect(first.ids.length).toBeGreaterThan(0);
    expect(second.ids.length).toBeGreaterThan(1);
    expect(second.lastEventId).toBe(first.ids.at(-1));
    // Every event once, in order, none missing: the turn's events, then its end.
    expect([...first.ids, ...second.ids]).toEqual(
      Array.from({ length: turn.events.length + 1 }, (_, seq) => `${turnId}:${seq}`),
    );

    // One reset, the provider's, read before the browser's cut; none after it.
    const resets = turn.events.filter((event): event is ResetEvent => event.type === 'reset');
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({ attempt: 2, reason: expect.stringMatching(/^the stream broke/) });
    expect(turn.events.indexOf(resets[0] as ResetEvent)).toBeLessThan(first.ids.length);
    const afterCut = turn.events.slice(first.ids.length);
    expect(afterCut.some((event) => event.type === 'reset')).toBe(false);
    expect(afterCut.some((event) => event.type === 'text' && event.text === lastSentence)).toBe(true);

    // What the user reads: attempt 2's text, once, and the refund done.
    const view = await lastValueFrom(from(turn.events).pipe(turnView()));
    expect(view.text).toBe(`${opening}${lastSentence}`);
    expect(view.attempt).toBe(2);
    expect(view.resets).toHaveLength(1);
    expect(view.finished).toBe(true);
    expect(view.toolCalls).toMatchObject([
      { id: 'call_c7', name: 'issue_refund', status: 'completed', output: { refund_id: 're_1' } },
    ]);
    const results = turn.events.filter((event) => event.type === 'tool-result');
    expect(results).toMatchObject([{ outcome: 'executed', call: { id: 'call_c7' } }]);

    // The refund ran once; the provider was asked once per attempt, never for a reconnect.
    const payments = nest.get(Payments);
    expect(payments.requests).toBe(1);
    expect(payments.refunds).toEqual([{ refund_id: 're_1', ...refund }]);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests.map((r) => JSON.parse(r.body).messages)).toEqual([
      [{ role: 'user', content: question }],
      [{ role: 'user', content: question }],
    ]);
    await until(() => nest.get(TurnsService).running === 0, 'the turn to end on the server');
  });

  it('a reconnect to a turn the server does not know: a RemoteTurnError, no reconnect, no provider request', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    const wire = recordingFetch();
    const base = await nest.getUrl();
    const turn = read(
      fromTurnSSE<TurnUpdate>(
        () => ({
          url: `${base}/turns/turn-gone?message=${encodeURIComponent(question)}`,
          init: { headers: { 'last-event-id': 'turn-gone:3' } },
        }),
        { fetch: wire.fetch, reconnect: { delay: 20 } },
      ),
    );
    const { error } = await turn.ended;
    expect(error).toBeInstanceOf(RemoteTurnError);
    expect(error).toMatchObject({ remoteName: 'TurnNotFoundError', retryable: false });
    expect((error as Error).message).toContain('does not know turn turn-gone');
    expect(turn.events).toEqual([]);
    expect(wire.connections).toEqual([{ lastEventId: 'turn-gone:3', ids: ['turn-gone:3'] }]);
    expect(fake.requests).toHaveLength(0);
    expect(nest.get(TurnsService).running).toBe(0);
  });

  it('app.close() stops a running turn: its client is told, its provider request aborted, nothing refunded', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    const payments = nest.get(Payments);
    const wire = recordingFetch();
    const url = `${await nest.getUrl()}/turns/${turnId}?message=${encodeURIComponent(question)}`;
    const turn = read(fromTurnSSE<TurnUpdate>(() => url, { fetch: wire.fetch, reconnect: { delay: 20 } }));
    await until(() => attempt2Started(turn.events), "attempt 2's first text");
    expect(nest.get(TurnsService).running).toBe(1);

    await nest.close();
    app = undefined;
    const { error } = await turn.ended;
    expect(error).toBeInstanceOf(RemoteTurnError);
    expect(error).toMatchObject({ remoteName: 'TurnServerClosedError', retryable: true });
    // Attempt 1's connection, which the provider reset, and attempt 2's, which the app aborted.
    await until(() => fake.aborted === 2, "the abort of attempt 2's request");
    expect(fake.requests).toHaveLength(2);
    // The refund call of attempt 2 was held for its finish, which never came.
    expect(payments.requests).toBe(0);
    expect(wire.connections).toHaveLength(1);
  });
});
