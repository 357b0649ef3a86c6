// Checks of errors by class and code, and errors as another copy of the package makes them.
import { TurnError } from 'cleanturn';
import { expect } from 'vitest';
import type { TurnErrorCode } from '../../src/errors.js';

/** Expects `value` to be a {@link TurnError} whose code is `code`. */
export function expectTurnError(value: unknown, code: TurnErrorCode): asserts value is TurnError {
  expect(value).toBeInstanceOf(TurnError);
  expect((value as TurnError).code).toBe(code);
}

/** A matcher, for deep equality (a marble's expected error), of a TurnError whose code is `code`. */
export function turnErrorWith(code: TurnErrorCode): TurnError {
  return expect.objectContaining({ name: 'TurnError', code }) as TurnError;
}

/** Where every copy of the package keeps an error's kinds (see CleanturnError). */
const KINDS = Symbol.for('cleanturn.error.kinds');

/**
 * An error as another copy of the package makes it (its CommonJS build, a second version): another class, the same
 * brand. `kinds` is the class chain, base first: `['CleanturnError', 'TransportError']`.
 */
export function fromAnotherCopy(kinds: readonly string[], fields: Record<string, unknown> = {}): Error {
  const error = Object.assign(new Error(String(fields.message ?? 'from another copy')), {
    name: kinds.at(-1) ?? 'Error',
    ...fields,
  });
  Object.defineProperty(error, KINDS, { value: [...kinds] });
  return error;
}
