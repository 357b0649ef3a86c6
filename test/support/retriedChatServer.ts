// The help-desk turn in the OpenAI Chat Completions format, served on 127.0.0.1 with one reset: the server the
// runnable examples of the docs (and the README's quick start, installed from the packed tarball) run against.
import { chatTranscript } from './chatTranscript.js';
import { startServer, type TestServer } from './httpServer.js';

/** The refund's arguments. */
export const refund = { order_id: 'ORD-7781', amount: 'full' };
/** What attempt 2 ends with: the text a user reads once the turn is clean. */
export const lastSentence = 'The book arrived damaged, so I have started a full refund.';

// Attempt 1 streams text, the whole refund call (c1) and half a sentence; the connection resets inside a word.
const attempt1 = chatTranscript(
  [
    { text: 'Checking order ORD-7781. ' },
    { call: { id: 'call_c1', name: 'issue_refund', args: JSON.stringify(refund) } },
    { text: 'Refunding the dam' },
    { text: 'aged book in full.' },
  ],
  { usage: { prompt: 142, completion: 31 } },
);
// Every later attempt is whole: the same refund with another id (c7), a sentence, the finish and the usage.
const attempt2 = chatTranscript(
  [
    { text: 'Checking order ORD-7781. ' },
    { call: { id: 'call_c7', name: 'issue_refund', args: JSON.stringify(refund) } },
    { text: lastSentence },
  ],
  { usage: { prompt: 142, completion: 58 } },
);

/** A server that answers the first request with attempt 1, cut after "Refunding the dam", and the others whole. */
export function retriedChatServer(): Promise<TestServer> {
  const cut = attempt1.after('text:Refunding the dam');
  return startServer((n) => (n === 0 ? { body: attempt1.body, destroyAfter: cut } : { body: attempt2.body }));
}
