// EffectErrorCode is a closed union: a switch over it that names every code needs no default.
import type { EffectError } from 'cleanturn/effects';
import { describe, expectTypeOf, it } from 'vitest';
import type { EffectErrorCode } from '../../src/effects/errors.js';

function what(code: EffectErrorCode): string {
  switch (code) {
    case 'lease-lost':
    case 'unstorable-result':
    case 'missing-effect-key':
    case 'handler-timeout':
    case 'in-doubt':
      return 'executor';
    case 'ledger-busy':
    case 'ledger-closed':
    case 'ledger-read-only':
      return 'sqlite';
    case 'ledger-timeout':
    case 'ledger-memory-full':
    case 'ledger-data-lost':
    case 'ledger-persistence':
      return 'redis';
    case 'ledger-failed':
    case 'outcome-unknown':
      return 'postgres';
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

describe('EffectErrorCode', () => {
  it('is exhaustive in a switch, and is the type of EffectError.code', () => {
    expectTypeOf(what).returns.toEqualTypeOf<string>();
    expectTypeOf<EffectError['code']>().toEqualTypeOf<EffectErrorCode>();
  });
});
