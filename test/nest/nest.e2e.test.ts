// The NestJS example (examples/nest) end to end, on Nest's own HTTP platform (Express) and real sockets, no mocks:
//
//   fromTurnSSE (the browser) ⇄ TCP proxy (cut once) ⇄ Nest @Sse() → turnServer → runSteps → streamTurn ⇄ fake provider
//                                                                                     → executeTools → Payments
//
// A run of two steps: step 1 asks for the refund, step 2 answers once its result came back. The provider resets its
// first connection in the middle of step 1's answer (attempt 2 follows, after a reset); then the proxy cuts the
// browser's connection while attempt 2 streams, and the client reconnects with Last-Event-ID. The user reads
// attempt 2's text once, sees one reset (the provider's) and none for its own cut, the refund runs once, and the
// provider gets one request per attempt and per step, none per reconnect. Then two apps share one turn log: the
// first is closed with handOver in step 2, and the second takes the run over at step 2.
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ResetEvent } from 'cleanturn';
import { MemoryEffectLedger } from 'cleanturn/effects';
import { turnView } from 'cleanturn/renderers';
import { fromTurnSSE, memoryTurnLog, TransportError } from 'cleanturn/transport';
import { createParser } from 'eventsource-parser';
import { from, lastValueFrom, type Observable, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { Payments } from '../../examples/nest/payments.js';
import { TurnsModule } from '../../examples/nest/turns.module.js';
import { type TurnsOptions, TurnsService, type TurnUpdate } from '../../examples/nest/turns.service.js';
import { memoryTurnLogView } from '../../src/transport/turnLog.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';
import { lastSentence, nextRequestProblems, refund } from '../support/retriedChatServer.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';

const turnId = 'turn-42';
const question = 'Please refund order ORD-7781, the book arrived damaged.';
const opening = 'Checking order ORD-7781. ';

let provider: TestServer | undefined;
/** The apps still open. */
const apps = new Set<INestApplication>();
let proxy: TcpProxy | undefined;
/** Opens the provider's gate, so that a held response can end. */
let release: (() => void) | undefined;
const subscriptions: Subscription[] = [];
expectNoLeftoverHandles(async () => {
  for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
  release?.();
  for (const nest of [...apps]) await closeApp(nest);
  await proxy?.close();
  await provider?.close();
  proxy = provider = release = undefined;
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

/** Step 2: the model's answer once the refund's result came back, the finish (stop), the usage. */
const stepTwo = ['Your refund for ORD-7781 ', 'has started.'] as const;
const step2 = chatTranscript(
  stepTwo.map((text) => ({ text })),
  { usage: { prompt: 230, completion: 12 } },
);

/** The step a request asks for: 1, plus one per assistant message it sends back (one per step before it). */
const stepOf = (body: string): number =>
  1 +
  (JSON.parse(body) as { messages: { role: string }[] }).messages.filter((m) => m.role === 'assistant')
    .length;

/**
 * The fake provider (OpenAI Chat Completions). Step 1: the first request gets attempt 1, reset after "Refunding the
 * dam"; every later one gets attempt 2. Step 2 (a request that sends the refund's result back) gets the final
 * text. `hold` names the response held until the test opens the gate: every attempt 2 of step 1, held before its
 * last sentence; or the first answer of step 2, held after its first text.
 */
async function startProvider(hold: 'step 1' | 'step 2' = 'step 1'): Promise<TestServer> {
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held = (body: Buffer, at: number) => ({
    body: '',
    stream: async function* () {
      yield body.subarray(0, at);
      await opened;
      yield body.subarray(at);
    },
  });
  let stepOnes = 0;
  let stepTwos = 0;
  provider = await startServer((_n, _req, body) => {
    if (stepOf(body) === 1) {
      if (stepOnes++ === 0)
        return { body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam') };
      return hold === 'step 1'
        ? held(attempt2.body, attempt2.before(`text:${lastSentence}`))
        : { body: attempt2.body };
    }
    if (stepTwos++ === 0 && hold === 'step 2') return held(step2.body, step2.after(`text:${stepTwo[0]}`));
    return { body: step2.body };
  });
  return provider;
}

/** The example's module in a Nest app on a free port of 127.0.0.1, against the fake provider. */
async function startApp(baseUrl: string, options: Partial<TurnsOptions> = {}): Promise<INestApplication> {
  const nest = await NestFactory.create(
    TurnsModule.forRoot({ baseUrl: `${baseUrl}/v1`, backoff: false, ...options }),
    { logger: ['error', 'warn'], abortOnError: false },
  );
  apps.add(nest);
  await nest.listen(0, '127.0.0.1');
  return nest;
}

/** Closes an app (its module's onModuleDestroy first, then its HTTP server). */
async function closeApp(nest: INestApplication): Promise<void> {
  apps.delete(nest);
  await nest.close();
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
  events.some((event) => event.type === 'text' && event.step === 1 && event.attempt === 2);

/** What the user reads of step `step`: its events through `turnView`. */
const viewOf = (events: readonly TurnUpdate[], step: number) =>
  lastValueFrom(
    from(events.flatMap((event) => (event.type !== 'step-end' && event.step === step ? [event] : []))).pipe(
      turnView(),
    ),
  );

/** How each run's steps ended, from its `step-end` events: `[step, end]`. */
const stepEnds = (events: readonly TurnUpdate[]) =>
  events.flatMap((event) => (event.type === 'step-end' ? [[event.step, event.end]] : []));

describe('examples/nest: a run of steps over @Sse() that the browser resumes', { timeout: 20_000 }, () => {
  it('a provider cut and a browser cut in one run: attempt 2 read once, one reset, one refund, three requests', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    proxy = await startTcpProxy(await nest.getUrl());
    const cutter = proxy;
    const wire = recordingFetch();
    const url = `${cutter.url}/turns/${turnId}?message=${encodeURIComponent(question)}`;
    const turn = read(fromTurnSSE<TurnUpdate>(() => url, { fetch: wire.fetch, reconnect: { delay: 20 } }));

    // The provider cut attempt 1 of step 1; attempt 2 streams, held before its last sentence: cut the browser now.
    await until(() => attempt2Started(turn.events), "step 1's attempt 2's first text");
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
    // Every event once, in order, none missing: the run's events, then its end.
    expect([...first.ids, ...second.ids]).toEqual(
      Array.from({ length: turn.events.length + 1 }, (_, seq) => `${turnId}:${seq}`),
    );

    // One reset, the provider's in step 1, read before the browser's cut; none after it.
    const resets = turn.events.filter(
      (event): event is ResetEvent & { step: number } => event.type === 'reset',
    );
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({
      step: 1,
      attempt: 2,
      reason: expect.stringMatching(/^the stream broke/),
    });
    expect(turn.events.indexOf(resets[0] as TurnUpdate)).toBeLessThan(first.ids.length);
    const afterCut = turn.events.slice(first.ids.length);
    expect(afterCut.some((event) => event.type === 'reset')).toBe(false);
    expect(afterCut.some((event) => event.type === 'text' && event.text === lastSentence)).toBe(true);

    // Two steps: the refund, then the answer that needs none.
    expect(stepEnds(turn.events)).toEqual([
      [1, undefined],
      [2, 'done'],
    ]);
    // What the user reads of step 1: attempt 2's text, once, and the refund done.
    const view = await viewOf(turn.events, 1);
    expect(view.text).toBe(`${opening}${lastSentence}`);
    expect(view.attempt).toBe(2);
    expect(view.resets).toHaveLength(1);
    expect(view.finished).toBe(true);
    expect(view.toolCalls).toMatchObject([
      { id: 'call_c7', name: 'issue_refund', status: 'completed', output: { refund_id: 're_1' } },
    ]);
    const results = turn.events.filter((event) => event.type === 'tool-result');
    expect(results).toMatchObject([{ step: 1, outcome: 'executed', call: { id: 'call_c7' } }]);
    // And of step 2: the answer, once.
    const answer = await viewOf(turn.events, 2);
    expect(answer).toMatchObject({
      text: stepTwo.join(''),
      attempt: 1,
      resets: [],
      finished: true,
      toolCalls: [],
    });

    // The refund ran once; the provider was asked once per attempt of step 1, then once for step 2, never for a
    // reconnect; step 2's request sends back the assistant's call (attempt 2's, c7) and the refund's result.
    const payments = nest.get(Payments);
    expect(payments.requests).toBe(1);
    expect(payments.refunds).toEqual([{ refund_id: 're_1', ...refund }]);
    expect(fake.requests).toHaveLength(3);
    const bodies = fake.requests.map((r) => r.body);
    expect(bodies.map(stepOf)).toEqual([1, 1, 2]);
    const messages = bodies.map((body) => JSON.parse(body).messages);
    expect(messages.slice(0, 2)).toEqual([
      [{ role: 'user', content: question }],
      [{ role: 'user', content: question }],
    ]);
    expect(messages[2]).toMatchObject([
      { role: 'user', content: question },
      { role: 'assistant', tool_calls: [{ id: 'call_c7', function: { name: 'issue_refund' } }] },
      { role: 'tool', tool_call_id: 'call_c7', content: expect.stringContaining('re_1') },
    ]);
    expect(messages[2]).toHaveLength(3);
    expect(nextRequestProblems(bodies[2] as string)).toEqual([]);
    await until(() => nest.get(TurnsService).running === 0, 'the run to end on the server');
  });

  it('POST /turns/:id streams the run (an LLM turn is a POST), and the reconnect after a cut posts again', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    proxy = await startTcpProxy(await nest.getUrl());
    const cutter = proxy;
    const wire = recordingFetch();
    /** Each response's request method and content type: an empty answer to a POST has none. */
    const answers: { method: string; contentType: string | null }[] = [];
    const posting: typeof fetch = async (input, init) => {
      const { method } = new Request(input, init);
      const response = await wire.fetch(input, init);
      answers.push({ method, contentType: response.headers.get('content-type') });
      return response;
    };
    const request = () => ({
      url: `${cutter.url}/turns/${turnId}`,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: question }),
      },
    });
    const turn = read(fromTurnSSE<TurnUpdate>(request, { fetch: posting, reconnect: { delay: 20 } }));

    await until(() => attempt2Started(turn.events), "step 1's attempt 2's first text");
    expect(cutter.cut()).toBe(1);
    await until(() => cutter.connections === 2, 'the reconnect');
    release?.();
    expect(await turn.ended).toEqual({});

    expect(answers).toEqual([
      { method: 'POST', contentType: expect.stringMatching(/^text\/event-stream/) },
      { method: 'POST', contentType: expect.stringMatching(/^text\/event-stream/) },
    ]);
    const [first, second] = wire.connections as [Connection, Connection];
    expect(first.lastEventId).toBeNull();
    expect(second.lastEventId).toBe(first.ids.at(-1));
    expect([...first.ids, ...second.ids]).toEqual(
      Array.from({ length: turn.events.length + 1 }, (_, seq) => `${turnId}:${seq}`),
    );
    expect(turn.events.filter((event) => event.type === 'reset')).toHaveLength(1);
    expect(stepEnds(turn.events)).toEqual([
      [1, undefined],
      [2, 'done'],
    ]);
    expect((await viewOf(turn.events, 1)).text).toBe(`${opening}${lastSentence}`);
    expect((await viewOf(turn.events, 2)).text).toBe(stepTwo.join(''));
    // The body's message reached the provider; the reconnect's copy started nothing.
    expect(nest.get(Payments).requests).toBe(1);
    expect(fake.requests).toHaveLength(3);
    expect(JSON.parse(fake.requests[0]?.body ?? '{}').messages).toEqual([
      { role: 'user', content: question },
    ]);
    await until(() => nest.get(TurnsService).running === 0, 'the run to end on the server');
  });

  it('POST /turns/:id without a message is a 400, and starts nothing', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    const response = await fetch(`${await nest.getUrl()}/turns/${turnId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: question }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ message: 'the body must be JSON: { "message": "…" }' });
    expect(fake.requests).toHaveLength(0);
    expect(nest.get(TurnsService).running).toBe(0);
  });

  it('on the wire, a turn the server does not know is a `failed` message (not `error`, which EventSource keeps)', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    const response = await fetch(`${await nest.getUrl()}/turns/turn-gone`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'last-event-id': 'turn-gone:3' },
      body: JSON.stringify({ message: question }),
    });
    expect(response.status).toBe(201); // Nest's status for a POST route
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const wire = await response.text();
    // Nest writes a blank line first, then the message's `event:`, `id:` and `data:` lines.
    expect(wire.trim().split('\n')).toEqual([
      'event: failed',
      'id: turn-gone:3',
      `data: ${JSON.stringify({
        name: 'TransportError',
        code: 'turn-not-found',
        message: 'the turn log does not know turn turn-gone: it never started, or it expired',
        retryable: false,
      })}`,
    ]);
    expect(fake.requests).toHaveLength(0);
  });

  it('a reconnect to a turn the server does not know: a TransportError remote-turn, no reconnect, no provider request', async () => {
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
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'remote-turn' });
    expect(error).toMatchObject({
      remoteName: 'TransportError',
      remoteCode: 'turn-not-found',
      retryable: false,
    });
    expect((error as Error).message).toContain('does not know turn turn-gone');
    expect(turn.events).toEqual([]);
    expect(wire.connections).toEqual([{ lastEventId: 'turn-gone:3', ids: ['turn-gone:3'] }]);
    expect(fake.requests).toHaveLength(0);
    expect(nest.get(TurnsService).running).toBe(0);
  });

  it('app.close() stops a running run: its client is told, its provider request aborted, nothing refunded', async () => {
    const fake = await startProvider();
    const nest = await startApp(fake.url);
    const payments = nest.get(Payments);
    const wire = recordingFetch();
    const url = `${await nest.getUrl()}/turns/${turnId}?message=${encodeURIComponent(question)}`;
    const turn = read(fromTurnSSE<TurnUpdate>(() => url, { fetch: wire.fetch, reconnect: { delay: 20 } }));
    await until(() => attempt2Started(turn.events), "step 1's attempt 2's first text");
    expect(nest.get(TurnsService).running).toBe(1);

    await closeApp(nest);
    const { error } = await turn.ended;
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'remote-turn' });
    expect(error).toMatchObject({
      remoteName: 'TransportError',
      remoteCode: 'server-closed',
      retryable: true,
    });
    // Attempt 1's connection, which the provider reset, and attempt 2's, which the app aborted.
    await until(() => fake.aborted === 2, "the abort of attempt 2's request");
    expect(fake.requests).toHaveLength(2);
    // The refund call of attempt 2 was held for its finish, which never came; no step 2.
    expect(payments.requests).toBe(0);
    expect(stepEnds(turn.events)).toEqual([]);
    expect(wire.connections).toHaveLength(1);
  });

  it('a restart: app A hands its run over in step 2, app B takes it over at step 2 and the client reads on', async () => {
    const fake = await startProvider('step 2');
    // Two instances, one turn log (memoryTurnLogView: B's own claims and leases on A's store, as a second process
    // sees a shared Redis log) and one ledger (a durable one in production).
    const log = memoryTurnLog<TurnUpdate>({ leaseMs: 200 });
    const ledger = new MemoryEffectLedger();
    const a = await startApp(`${fake.url}/a`, { log, ledger, handOver: true });
    const b = await startApp(`${fake.url}/b`, { log: memoryTurnLogView(log), ledger });
    const [paymentsA, paymentsB] = [a.get(Payments), b.get(Payments)];
    const [urlA, urlB] = [await a.getUrl(), await b.getUrl()];
    let aGone = false;
    const wire = recordingFetch();
    const path = `/turns/${turnId}?message=${encodeURIComponent(question)}`;
    const turn = read(
      fromTurnSSE<TurnUpdate>(() => `${aGone ? urlB : urlA}${path}`, {
        fetch: wire.fetch,
        reconnect: { delay: 20, count: 100 },
      }),
    );

    // A runs step 1 (the refund), then step 2, whose answer is held after its first text: close A now.
    await until(
      () => turn.events.some((event) => event.type === 'text' && event.step === 2),
      "step 2's first text",
    );
    expect(a.get(TurnsService).running).toBe(1);
    await closeApp(a);
    aGone = true;
    expect(await turn.ended).toEqual({});

    // Step 2 again, on B, after a reset that voids A's cut attempt: one reset in step 2, the lost runner's.
    const step2Resets = turn.events.filter((event) => event.type === 'reset' && event.step === 2);
    expect(step2Resets).toHaveLength(1);
    expect(step2Resets[0]).toMatchObject({
      errorName: 'TransportError',
      reason: 'the runner was lost',
      attempt: 2,
      failedAttempt: 1,
      outputStarted: true,
    });
    // The user reads step 2's final text once (its attempt 2, B's), and step 1 as A ran it, once.
    const answer = await viewOf(turn.events, 2);
    expect(answer).toMatchObject({ text: stepTwo.join(''), attempt: 2, finished: true });
    const finals = turn.events.filter((event) => event.type === 'text' && event.text === stepTwo[1]);
    expect(finals).toHaveLength(1);
    expect((await viewOf(turn.events, 1)).text).toBe(`${opening}${lastSentence}`);
    expect(stepEnds(turn.events)).toEqual([
      [1, undefined],
      [2, 'done'],
    ]);

    // One refund in all, on A; B never ran step 1 again (nor its refund).
    expect(paymentsA.requests + paymentsB.requests).toBe(1);
    expect(paymentsA.requests).toBe(1);
    const perStep = fake.requests.map((r) => `${r.url.split('/')[1]} step ${stepOf(r.body)}`);
    expect(perStep).toEqual(['a step 1', 'a step 1', 'a step 2', 'b step 2']);
    expect(nextRequestProblems(fake.requests[3]?.body ?? '')).toEqual([]);

    // The client read A, then reconnected (with Last-Event-ID) until B served the rest.
    const [first, ...rest] = wire.connections as [Connection, ...Connection[]];
    expect(first.lastEventId).toBeNull();
    expect(rest.length).toBeGreaterThan(0);
    const ids = wire.connections.flatMap((connection) => connection.ids);
    expect(ids).toEqual(Array.from({ length: turn.events.length + 1 }, (_, seq) => `${turnId}:${seq}`));
    await until(() => b.get(TurnsService).running === 0, 'the run to end on B');
  });
});
