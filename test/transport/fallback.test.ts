// Falling back to another provider on retry: streamTurn takes a plan that chooses, per attempt, the request, the
// adapter and the names the report bills the attempt under. Two real servers on 127.0.0.1 in two wire formats: the
// OpenAI one breaks mid-stream twice, the third attempt goes to the Anthropic one.
import { effectKey, UsageError } from 'cleanturn';
import { anthropicMessages, openaiChat } from 'cleanturn/providers';
import { streamTurn, type TurnReport } from 'cleanturn/transport';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { chatTranscript } from '../support/chatTranscript.js';
import { startServer, type TestServer } from '../support/httpServer.js';

const refund = { order_id: 'ORD-7781', amount: 'full' };
const sentence = 'The book arrived damaged, so I have started a full refund.';

/** An Anthropic Messages stream: text, the refund as a tool_use block, usage and the stop. */
function anthropicBody(): string {
  const events: [string, unknown][] = [
    [
      'message_start',
      { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 90, output_tokens: 1 } } },
    ],
    [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: sentence } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'content_block_start',
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_9', name: 'issue_refund', input: {} },
      },
    ],
    [
      'content_block_delta',
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(refund) },
      },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 1 }],
    [
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 44 } },
    ],
    ['message_stop', { type: 'message_stop' }],
  ];
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}

const broken = chatTranscript(
  [
    { text: 'Checking order ORD-7781. ' },
    { call: { id: 'call_c1', name: 'issue_refund', args: JSON.stringify(refund) } },
    { text: 'Refunding the dam' },
    { text: 'aged book.' },
  ],
  { usage: { prompt: 80, completion: 20 } },
);

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

describe('streamTurn with a plan: another provider on retry', () => {
  it('attempt 3 goes to Anthropic after two OpenAI failures: clean text, one refund, each attempt billed under its provider', async () => {
    const openai = await startServer(() => ({
      body: broken.body,
      destroyAfter: broken.after('text:Refunding the dam'),
    }));
    const anthropic = await startServer(() => ({ body: anthropicBody() }));
    servers.push(openai, anthropic);
    let report: TurnReport | undefined;
    const events = await lastValueFrom(
      streamTurn({
        turnId: 'turn-42',
        retry: 2,
        backoff: false,
        plan: ({ attempt }) =>
          attempt < 3
            ? {
                provider: 'openai',
                model: 'gpt-4.1',
                adapter: openaiChat(),
                request: ({ signal }) => ({
                  url: `${openai.url}/v1/chat/completions`,
                  init: { method: 'POST', body: '{}', signal },
                }),
              }
            : {
                provider: 'anthropic',
                model: 'claude-sonnet-4-6',
                adapter: anthropicMessages(),
                request: ({ signal }) => ({
                  url: `${anthropic.url}/v1/messages`,
                  init: { method: 'POST', body: '{}', signal },
                }),
              },
        onReport: (r) => {
          report = r;
        },
      }).pipe(toArray()),
    );
    expect(openai.requests).toHaveLength(2);
    expect(anthropic.requests).toHaveLength(1);
    let text = '';
    for (const event of events) {
      if (event.type === 'reset') text = '';
      if (event.type === 'text') text += event.text;
    }
    expect(text).toBe(sentence);
    expect(events.filter((e) => e.type === 'reset').map((e) => e.attempt)).toEqual([2, 3]);
    const calls = events.filter((e) => e.type === 'tool-call');
    expect(calls.map((c) => [c.id, c.effectKey])).toEqual([
      ['toolu_9', effectKey('turn-42', { name: 'issue_refund', args: refund })],
    ]);
    expect(report?.outcome).toBe('completed');
    expect(report?.attempts.map((a) => [a.attempt, a.provider, a.model, a.outcome])).toEqual([
      [1, 'openai', 'gpt-4.1', 'abandoned'],
      [2, 'openai', 'gpt-4.1', 'abandoned'],
      [3, 'anthropic', 'claude-sonnet-4-6', 'completed'],
    ]);
    expect(report?.attempts[2]?.usage).toEqual({ inputTokens: 90, outputTokens: 44 });
  });

  it('a plan that throws a final error ends the turn with it; request and adapter together with a plan are refused', async () => {
    const boom = Object.assign(new Error('no provider left'), { retryable: false });
    let plans = 0;
    const error = await lastValueFrom(
      streamTurn({
        turnId: 't',
        plan: () => {
          plans++;
          throw boom;
        },
      }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBe(boom);
    expect(plans).toBe(1);
    expect(() =>
      streamTurn({
        turnId: 't',
        adapter: openaiChat(),
        request: () => 'http://127.0.0.1/',
        plan: () => ({ adapter: openaiChat(), request: () => 'x' }),
      } as never),
    ).toThrow(UsageError);
    expect(() => streamTurn({ turnId: 't' } as never)).toThrow(UsageError);
  });
});
