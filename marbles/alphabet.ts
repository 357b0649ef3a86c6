// The letters the marble specs share: the help-desk turn as the operators see it at each stage, as
// `cleanturn/testing` exports it for users' own specs.
import { at, finish, helpDesk, reasoning, reset, text } from 'cleanturn/testing';

/** The turn id of every spec. */
export const turnId = helpDesk.turnId;

/** The help-desk turn after `tagAttempts()`: upper-case letters of the raw turn, `X` its reset. */
export const tagged = helpDesk.tagged;

/** Attempt 2's refund as the clean turn releases it: with its effect key. */
export const keyedK = helpDesk.keyedRefund;

/** A reasoning turn: attempt 1 thinks and starts to answer, the connection resets (`r`), attempt 2 thinks again and answers. */
export const thinking = {
  p: reasoning('The customer wants a refund.'),
  a: text('Refunding the dam'),
  r: helpDesk.r,
  q: reasoning('Check the order first.'),
  b: text('Refund started.'),
  f: finish('stop'),
};

/** The reasoning turn after a policy that resets: upper-case letters, `X` the reset. */
export const thinkingReset = {
  P: at(1, thinking.p),
  A: at(1, thinking.a),
  X: reset(2, 'connection reset'),
  Q: at(2, thinking.q),
  B: at(2, thinking.b),
  F: at(2, thinking.f),
};
