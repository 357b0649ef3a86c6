import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  type FinishReason,
  type ProviderEvent,
  requireFinish,
  type TurnError,
  type TurnEvent,
} from 'cleanturn';
import { openaiChat, ProviderError } from 'cleanturn/providers';
import { call, delta, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { defer, from, Observable, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { OpenAIChatChunk, OpenAIChatInput, OpenAIChatOutput } from '../../src/providers/openaiChat.js';
import type { FinishEvent, UsageEvent } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
import { attempts, type Expectation, expectationChecks, retriedTurn } from '../support/providerTurns.js';
import { parseSse } from '../support/sse.js';
import { nothing, standardChecks } from '../support/standardChecks.js';

const fixtures = join(import.meta.dirname, '../fixtures/openai-chat');
/** A fixture's payloads as the adapter reads them, the `[DONE]` sentinel passed on as the string it is. */
const payloads = (name: string): OpenAIChatInput[] =>
  parseSse(readFileSync(join(fixtures, name), 'utf8')).map((event) =>
    event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as OpenAIChatChunk),
  );

const adapt = (inputs: readonly OpenAIChatInput[], operator = openaiChat()) =>
  collect(from(inputs).pipe(operator));
const assembled = (inputs: readonly OpenAIChatInput[]) =>
  collect(from(inputs).pipe(openaiChat(), assembleToolCalls()));

/** A chunk of choice 0 with the given delta and finish reason (the ignored fields left out). */
const chunk = (delta: object, finishReason: string | null = null, index = 0): OpenAIChatChunk => ({
  choices: [{ index, delta, finish_reason: finishReason }],
});
const content = (value: string) => chunk({ content: value });
const stop = (reason = 'stop') => chunk({}, reason);
const usageChunk = (prompt: number, completion: number): OpenAIChatChunk => ({
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion },
});
const toolDelta = (index: number, args: string, start?: { id: string; name: string }) =>
  chunk({
    tool_calls: [
      start === undefined
        ? { index, function: { arguments: args } }
        : { index, id: start.id, type: 'function', function: { name: start.name, arguments: args } },
    ],
  });
const errorPayload = (error: OpenAIChatChunk['error']): OpenAIChatChunk => ({ error });

const lookupArgs = { order_id: 'ORD-7781' };
const unicodeText = `Merci \u{1F64F} ! Le cafe\u0301 est offert, l'équipe 👩\u200d💻 rembourse 42 €. 注文を返金しました。`;

type Message = OpenAIChatOutput['message'];
/** The attempt's output: the assistant message as the provider sent it (no text is `content: null`). */
const output = (message: Partial<Message> = {}): OpenAIChatOutput => ({
  format: 'openai-chat',
  message: { role: 'assistant', content: null, ...message },
});
/** The finish of an attempt with its output, and its response id when the chunks had one. */
function done(
  reason: FinishReason,
  raw?: string,
  message: Partial<Message> = {},
  responseId?: string,
): FinishEvent {
  const event: FinishEvent = { ...finish(reason, raw), output: output(message) };
  if (responseId !== undefined) event.responseId = responseId;
  return event;
}
/** A call of the assistant message, its arguments the text as streamed. */
const toolCall = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});
/** A usage event with the cache and reasoning details. */
const usageOf = (input: number, out: number, cached: number, reasoningTokens: number): UsageEvent => ({
  ...usage(input, out),
  cachedInputTokens: cached,
  reasoningTokens,
});

const refundText = '{"order_id":"ORD-7781","amount":"full"}';
const spacedRefundText = '{"order_id": "ORD-7781", "amount": "full"}';
const deepseekThinking =
  "The customer's book arrived damaged, so a full refund of ORD-7781. I should call issue_refund.";
const claudeThinking =
  'The book arrived damaged. A full refund of ORD-7781 fits the policy; I will call issue_refund.';
const claudeSignature =
  'EqQBCkYIBxgCKkB3mZ0c8yT1qLfV2nR7sXk4hJ9pW6dA0eGiUoBtC5vN8rM1zQ3yE7wK2jH4fS9aL6xP0uT5oD8cV1bN3mZ7EgzR2tY4uI6oP8aS0dFGiIMk7Lq9Wx3Vn5Bc1Rz8IjAyT6pQ4mN2vL9xK7hJ5gF3dS1aZ8cX0bV6nM4kR2wE9tY7uI5oP3lK1jH8gF6dD';
const o3Encrypted = {
  type: 'reasoning.encrypted',
  data: 'gAAAAABpX2c4mQ7tV1nK8sL3wR9zF0bH6yJ2dP5uC4eA7gT1iN8oM3qX6vB9kZ2lS5rW0yD4hF7jU1aE8cG3nI6pQ9tR2mV5xL0oK7sB4dY1wZ8uJ3fH6gC9eN2iT5qM0rA3vX6yP9lS2kD5oW8bF1jU4hE7zG0cR3nI6tQ9mV2xL5aK8sB1dY4wZ7uJ0fH3gC6eN9iT2qM5rA8vX1yP4lS7kD0oW3bF6jU9hE2zG5cR8nI1tQ4mV7xL0aK3sB6dY9wZ2uJ5fH8gC1eN4iT7qM0rA3vX==',
  id: 'rs_0c5e9a1f3b7d2468016a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d',
  format: 'openai-responses-v1',
  index: 0,
};
const geminiThinking = '**Checking the refund**\n\nThe order ORD-7781 qualifies for a full refund.';
const geminiSignature =
  'CiQBjz1rX2bV8mN4qT7wK1sL9zR3yF6hJ0dP5uC2eA8gT4iN7oM1qX6vB3kZ9lS5rW2yD8hF4jU0aE7cG1nI6pQ3tR9mV5xL2oK8sB0dY6wZ4uJ1fH7gC3eN9iT5qM2rA8vX0yP6lS4kD1oW7bF3jU9hE5zG2cR0nI8tQ6mV4x=';
const vllmThinking = 'The user wants a refund for ORD-7781. Answer briefly.';

