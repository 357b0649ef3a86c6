import { initialView, type TurnView, turnView } from 'cleanturn/renderers';
import { at, defineMarbles, reasoning, reset, text, usage } from 'cleanturn/testing';
import { keyedK, tagged as t } from './alphabet.js';

/** A view snapshot: the initial view with `changes`. */
const view = (changes: Partial<TurnView>): TurnView => ({ ...initialView, ...changes });

const X = reset(2, 'connection reset');
const opening = 'Checking order ORD-7781. ';
const sentence = 'The book arrived damaged, so I have started a full refund.';
const refund = {
  id: 'c7',
  name: 'issue_refund',
  args: keyedK.args,
  effectKey: keyedK.effectKey,
  status: 'released',
} as const;

// biome-ignore format: an aligned value table
const v = {
  a: view({ text: opening }),
  d: view({ text: `${opening}Refunding the dam` }),
  x: view({ attempt: 2, resets: [X], notice: { type: 'retrying', attempt: 2, reason: 'connection reset' } }),
  b: view({ attempt: 2, resets: [X], text: opening }),
  e: view({ attempt: 2, resets: [X], text: opening + sentence }),
  k: view({ attempt: 2, resets: [X], text: opening + sentence, toolCalls: [refund] }),
  f: view({ attempt: 2, resets: [X], text: opening + sentence, toolCalls: [refund], finished: true, finishReason: 'stop' }),
};

export default defineMarbles({
  name: 'turnView',
  summary:
    'Folds the turn into what the user should see now: a reset empties the text and shows a "retrying" notice until the new attempt shows something.',
  cases: [
    {
      title: 'the help-desk turn: the view drops attempt 1 on reset and ends with attempt 2 and its refund',
      source: /*   */ '-A-D-X-B-E-K-F-|',
      values: { ...t, K: keyedK },
      label: 'turnView()',
      operator: () => turnView(),
      expected: /* */ '-a-d-x-b-e-k-f-|',
      expectedValues: v,
      subscriptions: '^--------------!',
    },
    {
      title: 'events that change nothing (usage, a straggler of attempt 1, a repeated reset) emit nothing',
      source: /*   */ '-D-X-u-s-y-B-|',
      // biome-ignore format: an aligned value table
      values: {
        D: at(1, text(`${opening}Refunding the dam`)),
        X,
        u: at(2, usage(120, 8)),
        s: at(1, text('aged book')),
        y: reset(2, 'connection reset'),
        B: at(2, text(opening)),
      },
      label: 'turnView()',
      operator: () => turnView(),
      expected: /* */ '-d-x-------b-|',
      expectedValues: v,
    },
    {
      title: "reasoning shows apart from the answer; the reset drops it with the abandoned attempt's text",
      source: /*   */ '-r-a-X-s-b-|',
      // biome-ignore format: an aligned value table
      values: {
        r: at(1, reasoning('The customer wants a refund.')),
        a: at(1, text('Refunding the dam')),
        X,
        s: at(2, reasoning('Check the order first.')),
        b: at(2, text(opening)),
      },
      label: 'turnView()',
      operator: () => turnView(),
      expected: /* */ '-r-a-x-s-b-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        r: view({ reasoning: 'The customer wants a refund.' }),
        a: view({ reasoning: 'The customer wants a refund.', text: 'Refunding the dam' }),
        x: v.x,
        s: view({ attempt: 2, resets: [X], reasoning: 'Check the order first.' }),
        b: view({ attempt: 2, resets: [X], reasoning: 'Check the order first.', text: opening }),
      },
    },
  ],
});
