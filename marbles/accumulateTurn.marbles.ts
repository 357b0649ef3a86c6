import { type AttemptRecord, accumulateTurn, type TurnState } from 'cleanturn';
import { at, defineMarbles, finish, reasoning, reset, text, usage } from 'cleanturn/testing';
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
  reasoning: '',
  toolCalls: [],
  finish: undefined,
  responseId: undefined,
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
  reasoning: '',
  toolCalls: [],
  finish: undefined,
  responseId: undefined,
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
    {
      title:
        "reasoning is the live attempt's own, apart from text; the final attempt's finish brings its response id and usage details",
      source: /*   */ '-r-x-s-b-u-f-|',
      // biome-ignore format: an aligned value table
      values: {
        r: at(1, reasoning('The customer wants a refund.')),
        x: reset(2, 'connection reset'),
        s: at(2, reasoning('Check the order first.')),
        b: at(2, text('Refund started.')),
        u: at(2, { type: 'usage', inputTokens: 412, outputTokens: 96, cachedInputTokens: 256, reasoningTokens: 64 }),
        f: at(2, { ...finish('stop'), responseId: 'msg_2' }),
      },
      label: 'accumulateTurn()',
      operator: () => accumulateTurn(),
      expected: /* */ '-R-X-S-B-U-F-|',
      expectedValues: ((): Record<string, TurnState> => {
        const r1: AttemptRecord = {
          attempt: 1,
          outcome: 'abandoned',
          reason: 'connection reset',
          textLength: 0,
          toolCalls: 0,
        };
        const details = { inputTokens: 412, outputTokens: 96, cachedInputTokens: 256, reasoningTokens: 64 };
        const R: TurnState = {
          ...S,
          text: '',
          reasoning: 'The customer wants a refund.',
          attempts: [{ attempt: 1, outcome: 'streaming', textLength: 0, toolCalls: 0 }],
        };
        const X: TurnState = {
          ...U,
          attempts: [r1, { attempt: 2, outcome: 'streaming', textLength: 0, toolCalls: 0 }],
        };
        const S2: TurnState = { ...X, reasoning: 'Check the order first.' };
        const B: TurnState = {
          ...S2,
          text: 'Refund started.',
          attempts: [r1, { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 0 }],
        };
        const Us: TurnState = {
          ...B,
          usage: details,
          attempts: [r1, { attempt: 2, outcome: 'streaming', textLength: 15, toolCalls: 0, usage: details }],
        };
        const F: TurnState = {
          ...Us,
          finish: at(2, { ...finish('stop'), responseId: 'msg_2' }),
          responseId: 'msg_2',
          attempts: [
            r1,
            {
              attempt: 2,
              outcome: 'completed',
              finishReason: 'stop',
              textLength: 15,
              toolCalls: 0,
              usage: details,
            },
          ],
        };
        return { R, X, S: S2, B, U: Us, F };
      })(),
    },
  ],
});
