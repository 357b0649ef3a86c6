import { dedupeByEffectKey, effectKey } from 'cleanturn';
import { defineMarbles, helpDesk as h, keyed } from 'cleanturn/testing';
import { tagged as t, turnId } from './alphabet.js';

export default defineMarbles({
  name: 'dedupeByEffectKey',
  summary: 'Keys tool calls by meaning and lets each key through once: c1 and c7 collapse into one refund.',
  cases: [
    {
      title: 'c1 and c7 have the same key: only the first reaches the tools, even without resets',
      source: /*   */ '-A-C-D-R-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42' })",
      operator: () => dedupeByEffectKey({ turnId }),
      expected: /* */ '-A-Q-D-R-B---E-F-|',
      expectedValues: { ...t, Q: keyed(turnId, 1, h.c) },
      subscriptions: '^----------------!',
    },
    {
      title: 'a key that already ran (in seen) is dropped',
      source: /*   */ '-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42', seen: new Set([keyOfRefund]) })",
      operator: () => dedupeByEffectKey({ turnId, seen: new Set([effectKey(turnId, h.k)]) }),
      expected: /* */ '-B---E-F-|',
      expectedValues: t,
    },
  ],
});
