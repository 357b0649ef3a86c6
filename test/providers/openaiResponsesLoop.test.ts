// Two steps of an agent loop against a strict Responses server (test/support/strictResponsesServer.ts), with
// `store: false`: step 1 is cut part-way (mid-reasoning, or mid-call) and retried; its call runs once through
// executeTools; toOpenAIResponsesInput builds step 2's input, which the server accepts only with the reasoning
// items and their encrypted content before the call, and one function_call_output per call_id. Step 2 holds the
// final attempt exactly and nothing of the abandoned one.
import { join } from 'node:path';
import { accumulateTurn, nextStep, type TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { openaiResponses, toOpenAIResponsesInput } from 'cleanturn/providers';
import { streamTurn } from 'cleanturn/transport';
import { last, lastValueFrom, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenAIResponsesEvent } from '../../src/providers/openaiResponses.js';
import { readSseJson } from '../support/sse.js';
import {
  type ResponsesStep,
  type StrictResponsesServer,
  startStrictResponsesServer,
} from '../support/strictResponsesServer.js';

const fixtures = join(import.meta.dirname, '../fixtures/openai-responses');
const final = readSseJson(
  join(fixtures, 'reasoning-encrypted-summary-parts-then-call.sse'),
) as OpenAIResponsesEvent[];
const model = 'gpt-5.1';
const question = { role: 'user', content: 'The book of order ORD-7781 arrived damaged. Please refund it.' };
const tools = [
  {
    type: 'function',
    name: 'issue_refund',
    parameters: { type: 'object', properties: { order_id: { type: 'string' }, amount: { type: 'string' } } },
    strict: false,
  },
];

/** Another generation of the same response: every id, encrypted text and thought of the final one replaced. */
const abandonedAttempt = JSON.parse(
  JSON.stringify(final)
    .replaceAll('resp_07e1c3b5', 'resp_abandon')
    .replaceAll('rs_07e1c3b5', 'rs_abandon')
    .replaceAll('fc_07e1c3b5', 'fc_abandon')
    .replaceAll('call_AB6AaRZ1FYZB2RwS6A5vbdqn', 'call_Abandoned0000000000000')
    .replaceAll('gAAAAABp', 'gAAAAABq-abandoned-')
    .replaceAll('The customer says the book', 'Maybe store credit would do')
    .replaceAll('"amount\\":\\"full\\"', '"amount\\":\\"partial\\"'),
) as OpenAIResponsesEvent[];
const abandoned = [
  'resp_abandon',
  'rs_abandon',
  'fc_abandon',
  'call_Abandoned',
  'abandoned-',
  'store credit',
  'partial',
];

/** The answer of step 2: a message, then the completed response. */
const answerText = 'Refund RF-1 of order ORD-7781 has started.';
const answerItem = {
  id: 'msg_3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c',
  type: 'message',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', annotations: [], logprobs: [], text: answerText }],
};
const answer: ResponsesStep = {
  events: [
    {
      type: 'response.created',
      sequence_number: 0,
      response: { id: 'resp_step2', status: 'in_progress', output: [] },
    },
    {
      type: 'response.output_item.added',
      sequence_number: 1,
      output_index: 0,
      item: { ...answerItem, status: 'in_progress', content: [] },
    },
    {
      type: 'response.output_text.delta',
      sequence_number: 2,
      item_id: answerItem.id,
      output_index: 0,
      content_index: 0,
      delta: answerText,
    },
    { type: 'response.output_item.done', sequence_number: 3, output_index: 0, item: answerItem },
    {
      type: 'response.completed',
      sequence_number: 4,
      response: { id: 'resp_step2', status: 'completed', output: [answerItem] },
    },
  ],
};

let server: StrictResponsesServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One step: a turn over fetch with retries, its calls run once each, and the state it ends in. */
async function step(
  url: string,
  turnId: string,
  input: readonly object[],
  ledger: MemoryEffectLedger,
  runs: unknown[],
  include = ['reasoning.encrypted_content'],
): Promise<{ turn: TurnState; results: ToolResultEvent[] }> {
  const turn$ = streamTurn({
    turnId,
    adapter: openaiResponses(),
    retry: 2,
    backoff: false,
    request: ({ signal }) => ({
      url: `${url}/responses`,
      init: {
        method: 'POST',
        signal,
        headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
        body: JSON.stringify({ model, input, tools, store: false, include, stream: true }),
      },
    }),
  }).pipe(share());
  const handlers = {
    issue_refund: (args: unknown) => {
      runs.push(args);
      return { refund_id: `RF-${runs.length}`, status: 'refunded' };
    },
  };
  const [turn, results] = await Promise.all([
    lastValueFrom(turn$.pipe(accumulateTurn(), last())),
    lastValueFrom(turn$.pipe(executeTools(handlers, { turnId, ledger }), toArray())),
  ]);
  return { turn, results };
}

/** Runs both steps; returns step 1's turn, the step-2 input and the server's requests. */
async function loop(first: ResponsesStep) {
  server = await startStrictResponsesServer([first, { events: final }, answer]);
  const ledger = new MemoryEffectLedger();
  const runs: unknown[] = [];
  const one = await step(server.url, 'turn-42', [question], ledger, runs);
  expect(nextStep(one.turn.finish)).toBe('answer');
  const input = [question, ...toOpenAIResponsesInput(one.turn, one.results)];
  const two = await step(server.url, 'turn-43', input, ledger, runs);
  expect(nextStep(two.turn.finish)).toBe('done');
  expect(two.turn.text).toBe(answerText);
  return { first: one.turn, input, runs, requests: server.requests };
}

const done = (type: string) =>
  final
    .filter((e) => e.type === 'response.output_item.done' && e.item?.type === type)
    .map((e) => e.item) as Record<string, unknown>[];
/** Step 2's input as the final attempt must give it: the reasoning and the call as sent, then the call's output. */
const expectedInput = () => {
  const [reasoningItem] = done('reasoning');
  const [call] = done('function_call');
  return [
    question,
    {
      type: 'reasoning',
      id: reasoningItem?.id,
      summary: reasoningItem?.summary,
      encrypted_content: reasoningItem?.encrypted_content,
    },
    {
      type: 'function_call',
      id: call?.id,
      status: 'completed',
      call_id: call?.call_id,
      name: 'issue_refund',
      arguments: '{"order_id":"ORD-7781","amount":"full"}',
    },
    {
      type: 'function_call_output',
      call_id: call?.call_id,
      output: JSON.stringify({ refund_id: 'RF-1', status: 'refunded' }),
    },
  ];
};

describe('a Responses loop with store: false against the strict server: step 1 retried, step 2 accepted', () => {
  it('cut mid-reasoning: step 2 carries the final reasoning, encrypted, before its call; no abandoned thought', async () => {
    // Attempt 1 streams its reasoning item and two summary fragments, then the connection is cut.
    const cutAt = abandonedAttempt.findIndex((e) => e.type === 'response.reasoning_summary_text.done');
    const { first, input, runs, requests } = await loop({ events: abandonedAttempt, cutAfter: cutAt });
    expect(first.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(first.reasoning).toBe(
      '**Checking the order**\n\nThe customer says the book arrived damaged.\n\n**Refund policy**\n\nDamaged books are refunded in full.',
    );
    expect(first.responseId).toBe('resp_07e1c3b5a9d24f6801693c3213a5c88190b0de00f3b99756');
    expect(runs).toEqual([{ order_id: 'ORD-7781', amount: 'full' }]);
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    const sent = (requests[2]?.body as { input?: unknown } | undefined)?.input;
    expect(sent).toEqual(input);
    expect(sent).toEqual(expectedInput());
    for (const leftover of abandoned) expect(JSON.stringify(requests[2]?.body)).not.toContain(leftover);
  });

  it('cut mid-call: step 2 answers the final call by its call_id, none of the abandoned call', async () => {
    // Attempt 1 streams its whole reasoning and the start of its call, then the connection is cut.
    const cutAt = abandonedAttempt.findIndex((e) => e.type === 'response.function_call_arguments.delta') + 1;
    const { first, runs, requests } = await loop({ events: abandonedAttempt, cutAfter: cutAt });
    expect(first.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(first.toolCalls.map((c) => c.id)).toEqual(['call_AB6AaRZ1FYZB2RwS6A5vbdqn']);
    expect(runs).toHaveLength(1);
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    expect((requests[2]?.body as { input?: unknown } | undefined)?.input).toEqual(expectedInput());
    for (const leftover of abandoned) expect(JSON.stringify(requests[2]?.body)).not.toContain(leftover);
  });

  it('without include: reasoning.encrypted_content, the reasoning item cannot come back with store: false', async () => {
    server = await startStrictResponsesServer([{ events: final }, answer]);
    const ledger = new MemoryEffectLedger();
    const one = await step(server.url, 'turn-42', [question], ledger, [], []);
    const input = [question, ...toOpenAIResponsesInput(one.turn, one.results)];
    const two = step(server.url, 'turn-43', input, ledger, [], []);
    await expect(two).rejects.toMatchObject({ status: 404, retryable: false });
    expect(server.requests.at(-1)?.error).toMatch(
      /^Item with id 'rs_07e1.*' not found\. Items are not persisted/,
    );
  });
});

describe('the strict Responses server rejects what the API rejects', () => {
  const post = async (body: object) => {
    const response = await fetch(`${server?.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, store: false, ...body }),
    });
    const text = await response.text();
    return {
      status: response.status,
      message: response.ok ? '' : (JSON.parse(text) as { error: { message: string } }).error.message,
    };
  };

  it('an unanswered call, an answer without its call, a missing reasoning item, a field the input does not take', async () => {
    server = await startStrictResponsesServer([{ events: final }]);
    const first = await fetch(`${server.url}/responses`, {
      method: 'POST',
      body: JSON.stringify({
        model,
        input: 'refund',
        stream: true,
        include: ['reasoning.encrypted_content'],
      }),
    });
    await first.text();
    const [reasoningItem, call] = expectedInput().slice(1) as [object, object, object];
    const output = { type: 'function_call_output', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', output: 'ok' };
    const cases: [object[], number, RegExp][] = [
      [[reasoningItem, call], 400, /^No tool output found for function call call_AB6/],
      [[output], 400, /^No tool call found for function call output with call_id call_AB6/],
      [
        [call, output],
        400,
        /^Item 'fc_07e1.*' of type 'function_call' was provided without its required 'reasoning' item: 'rs_07e1/,
      ],
      [[{ ...reasoningItem, encrypted_content: 'gAAAA-forged' }, call, output], 400, /could not be verified/],
      [[reasoningItem, { ...call, logprobs: [] }, output], 400, /^Unknown parameter: 'input\[1\]\.logprobs'/],
      [[reasoningItem, call, output], 200, /./],
    ];
    for (const [input, status, message] of cases) {
      const result = await post({ input });
      expect(result.status, JSON.stringify(input)).toBe(status);
      if (status !== 200) expect(result.message).toMatch(message);
    }
  });
});
