// Two steps of an agent loop against a strict Anthropic server (test/support/strictAnthropicServer.ts), with
// extended thinking and a tool: step 1 is cut part-way (mid-reasoning, or mid-call after a signature went out)
// and retried; its call runs once through executeTools; toAnthropicMessages builds step 2's messages, which the
// server accepts only with the thinking block unmodified before the tool_use and a tool_result for its id. Step 2
// holds the final attempt exactly and nothing of the abandoned one.
import { accumulateTurn, nextStep, type TurnState } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { anthropicMessages, toAnthropicMessages } from 'cleanturn/providers';
import { streamTurn } from 'cleanturn/transport';
import { last, lastValueFrom, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AnthropicStep,
  type StrictAnthropicServer,
  startStrictAnthropicServer,
} from '../support/strictAnthropicServer.js';

const model = 'claude-sonnet-4-5-20250929';
const thinking = { type: 'enabled', budget_tokens: 1024 };
const tools = [
  {
    name: 'issue_refund',
    description: 'Refund an order',
    input_schema: {
      type: 'object',
      properties: { order_id: { type: 'string' }, amount: { type: 'string' } },
    },
  },
];
const question = { role: 'user', content: 'The book of order ORD-7781 arrived damaged. Please refund it.' };
const refundArgs = { order_id: 'ORD-7781', amount: 'full' };

// biome-ignore format: a table of stream events
const ev = {
  start: (id: string) => ({ type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 412, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2 } } }),
  thinking: (index: number) => ({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  think: (index: number, text: string) => ({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: text } }),
  sign: (index: number, signature: string) => ({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature } }),
  text: (index: number) => ({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
  words: (index: number, text: string) => ({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }),
  tool: (index: number, id: string) => ({ type: 'content_block_start', index, content_block: { type: 'tool_use', id, name: 'issue_refund', input: {} } }),
  args: (index: number, json: string) => ({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json } }),
  stop: (index: number) => ({ type: 'content_block_stop', index }),
  end: (stop_reason: string, output_tokens: number) => ({ type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: { output_tokens } }),
  ping: { type: 'ping' },
  messageStop: { type: 'message_stop' },
};

/** The final attempt of step 1: thinking with its signature, text, then the refund. */
const final = {
  id: 'msg_01FinalAttempt2Bc3Dd4Ee5Ff',
  thought: 'The book arrived damaged, so the policy allows a full refund of ORD-7781.',
  signature: 'EqoBCkgIBBABGAIiQFinalAttemptSignatureOfTheRefundThought7781==',
  text: 'Checking order ORD-7781. ',
  call: 'toolu_01FinalRefund6Gg7Hh8Ii9J',
};
const finalAttempt: AnthropicStep = {
  events: [
    ev.start(final.id),
    ev.thinking(0),
    ev.think(0, 'The book arrived damaged, '),
    ev.think(0, 'so the policy allows a full refund of ORD-7781.'),
    ev.sign(0, final.signature),
    ev.stop(0),
    ev.text(1),
    ev.words(1, final.text),
    ev.stop(1),
    ev.tool(2, final.call),
    ev.args(2, ''),
    ev.args(2, '{"order_id":"ORD-7781",'),
    ev.args(2, '"amount":"full"}'),
    ev.stop(2),
    ev.end('tool_use', 187),
    ev.messageStop,
  ],
};

/** Step 2's answer: text, end_turn. */
const answer: AnthropicStep = {
  events: [
    ev.start('msg_01StepTwoAnswer3Jj4Kk5Ll6'),
    ev.text(0),
    ev.words(0, 'Your refund of ORD-7781 is on its way.'),
    ev.stop(0),
    ev.end('end_turn', 14),
    ev.messageStop,
  ],
};

let server: StrictAnthropicServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** One step: a turn over fetch with retries, its calls run once each, and the state it ends in. */
async function step(
  url: string,
  turnId: string,
  messages: readonly object[],
  ledger: MemoryEffectLedger,
  runs: unknown[],
) {
  const turn$ = streamTurn({
    turnId,
    adapter: anthropicMessages(),
    retry: 2,
    backoff: false,
    request: ({ signal }) => ({
      url: `${url}/v1/messages`,
      init: {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'test',
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify({ model, max_tokens: 2048, thinking, tools, messages, stream: true }),
      },
    }),
  }).pipe(share());
  const handlers = {
    issue_refund: (args: unknown) => {
      runs.push(args);
      return { refund_id: `re_${runs.length}`, status: 'refunded' };
    },
  };
  const [turn, results] = await Promise.all([
    lastValueFrom(turn$.pipe(accumulateTurn(), last())),
    lastValueFrom(turn$.pipe(executeTools(handlers, { turnId, ledger }), toArray())),
  ]);
  return { turn, results } as { turn: TurnState; results: ToolResultEvent[] };
}

/** Runs both steps: step 1 from `attempts` (then the final attempt), step 2 from the built messages. */
async function loop(abandoned: AnthropicStep) {
  server = await startStrictAnthropicServer([abandoned, finalAttempt, answer]);
  const ledger = new MemoryEffectLedger();
  const runs: unknown[] = [];
  const first = await step(server.url, 'turn-42', [question], ledger, runs);
  expect(first.turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
  expect(nextStep(first.turn.finish)).toBe('answer');
  const built = toAnthropicMessages(first.turn, first.results);
  const second = await step(server.url, 'turn-43', [question, ...built], ledger, runs);
  expect(nextStep(second.turn.finish)).toBe('done');
  expect(second.turn.text).toBe('Your refund of ORD-7781 is on its way.');
  return { first: first.turn, built, runs, requests: server.requests };
}

/** What step 2 must send after the question: the final attempt exactly, then the refund's result. */
const expectedStepTwo = [
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: final.thought, signature: final.signature },
      { type: 'text', text: final.text },
      { type: 'tool_use', id: final.call, name: 'issue_refund', input: refundArgs },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: final.call, content: '{"refund_id":"re_1","status":"refunded"}' },
    ],
  },
];

