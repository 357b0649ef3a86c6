// streamTurn used wrongly: a plan that returns no plan (undefined, {}, a Promise, an adapter that is not a function)
// and options of the wrong shape are a UsageError, at once: not retried, no reset on any screen, no request to the
// provider. A real server on 127.0.0.1 counts the requests that reach it.
import { UsageError } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { type StreamTurnOptions, streamTurn, type TurnReport } from 'cleanturn/transport';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptPlan } from '../../src/transport/streamTurn.js';
import { chatTranscript } from '../support/chatTranscript.js';
import { startServer, type TestServer } from '../support/httpServer.js';

const answer = chatTranscript([{ text: 'Your refund for ORD-7781 has started.' }], {
  usage: { prompt: 40, completion: 9 },
});

let server: TestServer;
beforeAll(async () => {
  server = await startServer(() => ({ body: answer.body }));
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
});

/** A request to the test server. */
const request: AttemptPlan['request'] = ({ signal }) => ({
  url: `${server.url}/v1/chat/completions`,
  init: { method: 'POST', body: '{}', signal },
});

/** Runs a turn to its end: the events it emitted, the error it ended with, and its report. */
async function run(options: StreamTurnOptions) {
  const events: { type: string }[] = [];
  let report: TurnReport | undefined;
  const error = await lastValueFrom(
    streamTurn({
      ...options,
      onReport: (r) => {
        report = r;
      },
    }).pipe(
      tap((event) => events.push(event)),
      toArray(),
    ),
  ).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  return { events, error, report };
}

describe('streamTurn: a plan that returns no plan is a UsageError, at once', () => {
  // biome-ignore format: a table
  const returns: [string, unknown, string][] = [
    ['undefined',                                  undefined,                                       'plan'],
    ['null',                                       null,                                            'plan'],
    ['{}',                                         {},                                              'plan().request'],
    ['a Promise of a plan',                        Promise.resolve({ request, adapter: openaiChat() }), 'plan'],
    ['an adapter that is not a function',          { request, adapter: 'openaiChat' },              'plan().adapter'],
    ['an adapter called twice by mistake',         { request, adapter: {} },                        'plan().adapter'],
    ['a request that is not a function',           { request: 'https://api.openai.com/', adapter: openaiChat() }, 'plan().request'],
    ['a provider name that is not a string',       { request, adapter: openaiChat(), provider: 7 }, 'plan().provider'],
    ['a model name that is not a string',          { request, adapter: openaiChat(), model: {} },   'plan().model'],
    ['resume options that are not an object',      { request, adapter: openaiChat(), resume: true }, 'plan().resume'],
    ['resume without retrieve',                    { request, adapter: openaiChat(), resume: {} },  'plan().resume.retrieve'],
    ['a negative maxResumes',                      { request, adapter: openaiChat(), resume: { retrieve: request, maxResumes: -1 } }, 'plan().resume.maxResumes'],
  ];
  for (const [what, returned, option] of returns) {
    it(`${what}: no retry, no reset, no request`, async () => {
      let plans = 0;
      const { events, error, report } = await run({
        turnId: 'turn-42',
        retry: 2,
        backoff: false,
        plan: () => {
          plans++;
          return returned as AttemptPlan;
        },
      });
      expect(error).toBeInstanceOf(UsageError);
      expect(error).toMatchObject({ operator: 'streamTurn', option, retryable: false });
      expect(plans).toBe(1);
      expect(events.filter((e) => e.type === 'reset')).toEqual([]);
      expect(server.requests).toHaveLength(0);
      expect(report?.outcome).toBe('failed');
      expect(report?.attempts).toHaveLength(1);
    });
  }

  it('a plan that goes wrong on attempt 2 ends the turn there: one reset (for attempt 1), one request', async () => {
    const cut = await startServer(() => ({ body: answer.body, destroyAfter: answer.after('role') }));
    try {
      const { events, error } = await run({
        turnId: 'turn-42',
        retry: 2,
        backoff: false,
        plan: ({ attempt }) =>
          (attempt === 1
            ? { adapter: openaiChat(), request: () => `${cut.url}/v1/chat/completions` }
            : undefined) as AttemptPlan,
      });
      expect(error).toMatchObject({ name: 'UsageError', option: 'plan' });
      expect(events.filter((e) => e.type === 'reset')).toHaveLength(1);
      expect(cut.requests).toHaveLength(1);
    } finally {
      await cut.close();
    }
  });

  it('a good plan still runs (the checks refuse only what cannot work)', async () => {
    const { events, error } = await run({
      turnId: 'turn-42',
      plan: () => ({ request, adapter: openaiChat(), provider: 'openai', model: 'gpt-4.1' }),
    });
    expect(error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['text', 'usage', 'finish']);
    expect(server.requests).toHaveLength(1);
  });
});

describe('streamTurn: options of the wrong shape are a UsageError when the turn is made', () => {
  const adapter = openaiChat();
  const good = { turnId: 'turn-42', request, adapter } as StreamTurnOptions;
  // biome-ignore format: a table
  const bad: [string, unknown, string][] = [
    ['no options at all',                      undefined,                                        'options'],
    ['a turnId that is not a string',          { ...good, turnId: 42 },                          'turnId'],
    ['an empty turnId',                        { ...good, turnId: '' },                          'turnId'],
    ['a retry that is not an integer',         { ...good, retry: 1.5 },                          'retry'],
    ['a negative retry',                       { ...good, retry: -1 },                           'retry'],
    ['a request that is not a function',       { ...good, request: 'https://api.openai.com/' },  'request'],
    ['an adapter that is not a function',      { ...good, adapter: 'openaiChat' },               'adapter'],
    ['a plan that is not a function',          { turnId: 't', plan: { request, adapter } },      'plan'],
    ['a plan beside request and adapter',      { ...good, plan: () => ({ request, adapter }) },  'plan'],
    ['neither a plan nor request and adapter', { turnId: 't' },                                  'request'],
    ['a budget without tryWithdraw',           { ...good, budget: { deposit() {} } },            'budget'],
    ['a negative stallTimeout',                { ...good, stallTimeout: -1 },                    'stallTimeout'],
    ['a stallTimeout that is a string',        { ...good, stallTimeout: '60s' },                 'stallTimeout'],
    ['a maxBufferSize of 0',                   { ...good, maxBufferSize: 0 },                    'maxBufferSize'],
    ['a maxRetryAfter that is NaN',            { ...good, maxRetryAfter: Number.NaN },           'maxRetryAfter'],
    ['backoff options out of range',           { ...good, backoff: { factor: 0.5 } },            'backoff'],
    ['backoff: true',                          { ...good, backoff: true },                       'backoff'],
    ['an early that is not a function',        { ...good, early: 'lookup_order' },               'early'],
    ['a seen without has',                     { ...good, seen: ['key'] },                       'seen'],
    ['an onReport that is not a function',     { ...good, onReport: console },                   'onReport'],
    ['a fetch that is not a function',         { ...good, fetch: {} },                           'fetch'],
    ['resume without retrieve',                { ...good, resume: {} },                          'resume.retrieve'],
    ['a resume delay that is negative',        { ...good, resume: { retrieve: request, delay: -5 } }, 'resume.delay'],
  ];
  for (const [what, options, option] of bad) {
    it(`refuses ${what}`, () => {
      let thrown: unknown;
      try {
        streamTurn(options as StreamTurnOptions);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(UsageError);
      expect(thrown).toMatchObject({ operator: 'streamTurn', option, retryable: false });
      expect(server.requests).toHaveLength(0);
    });
  }
});
