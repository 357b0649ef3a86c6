// Two steps of an agent loop against a strict Gemini server (test/support/strictGeminiServer.ts): step 1 is cut
// part-way (mid-reasoning, or mid-call) and retried; its calls run once through executeTools; toGeminiContents
// builds step 2's contents, which the server accepts only with each functionCall's thought signature and one
// functionResponse per call. Step 2 holds the final attempt exactly and nothing of the abandoned one.
import { accumulateTurn, nextStep, type TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { geminiContent, toGeminiContents } from 'cleanturn/providers';
import { streamTurn } from 'cleanturn/transport';
import { last, lastValueFrom, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GeminiStep,
  type StrictGeminiServer,
  startStrictGeminiServer,
} from '../support/strictGeminiServer.js';

const model = 'gemini-3-pro-preview';
const responseId = (n: number) => `resp-${n}-Ugx3acX2KqWZ28oP`;
const usage = {
  promptTokenCount: 120,
  candidatesTokenCount: 20,
  thoughtsTokenCount: 64,
  totalTokenCount: 204,
};
/** A chunk of candidate 0 with these parts. */
const chunk = (n: number, parts: object[], finishReason?: string) => ({
  candidates: [{ content: { parts, role: 'model' }, index: 0, ...(finishReason ? { finishReason } : {}) }],
  usageMetadata: usage,
  modelVersion: model,
  responseId: responseId(n),
});

const tools = [
  {
    functionDeclarations: [
      {
        name: 'issue_refund',
        parametersJsonSchema: {
          type: 'object',
          properties: { order_id: { type: 'string' }, amount: { type: 'string' } },
        },
      },
    ],
  },
];
const question = {
  role: 'user',
  parts: [{ text: 'The book of order ORD-7781 arrived damaged. Please refund it.' }],
};

/** The answer of step 2: text, then the signature on an empty last part. */
const answer: GeminiStep = {
  chunks: [
    chunk(3, [{ text: 'Your refund of order ORD-7781 is on its way.' }]),
    chunk(3, [{ text: '', thoughtSignature: 'U3RlcDJBbnN3ZXJTaWc=' }], 'STOP'),
  ],
};

let server: StrictGeminiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One step: a turn over fetch with retries, its calls run once each, and the state it ends in. */
async function step(
  url: string,
  turnId: string,
  contents: readonly object[],
  ledger: MemoryEffectLedger,
  runs: unknown[],
): Promise<{ turn: TurnState; results: ToolResultEvent[] }> {
  const turn$ = streamTurn({
    turnId,
    adapter: geminiContent(),
    retry: 2,
    backoff: false,
    request: ({ signal }) => ({
      url: `${url}/v1beta/models/${model}:streamGenerateContent?alt=sse`,
      init: {
        method: 'POST',
        signal,
        headers: { 'content-type': 'application/json', 'x-goog-api-key': 'test' },
        body: JSON.stringify({
          contents,
          tools,
          generationConfig: { thinkingConfig: { includeThoughts: true } },
        }),
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

/** Runs both steps; returns step 1's turn, the step-2 contents and the server's requests. */
async function loop(steps: GeminiStep[]) {
  server = await startStrictGeminiServer({ steps: [...steps, answer], thinking: true });
  const ledger = new MemoryEffectLedger();
  const runs: unknown[] = [];
  const first = await step(server.url, 'turn-42', [question], ledger, runs);
  expect(nextStep(first.turn.finish)).toBe('answer');
  const contents = [question, ...toGeminiContents(first.turn, first.results)];
  const second = await step(server.url, 'turn-43', contents, ledger, runs);
  expect(nextStep(second.turn.finish)).toBe('done');
  expect(second.turn.text).toBe('Your refund of order ORD-7781 is on its way.');
  return { first: first.turn, contents, runs, requests: server.requests };
}

/** A request body of the server, as text, to look for leftovers. */
const bodyText = (body: unknown) => JSON.stringify(body);

describe('a Gemini 3 loop against the strict server: step 1 retried, step 2 accepted', () => {
  it('cut mid-reasoning: step 2 carries the final attempt, its signature on the call, no abandoned thought', async () => {
    const abandoned = {
      thought: 'Maybe the customer would rather have store credit. ',
      signature: 'QWJhbmRvbmVkVGhvdWdodFNpZw==',
    };
    const final = {
      thought: '**Checking the policy**\n\nDamage in transit qualifies for a full refund.',
      text: 'Checking order ORD-7781. ',
      signature: 'RmluYWxDYWxsU2lnbmF0dXJl',
    };
    const args = { order_id: 'ORD-7781', amount: 'full' };
    const { first, contents, runs, requests } = await loop([
      {
        chunks: [
          chunk(1, [{ text: abandoned.thought, thought: true, thoughtSignature: abandoned.signature }]),
          chunk(1, [{ text: 'Store credit is not what was asked for.', thought: true }]),
          chunk(1, [{ text: 'Checking order ORD-7781. ' }]),
        ],
        cutAfter: 1,
      },
      {
        chunks: [
          chunk(2, [{ text: final.thought, thought: true }]),
          chunk(2, [{ text: final.text }]),
          chunk(2, [{ functionCall: { name: 'issue_refund', args }, thoughtSignature: final.signature }]),
          chunk(2, [{ text: '' }], 'STOP'),
        ],
      },
    ]);
    expect(first.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(first.reasoning).toBe(final.thought);
    expect(first.responseId).toBe(responseId(2));
    expect(runs).toEqual([args]);
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    const sent = (requests[2]?.body as { contents?: unknown } | undefined)?.contents;
    expect(sent).toEqual(contents);
    expect(sent).toEqual([
      question,
      {
        role: 'model',
        parts: [
          { text: final.thought, thought: true },
          { text: final.text },
          { functionCall: { name: 'issue_refund', args }, thoughtSignature: final.signature },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'issue_refund', response: { refund_id: 'RF-1', status: 'refunded' } } },
        ],
      },
    ]);
    for (const leftover of [abandoned.thought, abandoned.signature, 'Store credit', responseId(1)]) {
      expect(bodyText(requests[2]?.body)).not.toContain(leftover);
    }
  });

  it('cut mid-call: step 2 answers the final calls by their ids, none of the abandoned call', async () => {
    const abandoned = {
      id: 'fc_abandoned_77',
      signature: 'QWJhbmRvbmVkQ2FsbFNpZw==',
      text: 'Refunding half. ',
    };
    const signature = 'RmluYWxQYXJhbGxlbFNpZw==';
    const refund = (order_id: string) => ({ order_id, amount: 'full' });
    const { first, contents, runs, requests } = await loop([
      {
        chunks: [
          chunk(1, [{ text: abandoned.text }]),
          chunk(1, [
            {
              functionCall: { id: abandoned.id, name: 'issue_refund', willContinue: true },
              thoughtSignature: abandoned.signature,
            },
          ]),
          chunk(1, [
            {
              functionCall: {
                partialArgs: [{ jsonPath: '$.order_id', stringValue: 'ORD-77', willContinue: true }],
                willContinue: true,
              },
            },
          ]),
          chunk(1, [{ functionCall: {} }], 'STOP'),
        ],
        cutAfter: 3,
      },
      {
        chunks: [
          chunk(2, [{ text: 'Refunding both orders. ' }]),
          chunk(2, [
            {
              functionCall: { id: 'fc_final_1', name: 'issue_refund', args: refund('ORD-7781') },
              thoughtSignature: signature,
            },
            { functionCall: { id: 'fc_final_2', name: 'issue_refund', args: refund('ORD-7782') } },
          ]),
          chunk(2, [{ text: '' }], 'STOP'),
        ],
      },
    ]);
    expect(first.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(first.toolCalls.map((c) => c.id)).toEqual(['fc_final_1', 'fc_final_2']);
    expect(runs).toEqual([refund('ORD-7781'), refund('ORD-7782')]);
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    const sent = (requests[2]?.body as { contents?: unknown } | undefined)?.contents;
    expect(sent).toEqual(contents);
    expect(sent).toEqual([
      question,
      {
        role: 'model',
        parts: [
          { text: 'Refunding both orders. ' },
          {
            functionCall: { id: 'fc_final_1', name: 'issue_refund', args: refund('ORD-7781') },
            thoughtSignature: signature,
          },
          { functionCall: { id: 'fc_final_2', name: 'issue_refund', args: refund('ORD-7782') } },
        ],
      },
      {
        role: 'user',
        parts: [
          {
            functionResponse: {
              id: 'fc_final_1',
              name: 'issue_refund',
              response: { refund_id: 'RF-1', status: 'refunded' },
            },
          },
          {
            functionResponse: {
              id: 'fc_final_2',
              name: 'issue_refund',
              response: { refund_id: 'RF-2', status: 'refunded' },
            },
          },
        ],
      },
    ]);
    for (const leftover of [abandoned.id, abandoned.signature, abandoned.text, 'ORD-77"', responseId(1)]) {
      expect(bodyText(requests[2]?.body)).not.toContain(leftover);
    }
  });
});

describe('the strict Gemini server rejects what Gemini rejects', () => {
  const signed = {
    functionCall: { name: 'issue_refund', args: { order_id: 'ORD-7781' } },
    thoughtSignature: 'U2lnMQ==',
  };
  const answered = {
    role: 'user',
    parts: [{ functionResponse: { name: 'issue_refund', response: { ok: true } } }],
  };
  /** Streams one signed call, so that its signature is one the server issued; then posts `contents`. */
  const post = async (contents: object[]) => {
    server = await startStrictGeminiServer({ steps: [{ chunks: [chunk(1, [signed], 'STOP')] }] });
    const url = `${server.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`;
    const init = (body: object) => ({ method: 'POST', body: JSON.stringify(body) });
    await (await fetch(url, init({ contents: [question] }))).text();
    const response = await fetch(url, init({ contents }));
    const text = await response.text();
    return { status: response.status, body: response.ok ? text : (JSON.parse(text) as unknown) };
  };

  it('accepts the signed call with its answer', async () => {
    expect((await post([question, { role: 'model', parts: [signed] }, answered])).status).toBe(200);
  });

  it.each([
    [
      'a functionCall without its signature',
      [question, { role: 'model', parts: [{ functionCall: signed.functionCall }] }, answered],
      'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:issue_refund` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.',
    ],
    [
      'a signature it never sent',
      [question, { role: 'model', parts: [{ ...signed, thoughtSignature: 'Rm9yZ2Vk' }] }, answered],
      'Corrupted thought signature.',
    ],
    [
      'a call left unanswered',
      [question, { role: 'model', parts: [signed] }],
      'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
    ],
    [
      'a response that is not an object',
      [
        question,
        { role: 'model', parts: [signed] },
        { role: 'user', parts: [{ functionResponse: { name: 'issue_refund', response: 'ok' } }] },
      ],
      `Invalid value at 'contents[2].parts[0].function_response.response' (type.googleapis.com/google.protobuf.Struct), "ok"`,
    ],
    [
      'an answer without a call',
      [question, answered],
      'Please ensure that function response turn comes immediately after a function call turn.',
    ],
  ])('%s: HTTP 400 with the Gemini error', async (_, contents, message) => {
    expect(await post(contents)).toEqual({
      status: 400,
      body: { error: { code: 400, message, status: 'INVALID_ARGUMENT' } },
    });
  });
});
