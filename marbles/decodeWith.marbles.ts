import type { FinishReason } from 'cleanturn';
import { decodeWith } from 'cleanturn/providers';
import { defineMarbles, finish, text } from 'cleanturn/testing';
import { providerPayloadError } from '../src/providers/errors.js';

/** A payload of a small line format: some text, and a finish reason on any line that reports one. */
type Line = { text?: string; finish?: FinishReason };

/** Its decoder: the format's mapping only; decodeWith holds the rules. */
const lines = () =>
  decodeWith<Line>({ name: 'lines', endMarker: '[DONE]' }, (sink) => ({
    next(line) {
      if (typeof line.text === 'string') sink.event(text(line.text));
      if (line.finish !== undefined) sink.finish(finish(line.finish));
    },
  }));

/** The same format, where the end marker means the attempt finished even if no line reported a finish. */
const finishedAtMarker = () =>
  decodeWith<Line>({ name: 'lines', endMarker: '[DONE]' }, (sink) => {
    let reported = false;
    return {
      next(line) {
        if (typeof line.text === 'string') sink.event(text(line.text));
        if (line.finish !== undefined) {
          reported = true;
          sink.finish(finish(line.finish));
        }
      },
      atEndMarker() {
        if (!reported) sink.finish(finish('stop'));
      },
    };
  });

const notAPayload = providerPayloadError(
  'lines',
  'not-a-payload',
  "expected a parsed payload (an object) or '[DONE]', got string; JSON.parse the SSE data first",
  { payload: '{"text":"ORD-7781."}' },
);

export default defineMarbles({
  name: 'decodeWith',
  summary:
    "Turns a format's decoder into an operator: finishes held until the end (the last one wins), nothing after the end marker, typed errors for what is not a payload.",
  cases: [
    {
      title:
        'a finish reason on every chunk (legacy Gemini): every chunk is read, one finish at the end, the last reason',
      source: /*   */ '-a-b-c-|',
      // biome-ignore format: an aligned value table
      values: {
        a: { text: 'Checking order ', finish: 'stop' },
        b: { text: 'ORD-7781.', finish: 'stop' },
        c: { finish: 'content-filter' },
      },
      label: 'decodeWith(lines)',
      operator: () => lines(),
      expected: /* */ '-a-b---(f|)',
      expectedValues: { a: text('Checking order '), b: text('ORD-7781.'), f: finish('content-filter') },
      subscriptions: '^------!',
    },
    {
      title:
        'the end marker releases the finish; what follows it is ignored, and a reset after it changes nothing',
      source: /*   */ '-a-f-d-c-#',
      values: { a: { text: 'Refund started.' }, f: { finish: 'stop' }, d: '[DONE]', c: { text: 'late' } },
      label: 'decodeWith(lines)',
      operator: () => lines(),
      expected: /* */ '-a---f---|',
      expectedValues: { a: text('Refund started.'), f: finish('stop') },
    },
    {
      title: 'an error before the end fails the attempt, even after a finish was reported',
      source: /*   */ '-a-f-#',
      values: { a: { text: 'Refund started.' }, f: { finish: 'stop' } },
      label: 'decodeWith(lines)',
      operator: () => lines(),
      expected: /* */ '-a---#',
      expectedValues: { a: text('Refund started.') },
    },
    {
      title: 'a payload never parsed is a typed, non-retryable error, and the source is stopped',
      source: /*   */ '-a-s-b-|',
      values: { a: { text: 'Checking order ' }, s: '{"text":"ORD-7781."}', b: { text: 'never read' } },
      label: 'decodeWith(lines)',
      operator: () => lines(),
      expected: /* */ '-a-#',
      expectedValues: { a: text('Checking order ') },
      expectedError: notAPayload,
      subscriptions: '^--!',
    },
    {
      title:
        'the decoder is told of the end marker: a format whose marker means the attempt finished gives its finish there',
      source: /*   */ '-a-d-c-|',
      values: { a: { text: 'Refund started.' }, d: '[DONE]', c: { text: 'late' } },
      label: 'decodeWith(finishedAtMarker)',
      operator: () => finishedAtMarker(),
      expected: /* */ '-a-f---|',
      expectedValues: { a: text('Refund started.'), f: finish('stop') },
    },
  ],
});
