// Two steps of a tool loop through the AI SDK for real: streamText with @ai-sdk/openai's responses model
// (store: false, a reasoning model) against a strict Responses server on 127.0.0.1. Step 1 is cut mid-reasoning
// (and, in the second case, mid-call) and retried by the pipeline; executeTools answers the call once; the next
// messages come from toAiSdkMessages; step 2 sends them through streamText, and the server accepts only a request
// whose every call is answered and whose reasoning items (with their encrypted content) are there. Step 2's body
// holds the final attempt exactly and nothing of the abandoned one.
import { createOpenAI } from '@ai-sdk/openai';
import { type ModelMessage, streamText, type TextStreamPart, tool } from 'ai';
import {
  accumulateTurn,
  attemptPipeline,
  nextStep,
  type TurnEvent,
  type TurnState,
  turnPipeline,
} from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { aiSdkParts, toAiSdkMessages } from 'cleanturn/providers';
import { defer, lastValueFrom, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AiSdkOutput } from '../../src/providers/aiSdkParts.js';
import {
  type ResponsesScript,
  type StrictResponsesServer,
  startStrictResponsesServer,
} from '../support/strictAiSdkServer.js';

const turnId = 'turn-42';
const tools = {
  issue_refund: tool({
    description: 'Refund an order, fully or in part.',
    inputSchema: z.object({ order_id: z.string(), amount: z.string() }),
  }),
};
const user: ModelMessage = {
  role: 'user',
  content: 'The book of order ORD-7781 arrived damaged. Please refund it.',
};

/** Step 1 of attempt `n` (0: the abandoned one, 1: the final one): reasoning in two summaries, then the call. */
const step1 = (n: number, cutAfterEvents?: number): ResponsesScript => ({
  id: `resp_step1_attempt${n}`,
  cutAfterEvents,
  items: [
    {
      type: 'reasoning',
      id: `rs_attempt${n}`,
      summary: [`**Attempt ${n} checks the order**`, `Attempt ${n} refunds it in full.`],
      encrypted: `gAAAAB-encrypted-reasoning-of-attempt-${n}==`,
    },
    {
      type: 'function_call',
      id: `fc_attempt${n}`,
      callId: `call_attempt${n}`,
      name: 'issue_refund',
      arguments: ['{"order_id":"ORD-7781",', '"amount":"full"}'],
    },
  ],
});
const step2: ResponsesScript = {
  id: 'resp_step2',
  items: [{ type: 'message', id: 'msg_step2', text: ['Refund re_7781 ', 'has started.'] }],
};

let server: StrictResponsesServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One step through the README's pipeline: the turn's final state, the executor's results, the clean events. */
async function runStep(baseURL: string, messages: ModelMessage[], refunds: string[]) {
  const model = createOpenAI({ baseURL, apiKey: 'test' }).responses('o4-mini');
  const events$ = defer(
    (): AsyncIterable<TextStreamPart<typeof tools>> =>
      streamText({
        model,
        tools,
        messages,
        providerOptions: { openai: { store: false, reasoningSummary: 'auto' } },
        maxRetries: 0, // the pipeline retries, and says so
        onError: () => {}, // a cut arrives as the stream's error too: the adapter reports it
      }).fullStream,
  ).pipe(attemptPipeline(aiSdkParts()), turnPipeline({ turnId, retry: 2 }), share());
  const handlers = {
    issue_refund: (args: unknown) => {
      refunds.push(JSON.stringify(args));
      return { refund_id: 're_7781', status: 'pending' };
    },
  };
  const [turn, results, events]: [TurnState, ToolResultEvent[], TurnEvent[]] = await Promise.all([
    lastValueFrom(events$.pipe(accumulateTurn())),
    lastValueFrom(
      events$.pipe(executeTools(handlers, { turnId, ledger: new MemoryEffectLedger() }), toArray()),
    ),
    lastValueFrom(events$.pipe(toArray())),
  ]);
  return { turn, results, events };
}

/** What of attempt `n` of step 1 may appear in a request body: its ids, its reasoning, its encrypted content. */
const traces = (n: number) => [
  `rs_attempt${n}`,
  `fc_attempt${n}`,
  `call_attempt${n}`,
  `Attempt ${n}`,
  `of-attempt-${n}`,
];

