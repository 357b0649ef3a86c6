// The help-desk turn on the wire: one script per attempt. Each step is one SSE event whose `data:` is a neutral
// `ProviderEvent` as JSON, or a hesitation of the model.
//
// Why not a provider's own format: the page needs no provider account, and the neutral events keep the wire
// readable. With a provider's format, put its adapter before `assembleToolCalls()` in main.ts: a call is handed
// over as soon as its arguments close, mid-attempt, so the policies compare the same way.

import type { ProviderEvent } from 'cleanturn';

/** One step of an attempt's stream. */
export type Step =
  /** Send this event. */
  | { kind: 'event'; event: ProviderEvent }
  /** Wait longer than usual before the next event: the moment the seed's connection reset. */
  | { kind: 'hesitate' };

/** The arguments of the help-desk refund. */
const refundArgs = { order_id: 'ORD-7781', amount: 'full' };

/** The provider's call id of each attempt: a new generation has new ids (c1, then c7, as in the seed). */
function callId(attempt: number): string {
  return attempt === 1 ? 'c1' : attempt === 2 ? 'c7' : `c${5 + 2 * attempt}`;
}

/**
 * The stream of one attempt of the help-desk turn, in the seed's words, with the text split as a model
 * streams it.
 *
 * Attempt 1 streams `Checking order ORD-7781. `, the refund `c1`, then `Refunding the dam` and hesitates there;
 * if nobody breaks the connection, it ends the sentence and finishes. Every later attempt streams the opening
 * again, the same refund with a new id (`c7` for attempt 2), `The book arrived damaged, so I have started a
 * full refund.`, its usage and a finish.
 */
export function helpDeskAttempt(attempt: number): Step[] {
  const steps: Step[] = [];
  const send = (event: ProviderEvent) => steps.push({ kind: 'event', event });
  const say = (...pieces: string[]) => {
    for (const text of pieces) send({ type: 'text', text });
  };

  say('Checking order ', 'ORD-7781. ');
  send({ type: 'tool-call', id: callId(attempt), name: 'issue_refund', args: refundArgs });
  if (attempt === 1) {
    say('Refunding ', 'the dam');
    steps.push({ kind: 'hesitate' });
    say('aged book ', 'in full.');
  } else {
    say('The book ', 'arrived damaged, ', 'so I have started ', 'a full refund.');
  }
  send({ type: 'usage', inputTokens: 412, outputTokens: attempt === 1 ? 31 : 38 });
  send({ type: 'finish', reason: 'tool-calls' });
  return steps;
}
