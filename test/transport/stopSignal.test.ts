// streamTurn({ signal }): a user's stop. Against real loopback servers: a stop aborts the live attempt's request,
// cancels a pending retry wait and a background response, and ends the turn with a TransportError turn-stopped (not
// retryable, never retried) that carries the signal's reason; onReport says `stopped`. An already-aborted signal
// sends nothing; the abort listener is removed when the turn ends.
import { getEventListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { type TurnEvent, UsageError } from 'cleanturn';
import { openaiChat, openaiResponses } from 'cleanturn/providers';
import {
  openaiBackground,
  type StreamTurnOptions,
  streamTurn,
  TransportError,
  type TurnReport,
} from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type BackgroundServer, startBackgroundResponses } from '../support/backgroundResponses.js';
import { startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

let server: TestServer | undefined;
let background: BackgroundServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  await background?.close();
  server = undefined;
  background = undefined;
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A whole Chat Completions answer. */
const whole = `${chunk({ content: 'Checking order ORD-7781.' })}${chunk({}, 'stop')}data: [DONE]\n\n`;

/** Text, then the connection stays open and silent: an attempt that is streaming when the stop comes. */
const streaming = { body: '', stream: () => [chunk({ content: 'Checking order ' })], hold: true };

/** How one turn ended, as its consumer and its report saw it. */
interface Ended {
  events: TurnEvent[];
  error: unknown;
  completed: boolean;
  report: TurnReport | undefined;
  /** performance.now() when the turn ended. */
  at: number;
}

function run(options: Partial<StreamTurnOptions> & Pick<StreamTurnOptions, 'signal'>, url: string) {
  const ended: Ended = { events: [], error: undefined, completed: false, report: undefined, at: 0 };
  const done = new Promise<Ended>((resolve) => {
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiChat(),
      request: ({ signal }) => ({ url, init: { method: 'POST', body: '{}', signal } }),
      onReport: (report) => {
        ended.report = report;
      },
      ...options,
    }).subscribe({
      next: (event) => ended.events.push(event),
      error: (error: unknown) => {
        ended.error = error;
        ended.at = performance.now();
        resolve(ended);
      },
      complete: () => {
        ended.completed = true;
        ended.at = performance.now();
        resolve(ended);
      },
    });
  });
  return done;
}

/** Waits until `check` holds (polling), at most `limitMs`. */
async function until(check: () => boolean, limitMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error('the condition never held');
    await sleep(5);
  }
}

