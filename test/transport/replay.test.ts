// Replay safety over real sockets on 127.0.0.1: a Responses request bound to a conversation that is cut mid-stream is
// not sent again unless the application approves, and the server counts the requests it got; a connection refused
// before anything was sent, and a stateless request, are retried without asking.
import { createServer } from 'node:http';
import { TurnError, type TurnEvent, UsageError } from 'cleanturn';
import { openaiChat, openaiResponses } from 'cleanturn/providers';
import {
  openaiBackground,
  type StreamTurnOptions,
  streamTurn,
  TransportError,
  type TurnReport,
} from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';
import type { SseRequest } from '../../src/transport/fromSSE.js';
import type { ReplayInfo } from '../../src/transport/replaySafety.js';
import { type BackgroundServer, startBackgroundResponses } from '../support/backgroundResponses.js';
import { attempt1, cleanText, whole } from '../support/helpDeskChat.js';
import { listenOnLoopback, startServer, type TestServer } from '../support/httpServer.js';
import { expectNoLeftoverHandles } from '../support/resources.js';

let server: TestServer | undefined;
let background: BackgroundServer | undefined;
expectNoLeftoverHandles(async () => {
  await server?.close();
  await background?.close();
  server = undefined;
  background = undefined;
});

/** A Responses stream: the response is created, streams its text in two deltas, and completes. */
function responseStream(id: string, first: string, second: string): { body: string; cut: number } {
  const message = { id: `msg_${id}`, type: 'message', role: 'assistant', status: 'completed' };
  const text = `${first}${second}`;
  const events = [
    { type: 'response.created', sequence_number: 0, response: { id, status: 'in_progress', output: [] } },
    {
      type: 'response.output_text.delta',
      sequence_number: 1,
      item_id: message.id,
      output_index: 0,
      content_index: 0,
      delta: first,
    },
    {
      type: 'response.output_text.delta',
      sequence_number: 2,
      item_id: message.id,
      output_index: 0,
      content_index: 0,
      delta: second,
    },
    {
      type: 'response.completed',
      sequence_number: 3,
      response: {
        id,
        status: 'completed',
        output: [{ ...message, content: [{ type: 'output_text', text, annotations: [] }] }],
        usage: { input_tokens: 40, output_tokens: 12, total_tokens: 52 },
      },
    },
  ];
  const frames = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
  // The cut: after the first delta, inside the answer.
  return { body: frames.join(''), cut: Buffer.byteLength(frames.slice(0, 2).join('')) };
}

const cutResponse = responseStream('resp_1', 'Refunding the dam', 'age now.');
const wholeResponse = responseStream('resp_2', 'The refund ', 'is under way.');

const conversationBody = JSON.stringify({
  model: 'gpt-4.1',
  conversation: 'conv_689667905b048191b4740501625afd940c7533ace33a2dab',
  input: 'Refund order ORD-7781.',
  stream: true,
});

interface Outcome {
  events: TurnEvent[];
  text: string;
  error: unknown;
  report: TurnReport | undefined;
}

/** Runs a Responses turn to its end and records what the user read, the error and the report. */
function runTurn(
  options: Partial<StreamTurnOptions<unknown>> & Pick<StreamTurnOptions<unknown>, 'request'>,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { events: [], text: '', error: undefined, report: undefined };
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiResponses(),
      retry: 2,
      backoff: false,
      stallTimeout: 5_000,
      onReport: (report) => {
        outcome.report = report;
      },
      ...options,
    }).subscribe({
      next(event) {
        outcome.events.push(event);
        if (event.type === 'reset') outcome.text = '';
        if (event.type === 'text') outcome.text += event.text;
      },
      error(error) {
        outcome.error = error;
        resolve(outcome);
      },
      complete: () => resolve(outcome),
    });
  });
}

const responsesAt =
  (url: string, body = conversationBody) =>
  ({ signal }: { signal: AbortSignal }): SseRequest => ({
    url: `${url}/v1/responses`,
    init: { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal },
  });

/** Waits long enough for a retry without delay to have reached the server, had there been one. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

/** A port on 127.0.0.1 that nobody listens on. */
async function closedPort(): Promise<number> {
  const { port, close } = await listenOnLoopback(createServer());
  await close();
  return port;
}