// biome-ignore format: a table of fixtures
const expectations: Record<string, Expectation> = {
  'text-and-call.sse': { events: [
    text('Checking order'), text(' ORD-7781. '), usageOf(187, 29, 0, 0),
    call('call_7Hq2mWbK9sXv4RtY1nCz0LdE', 'issue_refund', helpDesk.refundArgs),
    done('tool-calls', 'tool_calls', {
      content: 'Checking order ORD-7781. ',
      tool_calls: [toolCall('call_7Hq2mWbK9sXv4RtY1nCz0LdE', 'issue_refund', refundText)],
    }, 'chatcmpl-CkR2xq8BvN4tY7pLaZ3mWq'),
  ] },
  'no-arg-tool.sse': { events: [
    usageOf(96, 11, 0, 0), call('call_Vb3nQ8rLk2Wz6YtP0sMd4HfA', 'list_open_orders', {}),
    done('tool-calls', 'tool_calls', {
      tool_calls: [toolCall('call_Vb3nQ8rLk2Wz6YtP0sMd4HfA', 'list_open_orders', '')],
    }, 'chatcmpl-CkS9b1TqYw3Lm5Nc8Rx0Pz'),
  ] },
  'whole-args-first-delta.sse': { events: [
    call('call_mz4k1q9d', 'lookup_order', lookupArgs),
    done('tool-calls', 'tool_calls', {
      tool_calls: [toolCall('call_mz4k1q9d', 'lookup_order', '{"order_id":"ORD-7781"}')],
    }, 'chatcmpl-318'),
  ] },
  'parallel-interleaved.sse': { events: [
    usageOf(233, 52, 128, 0),
    call('call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', 'lookup_order', lookupArgs),
    call('call_G4hJ6kL8mN0pQ2rS4tU6vW8x', 'issue_refund', helpDesk.refundArgs),
    done('tool-calls', 'tool_calls', {
      tool_calls: [
        toolCall('call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', 'lookup_order', '{"order_id": "ORD-7781"}'),
        toolCall('call_G4hJ6kL8mN0pQ2rS4tU6vW8x', 'issue_refund', spacedRefundText),
      ],
    }, 'chatcmpl-CkT4vH7nB2xQ9wEr1Ty6Ui'),
  ] },
  'azure-empty-choices-prefix.sse': { events: [
    text('Your refund for'), text(' ORD-7781 is on its way.'), usageOf(58, 12, 0, 0),
    done('stop', undefined, { content: 'Your refund for ORD-7781 is on its way.' }, 'chatcmpl-CkU7pLm2Qa9Zx4Wc6Ve8Rb'),
  ] },
  'usage-missing.sse': { events: [
    text('The refund'), text(' has started.'),
    done('stop', undefined, { content: 'The refund has started.' }, 'chatcmpl-CkV1sD3fG5hJ7kL9zX2cVb'),
  ] },
  'truncated-no-done.sse': { events: [text('Checking order ORD-7781. ')] },
  'tool-call-finish-stop.sse': { events: [
    usageOf(150, 19, 0, 0), call('call_Lp0oK9iJ8uH7yG6tF5rD4eS3', 'issue_refund', helpDesk.refundArgs),
    done('tool-calls', 'stop', {
      tool_calls: [toolCall('call_Lp0oK9iJ8uH7yG6tF5rD4eS3', 'issue_refund', refundText)],
    }, 'chatcmpl-CkX8nM1bV3cX5zA7sD9fG2'),
  ] },
  'in-stream-error-server.sse': {
    events: [text('Refunding the'), text(' dam')],
    error: {
      retryable: true,
      code: 'upstream', upstreamCode: 'server_error',
      message: 'openai-chat: The server had an error while processing your request. Sorry about that!',
    },
  },
  'in-stream-error-invalid-request.sse': {
    events: [],
    error: { retryable: false, code: 'upstream', upstreamCode: 'context_length_exceeded', message: expect.stringContaining('maximum context length') },
  },
  'unicode-split.sse': { events: [
    text('Merci \ud83d'), text('\ude4f ! Le cafe'), text("\u0301 est offert, l'équipe 👩"),
    text('\u200d💻 rembourse 42 €. 注文を'), text('返金しました。'),
    call('call_Uc0dE1fG2hI3jK4lM5nO6pQ7', 'issue_refund', { order_id: 'ORD-7781', note: 'Livre abîmé 📚 → ✓' }),
    done('tool-calls', 'tool_calls', {
      content: unicodeText,
      tool_calls: [toolCall('call_Uc0dE1fG2hI3jK4lM5nO6pQ7', 'issue_refund',
        '{"order_id":"ORD-7781","note":"Livre ab\\u00eemé \\ud83d\\udcda → ✓"}')],
    }, 'chatcmpl-Cka0zX1cV2bN3mQ4wE5rT6'),
  ] },
  'crlf-framing.sse': { events: [
    text('Looking up ORD-7781.'), usage(120, 24),
    call('call_Wx1yZ2aB3cD4eF5gH6iJ7kL8', 'lookup_order', lookupArgs),
    done('tool-calls', 'tool_calls', {
      content: 'Looking up ORD-7781.',
      tool_calls: [toolCall('call_Wx1yZ2aB3cD4eF5gH6iJ7kL8', 'lookup_order', '{"order_id":"ORD-7781"}')],
    }, 'chatcmpl-Ckb4xC5vB6nM7qW8eR9tY0'),
  ] },
  'missing-optional-fields.sse': { events: [
    text('One moment.'), call('call_Mn5bV6cX7zL8kJ9hG0fD1sA2', 'lookup_order', lookupArgs),
    done('tool-calls', 'tool_calls', {
      content: 'One moment.',
      tool_calls: [toolCall('call_Mn5bV6cX7zL8kJ9hG0fD1sA2', 'lookup_order', '{"order_id":"ORD-7781"}')],
    }, 'chatcmpl-Ckc8vB9nM0qW1eR2tY3uI4'),
  ] },
  'duplicate-start-fields.sse': { events: [
    usage(201, 27), call('kQ3nV8xZp', 'issue_refund', helpDesk.refundArgs),
    done('tool-calls', 'tool_calls', { tool_calls: [toolCall('kQ3nV8xZp', 'issue_refund', spacedRefundText)] }, 'chatcmpl-7f3a9c'),
  ] },
  'refusal.sse': { events: [{
    ...done('content-filter', 'stop', { refusal: "I'm sorry, I can't help with that." }, 'chatcmpl-Ckd2nB3vC4xZ5aS6dF7gH8'),
    refusal: "I'm sorry, I can't help with that.",
  }] },
  'compat-arguments-object.sse': { events: [
    text('Refunding now.'), call('call_q7Tn2', 'issue_refund', helpDesk.refundArgs),
    done('tool-calls', 'tool_calls', {
      content: 'Refunding now.', tool_calls: [toolCall('call_q7Tn2', 'issue_refund', refundText)],
    }, 'chatcmpl-Rq81vXk2Lm'),
  ] },
  'compat-arguments-number.sse': {
    events: [],
    errorClass: ProviderError,
    error: {
      retryable: false, code: 'invalid-field', field: 'choices[0].delta.tool_calls[0].function.arguments',
      message: expect.stringContaining('got number'),
    },
  },
  'compat-error-string.sse': {
    events: [text('Let me check')],
    error: {
      retryable: true,
      code: 'upstream',
      upstreamCode: undefined,
      message: 'openai-chat: upstream model timed out after 60s',
    },
  },
  'compat-error-object.sse': {
    events: [],
    error: { retryable: false, code: 'upstream', upstreamCode: 'BadRequestError', status: 400, message: expect.stringContaining('maximum context length') },
  },
  'compat-choice-index-string.sse': { events: [
    text('Your refund for'), text(' ORD-7781 has started.'),
    done('stop', undefined, { content: 'Your refund for ORD-7781 has started.' }, 'chatcmpl-Rq81vXk2Lm'),
  ] },
  'deepseek-reasoning-content-then-call.sse': { events: [
    reasoning('The customer'), reasoning("'s book arrived"), reasoning(' damaged, so a'),
    reasoning(' full refund of ORD-7781'), reasoning('.'), reasoning(' I should call issue_refund.'),
    call('call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE', 'issue_refund', helpDesk.refundArgs), usageOf(412, 58, 384, 21),
    done('tool-calls', 'tool_calls', {
      reasoning_content: deepseekThinking,
      tool_calls: [toolCall('call_00_Kd8sQ2vLx7Rm4TpW9nYc1BzE', 'issue_refund', refundText)],
    }, '3b9d2f4e-7a61-4c0e-9f2b-5d8a1c6e0b47'),
  ] },
  'openrouter-claude-reasoning-details-signature.sse': { events: [
    reasoning('The book arrived damaged.'), reasoning(' A full refund of ORD-7781 fits the policy;'),
    reasoning(' I will call issue_refund.'), text('Checking order ORD-7781. '),
    call('toolu_01Hx4Kq8VbN2mZ7cR5tY9wLp', 'issue_refund', helpDesk.refundArgs), usageOf(1208, 96, 1024, 38),
    done('tool-calls', 'tool_calls', {
      content: 'Checking order ORD-7781. ',
      reasoning: claudeThinking,
      reasoning_details: [{
        type: 'reasoning.text', text: claudeThinking, signature: claudeSignature, format: 'anthropic-claude-v1', index: 0,
      }],
      tool_calls: [toolCall('toolu_01Hx4Kq8VbN2mZ7cR5tY9wLp', 'issue_refund', spacedRefundText)],
    }, 'gen-1786790100-Qm3vTz8KpL2xWn7RcY5a'),
  ] },
  'openrouter-encrypted-reasoning-only.sse': { events: [
    text('Your refund'), text(' for ORD-7781'), text(' has started.'), usageOf(64, 212, 0, 192),
    done('stop', undefined, {
      content: 'Your refund for ORD-7781 has started.', reasoning_details: [o3Encrypted],
    }, 'gen-1786790200-Vb7Nq2Lx9KcT4mWz1RsE'),
  ] },
  'openrouter-gemini-text-and-signature-same-index.sse': { events: [
    reasoning('**Checking the refund**\n\nThe order ORD-7781'), reasoning(' qualifies for a full refund.'),
    text('Checking order ORD-7781. '), call('tool_issue_refund_Zr5Wm1Qx8Kc3Vn7Tb2Lp', 'issue_refund', helpDesk.refundArgs),
    usageOf(312, 141, 0, 97),
    done('tool-calls', 'tool_calls', {
      content: 'Checking order ORD-7781. ',
      reasoning: geminiThinking,
      reasoning_details: [
        { type: 'reasoning.text', text: geminiThinking, format: 'google-gemini-v1', index: 0 },
        { type: 'reasoning.encrypted', data: geminiSignature, id: 'tool_issue_refund_Zr5Wm1Qx8Kc3Vn7Tb2Lp', format: 'google-gemini-v1', index: 0 },
      ],
      tool_calls: [toolCall('tool_issue_refund_Zr5Wm1Qx8Kc3Vn7Tb2Lp', 'issue_refund', refundText)],
    }, 'gen-1786790300-Hs4Yp8Wc2Nv6Kq1Tm9Lr'),
  ] },
  'vllm-reasoning-and-reasoning-content.sse': { events: [
    reasoning('The user wants'), reasoning(' a refund for ORD-7781'), reasoning('. Answer briefly.'),
    text('Your refund for'), text(' ORD-7781 has started.'), usage(41, 52),
    done('stop', undefined, {
      content: 'Your refund for ORD-7781 has started.', reasoning: vllmThinking, reasoning_content: vllmThinking,
    }, 'chatcmpl-7e3a9c1d5b2f4e8a'),
  ] },
  'compat-cortex-no-finish-reason.sse': { events: [
    text('Checking order'), text(' ORD-7781. '), call('tooluse_Wq3Rt8Lm1Xk6Zp4Nv9Cs', 'issue_refund', helpDesk.refundArgs),
    usage(390, 53),
    done('tool-calls', undefined, {
      content: 'Checking order ORD-7781. ',
      tool_calls: [toolCall('tooluse_Wq3Rt8Lm1Xk6Zp4Nv9Cs', 'issue_refund', spacedRefundText)],
    }, '5e2c8a91-4b7d-4f3e-a6c0-9d1b2e7f8a34'),
  ] },
};