describe('streamTurn({ signal })', () => {
  it('a stop mid-stream aborts the request and errors with TransportError turn-stopped carrying the reason; no retry', async () => {
    server = await startServer([streaming]);
    const srv = server;
    const controller = new AbortController();
    const turn = run({ signal: controller.signal, retry: 3, backoff: false }, srv.url);
    await until(() => srv.requests.length === 1);
    await sleep(50);
    const reason = new Error('the user pressed stop');
    controller.abort(reason);
    const ended = await turn;
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'turn-stopped' });
    const error = ended.error as TransportError;
    expect(error.retryable).toBe(false);
    expect(error.stopReason).toBe(reason);
    expect(error.message).toContain('the user pressed stop');
    expect(ended.events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text)).toEqual([
      'Checking order ',
    ]);
    await until(() => srv.aborted === 1);
    await sleep(100);
    expect(srv.requests).toHaveLength(1);
    expect(ended.report?.outcome).toBe('stopped');
    expect(ended.report?.error).toBe(error);
    expect(ended.report?.attempts.map((a) => a.outcome)).toEqual(['abandoned']);
    expect(ended.report?.text).toBe('Checking order ');
  });

  it('an already-aborted signal stops the turn before any request', async () => {
    server = await startServer([{ body: whole }]);
    const controller = new AbortController();
    controller.abort('not now');
    const ended = await run({ signal: controller.signal }, server.url);
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'turn-stopped' });
    expect((ended.error as TransportError).stopReason).toBe('not now');
    expect(ended.events).toEqual([]);
    expect(server.requests).toHaveLength(0);
    expect(ended.report?.outcome).toBe('stopped');
  });

  it('a stop during the wait before a retry cancels the wait: no second request, and the turn ends at once', async () => {
    // A 503 asks for a retry in 5 s; the stop comes about 50 ms into the wait.
    server = await startServer([{ status: 503, headers: { 'retry-after': '5' }, body: 'busy' }]);
    const srv = server;
    const controller = new AbortController();
    const turn = run({ signal: controller.signal, retry: 2 }, srv.url);
    await until(() => srv.requests.length === 1);
    await sleep(50);
    const stoppedAt = performance.now();
    controller.abort();
    const ended = await turn;
    expect(ended.error).toBeInstanceOf(TransportError);
    expect(ended.error).toMatchObject({ code: 'turn-stopped' });
    // Generous: the wait had about 5 s to go.
    expect(ended.at - stoppedAt).toBeLessThan(1_000);
    await sleep(200);
    expect(srv.requests).toHaveLength(1);
    expect(ended.report?.outcome).toBe('stopped');
  });

  it('a stop cancels the background response of a resumable attempt', async () => {
    background = await startBackgroundResponses({ deltas: 500, interval: 5 });
    const srv = background;
    const controller = new AbortController();
    const turn = new Promise<unknown>((resolve) => {
      streamTurn({
        turnId: 'turn-42',
        adapter: openaiResponses(),
        request: ({ signal }) => ({
          url: `${srv.baseUrl}/responses`,
          init: {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'gpt-4.1', input: 'turn 1', background: true, stream: true }),
            signal,
          },
        }),
        resume: openaiBackground({ baseUrl: srv.baseUrl }),
        signal: controller.signal,
      }).subscribe({
        next: (event) => {
          if (event.type === 'text') controller.abort();
        },
        error: resolve,
        complete: () => resolve('completed'),
      });
    });
    expect(await turn).toBeInstanceOf(TransportError);
    expect(await turn).toMatchObject({ code: 'turn-stopped' });
    await until(() => srv.cancels.length === 1);
    expect(srv.cancels).toEqual(['resp_1']);
    expect(srv.counts.create).toBe(1);
  });

  it('removes its abort listener when the turn ends, however it ends', async () => {
    server = await startServer([{ body: whole }]);
    const controller = new AbortController();
    const ended = await run({ signal: controller.signal }, server.url);
    expect(ended.completed).toBe(true);
    expect(ended.report?.outcome).toBe('completed');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);

    // Unsubscribed: cancelled, not stopped, and the listener is gone too.
    const live = new AbortController();
    let report: TurnReport | undefined;
    const subscription = streamTurn({
      turnId: 'turn-43',
      adapter: openaiChat(),
      request: () => server?.url ?? '',
      signal: live.signal,
      onReport: (r) => {
        report = r;
      },
    }).subscribe();
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(1);
    subscription.unsubscribe();
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(0);
    expect(report?.outcome).toBe('cancelled');
  });

  it('one signal stops a turn whatever the attempt; each subscription is its own turn', async () => {
    server = await startServer([{ body: whole }]);
    const controller = new AbortController();
    const turn = streamTurn({
      turnId: 'turn-42',
      adapter: openaiChat(),
      request: () => server?.url ?? '',
      signal: controller.signal,
    });
    const first = await lastValueFrom(turn.pipe(toArray()));
    expect(first.at(-1)?.type).toBe('finish');
    controller.abort();
    await expect(lastValueFrom(turn)).rejects.toMatchObject({ name: 'TransportError', code: 'turn-stopped' });
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a signal that is not an AbortSignal with a UsageError', () => {
    const base = { turnId: 'turn-42', adapter: openaiChat(), request: () => 'http://127.0.0.1:1/' };
    for (const signal of [true, {}, 'stop', { aborted: false }]) {
      expect(() => streamTurn({ ...base, signal: signal as unknown as AbortSignal })).toThrow(UsageError);
    }
    expect(() => streamTurn({ ...base, signal: signal() })).not.toThrow();
  });
});

function signal(): AbortSignal {
  return new AbortController().signal;
}