describe('a Responses request bound to a conversation, cut mid-stream', () => {
  it('is not sent again: the turn ends with TransportError unsafe-replay, without a reset, and the server got one request', async () => {
    server = await startServer([
      { body: cutResponse.body, destroyAfter: cutResponse.cut },
      { body: wholeResponse.body },
    ]);
    const turn = await runTurn({ request: responsesAt(server.url) });
    await settle();
    expect(server.requests).toHaveLength(1);
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'unsafe-replay' });
    const error = turn.error as TransportError;
    expect(error.code).toBe('unsafe-replay');
    expect(error.safety).toBe('unsafe');
    expect(error.basis).toBe('stateful');
    expect(error.attempt).toBe(1);
    expect(error.retryable).toBe(false);
    expect(error.cause).toBeInstanceOf(TransportError);
    expect(error.cause).toMatchObject({ code: 'connection' });
    expect(error.message).toMatch(/conversation conv_689667905b/);
    expect(turn.events.filter((e) => e.type === 'reset')).toEqual([]);
    // The report says the turn failed with that error, and bills the one attempt.
    expect(turn.report?.outcome).toBe('failed');
    expect(turn.report?.attempts).toHaveLength(1);
    expect(turn.report?.attempts[0]?.textLength).toBe('Refunding the dam'.length);
  });

  it('is retried when the replay callback approves it, which is asked once with the facts of the attempt', async () => {
    server = await startServer([
      { body: cutResponse.body, destroyAfter: cutResponse.cut },
      { body: wholeResponse.body },
    ]);
    const asked: ReplayInfo[] = [];
    const made: SseRequest[] = [];
    const make = responsesAt(server.url);
    const turn = await runTurn({
      request: (context) => {
        const request = make(context);
        made.push(request);
        return request;
      },
      replay: (info) => {
        asked.push(info);
        return true;
      },
    });
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe('The refund is under way.');
    expect(server.requests).toHaveLength(2);
    expect(turn.events.filter((e) => e.type === 'reset').map((e) => e.type === 'reset' && e.attempt)).toEqual(
      [2],
    );
    expect(asked).toHaveLength(1);
    const [info] = asked;
    expect(info?.attempt).toBe(1);
    expect(info?.safety).toBe('unsafe');
    expect(info?.basis).toBe('stateful');
    expect(info?.request).toBe(made[0]);
    expect(info?.error).toBeInstanceOf(TransportError);
    expect(info?.error).toMatchObject({ code: 'connection' });
    expect(info?.reason).toMatch(/appends its input and output/);
    expect(turn.report?.outcome).toBe('completed');
  });

  it('a callback that answers anything but true refuses; one that throws ends the turn with what it threw', async () => {
    server = await startServer([{ body: cutResponse.body, destroyAfter: cutResponse.cut }]);
    const declined = await runTurn({
      request: responsesAt(server.url),
      replay: () => 'yes' as unknown as boolean,
    });
    expect(declined.error).toBeInstanceOf(TransportError);
    expect(declined.error).toMatchObject({ code: 'unsafe-replay' });
    const thrown = new Error('approval service down');
    const failing = await runTurn({
      request: responsesAt(server.url),
      replay: () => {
        throw thrown;
      },
    });
    expect(failing.error).toBe(thrown);
    await settle();
    expect(server.requests).toHaveLength(2); // one per turn: neither was sent again
    expect(failing.events.filter((e) => e.type === 'reset')).toEqual([]);
  });

  it('past the retry cap the turn ends with TurnError retries-exhausted, and the callback is not asked about it', async () => {
    server = await startServer([{ body: cutResponse.body, destroyAfter: cutResponse.cut }]);
    const asked: number[] = [];
    const turn = await runTurn({
      request: responsesAt(server.url),
      retry: 1,
      replay: (info) => {
        asked.push(info.attempt);
        return true;
      },
    });
    expect(turn.error).toBeInstanceOf(TurnError);
    expect(turn.error).toMatchObject({ code: 'retries-exhausted' });
    expect(asked).toEqual([1]);
    expect(server.requests).toHaveLength(2);
  });

  it('a Request object is read from a clone before it is sent, so its conversation is seen too', async () => {
    server = await startServer([
      { body: cutResponse.body, destroyAfter: cutResponse.cut },
      { body: wholeResponse.body },
    ]);
    const url = `${server.url}/v1/responses`;
    const turn = await runTurn({
      request: ({ signal }) =>
        new Request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: conversationBody,
          signal,
        }),
    });
    await settle();
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'unsafe-replay' });
    expect(server.requests).toHaveLength(1);
    // The clone did not consume what fetch sent.
    expect(server.requests[0]?.body).toBe(conversationBody);
  });
});

