import { dedupeByEffectKey, effectKey } from 'cleanturn';
import { defineMarbles, helpDesk as h, keyed, repeated } from 'cleanturn/testing';
import { tagged as t, turnId } from './alphabet.js';

export default defineMarbles({
  name: 'dedupeByEffectKey',
  summary:
    'Keys tool calls by meaning; a key that already ran comes again marked as a repeat: c1 and c7 are one refund.',
  cases: [
    {
      title:
        'c1 and c7 have the same key: c7 comes as a repeat (P), answered with what c1 did, never run again',
      source: /*   */ '-A-C-D-R-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42' })",
      operator: () => dedupeByEffectKey({ turnId }),
      expected: /* */ '-A-Q-D-R-B-P-E-F-|',
      expectedValues: { ...t, Q: keyed(turnId, 1, h.c), P: repeated(turnId, 2, h.k) },
      subscriptions: '^----------------!',
    },
    {
      title: 'a key that already ran (in seen) is marked as a repeat',
      source: /*   */ '-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42', seen: new Set([keyOfRefund]) })",
      operator: () => dedupeByEffectKey({ turnId, seen: new Set([effectKey(turnId, h.k)]) }),
      expected: /* */ '-B-P-E-F-|',
      expectedValues: { ...t, P: repeated(turnId, 2, h.k) },
    },
    {
      title:
        'with a step, the key is of the step: the refund asked for again in step 3 is a second effect, not a repeat of step 1',
      source: /*   */ '-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42', step: 3, seen: new Set([keyOfRefundInStep1]) })",
      operator: () => dedupeByEffectKey({ turnId, step: 3, seen: new Set([effectKey(turnId, h.k, 1)]) }),
      expected: /* */ '-B-Q-E-F-|',
      expectedValues: { ...t, Q: keyed(turnId, 2, h.k, 3) },
    },
    {
      title: 'within one step, c1 and c7 are still one effect: their keys are the same',
      source: /*   */ '-A-C-D-R-B-K-E-F-|',
      values: t,
      label: "dedupeByEffectKey({ turnId: 'turn-42', step: 1 })",
      operator: () => dedupeByEffectKey({ turnId, step: 1 }),
      expected: /* */ '-A-Q-D-R-B-P-E-F-|',
      expectedValues: { ...t, Q: keyed(turnId, 1, h.c, 1), P: repeated(turnId, 2, h.k, 1) },
    },
  ],
});
