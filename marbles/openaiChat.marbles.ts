import { openaiChat } from 'cleanturn/providers';
import { defineMarbles, delta, finish, reasoning, text, usage } from 'cleanturn/testing';
import { upstreamProviderError } from '../src/providers/errors.js';
import type { OpenAIChatChunk, OpenAIChatOutput } from '../src/providers/openaiChat.js';
import type { FinishEvent } from '../src/types.js';

/** A chunk of choice 0: its delta and finish_reason (the rest of a real chunk is ignored, so left out). */
const chunk = (delta: object, finishReason: string | null = null): OpenAIChatChunk => ({
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});
/** A tool-call fragment of call `index`. */
const fragment = (index: number, args: string, start?: { id: string; name: string }) =>
  chunk({
    tool_calls: [
      start === undefined
        ? { index, function: { arguments: args } }
        : { index, id: start.id, type: 'function', function: { name: start.name, arguments: args } },
    ],
  });

/** A finish carrying the attempt's output: its assistant message (`content: null` without text). */
const withOutput = (
  event: FinishEvent,
  message: Partial<OpenAIChatOutput['message']>,
  responseId?: string,
): FinishEvent => ({
  ...event,
  ...(responseId === undefined ? {} : { responseId }),
  output: {
    format: 'openai-chat',
    message: { role: 'assistant', content: null, ...message },
  } as OpenAIChatOutput,
});
/** A call of the assistant message, its arguments the text as streamed. */
const refund = (id: string) => ({
  id,
  type: 'function' as const,
  function: { name: 'issue_refund', arguments: '{"order_id":"ORD-7781","amount":"full"}' },
});
/** A DeepSeek chunk: its response id, its delta and finish_reason. */
const deepseek = (delta: object, finishReason: string | null = null): OpenAIChatChunk => ({
  id: 'ds-7781',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});

const serverError = {
  error: {
    message: 'The server had an error while processing your request.',
    type: 'server_error',
    param: null,
    code: null,
  },
};

export default defineMarbles({
  name: 'openaiChat',
  summary:
    'Turns Chat Completions chunks into neutral events: text, call fragments by `index`, usage, then one finish.',
  cases: [
    {
      title: 'text, a call in fragments, and the finish held until the usage chunk that follows it',
      source: /*   */ '-a-b-c-d-f-u----|',
      // biome-ignore format: an aligned value table
      values: {
        a: chunk({ content: 'Checking order ORD-7781. ' }),
        b: fragment(0, '', { id: 'call_1', name: 'issue_refund' }),
        c: fragment(0, '{"order_id":"ORD-7781",'),
        d: fragment(0, '"amount":"full"}'),
        f: chunk({}, 'tool_calls'),
        u: { choices: [], usage: { prompt_tokens: 142, completion_tokens: 31 } },
      },
      label: 'openaiChat()',
      operator: () => openaiChat(),
      expected: /* */ '-A-B-C-D---(UF)-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: text('Checking order ORD-7781. '),
        B: delta(0, '', { id: 'call_1', name: 'issue_refund' }),
        C: delta(0, '{"order_id":"ORD-7781",'),
        D: delta(0, '"amount":"full"}'),
        U: usage(142, 31),
        F: withOutput(finish('tool-calls', 'tool_calls'), {
          content: 'Checking order ORD-7781. ',
          tool_calls: [refund('call_1')],
        }),
      },
      subscriptions: '^---------------!',
    },
    {
      title:
        'a call that finishes with "stop" (forced tool_choice) is a tool-calls finish, released at the end',
      source: /*   */ '-b-d-f-|',
      values: {
        b: fragment(0, '{"order_id":"ORD-7781",', { id: 'call_2', name: 'issue_refund' }),
        d: fragment(0, '"amount":"full"}'),
        f: chunk({}, 'stop'),
      },
      label: 'openaiChat()',
      operator: () => openaiChat(),
      expected: /* */ '-B-D---(F|)',
      // biome-ignore format: an aligned value table
      expectedValues: {
        B: delta(0, '{"order_id":"ORD-7781",', { id: 'call_2', name: 'issue_refund' }),
        D: delta(0, '"amount":"full"}'),
        F: withOutput(finish('tool-calls', 'stop'), { tool_calls: [refund('call_2')] }),
      },
    },
    {
      title: 'an in-stream {"error": …} payload errors with a retryable ProviderError',
      source: /*   */ '-a-e-|',
      values: { a: chunk({ content: 'Refunding the dam' }), e: serverError },
      label: 'openaiChat()',
      operator: () => openaiChat(),
      expected: /* */ '-A-#',
      expectedValues: { A: text('Refunding the dam') },
      expectedError: upstreamProviderError(
        'openai-chat',
        'The server had an error while processing your request.',
        {
          retryable: true,
          upstreamCode: 'server_error',
          payload: serverError,
        },
      ),
      subscriptions: '^--!',
    },
    {
      title:
        'DeepSeek thinking: reasoning_content is reasoning, never text; the finish carries it in its output, with the response id',
      source: /*   */ '-r-s-b-f-|',
      // biome-ignore format: an aligned value table
      values: {
        r: deepseek({ role: 'assistant', content: null, reasoning_content: 'The book arrived damaged.' }),
        s: deepseek({ content: null, reasoning_content: ' A full refund.' }),
        b: deepseek({ tool_calls: [{ index: 0, id: 'call_3', type: 'function', function: { name: 'issue_refund', arguments: '{"order_id":"ORD-7781","amount":"full"}' } }] }),
        f: deepseek({ content: '', reasoning_content: null }, 'tool_calls'),
      },
      label: 'openaiChat()',
      operator: () => openaiChat(),
      expected: /* */ '-R-S-B---(F|)',
      // biome-ignore format: an aligned value table
      expectedValues: {
        R: reasoning('The book arrived damaged.'),
        S: reasoning(' A full refund.'),
        B: delta(0, '{"order_id":"ORD-7781","amount":"full"}', { id: 'call_3', name: 'issue_refund' }),
        F: withOutput(finish('tool-calls', 'tool_calls'), {
          reasoning_content: 'The book arrived damaged. A full refund.',
          tool_calls: [refund('call_3')],
        }, 'ds-7781'),
      },
    },
    {
      title:
        'a server that never sends finish_reason (Snowflake Cortex): at [DONE] the attempt finished, stop without raw',
      source: /*   */ '-a-u-d-|',
      values: {
        a: chunk({ content: 'Your refund has started.' }),
        u: { choices: [{ delta: {} }], usage: { prompt_tokens: 390, completion_tokens: 12 } },
        d: '[DONE]',
      },
      label: 'openaiChat()',
      operator: () => openaiChat(),
      expected: /* */ '-A-U-F-|',
      expectedValues: {
        A: text('Your refund has started.'),
        U: usage(390, 12),
        F: withOutput(finish('stop'), { content: 'Your refund has started.' }),
      },
    },
  ],
});
