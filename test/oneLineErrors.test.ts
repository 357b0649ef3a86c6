import { describe, expect, it } from 'vitest';
import { unusableAttemptError } from '../src/errors.js';
import { turnStoppedError, unsafeReplayError } from '../src/transport/errors.js';
import { replaySafety } from '../src/transport/replaySafety.js';

/** No line break and no other control character. */
const oneLine = (text: string) => expect([...text].some((c) => (c.codePointAt(0) ?? 0) < 0x20)).toBe(false);

describe('one line', () => {
  it('unusable TurnError: a reason over several lines', () => {
    const error = unusableAttemptError(
      'invalid-arguments',
      'amount: required\norder_id: must be a string',
      2,
    );
    oneLine(error.message);
    expect(error.message).toBe(
      'attempt 2 is unusable (invalid-arguments): amount: required order_id: must be a string',
    );
  });

  it.each([
    ['a string with a line break', 'user pressed stop\nsecond line'],
    ['an Error with a line break', new Error('quota\nexceeded')],
    ['CR LF from a request body', 'line one\r\nline two'],
  ])('TurnStoppedError: %s', (_, reason) => {
    oneLine(turnStoppedError(reason).message);
  });

  it('TransportError turn-stopped: a reason a page long is shortened', () => {
    expect(turnStoppedError('x'.repeat(10_000)).message.length).toBeLessThan(400);
  });

  it("TransportError unsafe-replay: a provider's message with line breaks", () => {
    const request = {
      url: 'https://api.openai.com/v1/responses',
      init: {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-5', conversation: 'conv_1', input: 'hi', stream: true }),
      },
    };
    const failure = new Error('The server had an error.\nPlease retry.');
    const verdict = replaySafety(request, failure);
    expect(verdict.safety).toBe('unsafe');
    oneLine(verdict.reason);
    oneLine(unsafeReplayError(1, verdict, failure).message);
  });
});
