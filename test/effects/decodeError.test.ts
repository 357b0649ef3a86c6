// A failed record decodes to a whole SerializedError in every ledger, whatever its stored payload: the ledgers used
// to decode it in different ways (the in-memory one threw a SyntaxError on a missing payload; SQLite, Redis and
// PostgreSQL gave back `{}`, which has no name, message or retryable).

import { describe, expect, it } from 'vitest';
import { decodeError } from '../../src/effects/json.js';

const unreadable = { name: 'Error', message: 'the recorded error could not be read', retryable: false };

describe('decodeError', () => {
  it('gives back a stored SerializedError unchanged', () => {
    const error = {
      name: 'CardDeclinedError',
      message: 'card declined',
      retryable: false,
      code: 'card_declined',
    };
    expect(decodeError(JSON.stringify(error))).toEqual(error);
    expect(decodeError(JSON.stringify({ name: 'E', message: 'm', retryable: true, code: 7 }))).toEqual({
      name: 'E',
      message: 'm',
      retryable: true,
      code: 7,
    });
  });

  it('decodes a missing or unreadable payload to the same whole SerializedError, never throws', () => {
    for (const text of [undefined, null, '{}', 'not json', '42', 'null', '[]']) {
      expect(decodeError(text as string)).toEqual(unreadable);
    }
  });

  it('fills in the fields a stored error lacks, and drops what is not a SerializedError field', () => {
    expect(decodeError('{"message":"boom","extra":1}')).toEqual({
      name: 'Error',
      message: 'boom',
      retryable: false,
    });
    expect(decodeError('{"name":"E","message":"m","retryable":"yes","code":{}}')).toEqual({
      name: 'E',
      message: 'm',
      retryable: false,
    });
  });
});