describe('an AI SDK tool loop against a strict Responses server (store: false)', () => {
  it.each([
    ['mid-reasoning', 5], // created, in_progress, the reasoning item, its first summary part and delta
    ['mid-call', 16], // the whole reasoning item (its encrypted content too), the call item, its first arguments delta
  ])(
    'step 1 cut %s, retried: step 2 is accepted and holds the final attempt only',
    async (_where, cut) => {
      server = await startStrictResponsesServer((n) =>
        n === 0 ? step1(0, cut) : n === 1 ? step1(1) : step2,
      );
      const refunds: string[] = [];
      const first = await runStep(server.baseURL, [user], refunds);

      // Step 1: attempt 1 was cut and abandoned, its reasoning shown then reset; attempt 2 completed with the call.
      expect(first.turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
      expect(first.events.some((e) => e.type === 'reasoning' && e.attempt === 1)).toBe(true);
      expect(first.events.filter((e) => e.type === 'reset')).toHaveLength(1);
      expect(first.turn.reasoning).toBe('**Attempt 1 checks the order**Attempt 1 refunds it in full.');
      expect(first.turn.responseId).toBe('resp_step1_attempt1');
      expect(first.turn.usage).toEqual({
        inputTokens: 310,
        outputTokens: 212,
        cachedInputTokens: 0,
        reasoningTokens: 192,
      });
      expect(nextStep(first.turn.finish)).toBe('answer');
      expect(refunds).toEqual(['{"order_id":"ORD-7781","amount":"full"}']);
      const output = first.turn.finish?.output as AiSdkOutput;
      expect(output.content).toEqual([
        {
          type: 'reasoning',
          text: '**Attempt 1 checks the order**',
          providerOptions: { openai: { itemId: 'rs_attempt1' } },
        },
        {
          type: 'reasoning',
          text: 'Attempt 1 refunds it in full.',
          providerOptions: {
            openai: {
              itemId: 'rs_attempt1',
              reasoningEncryptedContent: 'gAAAAB-encrypted-reasoning-of-attempt-1==',
            },
          },
        },
        {
          type: 'tool-call',
          toolCallId: 'call_attempt1',
          toolName: 'issue_refund',
          input: { order_id: 'ORD-7781', amount: 'full' },
          providerOptions: { openai: { itemId: 'fc_attempt1' } },
        },
      ]);

      // Step 2: the built messages go back through streamText; the strict server accepts the request.
      const messages = [user, ...toAiSdkMessages(first.turn, first.results)];
      const second = await runStep(server.baseURL, messages, refunds);
      expect(second.turn.text).toBe('Refund re_7781 has started.');
      expect(nextStep(second.turn.finish)).toBe('done');
      expect(server.requests.map((r) => [r.status, r.error])).toEqual([
        [200, undefined],
        [200, undefined],
        [200, undefined],
      ]);
      const body = server.requests[2]?.body ?? '';
      for (const trace of traces(0)) expect(body).not.toContain(trace);
      expect(server.requests[2]?.json?.input).toEqual([
        { role: 'user', content: [{ type: 'input_text', text: user.content }] },
        {
          type: 'reasoning',
          id: 'rs_attempt1',
          encrypted_content: 'gAAAAB-encrypted-reasoning-of-attempt-1==',
          summary: [
            { type: 'summary_text', text: '**Attempt 1 checks the order**' },
            { type: 'summary_text', text: 'Attempt 1 refunds it in full.' },
          ],
        },
        {
          type: 'function_call',
          call_id: 'call_attempt1',
          name: 'issue_refund',
          arguments: '{"order_id":"ORD-7781","amount":"full"}',
        },
        {
          type: 'function_call_output',
          call_id: 'call_attempt1',
          output: '{"refund_id":"re_7781","status":"pending"}',
        },
      ]);
      expect(refunds).toHaveLength(1); // the refund ran once, in step 1
    },
    30_000,
  );

  it('without the output (the text and calls alone, no reasoning), the server rejects step 2', async () => {
    server = await startStrictResponsesServer((n) => (n === 0 ? step1(1) : step2));
    const first = await runStep(server.baseURL, [user], []);
    const finish = first.turn.finish;
    if (finish === undefined) throw new Error('no finish');
    const bare = { ...first.turn, finish: { ...finish, output: undefined } };
    const messages = [user, ...toAiSdkMessages(bare, first.results)];
    const error = await runStep(server.baseURL, messages, []).catch((e: unknown) => e);
    expect(error).toMatchObject({ provider: 'ai-sdk', status: 400, retryable: false });
    expect(server.requests[1]).toMatchObject({
      status: 400,
      error:
        "Item of type 'function_call' (call_id call_attempt1) was provided without its required 'reasoning' item: 'rs_attempt1'.",
    });
  }, 30_000);
});

describe('the strict server rejects what the API rejects', () => {
  const post = (baseURL: string, body: object) =>
    fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'o4-mini', stream: true, store: false, ...body }),
    });
  const reasoning = {
    type: 'reasoning',
    id: 'rs_attempt1',
    encrypted_content: 'gAAAAB-encrypted-reasoning-of-attempt-1==',
    summary: [],
  };
  const call = { type: 'function_call', call_id: 'call_attempt1', name: 'issue_refund', arguments: '{}' };
  const answer = { type: 'function_call_output', call_id: 'call_attempt1', output: '{}' };

  it.each([
    [
      'a call without its output',
      [reasoning, call],
      400,
      'No tool output found for function call call_attempt1.',
    ],
    [
      'an output without its call',
      [answer],
      400,
      'No tool call found for function call output with call_id call_attempt1.',
    ],
    [
      'a call without its reasoning item',
      [call, answer],
      400,
      "without its required 'reasoning' item: 'rs_attempt1'",
    ],
    [
      'a reasoning item without its encrypted content',
      [{ ...reasoning, encrypted_content: undefined }, call, answer],
      404,
      'Items are not persisted',
    ],
    [
      'encrypted content it never issued',
      [{ ...reasoning, encrypted_content: 'gAAAAB-forged==' }, call, answer],
      400,
      'could not be verified',
    ],
    [
      'an item reference with store false',
      [{ type: 'item_reference', id: 'rs_attempt1' }, call, answer],
      404,
      'Items are not persisted',
    ],
  ])('%s', async (_what, input, status, message) => {
    server = await startStrictResponsesServer(() => step1(1));
    // a completed response first, so that its reasoning and call are ones the server issued
    await (await post(server.baseURL, { input: [user] })).text();
    const response = await post(server.baseURL, { input });
    expect(response.status).toBe(status);
    const error = (await response.json()) as { error: { message: string; type: string } };
    expect(error.error.type).toBe('invalid_request_error');
    expect(error.error.message).toContain(message);
    const accepted = await post(server.baseURL, { input: [reasoning, call, answer] });
    expect(accepted.status).toBe(200);
    await accepted.text();
  });
});
