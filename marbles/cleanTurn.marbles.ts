import { cleanTurn, effectKey } from 'cleanturn';
import {
  at,
  call,
  defineMarbles,
  finish,
  helpDesk as h,
  keyed,
  reasoning,
  repeated,
  text,
} from 'cleanturn/testing';
import { keyedK, tagged as t, turnId } from './alphabet.js';

const lookup = call('c2', 'lookup_order', { order_id: 'ORD-7781' });
const refund = call('c3', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });
const again = call('c4', 'issue_refund', { amount: 'full', order_id: 'ORD-7781' });
const readAgain = call('c8', 'lookup_order', { order_id: 'ORD-7781' });
const refundAgain = call('c9', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });

export default defineMarbles({
  name: 'cleanTurn',
  summary:
    'The recommended policy: attempts numbered, retries turned into resets, calls held to the finish, keyed; a key that already ran comes again as a repeat.',
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
      title:
        'the same call twice in one attempt (the same meaning, new id): both answered, G marked as a repeat',
      source: /*   */ '-l-c-g-f----|',
      values: { l: lookup, c: refund, g: again, f: finish('tool-calls') },
      label: "cleanTurn({ turnId: 'turn-42', early: (call) => call.name === 'lookup_order' })",
      operator: () => cleanTurn({ turnId, early: (c) => c.name === 'lookup_order' }),
      expected: /* */ '-L-----(CGF)|',
      expectedValues: {
        L: keyed(turnId, 1, lookup),
        C: keyed(turnId, 1, refund),
        G: repeated(turnId, 1, again),
        F: at(1, finish('tool-calls')),
      },
    },
    {
      title:
        'a read that ran early in an abandoned attempt is asked again: released as a repeat, never dropped',
      source: /*   */ '-l-w-r-m-v-f----|',
      values: { l: lookup, w: refund, r: h.r, m: readAgain, v: refundAgain, f: finish('tool-calls') },
      label: "cleanTurn({ turnId: 'turn-42', early: (call) => call.name === 'lookup_order' })",
      operator: () => cleanTurn({ turnId, early: (c) => c.name === 'lookup_order' }),
      expected: /* */ '-L---X-M---(VF)-|',
      expectedValues: {
        L: keyed(turnId, 1, lookup),
        X: t.X,
        M: repeated(turnId, 2, readAgain),
        V: keyed(turnId, 2, refundAgain),
        F: at(2, finish('tool-calls')),
      },
    },
    {
      title:
        'a refund that already ran before a restart (in seen) is released as a repeat: answered, not run',
      source: /*   */ '-c-t-f---|',
      values: { c: refund, t: text('Your refund is on its way.'), f: finish() },
      label: "cleanTurn({ turnId: 'turn-42', seen: ledger })",
      operator: () => cleanTurn({ turnId, seen: new Set([effectKey(turnId, refund)]) }),
      expected: /* */ '---T-(PF)|',
      expectedValues: {
        T: at(1, text('Your refund is on its way.')),
        P: repeated(turnId, 1, refund),
        F: at(1, finish()),
      },
    },
    {
      title: 'nothing after the finish: a late call, text and a second finish are not part of the turn',
      source: /*   */ '-t-f-c-u-g-|',
      values: { t: text('Done.'), f: finish(), c: refund, u: text(' And more.'), g: finish('tool-calls') },
      label: "cleanTurn({ turnId: 'turn-42' })",
      operator: () => cleanTurn({ turnId }),
      expected: /* */ '-T-F-------|',
      expectedValues: { T: at(1, text('Done.')), F: at(1, finish()) },
    },
    {
      title:
        "reasoning belongs to its attempt: it passes through like text, and the reset voids attempt 1's thinking with its text",
      source: /*   */ '-p-a-r-q-s-b-f-|',
      // biome-ignore format: an aligned value table
      values: {
        p: reasoning('The customer wants a refund.'),
        a: text('Refunding the dam'),
        r: h.r,
        q: reasoning('Check the order first.'),
        s: text('Checking order ORD-7781.'),
        b: text(' Refund started.'),
        f: finish('stop'),
      },
      label: "cleanTurn({ turnId: 'turn-42' })",
      operator: () => cleanTurn({ turnId }),
      expected: /* */ '-P-A-X-Q-S-B-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        P: at(1, reasoning('The customer wants a refund.')),
        A: at(1, text('Refunding the dam')),
        X: t.X,
        Q: at(2, reasoning('Check the order first.')),
        S: at(2, text('Checking order ORD-7781.')),
        B: at(2, text(' Refund started.')),
        F: at(2, finish('stop')),
      },
    },
  ],
});