describe('openaiChat: every fixture', () => {
  expectationChecks({
    provider: 'openai-chat',
    dir: fixtures,
    expectations,
    read: payloads,
    adapter: () => openaiChat(),
  });

  it('unicode-split.sse: the text rebuilds whole once the fragments are joined', () => {
    const joined = assembled(payloads('unicode-split.sse'))
      .values.flatMap((event) => (event.type === 'text' ? [event.text] : []))
      .join('');
    expect(joined).toBe(unicodeText);
    expect(() => encodeURIComponent(joined)).not.toThrow(); // no lone surrogate is left
  });

  it('truncated-no-done.sse: without a finish, requireFinish makes the cut a retryable error', () => {
    const result = collect(
      from(payloads('truncated-no-done.sse')).pipe(openaiChat(), assembleToolCalls(), requireFinish()),
    );
    expectTurnError(result.error, 'missing-finish');
    expect((result.error as TurnError).retryable).toBe(true);
  });

  it('parallel-interleaved.sse: fragments keep their index and arrive as sent, before assembly', () => {
    // prettier-ignore
    expect(adapt(payloads('parallel-interleaved.sse')).values).toEqual([
      delta(0, '', { id: 'call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', name: 'lookup_order' }),
      delta(1, '', { id: 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x', name: 'issue_refund' }),
      delta(1, '{"order_id": "ORD-'),
      delta(0, '{"order_id"'),
      delta(0, ': "ORD-7781"}'),
      delta(1, '7781", "amount": "full"}'),
      usageOf(233, 52, 128, 0),
      expectations['parallel-interleaved.sse']?.events.at(-1),
    ]);
  });

  it('azure-empty-choices-prefix.sse: the empty-choices prefix chunk is not read as the usage chunk', () => {
    const events = adapt(payloads('azure-empty-choices-prefix.sse')).values;
    expect(events.filter((e) => e.type === 'usage')).toEqual([usageOf(58, 12, 0, 0)]);
    expect(events[0]).toEqual(text('Your refund for'));
    // Its empty id is not the response id: the chunks that follow have it.
    expect(events.at(-1)).toMatchObject({ responseId: 'chatcmpl-CkU7pLm2Qa9Zx4Wc6Ve8Rb' });
  });
});

describe('openaiChat: the finish and the usage after it', () => {
  it('holds the finish until the usage chunk, so that usage comes first', () => {
    expect(adapt([content('Hi.'), stop(), usageChunk(10, 2), '[DONE]']).values).toEqual([
      text('Hi.'),
      usage(10, 2),
      done('stop', undefined, { content: 'Hi.' }),
    ]);
  });

  it('releases the held finish at [DONE] when there is no usage chunk', () => {
    const events: ProviderEvent[] = [];
    let doneSeen = false;
    from([content('Hi.'), stop(), '[DONE]' as const, content('ignored')])
      .pipe(
        tap((input) => {
          if (input === '[DONE]') doneSeen = true;
        }),
        openaiChat(),
      )
      .subscribe((event) => {
        if (event.type === 'finish') expect(doneSeen).toBe(true);
        events.push(event);
      });
    expect(events).toEqual([text('Hi.'), done('stop', undefined, { content: 'Hi.' })]);
  });

  it('releases the held finish when the source completes ([DONE] dropped, no usage)', () => {
    const result = adapt([content('Hi.'), stop()]);
    expect(result.values).toEqual([text('Hi.'), done('stop', undefined, { content: 'Hi.' })]);
    expect(result.completed).toBe(true);
  });

  it('drops the held finish when the source errors before the stream ended: the attempt failed', () => {
    const reset = new Error('connection reset');
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(content('Hi.'));
        s.next(stop());
        s.error(reset);
      }).pipe(openaiChat()),
    );
    expect(result.values).toEqual([text('Hi.')]);
    expect(result.error).toBe(reset);
  });

  it('completes instead of erroring when the source errors after the finish: a finished attempt stays finished', () => {
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(stop());
        s.next(usageChunk(3, 1));
        s.error(new TypeError('terminated'));
      }).pipe(openaiChat()),
    );
    expect(result.values).toEqual([usage(3, 1), done('stop')]);
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
  });

  it('drops the held finish when an error payload follows the finish_reason', () => {
    const result = adapt([content('Hi.'), stop(), errorPayload({ message: 'boom', type: 'server_error' })]);
    expect(result.values).toEqual([text('Hi.')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'upstream' });
  });

  it('ignores everything after the finish was released', () => {
    expect(
      adapt([stop(), usageChunk(1, 1), content('late'), usageChunk(9, 9), stop('length')]).values,
    ).toEqual([usage(1, 1), done('stop')]);
  });

  it('with usage on every chunk (continuous usage stats), releases the finish with the usage of its chunk', () => {
    const withUsage = (c: OpenAIChatChunk, p: number, o: number) => ({
      ...c,
      usage: { prompt_tokens: p, completion_tokens: o },
    });
    expect(adapt([withUsage(content('Hi'), 5, 1), withUsage(stop(), 5, 2), usageChunk(5, 2)]).values).toEqual(
      [text('Hi'), usage(5, 1), usage(5, 2), done('stop', undefined, { content: 'Hi' })],
    );
  });

  it('a fragment in the finish chunk itself comes before the finish', () => {
    const last = chunk({ tool_calls: [{ index: 0, function: { arguments: '}' } }] }, 'tool_calls');
    expect(adapt([toolDelta(0, '{', { id: 'c1', name: 'f' }), last]).values).toEqual([
      delta(0, '{', { id: 'c1', name: 'f' }),
      delta(0, '}'),
      done('tool-calls', 'tool_calls', { tool_calls: [toolCall('c1', 'f', '{}')] }),
    ]);
  });

  it('text after the finish_reason, before the end: the finish that goes out has it in its output', () => {
    expect(adapt([content('Refund '), stop(), content('started.'), '[DONE]']).values).toEqual([
      text('Refund '),
      text('started.'),
      done('stop', undefined, { content: 'Refund started.' }),
    ]);
  });
});

