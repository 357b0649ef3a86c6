// The help-desk turn as an OpenAI Chat Completions provider records it, for the tests that break it over real
// sockets at named points (test/transport/faults.test.ts, test/transport/httpClientSSE.test.ts).
import { chatTranscript } from './chatTranscript.js';
import type { ScriptedResponse } from './httpServer.js';

/** The refund's arguments, as the provider streams them. */
export const args = '{"order_id":"ORD-7781","amount":"full"}';
/** What the user reads once the turn is clean: attempt 2's text. */
export const cleanText =
  'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';

/**
 * Attempt 1: text, the refund (c1), half a sentence and a tail of multi-byte characters to cut inside. Its usage
 * comes at its end, which the tests never let it reach.
 */
export const attempt1 = chatTranscript(
  [
    { text: 'Checking order ORD-7781. ' },
    { call: { id: 'c1', name: 'issue_refund', args } },
    { text: 'Refunding the dam' },
    { text: 'aged book — ünïcödé ✓ 📦.' },
  ],
  { usage: { prompt: 88, completion: 31 } },
);

/** Attempt 2, whole: the same refund with another id (c7), the sentence, the finish and the usage. */
export const attempt2 = chatTranscript(
  [
    { text: 'Checking order ORD-7781. ' },
    { call: { id: 'c7', name: 'issue_refund', args } },
    { text: 'The book arrived damaged, so I have started a full refund.' },
  ],
  { usage: { prompt: 88, completion: 40 } },
);

/** Attempt 2 served whole, in 64-byte writes. */
export const whole: ScriptedResponse = { body: attempt2.body, chunkSize: 64 };
