import { type AttemptRecord, accumulateTurn, type TurnState } from 'cleanturn';
import { at, defineMarbles, finish, reset, text, usage } from 'cleanturn/testing';
import { keyedK } from './alphabet.js';

const first: AttemptRecord = {
  attempt: 1,
  outcome: 'abandoned',
  reason: 'connection reset',
  textLength: 17,
  toolCalls: 0,
  usage: { inputTokens: 88, outputTokens: 6 },
};

// biome-ignore format: an aligned value table
const S: TurnState = {
  attempt: 1,
  text: 'Refunding the dam',
  toolCalls: [],
  finish: undefined,
  usage: undefined,
  attempts: [{ attempt: 1, outcome: 'streaming', textLength: 17, toolCalls: 0 }],
};
// biome-ignore format: an aligned value table
const T: TurnState = {
  ...S,
  usage: { inputTokens: 88, outputTokens: 6 },
  attempts: [
    {
      attempt: 1,
      outcome: 'streaming',
      textLength: 17,
      toolCalls: 0,
      usage: { inputTokens: 88, outputTokens: 6 },
    },
  ],
};
// biome-ignore format: an aligned value table
const U: TurnState = {
  attempt: 2,
  text: '',
  toolCalls: [],
  finish: undefined,
  usage: undefined,
  attempts: [first, { attempt: 2, outcome: 'streaming', textLength: 0, toolCalls: 0 }],
};
// biome-ignore format: an aligned value table
const V: TurnState = {
  ...U,
  text: 'Refund started.',
  attempts: [first, { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 0 }],
};
// biome-ignore format: an aligned value table
const W: TurnState = {
  ...V,
  toolCalls: [keyedK],
  attempts: [first, { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 1 }],
};
// biome-ignore format: an aligned value table
const Y: TurnState = {
  ...W,
  finish: at(2, finish('tool-calls')),
  attempts: [
    first,
    { attempt: 2, outcome: 'completed', finishReason: 'tool-calls', textLength: 15, toolCalls: 1 },
  ],
};

export default defineMarbles({
  name: 'accumulateTurn',
  summary:
    "Folds the clean turn into the turn state: the live attempt's text and calls, and a record per attempt.",
  cases: [
    {
      title: 'a reset starts the text over; the abandoned attempt keeps its record, usage included',
      source: /*   */ '-a-u-x-b-k-f-|',
      // biome-ignore format: an aligned value table
      values: {
        a: at(1, text('Refunding the dam')),
        u: at(1, usage(88, 6)),
        x: reset(2, 'connection reset'),
        b: at(2, text('Refund started.')),
        k: keyedK,
        f: at(2, finish('tool-calls')),
      },
      label: 'accumulateTurn()',
      operator: () => accumulateTurn(),
      expected: /* */ '-S-T-U-V-W-Y-|',
      expectedValues: { S, T, U, V, W, Y },
      subscriptions: '^------------!',
    },
  ],
});
