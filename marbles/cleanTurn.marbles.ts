import { cleanTurn, effectKey } from 'cleanturn';
import { at, call, defineMarbles, finish, helpDesk as h, keyed, text } from 'cleanturn/testing';
import { keyedK, tagged as t, turnId } from './alphabet.js';

const lookup = call('c2', 'lookup_order', { order_id: 'ORD-7781' });
const refund = call('c3', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });
const again = call('c4', 'issue_refund', { amount: 'full', order_id: 'ORD-7781' });

export default defineMarbles({
  name: 'cleanTurn',
  summary:
    'The recommended policy: attempts numbered, retries turned into resets, calls held to the finish, keyed and run once.',
  cases: [
    {
      title: 'the help-desk turn: clean text of attempt 2 and one refund, c7, with its effect key',
      source: /*   */ '-a-c-d-r-b-k-e-f----|',
      values: h,
      label: "cleanTurn({ turnId: 'turn-42' })",
      operator: () => cleanTurn({ turnId }),
      expected: /* */ '-A---D-X-B---E-(KF)-|',
      expectedValues: { ...t, K: keyedK },
      subscriptions: '^-------------------!',
    },
    {
      title: 'a repeated call in one attempt (the same meaning, new id) runs once; a pure read runs early',
      source: /*   */ '-l-c-g-f---|',
      values: { l: lookup, c: refund, g: again, f: finish('tool-calls') },
      label: "cleanTurn({ turnId: 'turn-42', early: (call) => call.name === 'lookup_order' })",
      operator: () => cleanTurn({ turnId, early: (c) => c.name === 'lookup_order' }),
      expected: /* */ '-L-----(CF)|',
      expectedValues: {
        L: keyed(turnId, 1, lookup),
        C: keyed(turnId, 1, refund),
        F: at(1, finish('tool-calls')),
      },
    },
    {
      title: 'a refund that already ran before a restart (in seen) is not released again',
      source: /*   */ '-c-t-f-|',
      values: { c: refund, t: text('Your refund is on its way.'), f: finish() },
      label: "cleanTurn({ turnId: 'turn-42', seen: ledger })",
      operator: () => cleanTurn({ turnId, seen: new Set([effectKey(turnId, refund)]) }),
      expected: /* */ '---t-f-|',
      expectedValues: { t: at(1, text('Your refund is on its way.')), f: at(1, finish()) },
    },
  ],
});