describe('openaiChat: [DONE] without a finish_reason (Snowflake Cortex)', () => {
  it('at [DONE], an attempt that never sent a finish_reason finished: stop, without raw', () => {
    const result = adapt([content('Your refund has started.'), '[DONE]']);
    expect(result.values).toEqual([
      text('Your refund has started.'),
      done('stop', undefined, { content: 'Your refund has started.' }),
    ]);
    expect(result.completed).toBe(true);
  });

  it('with calls, tool-calls; with a refusal, content-filter', () => {
    const calls = adapt([toolDelta(0, '{}', { id: 'c1', name: 'lookup_order' }), '[DONE]']).values;
    expect(calls.at(-1)).toEqual(
      done('tool-calls', undefined, { tool_calls: [toolCall('c1', 'lookup_order', '{}')] }),
    );
    const refused = adapt([chunk({ refusal: 'No.' }), '[DONE]']).values;
    expect(refused).toEqual([{ ...done('content-filter', undefined, { refusal: 'No.' }), refusal: 'No.' }]);
  });

  it('a stream cut without [DONE] and without a finish_reason has no finish: requireFinish retries it', () => {
    const result = collect(
      from([content('Refunding the dam')]).pipe(openaiChat(), assembleToolCalls(), requireFinish()),
    );
    expect(result.values).toEqual([text('Refunding the dam')]);
    expectTurnError(result.error, 'missing-finish');
  });

  it('compat-cortex-no-finish-reason.sse through the retrying pipeline: one attempt, not retried', () => {
    const { seen, states } = (() => {
      const events: TurnEvent[] = [];
      return {
        seen: events,
        states: collect(
          attempts(payloads('compat-cortex-no-finish-reason.sse')).pipe(
            retriedTurn(openaiChat(), 'turn-42', events),
          ),
        ),
      };
    })();
    expect(states.error).toBeUndefined();
    expect(seen.filter((e) => e.type === 'reset')).toEqual([]);
    expect(states.values.at(-1)?.finish).toMatchObject({ reason: 'tool-calls', attempt: 1 });
  });
});

