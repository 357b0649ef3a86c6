// Two steps of an agent loop against a strict Chat Completions server (test/support/strictChatServer.ts), through
// the real pipeline: streamTurn with openaiChat(), executeTools with a MemoryEffectLedger, toOpenAIChatMessages,
// then the next request. Step 1's first attempt is cut mid-reasoning (or mid-call) and retried; the server
// accepts step 2 only with every tool_call_id answered and the reasoning of the final attempt sent back as the
// provider wants it (DeepSeek's reasoning_content, OpenRouter's reasoning_details with the signature), and
// step 2's body holds nothing of the abandoned attempt.
import {
  accumulateTurn,
  attemptPipeline,
  nextStep,
  type TurnEvent,
  type TurnState,
  turnPipeline,
} from 'cleanturn';
import { executeTools, MemoryEffectLedger } from 'cleanturn/effects';
import { openaiChat, toOpenAIChatMessages } from 'cleanturn/providers';
import { helpDesk } from 'cleanturn/testing';
import { fromSSE, streamTurn } from 'cleanturn/transport';
import { last, lastValueFrom, map, type Observable, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenAIChatInput } from '../../src/providers/openaiChat.js';
import { type ChatStep, type StrictChatServer, startStrictChatServer } from '../support/strictChatServer.js';

const model = 'test-reasoner';
const tools = [
  {
    type: 'function',
    function: {
      name: 'issue_refund',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' }, amount: { type: 'string' } },
      },
    },
  },
];
const user = { role: 'user', content: 'Please refund order ORD-7781, the book arrived damaged.' };
const refundText = '{"order_id":"ORD-7781","amount":"full"}';

let server: StrictChatServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One streamed turn against the server: the turn state and the executor's results, from one subscription. */
async function step(
  url: string,
  turnId: string,
  messages: readonly unknown[],
  ledger: MemoryEffectLedger,
  refunds: unknown[],
) {
  const turn$ = streamTurn({
    turnId,
    adapter: openaiChat(),
    backoff: false,
    request: ({ signal }) => ({
      url: `${url}/chat/completions`,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          messages,
          tools,
          stream: true,
          stream_options: { include_usage: true },
        }),
        signal,
      },
    }),
  }).pipe(share());
  const handlers = {
    issue_refund: (args: unknown) => {
      refunds.push(args);
      return { refund_id: 're_1', status: 'refunded' };
    },
  };
  const [turn, results] = await Promise.all([
    lastValueFrom(turn$.pipe(accumulateTurn(), last())),
    lastValueFrom(turn$.pipe(executeTools(handlers, { turnId, ledger }), toArray())),
  ]);
  return { turn, results };
}

/** The two steps: step 1 (retried once), its messages, then step 2; with what the server and the tool saw. */
async function loop(steps: ChatStep[], requireBack: 'reasoning_content' | 'reasoning_details') {
  server = await startStrictChatServer({ steps, requireBack });
  const ledger = new MemoryEffectLedger();
  const refunds: unknown[] = [];
  const first = await step(server.url, 'turn-1', [user], ledger, refunds);
  expect(nextStep(first.turn.finish)).toBe('answer');
  const appended = toOpenAIChatMessages(first.turn, first.results);
  const second = await step(server.url, 'turn-2', [user, ...appended], ledger, refunds);
  return { first, second, appended, refunds, requests: server.requests };
}

/** A DeepSeek chunk. */
const ds = (id: string, delta: object, finishReason: string | null = null, usage: object | null = null) => ({
  id,
  object: 'chat.completion.chunk',
  created: 1786790000,
  model: 'deepseek-v4-flash',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  usage,
});
/** An OpenRouter chunk (Claude with reasoning): `reasoning` and its `reasoning_details` piece side by side. */
const or = (id: string, delta: object, finishReason: string | null = null) => ({
  id,
  provider: 'Anthropic',
  model: 'anthropic/claude-sonnet-4.5',
  object: 'chat.completion.chunk',
  created: 1786790100,
  choices: [
    {
      index: 0,
      delta: { role: 'assistant', content: '', ...delta },
      finish_reason: finishReason,
      native_finish_reason: null,
    },
  ],
});
const thought = (text: string) => ({
  reasoning: text,
  reasoning_details: [{ type: 'reasoning.text', text, format: 'anthropic-claude-v1', index: 0 }],
});
const signed = (signature: string) => ({
  reasoning: null,
  reasoning_details: [{ type: 'reasoning.text', signature, format: 'anthropic-claude-v1', index: 0 }],
});
const callStart = (id: string, args: string) => ({
  tool_calls: [{ index: 0, id, type: 'function', function: { name: 'issue_refund', arguments: args } }],
});
const callArgs = (args: string) => ({ tool_calls: [{ index: 0, function: { arguments: args } }] });

