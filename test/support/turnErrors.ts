// Checks of the core's errors by their code: a TurnError names its case in `code`.
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

/** Whether `value` is a TurnError whose code is `code`. */
export function isTurnError(value: unknown, code: TurnErrorCode): value is TurnError {
  return value instanceof TurnError && value.code === code;
}
