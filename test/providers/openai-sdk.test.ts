// Interop with the official `openai` SDK: its own stream objects, built from fixtures served over a loopback HTTP
// server, run through `from(...)`, the adapter, a retry in the middle, and the clean-turn pipeline.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  accumulateTurn,
  assembleToolCalls,
  cleanTurn,
  effectKey,
  type ProviderEvent,
  requireFinish,
  retryAsEvents,
  type TurnEvent,
  type TurnState,
} from 'cleanturn';
import {
  openaiChat,
  openaiResponses,
  ProviderError,
  toOpenAIChatMessages,
  toOpenAIResponsesInput,
} from 'cleanturn/providers';
import { helpDesk } from 'cleanturn/testing';
import OpenAI from 'openai';
import { defer, from, lastValueFrom, mergeMap, type Observable, type OperatorFunction, tap } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReleasedCall } from '../../src/types.js';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';

const turnId = 'turn-42';
const fixture = (path: string) => readFileSync(join(import.meta.dirname, '../fixtures', path), 'utf8');
/** The byte offset of the start of the SSE event that contains `marker`: a cut there loses that event and the rest. */
const cutBefore = (body: string, marker: string) => {
  const at = body.indexOf(marker);
  if (at < 0) throw new Error(`marker not in fixture: ${marker}`);
  const start = Math.max(body.lastIndexOf('\n\nevent: ', at), body.lastIndexOf('\n\ndata: ', at)) + 2;
  return Buffer.byteLength(body.slice(0, start), 'utf8');
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(script: ScriptedResponse[]): Promise<{ client: OpenAI; server: TestServer }> {
  server = await startServer(script);
  return { client: new OpenAI({ apiKey: 'test', baseURL: `${server.url}/v1`, maxRetries: 0 }), server };
}

/** What the pipeline produced: the final turn state, every clean event, and the errors the retries were for. */
interface Turn {
  state: TurnState<ReleasedCall> | undefined;
  events: TurnEvent[];
  retriedFor: unknown[];
}

/** The whole retrying pipeline, from the SDK's attempts to the clean turn state. */
async function runTurn<I>(
  attempt$: Observable<I>,
  adapter: OperatorFunction<I, ProviderEvent>,
): Promise<Turn> {
  const turn: Turn = { state: undefined, events: [], retriedFor: [] };
  turn.state = await lastValueFrom(
    attempt$.pipe(
      adapter,
      assembleToolCalls(),
      requireFinish(),
      retryAsEvents({ count: 2 }),
      tap((event) => {
        if (event.type === 'retry') turn.retriedFor.push(event.error);
      }),
      cleanTurn({ turnId }),
      tap((event) => turn.events.push(event)),
      accumulateTurn<TurnEvent>(),
    ),
  );
  return turn;
}

/** The checks of the help-desk turn: attempt 2's text only, one reset, one refund released with its key. */
function expectCleanHelpDeskTurn(turn: Turn, callId: string) {
  expect(turn.state?.text).toBe('Checking order ORD-7781. ');
  expect(turn.state?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
  expect(turn.events.filter((e) => e.type === 'reset')).toEqual([
    {
      type: 'reset',
      attempt: 2,
      reason: expect.any(String),
      // The facts of the retry: attempt 1 failed after the user read its text; retried at once, 1 of 2.
      delay: 0,
      failedAttempt: 1,
      outputStarted: true,
      retryCount: 1,
      maxRetries: 2,
      errorName: expect.any(String),
    },
  ]);
  const released = turn.events.filter((e) => e.type === 'tool-call');
  expect(released).toEqual([
    {
      type: 'tool-call',
      id: callId,
      name: 'issue_refund',
      args: helpDesk.refundArgs,
      attempt: 2,
      effectKey: effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs }),
    },
  ]);
  // The text of attempt 1 reached the consumer before the reset, and attempt 2's text came after it.
  const kinds = turn.events.map((e) => (e.type === 'text' ? `text@${e.attempt}` : e.type));
  expect(kinds.indexOf('reset')).toBeGreaterThan(kinds.indexOf('text@1'));
  expect(kinds.lastIndexOf('text@2')).toBeGreaterThan(kinds.indexOf('reset'));
}