/** The answer of step 2, whatever the flavour. */
const answer: ChatStep = {
  events: [
    ds('final-answer', { role: 'assistant', content: 'Refund re_1 has started.' }),
    ds('final-answer', { content: '' }, 'stop', { prompt_tokens: 300, completion_tokens: 8 }),
    '[DONE]',
  ],
};

const deepseekFinal = 'The book arrived damaged, so a full refund of ORD-7781.';
/** DeepSeek, thinking mode: attempt 1 cut mid-reasoning or mid-call, attempt 2 whole. */
function deepseek(cut: 'reasoning' | 'call'): ChatStep[] {
  const abandoned = [
    ds('ds-attempt-1', { role: 'assistant', content: null, reasoning_content: '' }),
    ds('ds-attempt-1', { content: null, reasoning_content: 'The order was lost in transit,' }),
    ds('ds-attempt-1', { content: null, reasoning_content: ' so a partial refund' }),
    ds('ds-attempt-1', callStart('call_00_abandoned', '{"order_id":"ORD-')),
    ds('ds-attempt-1', callArgs('7781","amount":"partial"}')),
  ];
  const whole = [
    ds('ds-attempt-2', { role: 'assistant', content: null, reasoning_content: '' }),
    ds('ds-attempt-2', { content: null, reasoning_content: 'The book arrived damaged,' }),
    ds('ds-attempt-2', { content: null, reasoning_content: ' so a full refund of ORD-7781.' }),
    ds('ds-attempt-2', callStart('call_00_final', '')),
    ds('ds-attempt-2', callArgs('{"order_id":"ORD-7781",')),
    ds('ds-attempt-2', callArgs('"amount":"full"}')),
    ds('ds-attempt-2', { content: '', reasoning_content: null }, 'tool_calls', {
      prompt_tokens: 212,
      completion_tokens: 40,
      prompt_tokens_details: { cached_tokens: 128 },
      completion_tokens_details: { reasoning_tokens: 18 },
    }),
    '[DONE]',
  ];
  return [
    { events: abandoned, cutAfter: cut === 'reasoning' ? 2 : 4 },
    {
      events: whole,
      message: {
        tool_calls: [{ id: 'call_00_final', name: 'issue_refund', arguments: refundText }],
        reasoning_content: deepseekFinal,
      },
    },
    answer,
  ];
}

const claudeFinal = 'The book arrived damaged. A full refund fits the policy.';
const finalDetails = [
  {
    type: 'reasoning.text',
    text: claudeFinal,
    signature: 'EqQBsig-final-7781',
    format: 'anthropic-claude-v1',
    index: 0,
  },
];
/** OpenRouter with Claude: attempt 1 cut mid-reasoning or mid-call (after its signature), attempt 2 whole. */
function openrouter(cut: 'reasoning' | 'call'): ChatStep[] {
  const abandoned = [
    or('gen-attempt-1', { reasoning: null, reasoning_details: [] }),
    or('gen-attempt-1', thought('The order was lost in transit.')),
    or('gen-attempt-1', thought(' A partial refund')),
    or('gen-attempt-1', signed('EqQBsig-abandoned-0000')),
    or('gen-attempt-1', { content: 'Looking at order ORD-7781. ' }),
    or('gen-attempt-1', callStart('toolu_abandoned', '{"order_id": "ORD-')),
  ];
  const whole = [
    or('gen-attempt-2', { reasoning: null, reasoning_details: [] }),
    or('gen-attempt-2', {
      reasoning: null,
      reasoning_details: [
        { type: 'reasoning.text', text: '', signature: '', format: 'anthropic-claude-v1', index: 0 },
      ],
    }),
    or('gen-attempt-2', thought('The book arrived damaged.')),
    or('gen-attempt-2', thought(' A full refund fits the policy.')),
    or('gen-attempt-2', signed('EqQBsig-final-7781')),
    or('gen-attempt-2', { content: 'Checking order ORD-7781. ' }),
    or('gen-attempt-2', callStart('toolu_final', '')),
    or('gen-attempt-2', callArgs('{"order_id":"ORD-7781",')),
    or('gen-attempt-2', callArgs('"amount":"full"}')),
    or('gen-attempt-2', {}, 'tool_calls'),
    {
      ...or('gen-attempt-2', {}),
      usage: {
        prompt_tokens: 1208,
        completion_tokens: 96,
        prompt_tokens_details: { cached_tokens: 1024 },
        completion_tokens_details: { reasoning_tokens: 38 },
      },
    },
    '[DONE]',
  ];
  return [
    { events: abandoned, cutAfter: cut === 'reasoning' ? 3 : 6 },
    {
      events: whole,
      message: {
        tool_calls: [{ id: 'toolu_final', name: 'issue_refund', arguments: refundText }],
        reasoning_details: finalDetails,
      },
    },
    answer,
  ];
}

