// Each official SDK's own stream object, fed from a fixture by a real HTTP server on 127.0.0.1, through the
// adapter and a mid-stream retry to a clean turn. The SDKs do not retry on their own: the pipeline does.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { type Tool as GeminiTool, GoogleGenAI, Type } from '@google/genai';
import { streamText, type TextStreamPart, tool } from 'ai';
import {
  accumulateTurn,
  assembleToolCalls,
  attemptPipeline,
  cleanTurn,
  effectKey,
  type ProviderEvent,
  requireFinish,
  retryAsEvents,
  type TurnEvent,
  type TurnState,
} from 'cleanturn';
import {
  aiSdkParts,
  anthropicMessages,
  geminiContent,
  ProviderError,
  toGeminiContents,
} from 'cleanturn/providers';
import { helpDesk } from 'cleanturn/testing';
import { concatMap, defer, lastValueFrom, type Observable, tap, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ScriptedResponse, startServer, type TestServer } from '../support/httpServer.js';

const turnId = 'turn-42';

/** A fixture file's bytes. */
const body = (path: string) => readFileSync(fileURLToPath(new URL(`../fixtures/${path}`, import.meta.url)));
/** The byte offset where `marker` first occurs: cut the stream there. */
const offsetOf = (bytes: Buffer, marker: string) => {
  const at = bytes.indexOf(marker);
  if (at < 0) throw new Error(`marker not found: ${marker}`);
  return at;
};
/** The byte offset of the start of the line where `marker` first occurs: cut the stream before that event. */
const lineOf = (bytes: Buffer, marker: string) => bytes.lastIndexOf('\n', offsetOf(bytes, marker)) + 1;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(script: readonly ScriptedResponse[]): Promise<TestServer> {
  server = await startServer(script);
  return server;
}

/** The turn pipeline every test runs: adapter → assemble → requireFinish → retryAsEvents → cleanTurn. */
async function runTurn(
  events$: Observable<ProviderEvent>,
): Promise<{ events: TurnEvent[]; turn: TurnState }> {
  const events: TurnEvent[] = [];
  const states = await lastValueFrom(
    events$.pipe(
      assembleToolCalls(),
      requireFinish(),
      retryAsEvents({ count: 2 }),
      cleanTurn({ turnId }),
      tap((event) => events.push(event)),
      accumulateTurn(),
      toArray(),
    ),
  );
  const turn = states.at(-1);
  if (turn === undefined) throw new Error('no turn state');
  return { events, turn };
}

/** The help-desk checks: attempt 2's text only, one refund with its effect key, one reset. */
function expectCleanTurn(result: { events: TurnEvent[]; turn: TurnState }, text: string, callId: string) {
  const { events, turn } = result;
  expect(turn.text).toBe(text);
  expect(turn.attempt).toBe(2);
  const refunds = events.filter((e) => e.type === 'tool-call');
  expect(refunds).toEqual([
    {
      type: 'tool-call',
      id: callId,
      name: 'issue_refund',
      args: helpDesk.refundArgs,
      attempt: 2,
      effectKey: effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs }),
    },
  ]);
  expect(events.filter((e) => e.type === 'reset')).toHaveLength(1);
  expect(turn.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
  expect(turn.finish).toMatchObject({ reason: 'tool-calls', attempt: 2 });
}