describe('retries that are safe are made without asking', () => {
  it('a connection refused before anything was sent is retried, even for a conversation', async () => {
    server = await startServer([{ body: wholeResponse.body }]);
    const port = await closedPort();
    const live = server.url;
    const asked: ReplayInfo[] = [];
    const turn = await runTurn({
      request: ({ attempt, signal }) =>
        responsesAt(attempt === 1 ? `http://127.0.0.1:${port}` : live)({ signal }),
      replay: (info) => {
        asked.push(info);
        return false;
      },
    });
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe('The refund is under way.');
    expect(asked).toEqual([]);
    expect(server.requests).toHaveLength(1);
    expect(turn.report?.attempts[0]?.reason).toMatch(/ECONNREFUSED/);
  });

  it('a 503 before any generation is retried for a conversation: the server did nothing', async () => {
    server = await startServer([
      {
        status: 503,
        headers: { 'content-type': 'application/json' },
        body: '{"error":{"message":"overloaded"}}',
      },
      { body: wholeResponse.body },
    ]);
    const turn = await runTurn({ request: responsesAt(server.url), replay: () => false });
    expect(turn.error).toBeUndefined();
    expect(server.requests).toHaveLength(2);
  });

  it('a Chat Completions turn cut mid-stream is retried without asking: the provider keeps no state', async () => {
    server = await startServer([
      { body: attempt1.body, destroyAfter: attempt1.after('text:Refunding the dam') },
      whole,
    ]);
    const asked: ReplayInfo[] = [];
    const turn = await runTurn({
      // runTurn's options are those of a turn of unknown input, which an adapter of one format does not fit.
      adapter: openaiChat() as StreamTurnOptions['adapter'],
      request: ({ signal }) => ({
        url: `${server?.url}/v1/chat/completions`,
        init: {
          method: 'POST',
          body: JSON.stringify({ model: 'gpt-4.1', messages: [], stream: true }),
          signal,
        },
      }),
      replay: (info) => {
        asked.push(info);
        return false;
      },
    });
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(cleanText);
    expect(asked).toEqual([]);
    expect(server.requests).toHaveLength(2);
  });

  it('an unknown replay (a body that is not JSON) is retried by default, and refused when the callback declines', async () => {
    server = await startServer((n) =>
      n % 2 === 0 ? { body: cutResponse.body, destroyAfter: cutResponse.cut } : { body: wholeResponse.body },
    );
    const retried = await runTurn({ request: responsesAt(server.url, 'model=gpt-4.1&stream=true') });
    expect(retried.error).toBeUndefined();
    expect(server.requests).toHaveLength(2);
    const refused = await runTurn({
      request: responsesAt(server.url, 'model=gpt-4.1&stream=true'),
      replay: (info) => info.safety !== 'unknown',
    });
    expect(refused.error).toBeInstanceOf(TransportError);
    expect(refused.error).toMatchObject({ code: 'unsafe-replay' });
    expect((refused.error as TransportError).safety).toBe('unknown');
    expect((refused.error as TransportError).basis).toBe('unreadable');
    await settle();
    expect(server.requests).toHaveLength(3);
  });
});

describe('the replay option', () => {
  it('must be a function', () => {
    expect(() =>
      streamTurn({
        turnId: 'turn-42',
        adapter: openaiResponses(),
        request: () => 'http://127.0.0.1:1/',
        replay: true as unknown as () => boolean,
      }),
    ).toThrow(UsageError);
  });
});

describe('with resume (background Responses), a cut is resumed, not replayed', () => {
  const backgroundTurn =
    (url: string) =>
    ({ signal }: { signal: AbortSignal }): SseRequest => ({
      url: `${url}/responses`,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...JSON.parse(conversationBody), background: true }),
        signal,
      },
    });

  it('a cut of a conversation turn is resumed without asking, and the response is created once', async () => {
    background = await startBackgroundResponses({
      deltas: 6,
      faults: ({ kind, responseId }) =>
        kind === 'create' && responseId === 'resp_1' ? { cutAfter: 3 } : undefined,
    });
    const asked: ReplayInfo[] = [];
    const turn = await runTurn({
      request: backgroundTurn(background.baseUrl),
      resume: openaiBackground({ baseUrl: background.baseUrl }),
      replay: (info) => {
        asked.push(info);
        return false;
      },
    });
    expect(turn.error).toBeUndefined();
    expect(turn.events.some((e) => e.type === 'resume')).toBe(true);
    expect(asked).toEqual([]);
    expect(background.counts.create).toBe(1);
  });

  it('when the resume is impossible, the fallback retry is classified: refused for a conversation', async () => {
    background = await startBackgroundResponses({
      deltas: 6,
      faults: ({ kind, responseId }) =>
        responseId !== 'resp_1' ? undefined : kind === 'create' ? { cutAfter: 3 } : { status: 'not-found' },
    });
    const turn = await runTurn({
      request: backgroundTurn(background.baseUrl),
      resume: openaiBackground({ baseUrl: background.baseUrl }),
    });
    expect(turn.error).toBeInstanceOf(TransportError);
    expect(turn.error).toMatchObject({ code: 'unsafe-replay' });
    expect((turn.error as TransportError).cause).toBeInstanceOf(TransportError);
    expect((turn.error as TransportError).cause).toMatchObject({ code: expect.stringMatching(/^resume-/) });
    expect(turn.events.filter((e) => e.type === 'reset')).toEqual([]);
    await settle();
    expect(background.counts.create).toBe(1);
  });
});
