import { assembleToolCalls } from 'cleanturn';
import { at, call, defineMarbles, delta, finish, retrying, text } from 'cleanturn/testing';
import { toolCallAssemblyError } from '../src/errors.js';

const refundArgs = { order_id: 'ORD-7781', amount: 'full' };
const invalid = (() => {
  try {
    JSON.parse('{"order_id":');
  } catch (error) {
    return error;
  }
})();

export default defineMarbles({
  name: 'assembleToolCalls',
  summary:
    'Joins `tool-call-delta` fragments by index into whole calls, each emitted as soon as its JSON arguments close.',
  cases: [
    {
      title: 'two parallel calls, fragments interleaved: each call is emitted when its arguments close',
      source: /*   */ '-p-q-s-u-t-f-|',
      // biome-ignore format: an aligned value table
      values: {
        p: delta(0, '{"order_id":"ORD-7781",', { id: 'c1', name: 'issue_refund' }),
        q: delta(1, '', { id: 'c2', name: 'lookup_order' }),
        s: delta(0, '"amount":"full"}'),
        u: delta(1, '{"order_id":"ORD-7781"}'),
        t: text('Refund started.'),
        f: finish('tool-calls'),
      },
      label: 'assembleToolCalls()',
      operator: () => assembleToolCalls(),
      expected: /* */ '-----A-B-t-f-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        t: text('Refund started.'),
        A: call('c1', 'issue_refund', refundArgs),
        B: call('c2', 'lookup_order', { order_id: 'ORD-7781' }),
        f: finish('tool-calls'),
      },
      subscriptions: '^------------!',
    },
    {
      title: 'a call without arguments is complete only at the finish, with {}; the attempt number is kept',
      source: /*   */ '-p-f---|',
      values: { p: at(3, delta(0, '', { id: 'c9', name: 'list_orders' })), f: at(3, finish('tool-calls')) },
      label: 'assembleToolCalls()',
      operator: () => assembleToolCalls(),
      expected: /* */ '---(Af)|',
      expectedValues: { A: at(3, call('c9', 'list_orders', {})), f: at(3, finish('tool-calls')) },
    },
    {
      title:
        "a retry discards the abandoned attempt's open fragments; the new attempt's call is emitted whole",
      source: /*   */ '-p-r-q-s-f-|',
      // biome-ignore format: an aligned value table
      values: {
        p: delta(0, '{"order_id":"ORD-', { id: 'c1', name: 'issue_refund' }),
        r: retrying('connection reset'),
        q: delta(0, '{"order_id":"ORD-7781",', { id: 'c7', name: 'issue_refund' }),
        s: delta(0, '"amount":"full"}'),
        f: finish('tool-calls'),
      },
      label: 'assembleToolCalls()',
      operator: () => assembleToolCalls(),
      expected: /* */ '---r---K-f-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        r: retrying('connection reset'),
        K: call('c7', 'issue_refund', refundArgs),
        f: finish('tool-calls'),
      },
    },
    {
      title: 'arguments that are not JSON error the stream with a retryable tool-call TurnError',
      source: /*   */ '-p-f-|',
      values: { p: delta(0, '{"order_id":', { id: 'c1', name: 'issue_refund' }), f: finish('length') },
      label: 'assembleToolCalls()',
      operator: () => assembleToolCalls(),
      expected: /* */ '---#',
      expectedError: toolCallAssemblyError(
        'tool-call-invalid-json',
        { index: 0, id: 'c1', name: 'issue_refund', argsText: '{"order_id":' },
        invalid,
      ),
    },
  ],
});