describe('@anthropic-ai/sdk: client.messages.create({ stream: true })', () => {
  const fixture = body('anthropic/text-and-tool.sse');
  const client = (url: string) => new Anthropic({ apiKey: 'test', baseURL: url, maxRetries: 0 });
  const create = (anthropic: Anthropic) =>
    defer(() =>
      anthropic.messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'The book for order ORD-7781 arrived damaged. Refund it.' }],
        tools: [
          {
            name: 'issue_refund',
            description: 'Refund an order',
            input_schema: {
              type: 'object',
              properties: { order_id: { type: 'string' }, amount: { type: 'string' } },
            },
          },
        ],
        stream: true,
      }),
    ).pipe(
      concatMap((stream) => stream),
      anthropicMessages(),
    );

  it('a connection reset after the complete call, then the whole stream: a clean turn', async () => {
    // Attempt 1 ends after the tool_use block stopped: its call is complete but must never be released.
    const cut = offsetOf(fixture, 'event: message_delta');
    const { url, requests } = await serve([
      { body: fixture, destroyAfter: cut, chunkSize: 97 },
      { body: fixture, chunkSize: 97 },
    ]);
    const result = await runTurn(create(client(url)));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP');
    expect(requests.map((r) => r.url)).toEqual(['/v1/messages', '/v1/messages']);
    expect(JSON.parse(requests[0]?.body ?? '{}')).toMatchObject({ stream: true });
  });

  it('an overloaded_error event (the SDK throws its APIError) is retried; the text of attempt 1 is gone', async () => {
    const { url, requests } = await serve([
      { body: body('anthropic/overloaded-after-text.sse') },
      { body: fixture },
    ]);
    const result = await runTurn(create(client(url)));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP');
    expect(result.turn.attempts[0]?.reason).toBe('anthropic-messages: Overloaded');
    expect(requests).toHaveLength(2);
  });

  it('an in-stream invalid_request_error is not retried', async () => {
    const { url, requests } = await serve([
      { body: body('anthropic/invalid-request-error.sse') },
      { body: fixture },
    ]);
    const error = await runTurn(create(client(url))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'invalid_request_error',
      retryable: false,
    });
    expect(requests).toHaveLength(1);
  });

  it('unicode split across network chunks (5 bytes a write) arrives whole', async () => {
    const { url } = await serve([{ body: body('anthropic/unicode-split.sse'), chunkSize: 5 }]);
    const states = await lastValueFrom(
      create(client(url)).pipe(attemptPipeline(), cleanTurn({ turnId }), accumulateTurn(), toArray()),
    );
    const turn = states.at(-1);
    expect(turn?.text).toBe('Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} done. 注文番号 ORD-7781.');
    expect(turn?.toolCalls[0]?.args).toEqual({ order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' });
  });

  it('client.messages.stream() works the same way', async () => {
    const cut = offsetOf(fixture, 'event: message_delta');
    const { url } = await serve([{ body: fixture, destroyAfter: cut }, { body: fixture }]);
    const anthropic = client(url);
    const events$ = defer(() =>
      anthropic.messages.stream({
        model: 'claude-sonnet-4-6',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'Refund ORD-7781.' }],
      }),
    ).pipe(anthropicMessages());
    const result = await runTurn(events$);
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP');
  });

  it.each([
    'thinking-signature-then-tool.sse',
    'redacted-thinking-then-tool.sse',
    'web-search-citations.sse',
    'code-execution-server-tools.sse',
    'unknown-types.sse',
    'pause-turn.sse',
  ])("%s: the finish's output is the content of the SDK's own finalMessage()", async (name) => {
    const { url } = await serve([{ body: body(`anthropic/${name}`), chunkSize: 61 }]);
    const stream = client(url).messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 2048,
      messages: [{ role: 'user', content: 'Refund ORD-7781.' }],
    });
    const events = await lastValueFrom(defer(() => stream).pipe(anthropicMessages(), toArray()));
    const message = await stream.finalMessage();
    expect(events.at(-1)).toMatchObject({ type: 'finish', responseId: message.id });
    expect((events.at(-1) as { output?: { content: unknown } }).output?.content).toEqual(message.content);
  });
});