/** What step 2's request body says: its messages, and its JSON text. */
function step2(requests: StrictChatServer['requests']) {
  const request = requests[2];
  expect(request?.status).toBe(200);
  const body = request?.body as { messages: unknown[] };
  return { messages: body.messages, text: JSON.stringify(body) };
}

describe('two steps against a strict Chat Completions server, step 1 cut and retried', () => {
  for (const cut of ['reasoning', 'call'] as const) {
    it(`DeepSeek thinking mode, cut mid-${cut}: step 2 carries the final reasoning_content and answers its call`, async () => {
      const { first, second, refunds, requests } = await loop(deepseek(cut), 'reasoning_content');
      expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(first.turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
      expect(first.turn.reasoning).toBe(deepseekFinal);
      expect(first.turn.responseId).toBe('ds-attempt-2');
      expect(first.turn.usage).toEqual({
        inputTokens: 212,
        outputTokens: 40,
        cachedInputTokens: 128,
        reasoningTokens: 18,
      });
      expect(refunds).toEqual([helpDesk.refundArgs]);
      const { messages, text } = step2(requests);
      expect(messages).toEqual([
        user,
        {
          role: 'assistant',
          content: null,
          reasoning_content: deepseekFinal,
          tool_calls: [
            {
              id: 'call_00_final',
              type: 'function',
              function: { name: 'issue_refund', arguments: refundText },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_00_final', content: '{"refund_id":"re_1","status":"refunded"}' },
      ]);
      for (const abandoned of ['lost in transit', 'partial', 'call_00_abandoned', 'ds-attempt-1'])
        expect(text).not.toContain(abandoned);
      expect(second.turn.text).toBe('Refund re_1 has started.');
      expect(nextStep(second.turn.finish)).toBe('done');
    });

    it(`OpenRouter with Claude, cut mid-${cut}: step 2 carries the final reasoning_details with their signature`, async () => {
      const { first, second, refunds, requests } = await loop(openrouter(cut), 'reasoning_details');
      expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(first.turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
      expect(first.turn.reasoning).toBe(claudeFinal);
      expect(refunds).toEqual([helpDesk.refundArgs]);
      const { messages, text } = step2(requests);
      expect(messages).toEqual([
        user,
        {
          role: 'assistant',
          content: 'Checking order ORD-7781. ',
          reasoning: claudeFinal,
          reasoning_details: finalDetails,
          tool_calls: [
            {
              id: 'toolu_final',
              type: 'function',
              function: { name: 'issue_refund', arguments: refundText },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_final', content: '{"refund_id":"re_1","status":"refunded"}' },
      ]);
      for (const abandoned of [
        'lost in transit',
        'partial',
        'sig-abandoned',
        'toolu_abandoned',
        'Looking at',
      ])
        expect(text).not.toContain(abandoned);
      expect(second.turn.text).toBe('Refund re_1 has started.');
    });
  }
});

describe('the strict server rejects what the providers reject', () => {
  /** Step 1 whole, then a step-2 request made from the messages `edit` gives. */
  async function rejected(
    steps: ChatStep[],
    requireBack: 'reasoning_content' | 'reasoning_details',
    edit: (messages: ReturnType<typeof toOpenAIChatMessages>) => unknown[],
  ) {
    server = await startStrictChatServer({ steps: steps.slice(1), requireBack });
    const first = await step(server.url, 'turn-1', [user], new MemoryEffectLedger(), []);
    const messages = [user, ...edit(toOpenAIChatMessages(first.turn, first.results))];
    const failure = step(server.url, 'turn-2', messages, new MemoryEffectLedger(), []);
    await expect(failure).rejects.toMatchObject({ status: 400, retryable: false });
    return server.requests.at(-1)?.error;
  }

  it('a call id left unanswered', async () => {
    const error = await rejected(deepseek('call'), 'reasoning_content', (m) => m.slice(0, 1));
    expect(error).toMatch(/must be followed by tool messages .* call_00_final/);
  });

  it('DeepSeek: an assistant message with calls and without its reasoning_content', async () => {
    const error = await rejected(deepseek('call'), 'reasoning_content', ([assistant, ...rest]) => [
      { ...assistant, reasoning_content: undefined },
      ...rest,
    ]);
    expect(error).toMatch(/reasoning_content.*must be passed back/);
  });

  it('OpenRouter: reasoning_details changed (their signature lost)', async () => {
    const error = await rejected(openrouter('call'), 'reasoning_details', ([assistant, ...rest]) => [
      { ...assistant, reasoning_details: finalDetails.map(({ signature: _, ...detail }) => detail) },
      ...rest,
    ]);
    expect(error).toMatch(/Invalid `signature`/);
  });

  it('a call of the abandoned attempt (the server never finished that response)', async () => {
    const error = await rejected(deepseek('call'), 'reasoning_content', ([assistant]) => [
      {
        ...assistant,
        tool_calls: [
          {
            id: 'call_00_abandoned',
            type: 'function',
            function: { name: 'issue_refund', arguments: refundText },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_00_abandoned', content: 'ok' },
    ]);
    expect(error).toMatch(/unknown or altered tool call call_00_abandoned/);
  });
});

describe('a server that never sends finish_reason (Snowflake Cortex), [DONE] passed on to the adapter', () => {
  /** A Cortex chunk: no index, no finish_reason, `usage: {}` on every chunk. */
  const cx = (delta: object, usage: object = {}) => ({
    id: 'cortex-1',
    model: 'claude-sonnet-4-5',
    choices: [{ delta }],
    usage,
  });
  const events = [
    cx({ content: 'Your refund' }),
    cx({ content: ' has started.' }),
    cx({}, { prompt_tokens: 90, completion_tokens: 6 }),
  ];

  /** fetch + fromSSE, each `data:` parsed with `[DONE]` kept, openaiChat, the attempt and turn pipelines. */
  const run = (url: string): Promise<TurnState> => {
    const attempt$: Observable<OpenAIChatInput> = fromSSE(({ signal }) => ({
      url: `${url}/chat/completions`,
      init: { method: 'POST', body: JSON.stringify({ model, messages: [user], stream: true }), signal },
    })).pipe(
      map((message) =>
        message.data === '[DONE]' ? '[DONE]' : (JSON.parse(message.data) as OpenAIChatInput),
      ),
    );
    return lastValueFrom(
      attempt$.pipe(
        attemptPipeline(openaiChat()),
        turnPipeline({ turnId: 'turn-1', retry: { count: 2 } }),
        accumulateTurn<TurnEvent>(),
        last(),
      ),
    );
  };

  it('ends each turn at [DONE] with a stop: one request, not retried', async () => {
    server = await startStrictChatServer({ steps: [{ events: [...events, '[DONE]'] }] });
    const turn = await run(server.url);
    expect(server.requests).toHaveLength(1);
    expect(turn.finish).toMatchObject({ reason: 'stop', attempt: 1, responseId: 'cortex-1' });
    expect(turn.finish?.raw).toBeUndefined();
    expect(turn.text).toBe('Your refund has started.');
    expect(turn.usage).toEqual({ inputTokens: 90, outputTokens: 6 });
  });

  it('a response that ends without [DONE] has no finish: it is retried', async () => {
    server = await startStrictChatServer({ steps: [{ events }, { events: [...events, '[DONE]'] }] });
    const turn = await run(server.url);
    expect(server.requests).toHaveLength(2);
    expect(turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(turn.finish).toMatchObject({ reason: 'stop', attempt: 2 });
  });
});