describe('openai SDK: chat.completions.create({ stream: true }) → openaiChat()', () => {
  const chat = (client: OpenAI) =>
    defer(() =>
      client.chat.completions.create({
        model: 'gpt-4.1',
        messages: [{ role: 'user', content: 'Refund order ORD-7781, the book arrived damaged.' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    ).pipe(mergeMap((stream) => from(stream)));

  it('a connection reset after the call, then a whole stream: a clean turn with one refund', async () => {
    const body = fixture('openai-chat/text-and-call.sse');
    const { client, server } = await clientFor([
      { body, destroyAfter: cutBefore(body, '"finish_reason":"tool_calls"') },
      { body, chunkSize: 64 },
    ]);
    const turn = await runTurn(chat(client), openaiChat());
    expectCleanHelpDeskTurn(turn, 'call_7Hq2mWbK9sXv4RtY1nCz0LdE');
    expect(turn.state?.attempts[1]?.usage).toEqual({
      inputTokens: 187,
      outputTokens: 29,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
    ]);
    expect(JSON.parse(server.requests[0]?.body ?? '{}')).toMatchObject({ stream: true });
  });

  it("DeepSeek's thinking through the SDK's stream: reasoning shown, and reasoning_content back in the SDK's next request", async () => {
    const { client, server } = await clientFor([
      { body: fixture('openai-chat/deepseek-reasoning-content-then-call.sse'), chunkSize: 256 },
      { body: fixture('openai-chat/usage-missing.sse') },
    ]);
    const turn = await runTurn(chat(client), openaiChat());
    const state = turn.state as TurnState<ReleasedCall>;
    expect(state.reasoning).toBe(
      "The customer's book arrived damaged, so a full refund of ORD-7781. I should call issue_refund.",
    );
    expect(state.text).toBe('');
    const [refund] = state.toolCalls;
    if (refund === undefined) throw new Error('no call');
    const appended = toOpenAIChatMessages(state, [
      {
        type: 'tool-result',
        effectKey: refund.effectKey,
        call: refund,
        outcome: 'executed',
        result: 'refunded',
      },
    ]);
    await client.chat.completions.create({
      model: 'deepseek-v4-flash',
      messages: [{ role: 'user', content: 'Refund order ORD-7781, the book arrived damaged.' }, ...appended],
      stream: true,
    });
    const sent = JSON.parse(server.requests[1]?.body ?? '{}') as { messages: unknown[] };
    expect(sent.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        reasoning_content: state.reasoning,
        tool_calls: [
          {
            id: 'call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE',
            type: 'function',
            function: { name: 'issue_refund', arguments: '{"order_id":"ORD-7781","amount":"full"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE', content: 'refunded' },
    ]);
  });

  it('an in-stream server error (the SDK throws an APIError) is classified retryable and retried', async () => {
    const { client } = await clientFor([
      { body: fixture('openai-chat/in-stream-error-server.sse') },
      { body: fixture('openai-chat/usage-missing.sse') },
    ]);
    const turn = await runTurn(chat(client), openaiChat());
    expect(turn.retriedFor).toHaveLength(1);
    expect(turn.retriedFor[0]).toBeInstanceOf(ProviderError);
    expect(turn.retriedFor[0]).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: 'server_error',
    });
    expect(turn.state?.text).toBe('The refund has started.');
  });

  it('an in-stream invalid request is not retried', async () => {
    const { client, server } = await clientFor([
      { body: fixture('openai-chat/in-stream-error-invalid-request.sse') },
    ]);
    const failure = runTurn(chat(client), openaiChat());
    await expect(failure).rejects.toBeInstanceOf(ProviderError);
    await expect(failure).rejects.toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'context_length_exceeded',
    });
    expect(server.requests).toHaveLength(1);
  });

  it('UTF-8 split across TCP writes and CRLF framing reach the adapter intact', async () => {
    const { client } = await clientFor([
      { body: fixture('openai-chat/unicode-split.sse'), chunkSize: 5 },
      { body: fixture('openai-chat/crlf-framing.sse'), chunkSize: 7 },
    ]);
    const unicode = await runTurn(chat(client), openaiChat());
    expect(unicode.state?.text).toBe(
      `Merci \u{1F64F} ! Le cafe\u0301 est offert, l'équipe 👩\u200d💻 rembourse 42 €. 注文を返金しました。`,
    );
    expect(unicode.state?.toolCalls[0]?.args).toEqual({ order_id: 'ORD-7781', note: 'Livre abîmé 📚 → ✓' });
    const crlf = await runTurn(chat(client), openaiChat());
    expect(crlf.state?.text).toBe('Looking up ORD-7781.');
    expect(crlf.state?.toolCalls.map((c) => c.name)).toEqual(['lookup_order']);
  });
});

describe('openai SDK: responses.create({ stream: true }) → openaiResponses()', () => {
  const responses = (client: OpenAI) =>
    defer(() =>
      client.responses.create({
        model: 'gpt-4.1',
        input: 'Refund order ORD-7781, the book arrived damaged.',
        stream: true,
      }),
    ).pipe(mergeMap((stream) => from(stream)));

  it('a connection reset before response.completed, then a whole stream: a clean turn with one refund', async () => {
    const body = fixture('openai-responses/text-and-call.sse');
    const { client, server } = await clientFor([
      { body, destroyAfter: cutBefore(body, '"type":"response.completed"') },
      { body, chunkSize: 64 },
    ]);
    const turn = await runTurn(responses(client), openaiResponses());
    expectCleanHelpDeskTurn(turn, 'call_Zl5vIMnD7dVAjgU6FkhmiCZh');
    expect(turn.state?.attempts[1]?.usage).toEqual({
      inputTokens: 187,
      outputTokens: 29,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/responses',
      'POST /v1/responses',
    ]);
  });

  it('encrypted reasoning through the SDK: the next request, built from the finish, goes out through the SDK', async () => {
    const body = fixture('openai-responses/reasoning-encrypted-summary-parts-then-call.sse');
    const { client, server } = await clientFor([
      { body },
      { body: fixture('openai-responses/completed-then-trailing-events.sse') },
    ]);
    const turn = await runTurn(responses(client), openaiResponses());
    expect(turn.state?.reasoning).toContain('**Refund policy**');
    const call = turn.state?.toolCalls[0] as ReleasedCall;
    const result = {
      type: 'tool-result' as const,
      effectKey: call.effectKey,
      call,
      outcome: 'executed',
      result: 'refunded',
    };
    const items = toOpenAIResponsesInput(turn.state as TurnState<ReleasedCall>, [result]);
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Refund order ORD-7781.' },
      ...items,
    ];
    const next = await client.responses.create({ model: 'gpt-5.1', input, store: false, stream: true });
    for await (const _ of next) {
      // read the answer to its end
    }
    const sent = JSON.parse(server.requests[1]?.body ?? '{}') as { input: unknown[] };
    expect(sent.input.slice(1)).toEqual(items);
    expect(items.map((i) => i.type)).toEqual(['reasoning', 'function_call', 'function_call_output']);
  });

  it('the flat error event (yielded by the SDK) is retryable and retried', async () => {
    const { client } = await clientFor([
      { body: fixture('openai-responses/error-flat-then-failed.sse') },
      { body: fixture('openai-responses/text-and-call.sse') },
    ]);
    const turn = await runTurn(responses(client), openaiResponses());
    expect(turn.retriedFor[0]).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: 'server_error',
    });
    expect(turn.state?.text).toBe('Checking order ORD-7781. ');
  });

  it('the nested error event (the SDK throws an APIError) is classified: insufficient_quota is not retried', async () => {
    const { client, server } = await clientFor([
      { body: fixture('openai-responses/error-nested-then-failed.sse') },
    ]);
    const failure = runTurn(responses(client), openaiResponses());
    await expect(failure).rejects.toBeInstanceOf(ProviderError);
    await expect(failure).rejects.toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
    });
    expect(server.requests).toHaveLength(1);
  });

  it('UTF-8 split across TCP writes and CRLF framing reach the adapter intact', async () => {
    const { client } = await clientFor([
      { body: fixture('openai-responses/unicode-split.sse'), chunkSize: 5 },
      { body: fixture('openai-responses/crlf-framing.sse'), chunkSize: 7 },
    ]);
    const unicode = await runTurn(responses(client), openaiResponses());
    expect(unicode.state?.text).toBe(
      `Merci \u{1F64F} ! Le cafe\u0301 est offert, l'équipe 👩\u200d💻 rembourse 42 €. 注文を返金しました。`,
    );
    expect(unicode.state?.toolCalls[0]?.args).toEqual({ order_id: 'ORD-7781', note: 'Livre abîmé 📚 → ✓' });
    const crlf = await runTurn(responses(client), openaiResponses());
    expect(crlf.state?.text).toBe('Looking up ORD-7781.');
  });
});
