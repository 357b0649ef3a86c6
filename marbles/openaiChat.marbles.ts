import { type OpenAIChatChunk, openaiChat, ProviderError } from 'cleanturn/providers';
import { defineMarbles, delta, finish, text, usage } from 'cleanturn/testing';

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
        F: finish('tool-calls', 'tool_calls'),
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
        F: finish('tool-calls', 'stop'),
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
      expectedError: new ProviderError(
        'openai-chat',
        'The server had an error while processing your request.',
        {
          retryable: true,
          code: 'server_error',
          payload: serverError,
        },
      ),
      subscriptions: '^--!',
    },
  ],
});
