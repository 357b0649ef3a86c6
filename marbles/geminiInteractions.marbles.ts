import { geminiInteractions } from 'cleanturn/providers';
import { call, defineMarbles, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { upstreamProviderError } from '../src/providers/errors.js';
import type { GeminiInteractionsEvent } from '../src/providers/geminiInteractions.js';

// Events trimmed to the fields the adapter reads; a real stream also carries an event_id on every event.
const interaction = 'v1_ChdSZWZ1bmQtT1JELTc3ODE';
const signature = 'EqQBCkgIARABGAIiQPq7';
const thought = 'The book is damaged: refund.';
const step = (index: number, type: string, more: object = {}): GeminiInteractionsEvent => ({
  event_type: 'step.start',
  index,
  step: { type, ...more },
});
const delta = (index: number, type: string, more: object): GeminiInteractionsEvent => ({
  event_type: 'step.delta',
  index,
  delta: { type, ...more },
});
const completed = (status: string, more: object = {}): GeminiInteractionsEvent => ({
  event_type: 'interaction.completed',
  interaction: { id: interaction, status, ...more },
});
/** A finish with the interaction id and the attempt's output steps. */
const done = (reason: 'stop' | 'tool-calls', raw: string, steps: object[]) => ({
  ...finish(reason, raw),
  responseId: interaction,
  output: { format: 'gemini-interactions', steps },
});
const answer = (text: string) => ({ type: 'model_output', content: [{ type: 'text', text }] });
const refund = { type: 'function_call', id: 'fc_1', name: 'issue_refund', arguments: helpDesk.refundArgs };

// biome-ignore format: an aligned value table
const v = {
  s: step(0, 'model_output'),
  t: delta(0, 'text', { text: 'Checking order ORD-7781. ' }),
  f: step(1, 'function_call', { id: 'fc_1', name: 'issue_refund', arguments: {} }),
  a: delta(1, 'arguments_delta', { arguments: '{"order_id":"ORD-7781",' }),
  b: delta(1, 'arguments_delta', { arguments: '"amount":"full"}' }),
  p: { event_type: 'step.stop', index: 1 },
  c: completed('requires_action', { usage: { total_input_tokens: 142, total_output_tokens: 31 } }),
  h: step(0, 'thought'),
  g: delta(0, 'thought_summary', { content: { type: 'text', text: thought } }),
  n: delta(0, 'thought_signature', { signature }),
  x: delta(1, 'text', { text: 'Refund started.' }),
  d: completed('completed', { usage: { total_input_tokens: 88, total_output_tokens: 6, total_thought_tokens: 41 } }),
  o: { event_type: 'content.start', index: 0, content: { type: 'function_call', id: 'fc_1', name: 'issue_refund', arguments: {} } },
  w: { event_type: 'content.delta', index: 0, delta: { type: 'function_call', id: 'fc_1', name: 'issue_refund', arguments: helpDesk.refundArgs } },
  z: { event_type: 'content.stop', index: 0 },
  q: { event_type: 'interaction.complete', interaction: { id: interaction, status: 'requires_action' } },
  e: { event_type: 'error', error: { code: 'UNAVAILABLE', message: 'The model is overloaded.' } },
  r: { ...delta(0, 'text', { text: 'Checking order ' }), event_id: 'ZXZ0OjM' },
  u: { ...delta(0, 'text', { text: 'ORD-7781.' }), event_id: 'ZXZ0OjQ' },
  k: completed('completed'),
} satisfies Record<string, GeminiInteractionsEvent>;

export default defineMarbles({
  name: 'geminiInteractions',
  summary:
    'Turns Gemini Interactions events into neutral events: text, reasoning, whole calls at their step.stop, usage, the finish with the interaction id and the output to send back.',
  cases: [
    {
      title:
        'text, a function call streamed in arguments_delta pieces (whole at its step.stop), then usage and the finish: requires_action after a call is tool-calls',
      source: /*   */ '-s-t-f-a-b-p-c---|',
      values: v,
      label: 'geminiInteractions()',
      operator: () => geminiInteractions(),
      expected: /* */ '---T-------K-(UF)|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        T: text('Checking order ORD-7781. '),
        K: call('fc_1', 'issue_refund', helpDesk.refundArgs),
        U: usage(142, 31),
        F: done('tool-calls', 'requires_action', [answer('Checking order ORD-7781. '), refund]),
      },
      subscriptions: '^----------------!',
    },
    {
      title:
        'a thought summary is reasoning, never text; its signature stays on the thought step of the output; thoughts count as output',
      source: /*   */ '-h-g-n-x-d---|',
      values: v,
      label: 'geminiInteractions()',
      operator: () => geminiInteractions(),
      expected: /* */ '---R---X-(UF)|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        R: reasoning(thought),
        X: text('Refund started.'),
        U: { ...usage(88, 47), reasoningTokens: 41 },
        F: done('stop', 'completed', [
          { type: 'thought', summary: [{ type: 'text', text: thought }], signature },
          answer('Refund started.'),
        ]),
      },
    },
    {
      title:
        'the older content.* events: a whole function_call delta is the call at its content.stop, interaction.complete the finish',
      source: /*   */ '-o-w-z-q-|',
      values: v,
      label: 'geminiInteractions()',
      operator: () => geminiInteractions(),
      expected: /* */ '-----K-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        K: call('fc_1', 'issue_refund', helpDesk.refundArgs),
        F: done('tool-calls', 'requires_action', [refund]),
      },
    },
    {
      title: 'an error event (UNAVAILABLE) after text: a retryable ProviderError',
      source: /*   */ '-s-t-e-|',
      values: v,
      label: 'geminiInteractions()',
      operator: () => geminiInteractions(),
      expected: /* */ '---T-#',
      expectedValues: { T: text('Checking order ORD-7781. ') },
      expectedError: upstreamProviderError('gemini', 'The model is overloaded.', {
        retryable: true,
        upstreamCode: 'UNAVAILABLE',
        payload: v.e,
      }),
      subscriptions: '^----!',
    },
    {
      title: 'an event whose event_id was already read (a replay after a resume) is dropped',
      source: /*   */ '-r-r-u-k-|',
      values: v,
      label: 'geminiInteractions()',
      operator: () => geminiInteractions(),
      expected: /* */ '-A---B-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: text('Checking order '),
        B: text('ORD-7781.'),
        F: done('stop', 'completed', [answer('Checking order ORD-7781.')]),
      },
    },
  ],
});
