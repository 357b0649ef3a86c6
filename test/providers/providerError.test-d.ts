// ProviderErrorCode is a closed union: a switch over it that names every code needs no default.
import type { ProviderError } from 'cleanturn/providers';
import { describe, expectTypeOf, it } from 'vitest';
import type { ProviderErrorCode } from '../../src/providers/errors.js';

function what(code: ProviderErrorCode): string {
  switch (code) {
    case 'upstream':
      return 'the provider said so';
    case 'not-a-payload':
    case 'invalid-field':
    case 'unsafe-path':
    case 'unknown-reference':
      return 'a payload the adapter cannot read';
    case 'not-finished':
    case 'wrong-format':
    case 'unanswered':
    case 'unknown-call':
    case 'answered-twice':
    case 'still-running':
    case 'not-a-result':
      return 'a next request that cannot be built';
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

describe('ProviderErrorCode', () => {
  it('is exhaustive in a switch, and is the type of ProviderError.code', () => {
    expectTypeOf(what).returns.toEqualTypeOf<string>();
    expectTypeOf<ProviderError['code']>().toEqualTypeOf<ProviderErrorCode>();
  });
});
