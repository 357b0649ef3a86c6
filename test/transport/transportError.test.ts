// TransportError's instanceof holds for an error made by another copy of the package, and its factories set the
// case's code and fields.
import { CleanturnError } from 'cleanturn';
import { TransportError } from 'cleanturn/transport';
import { describe, expect, it } from 'vitest';
import { remoteTurnError, stallError, turnLogTimeoutError } from '../../src/transport/errors.js';

describe('TransportError', () => {
  it('instanceof holds for an error of a second copy of the class (its brand), and not for a look-alike', () => {
    const foreign = Object.assign(new Error('no data for 5 ms: the stream stalled'), {
      name: 'TransportError',
      code: 'stall',
      retryable: true,
    });
    expect(foreign).not.toBeInstanceOf(TransportError);
    Object.defineProperty(foreign, Symbol.for('cleanturn.error.kinds'), {
      value: ['CleanturnError', 'TransportError'],
    });
    expect(foreign).toBeInstanceOf(TransportError);
    expect(foreign).toBeInstanceOf(CleanturnError);
  });

  it('an error of this copy is a TransportError named so, with its code and fields', () => {
    const error = stallError(5);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ name: 'TransportError', code: 'stall', timeoutMs: 5, retryable: true });
    expect(turnLogTimeoutError('append', 100, 4)).toMatchObject({
      code: 'turn-log-timeout',
      operation: 'append',
      timeoutMs: 100,
      tries: 4,
      retryable: true,
    });
  });

  it("a remote failure keeps the server's name and code; one without a code (an earlier server) still reads", () => {
    expect(
      remoteTurnError({ name: 'TurnError', code: 'retries-exhausted', message: 'gave up', retryable: false }),
    ).toMatchObject({ code: 'remote-turn', remoteName: 'TurnError', remoteCode: 'retries-exhausted' });
    const old = remoteTurnError({ name: 'RetriesExhaustedError', message: 'gave up', retryable: false });
    expect(old).toMatchObject({ code: 'remote-turn', remoteName: 'RetriesExhaustedError', retryable: false });
    expect(old.remoteCode).toBeUndefined();
    expect(old.message).toBe('the turn failed on the server: gave up');
  });
});
