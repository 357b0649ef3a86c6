// The letters the marble specs share: the help-desk turn as the operators see it at each stage.
import { at, helpDesk as h, keyed, reset } from 'cleanturn/testing';

/** The turn id of every spec. */
export const turnId = 'turn-42';

/** The help-desk turn after `tagAttempts()`: upper-case letters of the raw turn, `X` its reset. */
// biome-ignore format: an aligned value table
export const tagged = {
  A: at(1, h.a),
  C: at(1, h.c),
  D: at(1, h.d),
  R: at(2, h.r),
  B: at(2, h.b),
  K: at(2, h.k),
  E: at(2, h.e),
  F: at(2, h.f),
  X: reset(2, 'connection reset'),
} as const;

/** Attempt 2's refund as the clean turn releases it: with its effect key. */
export const keyedK = keyed(turnId, 2, h.k);
