// The error classes: one per area, a code that names the case, and an instanceof that holds across copies of the
// package (its ESM and CommonJS builds in one program, or two versions side by side).
import { CleanturnError, TurnError, UsageError } from 'cleanturn';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { missingFinishError, retriesExhaustedError } from '../src/errors.js';
import { fromAnotherCopy } from './support/errors.js';

const KINDS = Symbol.for('cleanturn.error.kinds');

describe('CleanturnError', () => {
  it('an error of the core is a TurnError and a CleanturnError, named after its class, with its code', () => {
    const error = missingFinishError(2);
    expect(error).toBeInstanceOf(TurnError);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(UsageError);
    expect(error).toMatchObject({ name: 'TurnError', code: 'missing-finish', attempt: 2, retryable: true });
    expect(String(error)).toBe('TurnError: attempt 2 completed without a finish event');
  });

  it('instanceof holds for an error made by another copy of the package', () => {
    const other = fromAnotherCopy(['CleanturnError', 'TurnError'], {
      code: 'missing-finish',
      retryable: true,
    });
    expect(other instanceof TurnError).toBe(true);
    expect(other instanceof CleanturnError).toBe(true);
    expect(other instanceof UsageError).toBe(false);
  });

  it('instanceof is false for what only looks like one: no brand, a brand of another shape, not an object', () => {
    const lookalike = Object.assign(new Error('x'), { name: 'TurnError', code: 'missing-finish' });
    expect(lookalike instanceof TurnError).toBe(false);
    const odd = new Error('x');
    Object.defineProperty(odd, KINDS, { value: 'TurnError' });
    expect(odd instanceof TurnError).toBe(false);
    for (const value of [undefined, null, 'TurnError', 42])
      expect((value as unknown as object) instanceof CleanturnError).toBe(false);
  });

  it('instanceof never throws, also for a Proxy whose traps throw', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    expect(hostile instanceof TurnError).toBe(false);
  });

  it("a user's own subclass without a kind of its own is checked by its prototype chain", () => {
    class MyError extends TurnError {}
    const mine = new MyError('missing-finish', 'mine', { retryable: true });
    expect(mine instanceof MyError).toBe(true);
    expect(mine instanceof TurnError).toBe(true);
    expect(missingFinishError() instanceof MyError).toBe(false);
    expect(mine.name).toBe('TurnError');
  });

  it('the brand is not an enumerable property: deep equality of two errors reads what it always read', () => {
    const error = retriesExhaustedError('cap', []);
    expect(Object.getOwnPropertySymbols(error)).toEqual([KINDS]);
    expect(
      Object.getOwnPropertySymbols(error).map((s) => Object.getOwnPropertyDescriptor(error, s)?.enumerable),
    ).toEqual([false]);
  });

  it('UsageError: code usage, never retryable, the function and the option in the message', () => {
    const error = new UsageError('backoff', 'factor', 'must be a number >= 1, not 0.5');
    expect(error).toMatchObject({ name: 'UsageError', code: 'usage', retryable: false, operator: 'backoff' });
    expect(error.message).toBe('backoff: factor must be a number >= 1, not 0.5');
  });

  it('the code union of the core is exhaustive in a switch', () => {
    const label = (error: TurnError): string => {
      switch (error.code) {
        case 'tool-call-invalid-json':
        case 'tool-call-missing-name':
          return 'call';
        case 'missing-finish':
        case 'unusable':
          return 'attempt';
        case 'retries-exhausted':
          return 'turn';
        case 'effect-key':
          return 'key';
        default: {
          const never: never = error.code;
          return never;
        }
      }
    };
    expect(label(missingFinishError())).toBe('attempt');
    expectTypeOf<TurnError['code']>().toEqualTypeOf<
      | 'tool-call-invalid-json'
      | 'tool-call-missing-name'
      | 'missing-finish'
      | 'unusable'
      | 'retries-exhausted'
      | 'effect-key'
    >();
  });
});
