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

/** What the model says in step 2, once the refund's result came back. */
export const stepTwoText = 'Your refund for ORD-7781 has started.';
const step2 = chatTranscript([{ text: stepTwoText }], { usage: { prompt: 230, completion: 12 } });

/**
 * What is wrong with a next request (one that sends tool results back), as Chat Completions checks it: every
 * `tool_call_id` of the last assistant message answered once by a `tool` message right after it, and no answer
 * for a call it did not make. Empty when the request is valid.
 */
export function nextRequestProblems(body: string): string[] {
  let messages: { role?: unknown; tool_calls?: { id?: unknown }[]; tool_call_id?: unknown }[];
  try {
    messages = (JSON.parse(body) as { messages?: typeof messages }).messages ?? [];
  } catch {
    return ['the body is not JSON'];
  }
  let at = messages.length - 1;
  while (at >= 0 && messages[at]?.role !== 'assistant') at--;
  if (at < 0) return ['tool messages without an assistant message before them'];
  const asked = (messages[at]?.tool_calls ?? []).map((c) => c.id);
  const answered = messages
    .slice(at + 1)
    .filter((m) => m.role === 'tool')
    .map((m) => m.tool_call_id);
  const problems: string[] = [];
  for (const id of asked)
    if (answered.filter((a) => a === id).length !== 1)
      problems.push(`tool call ${String(id)} is not answered once`);
  for (const id of answered)
    if (!asked.includes(id)) problems.push(`a tool message answers ${String(id)}, never asked`);
  return problems;
}

/** Whether a request body sends tool results back: the next request of a loop. */
export function isNextRequest(body: string): boolean {
  try {
    const { messages } = JSON.parse(body) as { messages?: { role?: unknown }[] };
    return (messages ?? []).some((m) => m.role === 'tool');
  } catch {
    return false;
  }
}

/**
 * A server that answers the first request with attempt 1, cut after "Refunding the dam", and the others whole; a
 * next request (tool results sent back) gets step 2's answer when it is valid, and the 400 of Chat Completions
 * when it is not.
 */
export function retriedChatServer(): Promise<TestServer> {
  const cut = attempt1.after('text:Refunding the dam');
  let attempts = 0;
  return startServer((_n, _req, body) => {
    if (isNextRequest(body)) {
      const problems = nextRequestProblems(body);
      if (problems.length === 0) return { body: step2.body };
      const error = { error: { message: problems.join('; '), type: 'invalid_request_error', code: null } };
      return { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify(error) };
    }
    return attempts++ === 0 ? { body: attempt1.body, destroyAfter: cut } : { body: attempt2.body };
  });
}