describe('@google/genai: ai.models.generateContentStream()', () => {
  const fixture = body('gemini/text-and-call.sse');
  const tools: GeminiTool[] = [
    {
      functionDeclarations: [
        {
          name: 'issue_refund',
          parameters: {
            type: Type.OBJECT,
            properties: { order_id: { type: Type.STRING }, amount: { type: Type.STRING } },
          },
        },
      ],
    },
  ];
  const client = (url: string) =>
    new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: url, retryOptions: { attempts: 1 } } });
  const generate = (ai: GoogleGenAI) =>
    defer(() =>
      ai.models.generateContentStream({
        model: 'gemini-2.5-flash',
        contents: 'The book for order ORD-7781 arrived damaged. Refund it.',
        config: { tools },
      }),
    ).pipe(
      concatMap((stream) => stream),
      geminiContent(),
    );

  it('a connection reset after the call, then the whole stream: a clean turn', async () => {
    // Attempt 1 ends inside the last chunk: text arrived, the call never completed.
    const cut = offsetOf(fixture, '"finishReason"');
    const { url, requests } = await serve([
      { body: fixture, destroyAfter: cut, chunkSize: 97 },
      { body: fixture, chunkSize: 97 },
    ]);
    const result = await runTurn(generate(client(url)));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'gemini-call-0');
    expect(requests.map((r) => r.url)).toEqual([
      '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
      '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    ]);
  });

  it('a clean close before the finish (requireFinish), then the whole stream: a clean turn', async () => {
    const cut = lineOf(fixture, '"functionCall"');
    const { url } = await serve([{ body: fixture, endAfter: cut }, { body: fixture }]);
    const result = await runTurn(generate(client(url)));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'gemini-call-0');
    expect(result.turn.attempts[0]?.reason).toBe('the stream completed without a finish event');
  });

  it('a raw JSON error tail (503; the SDK throws its ApiError) is retried', async () => {
    const { url, requests } = await serve([{ body: body('gemini/error-tail.sse') }, { body: fixture }]);
    const result = await runTurn(generate(client(url)));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'gemini-call-0');
    expect(requests).toHaveLength(2);
  });

  it('an INVALID_ARGUMENT error is not retried', async () => {
    const { url, requests } = await serve([{ body: body('gemini/error-data-line.sse') }, { body: fixture }]);
    const error = await runTurn(generate(client(url))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 400, retryable: false });
    expect(requests).toHaveLength(1);
  });

  it('unicode split across network chunks (5 bytes a write) arrives whole', async () => {
    const { url } = await serve([{ body: body('gemini/unicode-split.sse'), chunkSize: 5 }]);
    const states = await lastValueFrom(
      generate(client(url)).pipe(attemptPipeline(), cleanTurn({ turnId }), accumulateTurn(), toArray()),
    );
    const turn = states.at(-1);
    expect(turn?.text).toBe('Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.');
    expect(turn?.toolCalls[0]?.args).toEqual({ order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' });
  });

  it("Gemini 3 thoughts and signatures: cut mid-reasoning, retried, and the SDK's next request keeps the signature", async () => {
    const thinking = body('gemini/thought-summary-then-signed-call.sse');
    const signature = 'EpQCCpECAb4+9vt3kR1dZ0cQ7mJxW2s9YkVhLq8Zr0fN3uT5aP1bD4eG6hI8jK0lM2nO4pQ6rS8tU0vW2xY4z';
    const { url, requests } = await serve([
      { body: thinking, destroyAfter: offsetOf(thinking, 'Damage in transit') },
      { body: thinking },
      { body: body('gemini/signature-on-empty-last-part.sse') },
    ]);
    const ai = client(url);
    const contents = [
      { role: 'user', parts: [{ text: 'The book for order ORD-7781 arrived damaged. Refund it.' }] },
    ];
    const first = defer(() =>
      ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents, config: { tools } }),
    ).pipe(
      concatMap((stream) => stream),
      geminiContent(),
    );
    const result = await runTurn(first);
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'gemini-call-0');
    expect(result.turn.reasoning).toBe(
      '**Checking the refund policy**\n\nThe customer reports a damaged book. Damage in transit qualifies for a full refund.',
    );
    expect(result.turn.responseId).toBe('Ugx3acX2KqWZ28oP4uqPwQk');
    expect(result.turn.usage).toEqual({
      inputTokens: 412,
      outputTokens: 156,
      cachedInputTokens: 256,
      reasoningTokens: 131,
    });
    const call = result.turn.toolCalls[0];
    const answer = {
      type: 'tool-result' as const,
      effectKey: (call as { effectKey?: string } | undefined)?.effectKey ?? '',
      call: call as never,
      outcome: 'executed',
      result: { status: 'refunded' },
    };
    const next = [...contents, ...toGeminiContents(result.turn, [answer])];
    const second = defer(() =>
      ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents: next, config: { tools } }),
    ).pipe(
      concatMap((stream) => stream),
      geminiContent(),
    );
    await lastValueFrom(second.pipe(toArray()));
    const sent = JSON.parse(requests[2]?.body ?? '{}') as { contents: unknown };
    expect(sent.contents).toEqual([
      contents[0],
      {
        role: 'model',
        parts: [
          {
            text: '**Checking the refund policy**\n\nThe customer reports a damaged book. Damage in transit qualifies for a full refund.',
            thought: true,
          },
          { text: 'Checking order ORD-7781. ' },
          { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs }, thoughtSignature: signature },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'issue_refund', response: { status: 'refunded' } } }],
      },
    ]);
  });
});

