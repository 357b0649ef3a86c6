// streamTurn({ usable }): an attempt that finished but cannot be used (a refusal, an empty answer, a call the
// provider could not read, arguments that fail the tool's schema) is retried like a failed connection. Real HTTP
// servers on 127.0.0.1: the first attempt answers the unusable turn, the second a good one; the consumer sees a reset
// that says why, then the good answer, and the invalid call never runs.
import { type ResetEvent, retryBudget, TurnError, type TurnEvent, UsageError } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers, type ToolResultEvent } from 'cleanturn/effects';
import { geminiContent, openaiChat } from 'cleanturn/providers';
import { type StreamTurnOptions, streamTurn, type TurnReport } from 'cleanturn/transport';
import { lastValueFrom, merge, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolCallEvent } from '../../src/types.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';

const refund = { order_id: 'ORD-7781', amount: 'full' };
const sentence = 'The book arrived damaged, so I have started a full refund.';

const base = { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1760000000, model: 'gpt-4.1' };
/** One Chat Completions chunk as an SSE event. */
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
/** A whole Chat Completions stream of these chunks, usage and `[DONE]`. */
const chat = (...chunks: string[]) =>
  [
    chunk({ role: 'assistant', content: '' }),
    ...chunks,
    `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 80, completion_tokens: 9, total_tokens: 89 } })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');

/** The model refuses: `delta.refusal` fragments, then `stop`. */
const refusalBody = chat(
  chunk({ refusal: "I can't " }),
  chunk({ refusal: 'help with that.' }),
  chunk({}, 'stop'),
);
/** The model answers nothing: `stop` without content. */
const emptyBody = chat(chunk({}, 'stop'));
/** A good answer: the sentence. */
const goodBody = chatTranscript([{ text: sentence }], { usage: { prompt: 80, completion: 20 } }).body;
/** The refund with arguments its schema rejects, then with valid ones. */
const invalidCallBody = chatTranscript([
  { text: 'Refunding everything. ' },
  {
    call: { id: 'call_c1', name: 'issue_refund', args: JSON.stringify({ ...refund, amount: 'everything' }) },
  },
]).body;
const validCallBody = chatTranscript([
  { text: 'Checking order ORD-7781. ' },
  { call: { id: 'call_c7', name: 'issue_refund', args: JSON.stringify(refund) } },
]).body;

/** The refund tool's schema check, as a user would write it over Ajv or Zod. */
const validateArgs = (call: ToolCallEvent) => {
  if (call.name !== 'issue_refund') return undefined;
  const { amount } = call.args as { amount?: unknown };
  return amount === 'full' || amount === 'partial'
    ? undefined
    : `amount must be "full" or "partial", not ${JSON.stringify(amount)}`;
};

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A Chat Completions server on loopback that answers the n-th request with the n-th body (the last repeats). */
async function chatServer(...bodies: (string | Buffer)[]): Promise<TestServer> {
  const script: ScriptedResponse[] = bodies.map((body) => ({ body: body.toString('utf8') }));
  const server = await startServer(script);
  servers.push(server);
  return server;
}

/** What the consumer and the tools saw of one turn. */
interface Seen {
  events: TurnEvent[];
  /** What a renderer shows at the end: text appended, cleared on each reset. */
  text: string;
  resets: ResetEvent[];
  /** The arguments of each call the tool ran. */
  ran: unknown[];
  results: ToolResultEvent[];
  report: TurnReport | undefined;
}

/** Runs the turn against `server` with the Chat adapter, its tools through executeTools. */
async function runTurn(server: TestServer, options: Partial<StreamTurnOptions<never>> = {}): Promise<Seen> {
  const ran: unknown[] = [];
  const handlers: ToolHandlers = {
    issue_refund: async (args) => {
      ran.push(args);
      return { refund_id: 're_1' };
    },
  };
  let report: TurnReport | undefined;
  const turn$ = streamTurn({
    turnId: 'turn-42',
    adapter: openaiChat(),
    retry: 2,
    backoff: false,
    stallTimeout: 5_000,
    request: ({ signal }) => ({
      url: `${server.url}/v1/chat/completions`,
      init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal },
    }),
    onReport: (r) => {
      report = r;
    },
    ...options,
  }).pipe(share());
  const results: ToolResultEvent[] = [];
  const events: TurnEvent[] = [];
  await lastValueFrom(
    merge(
      turn$.pipe(executeTools(handlers, { turnId: 'turn-42', ledger: new MemoryEffectLedger() })),
      turn$,
    ).pipe(toArray()),
  ).then((all) => {
    for (const value of all) {
      if (value.type === 'tool-result') results.push(value as ToolResultEvent);
      else events.push(value as TurnEvent);
    }
  });
  let text = '';
  for (const event of events) {
    if (event.type === 'reset') text = '';
    if (event.type === 'text') text += event.text;
  }
  const resets = events.filter((e): e is ResetEvent => e.type === 'reset');
  return { events, text, resets, ran, results, report };
}

/** The error the turn ends with. */
async function turnError(server: TestServer, options: Partial<StreamTurnOptions<never>>): Promise<unknown> {
  return runTurn(server, options).then(
    (seen) => {
      throw new Error(`expected the turn to fail, it saw ${JSON.stringify(seen.events)}`);
    },
    (error: unknown) => error,
  );
}

describe('streamTurn({ usable }) over loopback', () => {
  it('a refusal is retried: a reset that says why, then the good answer', async () => {
    const server = await chatServer(refusalBody, goodBody);
    const seen = await runTurn(server, { usable: true });
    expect(server.requests).toHaveLength(2);
    expect(seen.resets).toHaveLength(1);
    expect(seen.resets[0]).toMatchObject({
      type: 'reset',
      attempt: 2,
      reason: 'the attempt is unusable (refusal): the model refused: "I can\'t help with that."',
    });
    expect(seen.text).toBe(sentence);
    expect(seen.events.at(-1)).toMatchObject({ type: 'finish', reason: 'stop', attempt: 2 });
    // The refused attempt is billed too.
    expect(seen.report?.attempts.map((a) => a.attempt)).toEqual([1, 2]);
  });

  it('an empty answer is retried', async () => {
    const server = await chatServer(emptyBody, goodBody);
    const seen = await runTurn(server, { usable: true });
    expect(server.requests).toHaveLength(2);
    expect(seen.resets.map((r) => r.reason)).toEqual([
      'the attempt is unusable (empty): the model finished with no answer text and no tool call',
    ]);
    expect(seen.text).toBe(sentence);
  });

  it('a call whose arguments fail the schema is retried and never runs; the valid call of the next attempt runs once', async () => {
    const server = await chatServer(invalidCallBody, validCallBody);
    const seen = await runTurn(server, { usable: { validateArgs } });
    expect(server.requests).toHaveLength(2);
    expect(seen.resets.map((r) => r.reason)).toEqual([
      'the attempt is unusable (invalid-arguments): tool call call_c1 (issue_refund): amount must be "full" or "partial", not "everything"',
    ]);
    expect(seen.events.filter((e) => e.type === 'tool-call').map((e) => (e as ToolCallEvent).id)).toEqual([
      'call_c7',
    ]);
    expect(seen.ran).toEqual([refund]);
    expect(seen.results.map((r) => [r.call.id, r.outcome])).toEqual([['call_c7', 'executed']]);
    expect(seen.text).toBe('Checking order ORD-7781. ');
  });

  it('without usable, the same refusal ends the turn as it came: no retry', async () => {
    const server = await chatServer(refusalBody, goodBody);
    const seen = await runTurn(server);
    expect(server.requests).toHaveLength(1);
    expect(seen.resets).toEqual([]);
    expect(seen.events.at(-1)).toMatchObject({ type: 'finish', reason: 'content-filter' });
  });

  it('Gemini MALFORMED_FUNCTION_CALL is retried as a malformed call', async () => {
    const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('');
    const server = await startServer([
      { body: sse([{ candidates: [{ content: { parts: [] }, finishReason: 'MALFORMED_FUNCTION_CALL' }] }]) },
      {
        body: sse([
          { candidates: [{ content: { role: 'model', parts: [{ text: sentence }] }, finishReason: 'STOP' }] },
        ]),
      },
    ]);
    servers.push(server);
    const seen = await runTurn(server, {
      usable: true,
      adapter: geminiContent(),
      request: ({ signal }) => ({
        url: `${server.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`,
        init: { method: 'POST', body: '{}', signal },
      }),
    });
    expect(server.requests).toHaveLength(2);
    expect(seen.resets.map((r) => r.reason)).toEqual([
      'the attempt is unusable (malformed-call): the provider could not read the tool call the model made (MALFORMED_FUNCTION_CALL)',
    ]);
    expect(seen.text).toBe(sentence);
  });

  it('an answer that stays unusable past the cap ends the turn with TurnError retries-exhausted whose records say why', async () => {
    const server = await chatServer(refusalBody, emptyBody);
    const error = await turnError(server, { usable: true, retry: 1 });
    expect(server.requests).toHaveLength(2);
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toMatchObject({ code: 'retries-exhausted' });
    const records = (error as TurnError).attempts ?? [];
    expect(records.map((r) => (r.error as TurnError).check)).toEqual(['refusal', 'empty']);
    expect(records.every((r) => r.error instanceof TurnError && r.error.code === 'unusable')).toBe(true);
    expect(records[1]?.reason).toBe(
      'the attempt is unusable (empty): the model finished with no answer text and no tool call',
    );
  });

  it('the retry of an unusable attempt draws on the turn’s retry budget', async () => {
    const server = await chatServer(emptyBody, goodBody);
    const budget = retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0 });
    const error = await turnError(server, { usable: true, budget });
    expect(server.requests).toHaveLength(1);
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toMatchObject({ code: 'retries-exhausted', limit: 'budget' });
    expect((error as TurnError).attempts?.[0]?.error).toBeInstanceOf(TurnError);
    expect((error as TurnError).attempts?.[0]?.error).toMatchObject({ code: 'unusable' });
  });

  it('a usable option of the wrong shape is a UsageError from streamTurn itself', () => {
    const make = (usable: unknown) => () =>
      streamTurn({
        turnId: 'turn-42',
        adapter: openaiChat(),
        request: () => ({ url: 'http://127.0.0.1:9/' }),
        usable: usable as never,
      });
    expect(make('yes')).toThrow(
      new UsageError(
        'streamTurn',
        'usable',
        'must be true, false or the options of requireUsable, not "yes"',
      ),
    );
    expect(make({ refusal: 1 })).toThrow('streamTurn: usable.refusal must be a boolean, not 1');
    expect(make({ validateArgs: 'schema' })).toThrow(UsageError);
    expect(make({ validateArgs: 'schema' })).toThrow(
      'streamTurn: usable.validateArgs must be a function of a tool call, not "schema"',
    );
  });
});