describe('openaiChat: reasoning', () => {
  const details = (...entries: object[]) => chunk({ reasoning_details: entries });

  it('reasoning_content and reasoning are reasoning, never text; each is kept under its own name', () => {
    const events = adapt([
      chunk({ role: 'assistant', content: null, reasoning_content: '' }),
      chunk({ reasoning_content: 'Check the order.' }),
      chunk({ reasoning: ' Then refund.' }),
      content('Refund started.'),
      stop(),
    ]).values;
    expect(events).toEqual([
      reasoning('Check the order.'),
      reasoning(' Then refund.'),
      text('Refund started.'),
      done('stop', undefined, {
        content: 'Refund started.',
        reasoning_content: 'Check the order.',
        reasoning: ' Then refund.',
      }),
    ]);
  });

  it('an empty reasoning_content is still the field the provider used: it goes back as ""', () => {
    const events = adapt([chunk({ content: 'Hi.', reasoning_content: '' }), stop()]).values;
    expect(events.at(-1)).toEqual(done('stop', undefined, { content: 'Hi.', reasoning_content: '' }));
  });

  it('the same text as reasoning and reasoning_content in one delta is shown once', () => {
    expect(adapt([chunk({ reasoning: 'Think.', reasoning_content: 'Think.' })]).values).toEqual([
      reasoning('Think.'),
    ]);
  });

  it('reasoning_details are shown rather than reasoning in the same delta, and both are kept', () => {
    const events = adapt([
      chunk({ reasoning: 'Plan', reasoning_details: [{ type: 'reasoning.text', text: 'Plan', index: 0 }] }),
      stop(),
    ]).values;
    expect(events).toEqual([
      reasoning('Plan'),
      done('stop', undefined, {
        reasoning: 'Plan',
        reasoning_details: [{ type: 'reasoning.text', text: 'Plan', index: 0 }],
      }),
    ]);
  });

  it('a delta whose reasoning_details have nothing to show shows its reasoning string', () => {
    const events = adapt([
      chunk({
        reasoning: 'Plan',
        reasoning_details: [{ type: 'reasoning.encrypted', data: 'e1', index: 1 }],
      }),
    ]).values;
    expect(events).toEqual([reasoning('Plan')]);
  });

  it('merges pieces by type and index: text joined, the signature that came later kept, other types apart', () => {
    const events = adapt([
      details({ type: 'reasoning.text', text: '', signature: '', format: 'anthropic-claude-v1', index: 0 }),
      details({ type: 'reasoning.text', text: 'Step 1.', format: 'anthropic-claude-v1', index: 0 }),
      details({
        type: 'reasoning.encrypted',
        data: 'sig-A',
        id: 'call_1',
        format: 'google-gemini-v1',
        index: 0,
      }),
      details({ type: 'reasoning.text', text: ' Step 2.', index: 0 }),
      details({ type: 'reasoning.text', signature: 'sig-B', format: 'anthropic-claude-v1', index: 0 }),
      details(
        { type: 'reasoning.summary', summary: 'Checked', index: 1 },
        { type: 'reasoning.summary', summary: ' it.', index: 1 },
      ),
      stop(),
    ]).values;
    expect(events).toEqual([
      reasoning('Step 1.'),
      reasoning(' Step 2.'),
      reasoning('Checked'),
      reasoning(' it.'),
      done('stop', undefined, {
        reasoning_details: [
          {
            type: 'reasoning.text',
            text: 'Step 1. Step 2.',
            signature: 'sig-B',
            format: 'anthropic-claude-v1',
            index: 0,
          },
          { type: 'reasoning.encrypted', data: 'sig-A', id: 'call_1', format: 'google-gemini-v1', index: 0 },
          { type: 'reasoning.summary', summary: 'Checked it.', index: 1 },
        ],
      }),
    ]);
  });

  it('pieces without an index join the latest entry of their type; a signature once set is not replaced', () => {
    const events = adapt([
      details({ type: 'reasoning.text', text: 'A', signature: 'first' }),
      details({ type: 'reasoning.text', text: 'B', signature: 'second' }),
      details({ type: 'reasoning.encrypted', data: 'x' }),
      details({ type: 'reasoning.encrypted', data: 'y' }),
      stop(),
    ]).values;
    expect((events.at(-1) as FinishEvent).output).toEqual(
      output({
        reasoning_details: [
          { type: 'reasoning.text', text: 'AB', signature: 'first' },
          { type: 'reasoning.encrypted', data: 'x' },
          { type: 'reasoning.encrypted', data: 'y' },
        ],
      }),
    );
  });

  it('an entry of a type it does not know is kept as it came, and shows nothing', () => {
    const future = { type: 'reasoning.future', blob: { a: [1, 2] }, index: 3 };
    const events = adapt([details(future), stop()]).values;
    expect(events).toEqual([done('stop', undefined, { reasoning_details: [future] })]);
    expect(
      (events[0] as FinishEvent & { output: OpenAIChatOutput }).output.message.reasoning_details?.[0],
    ).not.toBe(future);
  });

  it('reasoning_details sent empty are kept empty (a provider that reasoned nothing wants [] back)', () => {
    expect(adapt([chunk({ content: 'Hi.', reasoning_details: [] }), stop()]).values.at(-1)).toEqual(
      done('stop', undefined, { content: 'Hi.', reasoning_details: [] }),
    );
  });

  it('the reasoning of a delta comes before its text', () => {
    expect(adapt([chunk({ content: 'Answer.', reasoning_content: 'Thought.' })]).values).toEqual([
      reasoning('Thought.'),
      text('Answer.'),
    ]);
  });

  // biome-ignore format: a table
  const wrong: [string, OpenAIChatChunk, string][] = [
    ['reasoning_content as a number', chunk({ reasoning_content: 7 }), 'choices[0].delta.reasoning_content'],
    ['reasoning as an object', chunk({ reasoning: { text: 'x' } }), 'choices[0].delta.reasoning'],
    ['reasoning_details as an object', chunk({ reasoning_details: { type: 'reasoning.text' } }), 'choices[0].delta.reasoning_details'],
    ['an entry that is not an object', details('thinking' as unknown as object), 'choices[0].delta.reasoning_details[0]'],
    ['a text that is not a string', details({ type: 'reasoning.text', text: 5 }), 'choices[0].delta.reasoning_details[0].text'],
    ['a summary that is not a string', details({ type: 'reasoning.summary', summary: ['a'] }), 'choices[0].delta.reasoning_details[0].summary'],
    ['data that is not a string', details({ type: 'reasoning.encrypted', data: 1 }), 'choices[0].delta.reasoning_details[0].data'],
    ['an index that is not one', details({ type: 'reasoning.text', text: 'a', index: -1 }), 'choices[0].delta.reasoning_details[0].index'],
  ];
  for (const [what, payload, field] of wrong) {
    it(`${what} is a ProviderError naming ${field}`, () => {
      const result = adapt([content('a'), payload, stop()]);
      expect(result.values).toEqual([text('a')]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({ code: 'invalid-field', field, retryable: false, payload });
    });
  }
});

describe('openaiChat: the output, the response id and the usage details', () => {
  it('each attempt gets a fresh output of plain JSON data', () => {
    const operator = openaiChat();
    const inputs = payloads('deepseek-reasoning-content-then-call.sse');
    const first = collect(from(inputs).pipe(operator)).values.at(-1) as FinishEvent;
    const second = collect(from(inputs).pipe(operator)).values.at(-1) as FinishEvent;
    expect(second.output).toEqual(first.output);
    expect(second.output).not.toBe(first.output);
    expect(JSON.parse(JSON.stringify(first.output))).toEqual(first.output);
  });

  it("the response id is the chunks' id; an empty id is none", () => {
    const withId = (c: OpenAIChatChunk, id: string): OpenAIChatChunk => ({ ...c, id });
    expect(
      adapt([withId(content('a'), ''), withId(content('b'), 'chatcmpl-1'), stop()]).values.at(-1),
    ).toEqual(done('stop', undefined, { content: 'ab' }, 'chatcmpl-1'));
  });

  it('cached and reasoning tokens from the usage details; null details are absent', () => {
    const detailed: OpenAIChatChunk = {
      choices: [],
      usage: {
        prompt_tokens: 900,
        completion_tokens: 300,
        prompt_tokens_details: { cached_tokens: 768 },
        completion_tokens_details: { reasoning_tokens: 256 },
      },
    };
    const nulls: OpenAIChatChunk = {
      choices: [],
      usage: {
        prompt_tokens: 9,
        completion_tokens: 3,
        prompt_tokens_details: null,
        completion_tokens_details: null,
      },
    };
    expect(adapt([detailed]).values).toEqual([usageOf(900, 300, 768, 256)]);
    expect(adapt([nulls]).values).toEqual([usage(9, 3)]);
  });

  it('an empty usage object (Snowflake Cortex sends one on every chunk) is no usage event', () => {
    expect(
      adapt([
        { ...content('a'), usage: {} },
        { ...content('b'), usage: {} },
      ]).values,
    ).toEqual([text('a'), text('b')]);
  });

  it('usage details of the wrong type are a ProviderError naming the field', () => {
    const bad = { choices: [], usage: { prompt_tokens: 1, prompt_tokens_details: { cached_tokens: '5' } } };
    expect(adapt([bad as unknown as OpenAIChatChunk]).error).toMatchObject({
      code: 'invalid-field',
      field: 'usage.prompt_tokens_details.cached_tokens',
    });
    const notObject = { choices: [], usage: { completion_tokens_details: 3 } };
    expect(adapt([notObject as unknown as OpenAIChatChunk]).error).toMatchObject({
      code: 'invalid-field',
      field: 'usage.completion_tokens_details',
    });
  });
});

describe('openaiChat: finish reasons', () => {
  const call0 = toolDelta(0, '{}', { id: 'c1', name: 'lookup_order' });
  // biome-ignore format: a table
  const table: [string, OpenAIChatInput[], ProviderEvent][] = [
    ['stop', [content('x'), stop('stop')], finish('stop')],
    ['length', [content('x'), stop('length')], finish('length')],
    ['content_filter', [content('x'), stop('content_filter')], finish('content-filter', 'content_filter')],
    ['tool_calls', [call0, stop('tool_calls')], finish('tool-calls', 'tool_calls')],
    ['function_call (deprecated)', [chunk({ function_call: { name: 'f', arguments: '{}' } }), stop('function_call')], finish('tool-calls', 'function_call')],
    ['an unknown reason', [content('x'), stop('eos_token')], finish('other', 'eos_token')],
    ['stop after a call', [call0, stop('stop')], finish('tool-calls', 'stop')],
    ['length after a call stays length', [call0, stop('length')], finish('length')],
    ['stop after a refusal', [chunk({ refusal: 'No.' }), stop('stop')], { ...finish('content-filter', 'stop'), refusal: 'No.' }],
  ];
  for (const [name, inputs, expected] of table) {
    it(`${name} → ${(expected as { reason: string }).reason}`, () => {
      // The reason alone: the output is the business of the fixtures above.
      const { output: _output, ...last } = adapt(inputs).values.at(-1) as FinishEvent;
      expect(last).toEqual(expected);
    });
  }
});

describe('openaiChat: in-stream errors', () => {
  // biome-ignore format: a table
  const table: [OpenAIChatChunk['error'], boolean, string | undefined][] = [
    [{ message: 'm', type: 'server_error', code: null }, true, 'server_error'],
    [{ message: 'm', type: 'requests', code: 'rate_limit_exceeded' }, true, 'rate_limit_exceeded'],
    [{ message: 'm', type: 'overloaded_error' }, true, 'overloaded_error'],
    [{ message: 'm', type: 'invalid_request_error', code: null }, false, 'invalid_request_error'],
    [{ message: 'm', type: 'invalid_request_error', code: 'context_length_exceeded' }, false, 'context_length_exceeded'],
    [{ message: 'm', type: 'insufficient_quota', code: 'insufficient_quota' }, false, 'insufficient_quota'],
    [{ message: 'm', type: 'authentication_error' }, false, 'authentication_error'],
    [{ message: 'm', code: 'invalid_image_url' }, false, 'invalid_image_url'],
    [{ message: 'm', code: 502 }, true, '502'],
    [{ message: 'm', code: 429 }, true, '429'],
    [{ message: 'm', code: 400 }, false, '400'],
    [{ message: 'm', type: 'something_new' }, true, 'something_new'],
    [{ message: 'm' }, true, undefined],
  ];
  for (const [body, retryable, code] of table) {
    it(`${JSON.stringify(body)} → retryable ${retryable}`, () => {
      const payload = errorPayload(body);
      const result = adapt([content('x'), payload]);
      expect(result.values).toEqual([text('x')]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({
        provider: 'openai-chat',
        retryable,
        code: 'upstream',
        upstreamCode: code,
        payload,
      });
    });
  }

  it('keeps a numeric code as the status', () => {
    expect(adapt([errorPayload({ message: 'Bad gateway', code: 502 })]).error).toMatchObject({ status: 502 });
  });

  it('the retryable option overrides the classification; undefined falls back to it', () => {
    const retryable = (info: { code: string | undefined }) => (info.code === 'model_busy' ? true : undefined);
    const busy = adapt(
      [errorPayload({ message: 'm', type: 'invalid_request_error', code: 'model_busy' })],
      openaiChat({ retryable }),
    );
    expect(busy.error).toMatchObject({ retryable: true, code: 'upstream', upstreamCode: 'model_busy' });
    const invalid = adapt(
      [errorPayload({ message: 'm', type: 'invalid_request_error' })],
      openaiChat({ retryable }),
    );
    expect(invalid.error).toMatchObject({ retryable: false });
  });

  it('a retryable option that throws errors the stream with what it threw', () => {
    const thrown = new Error('classifier broke');
    const result = adapt(
      [errorPayload({ message: 'm' })],
      openaiChat({
        retryable: () => {
          throw thrown;
        },
      }),
    );
    expect(result.error).toBe(thrown);
  });

  it("classifies the official SDK's in-stream error (an APIError without status, with the error body)", () => {
    const body = { message: 'The server had an error', type: 'server_error', param: null, code: null };
    const sdkError = Object.assign(new Error(body.message), { status: undefined, error: body });
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(content('Hi'));
        s.error(sdkError);
      }).pipe(openaiChat()),
    );
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: 'server_error',
      payload: body,
    });
  });

  it("reads the SDK's HTTP errors by the same table: a 400 is final, a 429 for lack of quota too", () => {
    const bad = Object.assign(new Error('400 bad'), {
      status: 400,
      error: { type: 'invalid_request_error' },
    });
    const quota = Object.assign(new Error('429 quota'), {
      status: 429,
      error: {
        code: 'insufficient_quota',
        type: 'insufficient_quota',
        message: 'You exceeded your current quota',
      },
    });
    const busy = Object.assign(new Error('503 busy'), { status: 503, error: undefined });
    const read = (error: Error) =>
      collect(new Observable<OpenAIChatInput>((s) => s.error(error)).pipe(openaiChat())).error;
    expect(read(bad)).toMatchObject({
      retryable: false,
      status: 400,
      code: 'upstream',
      upstreamCode: 'invalid_request_error',
      cause: bad,
    });
    expect(read(quota)).toMatchObject({
      retryable: false,
      status: 429,
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
    });
    expect(read(busy)).toMatchObject({ code: 'upstream', retryable: true, status: 503 });
    expect(read(bad)).toBeInstanceOf(ProviderError);
  });

  it('passes connection errors through unchanged', () => {
    for (const error of [
      Object.assign(new Error('Connection error.'), { status: undefined, error: undefined }),
      new TypeError('terminated'),
    ]) {
      expect(collect(new Observable<OpenAIChatInput>((s) => s.error(error)).pipe(openaiChat())).error).toBe(
        error,
      );
    }
  });
});

