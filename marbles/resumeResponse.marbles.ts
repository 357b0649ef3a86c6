import { attemptPipeline } from 'cleanturn';
import { openaiResponses } from 'cleanturn/providers';
import { defineMarbles, finish, text, usage } from 'cleanturn/testing';
import { resumeResponse } from 'cleanturn/transport';
import { identity, NEVER, type Observable } from 'rxjs';
import { missingFinishError } from '../src/errors.js';
import { resumeError } from '../src/transport/errors.js';
import type { ResumeResponseOptions } from '../src/transport/resumeResponse.js';

// One diagram per connection: the first is the create request's stream, each next one a resume's. The operator
// under test is resumeResponse with both requests reading the next diagram.
const resuming =
  (options: Partial<ResumeResponseOptions> = {}) =>
  (connection: Observable<never>) =>
    resumeResponse({
      create: () => connection,
      retrieve: () => connection,
      adapter: openaiResponses(),
      delay: 2,
      ...options,
    });

const id = 'resp_1';
const reset = new Error('connection reset');
const v = {
  c: { type: 'response.created', sequence_number: 0, response: { id, status: 'in_progress' } },
  a: { type: 'response.output_text.delta', sequence_number: 1, delta: 'Checking order ORD-7781. ' },
  b: { type: 'response.output_text.delta', sequence_number: 2, delta: 'The book arrived damaged.' },
  d: {
    type: 'response.completed',
    sequence_number: 3,
    response: { id, status: 'completed', usage: { input_tokens: 142, output_tokens: 31 } },
  },
  // Another generation's first fragment, under the same number.
  o: { type: 'response.output_text.delta', sequence_number: 1, delta: 'Checking order ORD-7782. ' },
  // What a proxy that re-serialises the events passes on: the same events without their sequence_number.
  n: { type: 'response.created', response: { id, status: 'in_progress' } },
  x: { type: 'response.output_text.delta', delta: 'Checking order ORD-7781. ' },
  e: {
    type: 'response.completed',
    response: { id, status: 'completed', usage: { input_tokens: 142, output_tokens: 31 } },
  },
};
const out = {
  N: { type: 'resumable', responseId: id },
  A: text('Checking order ORD-7781. '),
  B: text('The book arrived damaged.'),
  U: usage(142, 31),
  F: { ...finish('stop', 'completed'), responseId: id },
};
const resume = (after: number, reason = 'connection reset') => ({ type: 'resume', after, reason });
const label = 'resumeResponse({ create, retrieve, adapter: openaiResponses(), delay: 2 })';

