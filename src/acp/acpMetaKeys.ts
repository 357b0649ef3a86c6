import type { RetryFacts } from '../types.js';

/**
 * The `_meta` keys that {@link toAcpUpdates} writes, namespaced by the package name as ACP's extensibility
 * rules ask (`_meta` keys of one implementation must not collide with another's or with future protocol
 * fields).
 *
 * - `reset` (on the update that announces a reset: with ACP v1 the first, empty chunk of the new attempt's
 *   message; with v2 the `agent_message` replacement): an `AcpResetMeta`, with the wait until the next
 *   attempt (`delay`) and the other facts of the retry when the reset has them. A v1 editor that knows it
 *   removes the message named in `supersedes` (or collapses it into a "retried" marker); one that does not
 *   shows both messages, the abandoned one first. A v2 editor needs nothing from it: the replacement has
 *   cleared the text; it may show that the answer was retried.
 * - `effectKey` (on a tool call): the call's effect key, the same for the same call in every attempt; the
 *   key to deduplicate or correlate tool calls by, never the provider's call id.
 * - `attempt` (on a tool call): the attempt that released it.
 * - `repeat` (on a tool call): `true` for a `tool-call-repeat`, whose effect key already ran (an early read of an
 *   abandoned attempt asked again, a key the ledger holds, the same call twice): it is answered with the
 *   recorded result and its effect does not run again. With an entry of its own it is shown completed at once;
 *   sharing the entry of the call that runs the effect (the default id is the effect key), it leaves that
 *   entry's status to that call's result.
 * - `outcome` (on a tool call's update from its result): the executor's outcome, e.g. `executed` or
 *   `replayed` (the effect had already happened and its stored result was returned).
 * - `inDoubt` (on a tool call's update from its result, when set): `reclaimed` or `lease-lost`, the effect
 *   may have happened twice (see `toolResultStatus`); an editor shows the result with a warning.
 */
export const acpMetaKeys = {
  reset: 'cleanturn/reset',
  effectKey: 'cleanturn/effectKey',
  attempt: 'cleanturn/attempt',
  outcome: 'cleanturn/outcome',
  repeat: 'cleanturn/repeat',
  inDoubt: 'cleanturn/inDoubt',
} as const;

/**
 * The value under `_meta['cleanturn/reset']`: a retry happened, and what it voids. It also carries the facts of the
 * reset (`RetryFacts`), each only when the reset had it: `delay` (milliseconds until the next attempt
 * starts, so that an editor can say "retrying in 3 s" at once), `failedAttempt`, `outputStarted`, `retryCount`,
 * `maxRetries`, `errorName` and `status`.
 *
 * @inline
 */
export interface AcpResetMeta extends RetryFacts {
  /** The attempt that starts now. */
  attempt: number;
  /** Why the previous attempt was abandoned, for people and logs. */
  reason: string;
  /**
   * ACP v1: the message the abandoned attempt streamed its text to, which an editor drops. Absent when that
   * attempt showed no message, and always with ACP v2, where the reset's `agent_message` replacement has
   * already cleared the abandoned text from the one message of the turn.
   */
  supersedes?: string;
  /** ACP v1: the thought message the abandoned attempt streamed its reasoning to, which an editor drops too. */
  supersedesThought?: string;
}