describe('openaiChat: input handling', () => {
  it('accepts the [DONE] sentinel and ignores anything after it', () => {
    expect(adapt([content('a'), '[DONE]', content('b'), stop('length')]).values).toEqual([
      text('a'),
      done('stop', undefined, { content: 'a' }),
    ]);
  });

  it('errors with a non-retryable CleanturnError for a payload that was never parsed', () => {
    const raw = '{"choices":[]}' as unknown as OpenAIChatInput;
    const result = adapt([content('a'), raw, content('b')]);
    expect(result.values).toEqual([text('a')]);
    expect(result.error).toBeInstanceOf(CleanturnError);
    expect(result.error).toMatchObject({ retryable: false, message: expect.stringContaining('JSON.parse') });
  });

  it('an array, a number or null is not a payload either: a typed ProviderError', () => {
    for (const raw of [[{ choices: [] }], 42, null]) {
      const result = adapt([content('a'), raw as unknown as OpenAIChatInput]);
      expect(result.values).toEqual([text('a')]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({ code: 'not-a-payload', retryable: false, payload: raw });
    }
  });

  it('a refusal is never answer text, even beside content', () => {
    const values = adapt([
      content('Sure'),
      chunk({ refusal: 'I cannot ' }),
      chunk({ refusal: 'do that.' }),
      stop(),
    ]).values;
    expect(values).toEqual([
      text('Sure'),
      {
        ...done('content-filter', 'stop', { content: 'Sure', refusal: 'I cannot do that.' }),
        refusal: 'I cannot do that.',
      },
    ]);
  });

  it('ignores unknown fields, empty content, null deltas and chunks it has no use for', () => {
    const odd = [
      { choices: [{ index: 0, delta: null, finish_reason: null }] },
      { choices: null, usage: null },
      { object: 'chat.completion.chunk', moderation: {} },
      chunk({ content: '', refusal: null, tool_calls: [], reasoning: null, reasoning_content: null }),
    ] as OpenAIChatChunk[];
    expect(adapt([...odd, content('ok'), stop()]).values).toEqual([
      text('ok'),
      done('stop', undefined, { content: 'ok' }),
    ]);
  });

  it('follows one choice when n > 1 (choice 0 by default)', () => {
    const both = (a: string, b: string): OpenAIChatChunk => ({
      choices: [
        { index: 0, delta: { content: a }, finish_reason: null },
        { index: 1, delta: { content: b }, finish_reason: null },
      ],
    });
    const inputs = [both('A1', 'B1'), both('A2', 'B2'), chunk({}, 'length', 1), chunk({}, 'stop', 0)];
    expect(adapt(inputs).values).toEqual([
      text('A1'),
      text('A2'),
      done('stop', undefined, { content: 'A1A2' }),
    ]);
    expect(adapt(inputs, openaiChat({ choice: 1 })).values).toEqual([
      text('B1'),
      text('B2'),
      done('length', undefined, { content: 'B1B2' }),
    ]);
  });

  it('a fragment without index goes to the call with its id, or else to the latest call', () => {
    const noIndex = (id: string | undefined, args: string, name?: string): OpenAIChatChunk =>
      chunk({ tool_calls: [{ id, function: { name, arguments: args } }] });
    const events = adapt([
      noIndex('c1', '{"a":', 'f'),
      noIndex('c2', '{"b":', 'g'),
      noIndex(undefined, '2}'),
      noIndex('c1', '1}'),
      stop('tool_calls'),
    ]).values;
    expect(events).toEqual([
      delta(0, '{"a":', { id: 'c1', name: 'f' }),
      delta(1, '{"b":', { id: 'c2', name: 'g' }),
      delta(1, '2}'),
      delta(0, '1}', { id: 'c1' }),
      done('tool-calls', 'tool_calls', {
        tool_calls: [toolCall('c1', 'f', '{"a":1}'), toolCall('c2', 'g', '{"b":2}')],
      }),
    ]);
  });

  it('reads the deprecated function_call as call 0', () => {
    const result = collect(
      from([
        chunk({ function_call: { name: 'lookup_order', arguments: '' } }),
        chunk({ function_call: { arguments: '{"order_id":"ORD-7781"}' } }),
        stop('function_call'),
      ]).pipe(openaiChat(), assembleToolCalls()),
    );
    expect(result.values).toEqual([
      call('index-0', 'lookup_order', { order_id: 'ORD-7781' }),
      // No id: the output names the call as assembleToolCalls does, so that its result finds it.
      done('tool-calls', 'function_call', {
        tool_calls: [toolCall('index-0', 'lookup_order', '{"order_id":"ORD-7781"}')],
      }),
    ]);
  });

  it('passes each argument fragment on as it is, never joined (linear in the stream size)', () => {
    const pieces = Array.from({ length: 2_000 }, (_, i) => (i === 0 ? '{"n":"' : 'x'));
    const inputs = [
      toolDelta(0, '', { id: 'c1', name: 'f' }),
      ...pieces.map((piece) => toolDelta(0, piece)),
      toolDelta(0, '"}'),
      stop('tool_calls'),
    ];
    const fragments = adapt(inputs).values.flatMap((e) =>
      e.type === 'tool-call-delta' ? [e.argsDelta] : [],
    );
    expect(fragments).toEqual(['', ...pieces, '"}']);
  });

  it('keeps its state per subscription: one operator instance, two streams', () => {
    const operator = openaiChat();
    const first = collect(from([toolDelta(0, '{}', { id: 'c1', name: 'f' }), stop()]).pipe(operator));
    const second = collect(from([content('Done.'), stop()]).pipe(operator));
    expect(first.values.at(-1)).toEqual(
      done('tool-calls', 'stop', { tool_calls: [toolCall('c1', 'f', '{}')] }),
    );
    expect(second.values).toEqual([text('Done.'), done('stop', undefined, { content: 'Done.' })]);
  });
});

// The finish is held until the usage chunk or [DONE]: the finish_reason chunk emits nothing, [DONE] releases it.
standardChecks<OpenAIChatInput>({
  name: 'openaiChat',
  make: () => openaiChat(),
  values: { a: content('Hi'), b: stop(), c: '[DONE]' },
  expected: { a: text('Hi'), b: nothing, c: done('stop', undefined, { content: 'Hi' }) },
});

describe('openaiChat: the clean turn after a retry', () => {
  const turnId = 'turn-42';
  /** The n-th subscription replays the n-th fixture (payloads as the transport would hand them over). */
  const replay = (...names: string[]) => attempts(...names.map(payloads));
  const turn = (source: Observable<OpenAIChatInput>) => {
    const seen: TurnEvent[] = [];
    return { seen, states: collect(source.pipe(retriedTurn(openaiChat(), turnId, seen))) };
  };

  it('a stream cut mid-call, then a whole one: the text and the refund of attempt 2 only', () => {
    const { seen, states } = turn(replay('truncated-no-done.sse', 'text-and-call.sse'));
    expect(states.error).toBeUndefined();
    const last = states.values.at(-1);
    expect(last?.text).toBe('Checking order ORD-7781. ');
    expect(last?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(last?.attempts[1]?.usage).toEqual({
      inputTokens: 187,
      outputTokens: 29,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    // The final attempt's output and response id are on the turn; nothing of attempt 1's.
    expect(last?.finish?.output).toEqual(
      (expectations['text-and-call.sse']?.events.at(-1) as FinishEvent | undefined)?.output,
    );
    expect(last?.responseId).toBe('chatcmpl-CkR2xq8BvN4tY7pLaZ3mWq');
    expect(seen.filter((e) => e.type === 'reset')).toHaveLength(1);
    const released = seen.filter((e) => e.type === 'tool-call');
    expect(released).toHaveLength(1);
    expect(released[0]).toMatchObject({ id: 'call_7Hq2mWbK9sXv4RtY1nCz0LdE', attempt: 2 });
    expect(released[0]?.effectKey).toBe(
      effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs }),
    );
  });

  it('a retryable in-stream error is retried; the half sentence of attempt 1 is reset away', () => {
    const { seen, states } = turn(replay('in-stream-error-server.sse', 'usage-missing.sse'));
    expect(states.values.at(-1)?.text).toBe('The refund has started.');
    expect(seen.find((e) => e.type === 'reset')).toMatchObject({ attempt: 2 });
  });

  it('a non-retryable in-stream error is not retried', () => {
    let subscriptions = 0;
    const source = defer(() => {
      subscriptions++;
      return from(payloads('in-stream-error-invalid-request.sse'));
    });
    const { states } = turn(source);
    expect(subscriptions).toBe(1);
    expect(states.error).toBeInstanceOf(ProviderError);
    expect(states.error).toMatchObject({ code: 'upstream', retryable: false });
  });
});