export default defineMarbles({
  name: 'resumeResponse',
  summary:
    'One attempt of a Responses turn in background mode: a cut connection is resumed after the last sequence number' +
    ' seen (a `resume`, then the same generation goes on), and only when that is impossible does the attempt fail,' +
    ' for an ordinary retry. The first event that names the response emits a `resumable` with its id, for a runner' +
    ' that takes the turn over. Each diagram of the source is one connection: create, then each resume.',
  cases: [
    {
      title: 'a reset mid-stream: a resume after event 1, and the same generation goes on',
      source: ['-c-a-#', '-b-d|'],
      values: v,
      error: reset,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-RB-(UF|)',
      expectedValues: { ...out, R: resume(1) },
      subscriptions: ['^----!', '-----^--!'],
    },
    {
      title: 'events at or below the last one seen are replays, and are dropped',
      source: ['-c-a-#', '-a-b-d|'],
      values: v,
      error: reset,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-R--B-(UF|)',
      expectedValues: { ...out, R: resume(1) },
      subscriptions: ['^----!', '-----^----!'],
    },
    {
      title: 'a clean close before the end is a cut too',
      source: ['-c-a-|', '-b-d|'],
      values: v,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-RB-(UF|)',
      expectedValues: { ...out, R: resume(1, 'the stream closed before the response ended') },
      subscriptions: ['^----!', '-----^--!'],
    },
    {
      title: 'a resume that skips an event is a gap: the attempt fails, for an ordinary retry',
      source: ['-c-a-#', '-d|'],
      values: v,
      error: reset,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-R#',
      expectedValues: { ...out, R: resume(1) },
      expectedError: resumeError('gap', id, 1, { next: 3 }),
      subscriptions: ['^----!', '-----^!'],
    },
    {
      title: 'resumes that deliver nothing wait longer each time, and fail after maxResumes',
      source: ['-c-a-#', '#', '#'],
      values: v,
      error: reset,
      label: 'resumeResponse({ create, retrieve, adapter: openaiResponses(), delay: 4, maxResumes: 2 })',
      operator: () => resuming({ delay: 4, maxResumes: 2 }),
      expected: /* */ '-N-A-(RS)#',
      expectedValues: { ...out, R: resume(1), S: resume(1) },
      expectedError: resumeError('repeated', id, 1, { resumes: 2 }, reset),
      subscriptions: ['^----!', '-----(^!)', '---------(^!)'],
    },
    {
      title: 'a cut before the response named itself cannot be resumed: the cut ends the attempt',
      source: ['-#'],
      values: v,
      error: reset,
      label,
      operator: () => resuming(),
      expected: /* */ '-#',
      expectedError: reset,
      subscriptions: ['^!'],
    },
    {
      title:
        'with nothing to resume from, a clean close completes without a finish, for requireFinish to fail',
      source: ['-|'],
      values: v,
      label: `${label}, then attemptPipeline(identity)`,
      operator: () => (connection: Observable<never>) =>
        resuming()(connection).pipe(attemptPipeline(identity)),
      expected: /* */ '-#',
      expectedError: missingFinishError(),
      subscriptions: ['^!'],
    },
    {
      title:
        'a resumed event without a sequence_number is unverifiable (a replay from the start would show a piece twice): the attempt fails, for an ordinary retry',
      source: ['-c-a-#', '-x-b-d|'],
      values: v,
      error: reset,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-R#',
      expectedValues: { ...out, R: resume(1) },
      expectedError: resumeError('unverifiable', id, 1),
      subscriptions: ['^----!', '-----^!'],
    },
    {
      title:
        "the create request's own stream is checked too: a skipped sequence number is a gap, and the attempt fails, for an ordinary retry",
      source: ['-c-a-d|'],
      values: v,
      label,
      operator: () => resuming(),
      expected: /* */ '-N-A-#',
      expectedValues: out,
      expectedError: resumeError('gap', id, 1, { next: 3, resumed: false }),
      subscriptions: ['^----!'],
    },
    {
      title:
        "a takeover goes on with the lost runner's response (resumeFrom): it is read again from its start, with no create",
      source: ['-c-a-b-d|'],
      values: v,
      label:
        'resumeResponse({ create, retrieve, adapter: openaiResponses(), resumeFrom: { responseId: id, delivered: [A] } })',
      operator: () =>
        resuming({
          create: () => NEVER,
          resumeFrom: { responseId: id, delivered: [{ ...out.A, attempt: 1 }] },
        }),
      expected: /* */ '-N-A-B-(UF|)',
      expectedValues: out,
      subscriptions: ['^------!'],
    },
    {
      title:
        'a response read again that does not begin with what was delivered is another generation: the attempt fails, for an ordinary retry',
      source: ['-c-o-b-d|'],
      values: v,
      label:
        'resumeResponse({ create, retrieve, adapter: openaiResponses(), resumeFrom: { responseId: id, delivered: [A] } })',
      operator: () =>
        resuming({
          create: () => NEVER,
          resumeFrom: { responseId: id, delivered: [{ ...out.A, attempt: 1 }] },
        }),
      expected: /* */ '-N-#',
      expectedValues: out,
      expectedError: resumeError('diverged', id, 1, { next: 0 }),
      subscriptions: ['^--!'],
    },
    {
      title:
        'a create stream without sequence numbers cannot be trusted: the attempt fails, not retryable, since a new one would meet the same stream',
      source: ['-n-x-e|'],
      values: v,
      label,
      operator: () => resuming(),
      expected: /* */ '-#',
      expectedError: resumeError('unverifiable', id, -1, { resumed: false }),
      subscriptions: ['^!'],
    },
  ],
});
