// The letters the marble specs share: the help-desk turn as the operators see it at each stage, as
// `cleanturn/testing` exports it for users' own specs.
import { helpDeskKeyedRefund, helpDeskTagged, helpDeskTurnId } from 'cleanturn/testing';

/** The turn id of every spec. */
export const turnId = helpDeskTurnId;

/** The help-desk turn after `tagAttempts()`: upper-case letters of the raw turn, `X` its reset. */
export const tagged = helpDeskTagged;

/** Attempt 2's refund as the clean turn releases it: with its effect key. */
export const keyedK = helpDeskKeyedRefund;