describe('ai: streamText().fullStream with @ai-sdk/openai', () => {
  const fixture = body('ai-sdk/upstream-openai-chat.sse');
  const tools = {
    issue_refund: tool({
      description: 'Refund an order',
      inputSchema: z.object({ order_id: z.string(), amount: z.string() }),
    }),
  };
  const run = (url: string) =>
    defer(
      // The annotation picks the async-iterable side of fullStream (a ReadableStream too) for RxJS.
      (): AsyncIterable<TextStreamPart<typeof tools>> =>
        streamText({
          model: createOpenAI({ baseURL: `${url}/v1`, apiKey: 'test' }).chat('gpt-4o'),
          tools,
          prompt: 'The book for order ORD-7781 arrived damaged. Refund it.',
          maxRetries: 0,
          onError: () => {}, // the error also arrives as an error part, which the adapter turns into a ProviderError
        }).fullStream,
    ).pipe(aiSdkParts());

  it('a connection reset after the call, then the whole stream: a clean turn', async () => {
    // Attempt 1 ends after the call's arguments, before finish_reason. streamText (ai 6) ends its stream with
    // the provider's APICallError (isRetryable: true), which the adapter wraps into a retryable ProviderError.
    const cut = lineOf(fixture, '"finish_reason":"tool_calls"');
    const { url, requests } = await serve([
      { body: fixture, destroyAfter: cut, chunkSize: 97 },
      { body: fixture, chunkSize: 97 },
    ]);
    const result = await runTurn(run(url));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'call_Q2wE3rT4yU5iO6pA7sD8fG9h');
    expect(requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    // @ai-sdk/openai reports the cache and reasoning counts as zero when the chunk has no details
    expect(result.turn.attempts[1]?.usage).toEqual({
      inputTokens: 142,
      outputTokens: 31,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(result.turn.attempts[0]?.reason).toMatch(/^ai-sdk: /);
    expect(result.turn.finish?.output).toEqual({
      format: 'ai-sdk',
      content: [
        { type: 'text', text: 'Checking order ORD-7781. ' },
        {
          type: 'tool-call',
          toolCallId: 'call_Q2wE3rT4yU5iO6pA7sD8fG9h',
          toolName: 'issue_refund',
          input: helpDesk.refundArgs,
        },
      ],
    });
    expect(result.turn.responseId).toBe('chatcmpl-AbC123xyz');
  });

  it('an error chunk mid-stream (streamText reports it as an error part and goes on) is retried', async () => {
    const { url, requests } = await serve([
      { body: body('ai-sdk/upstream-openai-chat-error.sse') },
      { body: fixture },
    ]);
    const result = await runTurn(run(url));
    expectCleanTurn(result, 'Checking order ORD-7781. ', 'call_Q2wE3rT4yU5iO6pA7sD8fG9h');
    expect(result.turn.attempts[0]?.reason).toBe(
      'ai-sdk: The server had an error while processing your request. Sorry about that!',
    );
    expect(requests).toHaveLength(2);
  });
});

describe('the examples run the whole retrying pipeline (replaying a broken stream, then a whole one)', () => {
  const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
  const cwd = fileURLToPath(new URL('../../', import.meta.url));
  // Without API keys, each example replays a fixture from its own local server.
  const env = { ...process.env };
  delete env.ANTHROPIC_API_KEY;
  delete env.GEMINI_API_KEY;
  delete env.OPENAI_API_KEY;

  it.each(['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'ai-sdk'])(
    'examples/%s.ts',
    async (name) => {
      const { stdout } = await promisify(execFile)(tsx, [`examples/${name}.ts`], { cwd, env });
      // Attempt 1 streams other words and breaks off mid-word; the reset says what it voids; attempt 2 streams on.
      const abandoned = 'Looking up order ORD-7781 to refund the dam';
      const shown = stdout.indexOf(`${abandoned}\n[reset: attempt 2 starts;`);
      const reset = stdout.indexOf(`; discard ${JSON.stringify(abandoned)}]\nChecking order ORD-7781. `);
      expect(shown).toBeGreaterThanOrEqual(0);
      expect(reset).toBeGreaterThan(shown);
      expect(stdout.match(/\[reset: /g)).toHaveLength(1);
      expect(stdout.match(/\[run issue_refund\(/g)).toHaveLength(1);
      expect(stdout.indexOf('[run issue_refund(')).toBeGreaterThan(reset); // attempt 1's call was never released
      expect(stdout).toContain('final text (attempt 2 only): "Checking order ORD-7781. "');
      expect(stdout).toContain('attempt 1: abandoned');
      expect(stdout).toContain('attempt 2: completed');
    },
    60_000,
  );
});