describe('an Anthropic loop with extended thinking against the strict server: step 1 retried, step 2 accepted', () => {
  it('cut mid-reasoning: step 2 carries the final thinking and its signature, nothing of the abandoned thought', async () => {
    const abandonedThought = 'Maybe the customer would rather have store credit';
    const { first, runs, requests } = await loop({
      events: [
        ev.start('msg_01Abandoned7Mm8Nn9Oo0Pp'),
        ev.thinking(0),
        ev.ping,
        ev.think(0, abandonedThought),
        ev.think(0, ', or a replacement'),
      ],
      cutAfter: 4,
    });
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(first.reasoning).toBe(final.thought);
    expect(first.responseId).toBe(final.id);
    expect(runs).toEqual([refundArgs]);
    const stepTwo = requests[2]?.body as { messages: unknown[] };
    expect(stepTwo.messages).toEqual([question, ...expectedStepTwo]);
    const sent = JSON.stringify(stepTwo);
    expect(sent).not.toContain('store credit');
    expect(sent).not.toContain('msg_01Abandoned');
  });

  it('cut mid-call after its signature went out: step 2 holds neither the abandoned signature nor its call id', async () => {
    const abandoned = {
      thought: 'I should look the order up before refunding it.',
      signature: 'EqQBCkgIAxABGAIiQAbandonedAttemptSignatureLookupFirst==',
      text: 'Let me refund that',
      call: 'toolu_01Abandoned1Qq2Rr3Ss4T',
    };
    const { first, runs, requests } = await loop({
      events: [
        ev.start('msg_01AbandonedCall5Uu6Vv7W'),
        ev.thinking(0),
        ev.think(0, abandoned.thought),
        ev.sign(0, abandoned.signature),
        ev.stop(0),
        ev.text(1),
        ev.words(1, abandoned.text),
        ev.stop(1),
        ev.tool(2, abandoned.call),
        ev.args(2, '{"order_id":"ORD-77'),
        ev.args(2, '81","amount":"fu'),
      ],
      cutAfter: 11,
    });
    expect(requests.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(first.text).toBe(final.text);
    expect(first.toolCalls.map((c) => c.id)).toEqual([final.call]);
    expect(runs).toEqual([refundArgs]); // the abandoned call never ran
    const stepTwo = requests[2]?.body as { messages: unknown[] };
    expect(stepTwo.messages).toEqual([question, ...expectedStepTwo]);
    const sent = JSON.stringify(stepTwo);
    for (const leftover of [
      abandoned.thought,
      abandoned.signature,
      abandoned.text,
      abandoned.call,
      '"ORD-77"',
    ])
      expect(sent).not.toContain(leftover);
  });
});

describe('the strict server rejects what the API rejects', () => {
  /** Posts step 2 with `messages` after the final attempt of step 1 ran; returns the status and error message. */
  async function postAfterStepOne(edit: (messages: { role: string; content: unknown[] }[]) => unknown[]) {
    server = await startStrictAnthropicServer([finalAttempt, answer]);
    const ledger = new MemoryEffectLedger();
    const first = await step(server.url, 'turn-42', [question], ledger, []);
    const built = structuredClone(toAnthropicMessages(first.turn, first.results)) as {
      role: string;
      content: unknown[];
    }[];
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'test', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model,
        max_tokens: 2048,
        thinking,
        tools,
        stream: true,
        messages: [question, ...edit(built)],
      }),
    });
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    return { status: response.status, body };
  }

  it('accepts the built messages as they are', async () => {
    server = await startStrictAnthropicServer([finalAttempt, answer]);
    const first = await step(server.url, 'turn-42', [question], new MemoryEffectLedger(), []);
    const second = await step(
      server.url,
      'turn-43',
      [question, ...toAnthropicMessages(first.turn, first.results)],
      new MemoryEffectLedger(),
      [],
    );
    expect(second.turn.text).toBe('Your refund of ORD-7781 is on its way.');
  });

  it.each([
    [
      'a changed thinking text',
      (m: { content: unknown[] }[]) => {
        (m[0]?.content[0] as { thinking: string }).thinking += ' ';
        return m;
      },
      'Invalid `signature` in `thinking` block',
    ],
    [
      'a tool_use without its tool_result',
      (m: unknown[]) => m.slice(0, 1),
      '`tool_use` ids were found without `tool_result` blocks',
    ],
    [
      'thinking left out while thinking is enabled',
      (m: { content: unknown[] }[]) => {
        m[0]?.content.shift();
        return m;
      },
      'Expected `thinking` or `redacted_thinking`, but found `text`',
    ],
    [
      'a tool_result for an id the assistant message lacks',
      (m: { content: unknown[] }[]) => {
        m[1]?.content.push({
          type: 'tool_result',
          tool_use_id: 'toolu_01Abandoned1Qq2Rr3Ss4T',
          content: 'ran',
        });
        return m;
      },
      'unexpected `tool_use_id` found in `tool_result` blocks',
    ],
  ] as const)('rejects %s with 400 invalid_request_error', async (_what, edit, message) => {
    const { status, body } = await postAfterStepOne(
      edit as (m: { role: string; content: unknown[] }[]) => unknown[],
    );
    expect(status).toBe(400);
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain(message);
  });
});
